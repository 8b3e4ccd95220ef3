"""Triton kernels against the PyTorch twins under ``TRITON_INTERPRET=1`` (CPU), and the dispatcher.

The interpreter cases run in one subprocess (see `kernel_triton_cases.py`): the variable must be set
before triton is first imported, which this pytest process cannot promise.  `make test` runs one case of each
kernel path (:data:`QUICK`, about 10 s); the rest of the grid (about 40 s more) is marked slow (`make test-slow`).
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


#: a case of each kernel (sampled rows, columns, the fused side statistics, restricted attention) and of each path
#: through them (GQA, softcap, window, small tiles, key splits, a passed lse, bf16 roundings, the validation errors)
QUICK = {
    "rows-softcap-window-d24-gqa",
    "rows-splits-window",
    "rows-bf16-logits-emulated",
    "columns-softcap-window-gqa",
    "columns-tiles-odd-windows",
    "side-window-softcap-gqa",
    "side-tiles-window5-softcap",
    "side-lse-window-softcap",
    "side-bf16-logits-emulated",
    "restricted-softcap-window",
    "restricted-group3-window",
    "restricted-invalid",
    "capture-invalid",
}
assert QUICK <= set(CASES), sorted(QUICK - set(CASES))


@pytest.fixture(scope="module")
def interpreter_results(request):
    """The cases of this session's selected tests, computed in one interpreter process."""
    names = sorted(
        item.callspec.params["name"]
        for item in request.session.items
        if item.module is request.module and item.originalname == "test_triton_kernel_matches_twin"
    )
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    env.pop(kernels.BACKEND_ENV, None)
    proc = subprocess.run(
        [sys.executable, str(HERE / "kernel_triton_cases.py"), *names],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@needs_triton
@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n in QUICK else pytest.mark.slow) for n in sorted(CASES)])
def test_triton_kernel_matches_twin(interpreter_results, name):
    result = interpreter_results[name]
    assert "error" not in result, result.get("error")
    for output, stats in result.items():
        if "raised_as_expected" in stats:  # restricted-invalid: the in-kernel validation
            assert stats["raised_as_expected"] == 1, (output, stats)
            continue
        assert stats["max_excess_over_tol"] <= 0, (output, stats, CASES[name].tol)
        assert stats["nonzero_where_twin_zero"] == 0, (output, stats)
        if "exact_row_share" in stats:  # random bf16 inputs: most rows agree to 1e-6
            assert stats["exact_row_share"] >= stats["min_exact_row_share"], (output, stats)


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


# --- the CPU path around the tensor-core redesign (issue 28 item 2): the twins, bitwise as before ------


def _capture_inputs(seed=0, dtype=torch.float32):
    from kernel_oracle import random_case

    q, k, positions = random_case(seed, 4, 96, 32, 5, kv_heads=2, scale=2.0)
    return q.to(dtype), k.to(dtype), positions


@pytest.mark.parametrize(("logits_dtype", "softcap", "window"), [(None, None, None), (torch.bfloat16, 8.0, 13)])
def test_side_statistics_on_the_twins_is_the_two_calls_bitwise(logits_dtype, softcap, window):
    q, k, positions = _capture_inputs(1, logits_dtype or torch.float32)
    kw = dict(scaling=32**-0.5, softcap=softcap, window=window, logits_dtype=logits_dtype)
    p, acc, wsum = kernels.side_statistics(q, k, positions, windows=(2, 4, 32), block_rows=16, backend="torch", **kw)
    assert torch.equal(p, kernels.sampled_row_probs_torch(q, k, positions, **kw))
    acc2, wsum2 = kernels.column_mass_and_window_sums_torch(q, k, positions, windows=(2, 4, 32), block_rows=16, **kw)
    assert torch.equal(acc, acc2) and torch.equal(wsum, wsum2)


def test_the_twins_ignore_a_passed_lse():
    """``lse`` only lets the Triton path skip a pass: the twins' outputs do not depend on it."""
    from restricted_oracle import random_csr, random_inputs

    q, k, positions = _capture_inputs(2)
    bogus = torch.full((4, 96), 123.0)
    kw = dict(scaling=0.2, window=11)
    assert torch.equal(
        kernels.sampled_row_probs(q, k, positions, backend="torch", lse=bogus, **kw),
        kernels.sampled_row_probs(q, k, positions, backend="torch", **kw),
    )
    for a, b in zip(
        kernels.column_mass_and_window_sums(q, k, positions, backend="torch", lse=bogus, **kw),
        kernels.column_mass_and_window_sums(q, k, positions, backend="torch", **kw),
        strict=True,
    ):
        assert torch.equal(a, b)
    q, k, v, rows = random_inputs(3, 4, 2, 7, 64, 16)
    ptr, idx = random_csr(3, 4, rows, 64, None)
    for a, b in zip(
        kernels.restricted_attention(q, k, v, rows, ptr, idx, 0.25, backend="torch", lse=torch.zeros(4, 7)),
        kernels.restricted_attention(q, k, v, rows, ptr, idx, 0.25, backend="torch"),
        strict=True,
    ):
        assert torch.equal(a, b)


@pytest.mark.parametrize("lse", [torch.zeros(4, 95), torch.zeros(4, 96, dtype=torch.float64), torch.zeros(96)])
def test_a_malformed_lse_is_refused_on_every_backend_path(lse):
    q, k, positions = _capture_inputs(4)
    for fn in (kernels.sampled_row_probs, kernels.column_mass_and_window_sums, kernels.side_statistics):
        with pytest.raises(ValueError, match="lse"):
            fn(q, k, positions, 0.2, backend="torch", lse=lse)
