"""The selectors package's import graph is acyclic (read statically, every import counted).

A rule module may import the contract and the row it reads; the registry imports the rules.  An
import inside ``if TYPE_CHECKING:`` is counted like any other: hiding a cycle there is the debt
this test keeps paid.
"""

import ast
import graphlib
from pathlib import Path

import pytest

import trustmass.core.selectors as selectors_package

PACKAGE = "trustmass.core.selectors"
FOLDER = Path(selectors_package.__file__).parent


def module_name(path: Path) -> str:
    return PACKAGE if path.name == "__init__.py" else f"{PACKAGE}.{path.stem}"


def imported_modules(path: Path, modules: set[str]) -> set[str]:
    """The `modules` that `path` imports (absolute or relative, anywhere in it)."""
    here = module_name(path)
    package_of_here = PACKAGE if path.name == "__init__.py" else here.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package_of_here.rsplit(".", node.level - 1)[0] if node.level > 1 else package_of_here
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module
            found.add(source)
            found.update(f"{source}.{alias.name}" for alias in node.names)  # a submodule, when it is one
    return {m for m in found if m in modules and m != here}


def import_graph(folder: Path = FOLDER) -> dict[str, set[str]]:
    """Module -> the package's modules it imports, for the package's files in `folder`."""
    files = sorted(folder.glob("*.py"))
    modules = {module_name(p) for p in files}
    return {module_name(p): imported_modules(p, modules) for p in files}


def test_the_graph_sees_the_registrys_imports():
    graph = import_graph()
    assert f"{PACKAGE}.deployed" in graph[f"{PACKAGE}.registry"]
    assert f"{PACKAGE}.value_aware" in graph[f"{PACKAGE}.registry"]


def test_selector_imports_are_acyclic():
    try:
        order = list(graphlib.TopologicalSorter(import_graph()).static_order())
    except graphlib.CycleError as exc:
        raise AssertionError(f"import cycle in {PACKAGE}: {' -> '.join(exc.args[1])}") from None
    assert order.index(f"{PACKAGE}.deployed") < order.index(f"{PACKAGE}.registry")


def test_a_cycle_is_reported(tmp_path):
    """The check itself can fail: a rule importing the registry under TYPE_CHECKING closes a cycle."""
    for p in FOLDER.glob("*.py"):
        (tmp_path / p.name).write_text(p.read_text(encoding="utf-8"), encoding="utf-8")
    rule = tmp_path / "deployed.py"
    rule.write_text(
        rule.read_text(encoding="utf-8")
        + "\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from trustmass.core.selectors.registry import REGISTRY\n",
        encoding="utf-8",
    )
    with pytest.raises(graphlib.CycleError):
        list(graphlib.TopologicalSorter(import_graph(tmp_path)).static_order())
