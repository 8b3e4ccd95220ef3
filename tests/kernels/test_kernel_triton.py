"""Triton kernels against the PyTorch twins under ``TRITON_INTERPRET=1`` (CPU), and the dispatcher.

The interpreter cases run in one subprocess (see `kernel_triton_cases.py`): the variable must be set
before triton is first imported, which this pytest process cannot promise.
"""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from kernel_triton_cases import CASES

from trustmass import kernels

HERE = Path(__file__).resolve().parent
HAS_TRITON = importlib.util.find_spec("triton") is not None
needs_triton = pytest.mark.skipif(
    not HAS_TRITON,
    reason="triton is not installed: pip install -e '.[kernels]' (triton==3.9.0) to run the interpreter tests",
)


@pytest.fixture(scope="module")
def interpreter_results():
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    env.pop(kernels.BACKEND_ENV, None)
    proc = subprocess.run(
        [sys.executable, str(HERE / "kernel_triton_cases.py")],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@needs_triton
@pytest.mark.parametrize("name", sorted(CASES))
def test_triton_kernel_matches_twin(interpreter_results, name):
    result = interpreter_results[name]
    assert "error" not in result, result.get("error")
    for output, stats in result.items():
        assert stats["max_excess_over_tol"] <= 0, (output, stats, CASES[name].tol)
        assert stats["nonzero_where_twin_zero"] == 0, (output, stats)


def test_auto_backend_on_cpu_is_torch(monkeypatch):
    monkeypatch.delenv(kernels.BACKEND_ENV, raising=False)
    assert kernels.resolve_backend(torch.zeros(1, 2, 4)) == "torch"
    monkeypatch.setenv(kernels.BACKEND_ENV, "torch")
    assert kernels.resolve_backend(torch.zeros(1, 2, 4)) == "torch"


def test_unknown_backend_is_named(monkeypatch):
    monkeypatch.setenv(kernels.BACKEND_ENV, "cuda")
    with pytest.raises(ValueError, match=kernels.BACKEND_ENV):
        kernels.resolve_backend(torch.zeros(1, 2, 4))


@needs_triton
def test_forcing_triton_on_cpu_without_interpreter_is_explained():
    # a fresh process without TRITON_INTERPRET: the import works, the CPU launch is refused with the fix
    code = (
        "import torch, trustmass.kernels as K\n"
        "assert K.triton_available()\n"
        "try:\n"
        "    K.sampled_row_probs(torch.zeros(1, 4, 16), torch.zeros(1, 4, 16), torch.tensor([[1]]), 0.25, backend='triton')\n"
        "except RuntimeError as e:\n"
        "    assert 'TRITON_INTERPRET=1' in str(e), e\n"
        "else:\n"
        "    raise SystemExit('no error')\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", kernels.BACKEND_ENV)}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_package_imports_and_runs_without_triton():
    code = (
        "import sys; sys.modules['triton'] = None  # as if triton were not installed\n"
        "import torch, trustmass.kernels as K\n"
        "assert not K.triton_available()\n"
        "q = torch.randn(2, 8, 4)\n"
        "p = K.sampled_row_probs(q, q, torch.tensor([[3], [7]]), 0.5)\n"
        "assert p.shape == (2, 1, 8)\n"
        "acc, w = K.column_mass_and_window_sums(q, q, torch.tensor([[3], [7]]), 0.5)\n"
        "assert acc.shape == (2, 1, 8) and w.shape == (2, 1, 5, 8)\n"
        "try:\n"
        "    K.resolve_backend(q, 'triton')\n"
        "except RuntimeError as e:\n"
        "    assert 'not installed' in str(e), e\n"
        "else:\n"
        "    raise SystemExit('no error')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
