"""pyproject lists packages explicitly (kernels/ maps to trustmass.kernels): keep the list complete."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_is_listed():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    src = ROOT / "src"
    found = {".".join(p.parent.relative_to(src).parts) for p in (src / "trustmass").rglob("__init__.py")}
    found.add("trustmass.kernels")
    assert (ROOT / "kernels" / "__init__.py").exists()
    assert listed == found, f"pyproject [tool.setuptools] packages must list exactly {sorted(found)}"
