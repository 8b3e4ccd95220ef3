"""Device checks (skipped without CUDA): compiled Triton kernels vs the twins and vs CUDA eager.

Run on a GPU machine with ``pytest tests/kernels/test_kernel_cuda.py`` (triton installed).  The CPU
interpreter tests cover the kernels' logic in fp32; these cover what only a GPU shows: compilation,
libdevice math, ``tl.dot`` in IEEE fp32, and the bf16 emulation against CUDA's own eager roundings.
"""

import importlib.util

import pytest
import torch
from kernel_oracle import dense_column_stats, dense_probs, dense_rows, random_case
from trustmass.kernels import column_mass_and_window_sums, resolve_backend, sampled_row_probs

pytestmark = [
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
    pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="needs triton (pip install '.[kernels]')"),
]
VARIANTS = [(None, None), (None, 19), (30.0, None), (30.0, 19)]  # (softcap, window)


def _case(n=1024, heads=4, kv_heads=2, d=64, rows=6, seed=0, dtype=torch.float32):
    q, k, positions = random_case(seed, heads, n, d, rows, kv_heads=kv_heads, scale=2.0)
    return q.cuda().to(dtype), k.cuda().to(dtype), positions.cuda(), d**-0.5


def test_auto_backend_is_triton_on_cuda(monkeypatch):
    monkeypatch.delenv("TRUSTMASS_KERNELS", raising=False)
    assert resolve_backend(torch.zeros(1, 2, 4, device="cuda")) == "triton"


@pytest.mark.parametrize(("softcap", "window"), VARIANTS)
def test_compiled_triton_matches_twin_fp32(softcap, window):
    q, k, positions, scaling = _case()
    kw = {"scaling": scaling, "softcap": softcap, "window": window}
    p_tr = sampled_row_probs(q, k, positions, backend="triton", **kw)
    p_tw = sampled_row_probs(q, k, positions, backend="torch", **kw)
    torch.testing.assert_close(p_tr, p_tw, rtol=1e-5, atol=1e-6)
    acc_tr, w_tr = column_mass_and_window_sums(q, k, positions, backend="triton", **kw)
    acc_tw, w_tw = column_mass_and_window_sums(q, k, positions, backend="torch", **kw)
    torch.testing.assert_close(acc_tr, acc_tw, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(w_tr, w_tw, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("softcap", "window"), VARIANTS)
def test_bf16_emulation_against_cuda_eager(softcap, window):
    q, k, positions, scaling = _case(dtype=torch.bfloat16, seed=1)
    kw = {"scaling": scaling, "softcap": softcap, "window": window, "logits_dtype": torch.bfloat16}
    P = dense_probs(q, k, scaling, softcap, window, torch.bfloat16)  # CUDA eager, bf16 logits
    eager_rows = dense_rows(P, positions)
    # the twin runs eager's own ops on the device: equal
    assert torch.equal(sampled_row_probs(q, k, positions, backend="torch", **kw), eager_rows)
    # Triton accumulates the bf16 products in its own order: a logit may round the other way,
    # rarely; most rows agree to float32 precision and none by more than a bf16 step
    p_tr = sampled_row_probs(q, k, positions, backend="triton", **kw)
    dev = (p_tr - eager_rows).abs().amax(-1)
    assert float(dev.max()) < 4e-3
    assert float((dev < 1e-6).float().mean()) > 0.5, dev
    acc_ref, w_ref = dense_column_stats(P.cpu(), positions.cpu(), (2, 4, 8, 16, 32))
    acc_tw, w_tw = column_mass_and_window_sums(q, k, positions, backend="torch", **kw)
    torch.testing.assert_close(acc_tw.cpu().double(), acc_ref, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(w_tw.cpu().double(), w_ref, rtol=1e-6, atol=1e-6)


def test_long_context_memory_on_cuda():
    """N = 16384, 8 heads: the streamed pass stays far below one head's P (1 GiB in fp32)."""
    q, k, positions, scaling = _case(n=16384, heads=8, kv_heads=2, d=128, seed=2)
    positions[:, 0] = 16383
    for backend in ("triton", "torch"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        column_mass_and_window_sums(q, k, positions, scaling, backend=backend, block_rows=128)
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() - base
        assert peak < 16384 * 16384 * 4 // 4, (backend, peak)
