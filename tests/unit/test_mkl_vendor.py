"""oneMKL's vendor check answered "Intel" (trustmass.plumbing.mkl_vendor): MKL_CBWR=AVX2 then holds on every x86-64 CPU."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

from trustmass.plumbing.mkl_vendor import ANSWER_INTEL, STATUS_ENV, answer_intel, cpu_vendor, needed

torch = pytest.importorskip("torch")
needs_mkl = pytest.mark.skipif(
    platform.machine() != "x86_64" or not torch.backends.mkl.is_available(), reason="torch without oneMKL here"
)


def test_only_a_non_intel_x86_cpu_with_mkl_cbwr_set_needs_the_answer():
    assert needed({"MKL_CBWR": "AVX2"}, vendor="AuthenticAMD", machine="x86_64") == ""
    assert needed({"MKL_CBWR": "AVX2"}, vendor="HygonGenuine", machine="x86_64") == ""
    assert needed({"MKL_CBWR": "AVX2"}, vendor="GenuineIntel", machine="x86_64") == "intel cpu"
    assert needed({}, vendor="AuthenticAMD", machine="x86_64").startswith("not needed")  # the user opted out
    assert needed({"MKL_CBWR": "AVX2"}, vendor="", machine="aarch64").startswith("not needed")


def test_the_vendor_is_read_from_cpuinfo(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\n")
    assert cpu_vendor(str(info)) == "AuthenticAMD"
    assert cpu_vendor(str(tmp_path / "missing")) == ""


def test_a_library_without_the_function_is_left_alone():
    assert answer_intel("libm.so.6").startswith("unavailable: AttributeError")


def _child(code: str, **env) -> subprocess.CompletedProcess:
    environ = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "MKL_VERBOSE": "1", **env}
    return subprocess.run([sys.executable, "-c", code], env=environ, capture_output=True, text=True, timeout=120)


_PRODUCT = "import torch; torch.ones(7, 576) @ torch.ones(576, 64)"


@needs_mkl
def test_mkl_takes_the_pinned_branch_on_this_cpu():
    """MKL's own report of its branch (CNR:...) after pin_mkl_vendor: AVX2 on every x86-64 CPU, AMD's
    included (where it said CNR:AUTO before, ignoring the pin)."""
    done = _child(
        f"from trustmass.plumbing.mkl_vendor import pin_mkl_vendor; print('status', pin_mkl_vendor()); {_PRODUCT}",
        MKL_CBWR="AVX2",
    )
    assert done.returncode == 0, done.stderr
    assert "CNR:AVX2" in done.stdout, done.stdout
    status = done.stdout.split("status ", 1)[1].splitlines()[0]
    assert status == ("intel cpu" if cpu_vendor() == "GenuineIntel" else "answered")


@needs_mkl
def test_the_answer_is_written_once_and_holds_in_a_forked_child():
    code = (
        "import ctypes, os, torch; from pathlib import Path; "
        "from trustmass.plumbing.mkl_vendor import answer_intel, SYMBOL, ANSWER_INTEL; "
        "lib = Path(torch.__file__).parent / 'lib' / 'libtorch_cpu.so'; "
        "print(answer_intel(lib), answer_intel(lib)); "
        "f = ctypes.cast(getattr(ctypes.CDLL(str(lib)), SYMBOL), ctypes.c_void_p).value; "
        "pid = os.fork(); "
        "os._exit(0 if ctypes.string_at(f, len(ANSWER_INTEL)) == ANSWER_INTEL and "
        "getattr(ctypes.CDLL(str(lib)), SYMBOL)() == 1 else 3) if pid == 0 else "
        "print('child', os.waitpid(pid, 0)[1])"
    )
    done = _child(code, MKL_CBWR="AVX2")
    assert done.returncode == 0, done.stderr
    assert "answered answered" in done.stdout and "child 0" in done.stdout, done.stdout


def test_the_status_is_recorded_for_the_sidecars(monkeypatch):
    from trustmass.plumbing.mkl_vendor import pin_mkl_vendor
    from trustmass.plumbing.provenance import device_info

    environ = {}
    status = pin_mkl_vendor(environ)  # MKL_CBWR unset: nothing written, the reason recorded
    assert status.startswith("not needed") and environ[STATUS_ENV] == status
    monkeypatch.setenv(STATUS_ENV, "answered")
    assert device_info()["mkl_vendor_check"] == "answered"
    assert len(ANSWER_INTEL) == 6
