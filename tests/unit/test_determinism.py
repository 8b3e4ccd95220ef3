"""The environment the workflow pins for every job (trustmass.plumbing.determinism): one BLAS thread,
and on an AVX2 machine the kernels every AVX2 machine runs, so that a fresh clone on another machine
reproduces the reference (issue 31, item 5)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trustmass.plumbing import determinism
from trustmass.plumbing.provenance import device_info

REPO = Path(__file__).resolve().parents[2]
AVX2 = frozenset({"avx2", "fma", "sse2"})


def test_an_avx2_machine_gets_the_avx2_kernels_and_one_blas_thread():
    env = determinism.pinned(AVX2)
    assert env["OPENBLAS_CORETYPE"] == "Haswell" and env["ATEN_CPU_CAPABILITY"] == "avx2" and env["MKL_CBWR"] == "AVX2"
    assert all(env[name] == "1" for name in determinism.BLAS_THREAD_VARIABLES)


def test_a_machine_without_avx2_keeps_the_libraries_choice():
    """Forcing Haswell kernels there would stop every job with an illegal instruction."""
    env = determinism.pinned(frozenset({"sse2", "avx"}))
    assert set(env) == set(determinism.BLAS_THREAD_VARIABLES)
    assert determinism.pinned(frozenset()) == env  # no /proc/cpuinfo (not Linux): the same


def test_a_value_the_user_exported_is_kept():
    environ = {"OPENBLAS_CORETYPE": "Zen", "OMP_NUM_THREADS": "4"}
    held = determinism.pin(environ, AVX2)
    assert environ["OPENBLAS_CORETYPE"] == "Zen" and environ["OMP_NUM_THREADS"] == "4"
    assert environ["MKL_CBWR"] == "AVX2" and held["OPENBLAS_NUM_THREADS"] == "1"


def test_cpu_flags_reads_the_flags_line(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse2 avx2 fma avx512f\n")
    assert {"avx2", "fma", "avx512f"} <= determinism.cpu_flags(str(info))
    assert determinism.cpu_flags(str(tmp_path / "missing")) == frozenset()


def test_the_workflow_pins_the_environment_for_its_jobs():
    common = (REPO / "workflow/rules/common.smk").read_text()
    assert "from trustmass.plumbing.determinism import pin as pin_environment" in common
    assert "\npin_environment(os.environ)\n" in common


def test_every_sidecar_records_the_pins(monkeypatch):
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    info = device_info()
    assert info["kernels"]["OPENBLAS_CORETYPE"] == "Haswell" and set(info["kernels"]) == set(determinism.KERNELS)


_PROBE = """
import ctypes, glob, json, os, numpy, torch
names = {}
for path in glob.glob(os.path.join(os.path.dirname(os.path.dirname(numpy.__file__)), "*.libs", "*openblas*")):
    lib = ctypes.CDLL(path)
    for symbol in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename", "openblas_get_corename"):
        if hasattr(lib, symbol):
            getattr(lib, symbol).restype = ctypes.c_char_p
            names[os.path.basename(path)] = getattr(lib, symbol)().decode()
            break
print(json.dumps({"openblas": names, "aten": torch.backends.cpu.get_cpu_capability()}))
"""


@pytest.mark.skipif(not {"avx2", "fma"} <= determinism.cpu_flags(), reason="needs an AVX2 x86-64 CPU")
def test_the_installed_libraries_honour_the_pins():
    """numpy's and scipy's OpenBLAS and torch read the variables when they load (a release that
    renamed one would silently bring back per-CPU kernels)."""
    env = {k: v for k, v in os.environ.items() if k not in determinism.KERNELS}
    determinism.pin(env)
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True).stdout
    seen = json.loads(out.strip().splitlines()[-1])
    assert seen["openblas"] and set(seen["openblas"].values()) == {"Haswell"}, seen
    assert seen["aten"] == "AVX2"


def _snakemake_job_environment(environ: dict, threads: int) -> dict:
    """What snakemake.shell hands a job: the workflow's environment with every thread count = threads."""
    return {**environ, **{name: str(threads) for name in determinism.BLAS_THREAD_VARIABLES}}


def test_a_job_gets_back_the_thread_counts_snakemake_replaced():
    """A 2-thread job's workers would each start 2 OpenBLAS threads: 4 spinning threads on 2 cores."""
    workflow = {}
    determinism.pin(workflow, AVX2)
    job = _snakemake_job_environment(workflow, threads=2)
    determinism.restore_job_threads(job)
    assert all(job[name] == "1" for name in determinism.BLAS_THREAD_VARIABLES)


def test_a_thread_count_the_user_exported_survives_the_job():
    workflow = {"OPENBLAS_NUM_THREADS": "4"}
    determinism.pin(workflow, AVX2)
    job = _snakemake_job_environment(workflow, threads=2)
    determinism.restore_job_threads(job)
    assert job["OPENBLAS_NUM_THREADS"] == "4" and job["OMP_NUM_THREADS"] == "1"


def test_outside_the_workflow_restoring_changes_nothing():
    job = {"OMP_NUM_THREADS": "3"}
    determinism.restore_job_threads(job)
    assert job == {"OMP_NUM_THREADS": "3"}


def test_run_rule_restores_the_threads_before_numpy_loads():
    """The counts are read once, when OpenBLAS loads: the entry point of every script must not load it."""
    probe = "import sys; from trustmass.plumbing.rule_io import run_rule; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
    body = (REPO / "src/trustmass/plumbing/rule_io.py").read_text().split("def run_rule", 1)[1]
    assert body.index("restore_job_threads()") < body.index("start_log(smk)")
