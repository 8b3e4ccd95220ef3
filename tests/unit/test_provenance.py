"""Provenance sidecars and atomic writes."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from trustmass.plumbing import provenance
from trustmass.plumbing.provenance import (
    atomic_write,
    code_version,
    library_sources,
    package_versions,
    sha256_path,
    sidecar_path,
    write_json,
    write_sidecar,
)

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


# ---- hashing --------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 1, (1 << 20) - 1, 3 * (1 << 20) + 17])
def test_sha256_matches_hashlib_across_chunk_boundaries(tmp_path, size):
    data = os.urandom(size)
    path = tmp_path / "blob.bin"
    path.write_bytes(data)
    assert sha256_path(path) == hashlib.sha256(data).hexdigest()


def test_directory_hash_covers_names_and_contents(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for d, order in ((a, ["x", "y/z"]), (b, ["y/z", "x"])):  # same tree, created in another order
        for name in order:
            (d / name).parent.mkdir(parents=True, exist_ok=True)
            (d / name).write_text(name)
    assert sha256_path(a) == sha256_path(b)
    (b / "x").write_text("changed")
    assert sha256_path(a) != sha256_path(b)
    (b / "x").write_text("x")
    (b / "x").rename(b / "w")
    assert sha256_path(a) != sha256_path(b)


# ---- atomic writes --------------------------------------------------------------------------------


def test_atomic_write_renames_into_place(tmp_path):
    target = tmp_path / "sub" / "out.json"
    with atomic_write(target) as tmp:
        assert tmp.parent == target.parent and tmp != target
        assert tmp.name.endswith(".json")  # writers that infer the format from the suffix work
        tmp.write_text("new")
        assert not target.exists()
    assert target.read_text() == "new"
    assert sorted(p.name for p in target.parent.iterdir()) == ["out.json"]


def test_atomic_write_leaves_nothing_on_exception(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("old")
    with pytest.raises(RuntimeError, match="boom"):
        with atomic_write(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("boom")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_atomic_write_on_exception_creates_nothing_new(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        with atomic_write(tmp_path / "out.bin") as tmp:
            tmp.write_bytes(b"x")
            raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_atomic_write_gives_ordinary_permissions(tmp_path):
    mask = os.umask(0o022)
    try:
        with atomic_write(tmp_path / "out.txt") as tmp:
            tmp.write_text("x")
    finally:
        os.umask(mask)
    assert (tmp_path / "out.txt").stat().st_mode & 0o777 == 0o644


def test_atomic_write_of_a_directory_replaces_it(tmp_path):
    target = tmp_path / "shards"
    target.mkdir()
    (target / "stale").write_text("old")
    with atomic_write(target, directory=True) as tmp:
        (tmp / "fresh").write_text("new")
    assert sorted(p.name for p in target.iterdir()) == ["fresh"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shards"]


def test_write_json_round_trips(tmp_path):
    data = {"b": [1, 2.5, None], "a": "x"}
    path = write_json(tmp_path / "d.json", data)
    assert json.loads(path.read_text()) == data
    assert list(json.loads(path.read_text())) == ["b", "a"]  # order kept


def test_write_json_with_unserialisable_data_leaves_nothing(tmp_path):
    with pytest.raises(TypeError):
        write_json(tmp_path / "d.json", {"x": object()})
    assert list(tmp_path.iterdir()) == []


# ---- sidecars -------------------------------------------------------------------------------------


@pytest.fixture
def made(tmp_path):
    inputs = []
    for i in range(2):
        p = tmp_path / f"in{i}.bin"
        p.write_bytes(os.urandom(1000 + i))
        inputs.append(p)
    out = tmp_path / "result.json"
    out.write_text('{"x": 1}\n')
    return out, inputs


def test_sidecar_records_hashes_config_seeds_and_time(made):
    out, inputs = made
    started = time.time() - 2.0
    path = write_sidecar(
        out,
        inputs=inputs,
        config_slice={"budgets": {"enumerated": [4]}},
        seeds={"seed": 7},
        started=started,
        extra={"rule": "r"},
    )
    assert path == sidecar_path(out) and path.name == "result.json.prov.json"
    prov = json.loads(path.read_text())
    assert prov["output"] == {"path": str(out), "sha256": hashlib.sha256(out.read_bytes()).hexdigest(), "bytes": 9}
    assert [r["sha256"] for r in prov["inputs"]] == [hashlib.sha256(p.read_bytes()).hexdigest() for p in inputs]
    assert prov["config"] == {"budgets": {"enumerated": [4]}}
    assert prov["seeds"] == {"seed": 7}
    assert 2.0 <= prov["wall_time_s"] < 60
    assert prov["extra"] == {"rule": "r"}
    assert prov["finished_utc"].endswith("Z") and prov["started_utc"] < prov["finished_utc"]
    for key in ("python", "trustmass", "torch", "transformers", "numpy", "snakemake", "numba", "polars", "scipy"):
        assert prov["versions"][key], key
    assert prov["device"]["cores"] >= 1 and prov["device"]["cpu"]
    assert prov["hostname"] and prov["command"]["argv"]
    assert set(prov["code"]) >= {"describe", "dirty"}


def test_sidecar_for_a_missing_input_is_not_written(made):
    out, inputs = made
    with pytest.raises(FileNotFoundError, match="nope"):
        write_sidecar(out, inputs=[*inputs, out.parent / "nope.bin"], config_slice={}, started=time.time())
    assert not sidecar_path(out).exists()
    assert sorted(p.name for p in out.parent.iterdir()) == ["in0.bin", "in1.bin", "result.json"]


def test_missing_packages_are_reported_not_raised():
    versions = package_versions(("numpy", "surely-not-a-real-distribution-xyz"))
    assert versions["surely-not-a-real-distribution-xyz"] == "not installed"
    assert versions["numpy"][0].isdigit()


def test_writing_a_sidecar_does_not_import_torch(tmp_path):
    out = tmp_path / "o.txt"
    out.write_text("x")
    code = (
        "import sys, time; from trustmass.plumbing.provenance import write_sidecar; "
        f"write_sidecar({str(out)!r}, inputs=[], config_slice={{}}, started=time.time()); "
        "print('torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
    assert json.loads(sidecar_path(out).read_text())["device"]["cuda_device"] is None


# ---- code version ---------------------------------------------------------------------------------


def _git(repo, *args):
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
    }
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


@needs_git
def test_code_version_clean_dirty_and_untracked(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "a.py").write_text("x = 1\n")
    _git(repo, "add", "a.py")
    _git(repo, "commit", "-q", "-m", "one")

    clean = code_version(repo)
    assert clean["dirty"] is False and not clean["describe"].endswith("-dirty")
    assert len(clean["commit"]) == 40 and clean["commit"].startswith(clean["describe"])

    (repo / "new.py").write_text("")  # untracked files do not make the tree dirty (as git describe)
    untracked = code_version(repo)
    assert untracked["dirty"] is False and untracked["untracked"] == 1

    (repo / "a.py").write_text("x = 2\n")
    dirty = code_version(repo / "a.py")
    assert dirty["dirty"] is True and dirty["describe"].endswith("-dirty")

    _git(repo, "tag", "v9.9")
    assert code_version(repo)["describe"] == "v9.9-dirty"


@needs_git
def test_code_version_before_the_first_commit(tmp_path):
    _git(tmp_path, "init", "-q")
    version = code_version(tmp_path)
    assert version["describe"] == "unknown" and version["commit"] is None


def test_code_version_outside_git_is_unknown(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    assert code_version(tmp_path)["describe"] == "unknown"
    assert code_version(tmp_path)["dirty"] is None
    assert code_version(tmp_path / "does-not-exist")["describe"] == "unknown"


def test_code_version_without_git_is_unknown(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no git on PATH
    assert code_version()["describe"] == "unknown"


# ---- library code an output depends on ------------------------------------------------------------


def test_library_sources_follow_imports_within_the_package():
    files = library_sources("trustmass.plumbing.config", relative_to=None)
    names = {f.split("src/trustmass/")[-1] for f in files}
    # config imports its checks, which import the import-free core.windows and core.subset_cap: itself,
    # those modules and the packages on their way (never the selectors, numpy or numba)
    assert names == {
        "__init__.py",
        "plumbing/__init__.py",
        "plumbing/config.py",
        "plumbing/config_checks.py",
        "core/__init__.py",
        "core/windows.py",
        "core/subset_cap.py",
    }
    assert all(os.path.isabs(f) for f in files)


def test_library_sources_reject_unknown_modules():
    with pytest.raises(ModuleNotFoundError, match="trustmass.no_such_module"):
        library_sources("trustmass.no_such_module")


def test_imported_modules_resolve_relative_imports(tmp_path):
    src = tmp_path / "m.py"
    src.write_text(
        "import numpy\nimport trustmass.core.operator\nfrom . import simplex\nfrom .selectors import balancing\n"
        "from ..outside import x\nfrom trustmass.core.enumeration import pool_optimum\n"
    )
    found = set(provenance._imported_modules("trustmass.bench.m", src))
    assert {
        "trustmass.core.operator",
        "trustmass.bench.simplex",
        "trustmass.bench.selectors.balancing",
        "trustmass.core.enumeration",
        "trustmass.core.enumeration.pool_optimum",
    } <= found
    assert "numpy" not in found


def test_imported_modules_see_an_edit_in_the_same_process(tmp_path):
    # the import scan is memoised (a Snakefile parse asks for the same modules once per rule): on the source text,
    # so a module edited after a first scan is scanned again, as in a long-lived process
    src = tmp_path / "m.py"
    src.write_text("import trustmass.core.operator\n")
    assert provenance._imported_modules("trustmass.bench.m", src) == ["trustmass.core.operator"]
    src.write_text("import trustmass.core.simplex\n")
    assert provenance._imported_modules("trustmass.bench.m", src) == ["trustmass.core.simplex"]
    assert provenance._imported_modules("trustmass.other.m", src) == ["trustmass.core.simplex"]


@pytest.mark.parametrize(
    "reader",
    [
        "trustmass.ceiling.records",
        "trustmass.audit.records",
        "trustmass.certification.runner",
        "trustmass.bench.certify",
    ],
)
def test_stages_reading_shards_depend_on_the_contract_not_on_capture(reader):
    """Editing the capture code or a kernel must not rerun every ceiling, audit and certification job."""
    files = library_sources(reader, relative_to=None)
    assert any(f.endswith("src/trustmass/contracts/shards.py") for f in files)
    assert [f for f in files if "/trustmass/capture/" in f or "/kernels/" in f] == []
