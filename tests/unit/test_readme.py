"""The README is what a newcomer reads first: short, the two commands at the top, every named target,
every library package, and links into docs/ that resolve.  The measurements and per-stage notes live in
docs/; these tests keep both honest as the code moves (the opening block: tests/unit/test_reference.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
DOCS = sorted((REPO / "docs").glob("*.md"))


def _section(text: str, heading: str) -> str:
    """The body of the ``## heading`` section (up to the next ``## ``)."""
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else len(text)]


def test_the_readme_reads_in_five_minutes():
    lines = README.count("\n")
    assert lines <= 250, f"README.md has {lines} lines; move measurements and stage notes to docs/ (at most 250)"


def test_the_two_commands_come_first():
    head = README[: README.index("\n## Two commands\n") + 1200]
    assert README.index("\n## Two commands\n") == README.index("\n## "), "the two commands are the first section"
    assert "make run " in head and "make test " in head


def _named_targets() -> set[str]:
    from trustmass.report.catalog import OUTPUTS

    snakefile = (REPO / "Snakefile").read_text(encoding="utf-8")
    written = set(re.findall(r"^rule (\w+):", snakefile, flags=re.M))
    return written | {out.name for out in OUTPUTS}


def test_the_readme_names_every_named_target():
    targets = _named_targets()
    assert {"all", "fig1", "claims"} <= targets  # the parse found the Snakefile's rules and the catalog
    usage = _section(README, "Using the workflow")
    missing = sorted(t for t in targets if f"`{t}`" not in usage)
    assert not missing, f"README.md, 'Using the workflow', does not list the named targets {missing}"


def test_the_layout_names_every_library_package():
    layout = _section(README, "Layout")
    packages = sorted(p.name for p in (REPO / "src/trustmass").iterdir() if p.is_dir() and not p.name.startswith("__"))
    assert {"core", "deploy", "report"} <= set(packages)
    # the src/trustmass/ tree: lines indented by two spaces, "name/" (or "a/, b/") then the description
    named = {
        name.strip().rstrip("/")
        for line in re.findall(r"^  (\S.*?)(?:\s{2,}|$)", layout, flags=re.M)
        for name in line.split(",")
    }
    missing = [p for p in packages if p not in named]
    assert not missing, f"README.md, 'Layout', does not name src/trustmass/{missing}"
    assert "kernels/" in layout and "docs/" in layout


def test_extending_is_marked_for_the_recipe_check():
    marker = "<!-- extending: verified by tests/recipes (lead) -->"
    assert marker in README and README.index(marker) < README.index("\n## Extending\n")


def _slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("page", [REPO / "README.md", *DOCS], ids=lambda p: p.name)
def test_every_relative_link_resolves(page):
    text = page.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        assert file.exists(), f"{page.name}: link to {target}: no such file"
        if anchor and file.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", file.read_text(encoding="utf-8"), flags=re.M)
            assert anchor in {_slug(h) for h in headings}, f"{page.name}: link to {target}: no such heading"


def test_the_readme_links_every_docs_page():
    assert DOCS, "docs/ holds the measurements and stage notes the README links"
    missing = [p.name for p in DOCS if f"docs/{p.name}" not in README]
    assert not missing, f"README.md links no docs/{missing}"


def test_the_fault_table_names_every_fault_test():
    table = (REPO / "docs/reliability.md").read_text(encoding="utf-8")
    tests = re.findall(
        r"^def (test_\w+)", (REPO / "tests/faults/test_faults.py").read_text(encoding="utf-8"), flags=re.M
    )
    assert len(tests) >= 10
    missing = [t for t in tests if f"`{t}`" not in table]
    assert not missing, f"docs/reliability.md's fault table lacks {missing}"
