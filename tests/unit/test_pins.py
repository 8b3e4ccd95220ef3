"""One set of exact pins: pyproject.toml, the conda env for clusters, and the Makefile's torch."""

import re
import shutil
import subprocess
import sys
import tomllib

import pytest
import yaml

from conftest import REPO

PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9][A-Za-z0-9.+!_-]*)$")


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()  # PEP 503


def pins(requirements) -> dict[str, str]:
    out = {}
    for req in requirements:
        match = PIN.match(req.strip())
        assert match, f"{req!r} is not an exact pin (name==version)"
        name = normalise(match.group(1))
        assert name not in out, f"{name} is pinned twice"
        out[name] = match.group(2)
    return out


@pytest.fixture(scope="module")
def project():
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]


@pytest.fixture(scope="module")
def conda_env():
    return yaml.safe_load((REPO / "envs" / "trustmass.yaml").read_text(encoding="utf-8"))


def test_every_dependency_and_extra_is_an_exact_pin(project):
    pins(project["dependencies"])
    for extra, requirements in project["optional-dependencies"].items():
        pins(requirements)


def test_conda_env_pins_equal_pyproject_dependencies_plus_slurm_and_kernels(project, conda_env):
    extras = project["optional-dependencies"]
    expected = pins(project["dependencies"]) | pins(extras["slurm"]) | pins(extras["kernels"])
    [pip_section] = [d["pip"] for d in conda_env["dependencies"] if isinstance(d, dict) and "pip" in d]
    requirements = [r for r in pip_section if not r.startswith("-")]  # `-e ..` installs the package
    assert pins(requirements) == expected
    assert "-e .." in pip_section


def test_conda_env_python_matches_requires_python(project, conda_env):
    pythons = [d for d in conda_env["dependencies"] if isinstance(d, str) and d.startswith("python")]
    assert pythons == ["python=3.11"]
    assert project["requires-python"] == ">=3.11,<3.12"
    assert sys.version_info[:2] == (3, 11)


def make_venv_plan(tmp_path, *variables: str) -> list[str]:
    """The commands `make venv` would run (make -n), one per line."""
    return subprocess.run(
        ["make", "-n", "-B", "venv", f"VENV={tmp_path / 'venv'}", *variables],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_make_installs_pinned_torch_before_the_package(project, tmp_path, installer):
    [torch] = [r for r in project["dependencies"] if r.startswith("torch==")]
    plan = make_venv_plan(tmp_path, f"INSTALLER={installer}")
    install = "uv pip install" if installer == "uv" else "-m pip install --no-input"
    installs = [i for i, line in enumerate(plan) if install in line]
    assert len(installs) == 2, plan
    torch_line, package_line = (plan[i] for i in installs)
    assert f'"{torch}"' in torch_line and "-e '.[test,slurm,kernels]'" not in torch_line, plan
    assert "-e '.[test,slurm,kernels]'" in package_line, plan
    if installer == "uv":  # pip falls back for each step, with the same arguments
        assert f'-m pip install --no-input "{torch}"' in torch_line, plan
        assert "-m pip install --no-input -e '.[test,slurm,kernels]'" in package_line, plan


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_uv_is_an_exact_pin_installed_before_torch(tmp_path):
    plan = make_venv_plan(tmp_path)
    [bootstrap] = [i for i, line in enumerate(plan) if '-m pip install --no-input --quiet "uv==' in line]
    assert PIN.match(re.search(r'"(uv==[^"]+)"', plan[bootstrap]).group(1))
    assert bootstrap < min(i for i, line in enumerate(plan) if "uv pip install" in line)


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_an_unknown_installer_is_refused_naming_the_choices(tmp_path):
    result = subprocess.run(
        ["make", "-n", "-B", "venv", f"VENV={tmp_path / 'venv'}", "INSTALLER=conda"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0 and "INSTALLER=conda: use uv or pip" in result.stderr
