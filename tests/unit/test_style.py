"""The code base passes ruff's lint and is formatted by ruff (configured in pyproject.toml)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO


def _ruff() -> str:
    found = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if found is None:
        pytest.fail("ruff is not installed; fix: `make venv` (it is a pinned test dependency in pyproject.toml)")
    return found


def test_ruff_lint_is_clean():
    done = subprocess.run([_ruff(), "check", "--no-cache", "."], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]


def test_ruff_format_leaves_everything_unchanged():
    done = subprocess.run([_ruff(), "format", "--check", "--no-cache", "."], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, "run `ruff format .`:\n" + done.stdout[-6000:] + done.stderr[-2000:]


def test_no_noqa_for_what_the_configuration_covers():
    """Rule scripts get `snakemake` as a builtin (scripts/ruff.toml) and import inside main(): no F821/E402 noqa."""
    noisy = [
        str(p.relative_to(REPO))
        for p in (REPO / "scripts").glob("*.py")
        if "noqa: F821" in p.read_text() or "noqa: E402" in p.read_text()
    ]
    assert not noisy, f"scripts with F821/E402 noqa: {noisy}"
