"""The library's layout reads as the paper's chain, and imports point down only.

Layers, bottom up: core (shared math, no I/O); plumbing, contracts and plan (config, provenance, rule glue,
the file formats stages hand over, the study's paths and target lists); sources; the stages
(capture, ceiling, certification, audit, selfcheck, loss, deploy), which hand data over by files and never
import each other; the reporting layer; the tools (bench, cli, rehearsal).  Found statically (ast): every
``trustmass`` import of every module, at any depth.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "trustmass"
LAYERS = {
    "core": 0,
    "plumbing": 1,
    "contracts": 1,
    "kernels": 1,
    "plan": 1,
    "sources": 2,
    "capture": 3,
    "ceiling": 3,
    "certification": 3,
    "audit": 3,
    "selfcheck": 3,
    "loss": 3,
    "deploy": 3,
    "report": 4,
    "bench": 5,
    "cli": 5,
    "rehearsal": 5,
}
STAGES = {name for name, layer in LAYERS.items() if layer == 3}
#: the most lines a library module may have before it should be split
MAX_LINES = 600


def _package_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "trustmass" else None


def _imports(path: Path) -> set[str]:
    here = "trustmass." + ".".join(path.relative_to(SRC).with_suffix("").parts)
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")[: -node.level]
                out.add(".".join(base + ([node.module] if node.module else [])))
            elif node.module:
                out.add(node.module)
                out |= {f"{node.module}.{a.name}" for a in node.names}
    return {m for m in out if m.startswith("trustmass.")}


MODULES = sorted(p for p in SRC.rglob("*.py") if p.parts[len(SRC.parts)] in LAYERS)


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(SRC)) for p in MODULES])
def test_imports_point_down_and_stages_do_not_import_each_other(path):
    own = path.relative_to(SRC).parts[0]
    for module in _imports(path):
        other = _package_of(module)
        if other is None or other == own or other not in LAYERS:
            continue
        assert not (own in STAGES and other in STAGES), (
            f"{path.relative_to(SRC)} imports {module}: stages hand data over by files"
        )
        assert LAYERS[other] <= LAYERS[own], (
            f"{path.relative_to(SRC)} ({own}) imports {module} ({other}), a layer above it"
        )


def test_every_package_has_a_layer():
    packages = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages <= set(LAYERS), f"give {sorted(packages - set(LAYERS))} a layer here"
    assert not [p.name for p in SRC.glob("*.py") if p.name != "__init__.py"], "library modules live in a package"


def test_no_module_is_too_long_to_read():
    long = {
        str(p.relative_to(SRC)): n
        for p in SRC.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"split these modules (over {MAX_LINES} lines): {long}"


def test_no_private_name_is_imported_across_modules():
    found = []
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("trustmass"):
                found += [
                    f"{path.relative_to(SRC)}: {node.module}.{a.name}" for a in node.names if a.name.startswith("_")
                ]
    assert not found, found


#: import cycles between modules of one package that predate this check (issue 30 item 5); drop an entry once broken
KNOWN_CYCLES: set[frozenset[str]] = set()


def _module_graph() -> dict[str, set[str]]:
    """module -> the trustmass modules it imports (at any depth; a package's ``__init__`` is the package)."""
    paths = {
        ".".join(("trustmass", *p.relative_to(SRC).with_suffix("").parts)).removesuffix(".__init__"): p
        for p in SRC.rglob("*.py")
    }
    graph = {}
    for name, path in paths.items():
        found = set()
        for module in _imports(path):
            while module not in paths:  # trustmass.a.b.name -> the module trustmass.a.b
                module = module.rpartition(".")[0]
            if module != name and not name.startswith(module + "."):  # a module may import its own package
                found.add(module)
        graph[name] = found
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while not component or w != v:
                w = stack.pop()
                component.add(w)
            if len(component) > 1:
                out.append(frozenset(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_modules_import_each_other_one_way_only():
    """No two modules import each other, directly or round a loop (a shared piece goes into a module of its own)."""
    cycles = [sorted(c) for c in _cycles(_module_graph()) if c not in KNOWN_CYCLES]
    assert not cycles, f"import cycles (move the shared piece into a lower module): {cycles}"


def test_the_cycle_check_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset("abc")]
