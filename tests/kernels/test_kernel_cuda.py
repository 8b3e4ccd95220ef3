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


# --- the tensor-core kernels (issue 28 item 2): what only a GPU shows -----------------------------------


def _share(dev: torch.Tensor, tol: float) -> float:
    return float((dev < tol).double().mean())


@pytest.mark.parametrize(("softcap", "window"), VARIANTS)
def test_compiled_fused_side_statistics_matches_twin_fp32(softcap, window):
    """fp32 models keep the exact path (IEEE fp32 dots, libdevice exp, float64 sums)."""
    from trustmass.kernels import side_statistics

    q, k, positions, scaling = _case()
    kw = {"scaling": scaling, "softcap": softcap, "window": window}
    for got, want in zip(
        side_statistics(q, k, positions, backend="triton", **kw),
        side_statistics(q, k, positions, backend="torch", **kw),
        strict=True,
    ):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("softcap", "window"), VARIANTS)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_native_dtype_side_statistics_against_cuda_eager(softcap, window, dtype):
    """bf16/fp16 operands straight into the tensor cores, logits rounded as eager rounds them: the
    rows are eager's up to a logit the MMA's summation order rounds the other way (a model-dtype step,
    rarely); the column sums likewise."""
    from trustmass.kernels import side_statistics

    q, k, positions, scaling = _case(dtype=dtype, seed=3)
    kw = {"scaling": scaling, "softcap": softcap, "window": window, "logits_dtype": dtype}
    P = dense_probs(q, k, scaling, softcap, window, dtype)  # CUDA eager
    p, acc, wsum = side_statistics(q, k, positions, backend="triton", **kw)
    dev = (p - dense_rows(P, positions)).abs().amax(-1)
    assert float(dev.max()) < 4e-3 and _share(dev, 1e-6) > 0.5, dev
    acc_ref, w_ref = dense_column_stats(P.cpu(), positions.cpu(), (2, 4, 8, 16, 32))
    for got, ref in ((acc, acc_ref), (wsum, w_ref)):
        d = (got.cpu().double() - ref).abs()
        assert float(d.max()) < 5e-2 and _share(d, 1e-5) > 0.9, float(d.max())


def test_column_pass_with_the_layers_flash_lse():
    """A bf16 layer without emulation (fp32 logits of bf16 operands, flash semantics): the column pass
    fed the log-sum-exp of torch's flash SDPA equals the one that computes its own statistics."""
    from trustmass.kernels import column_mass_and_window_sums

    q, k, positions, scaling = _case(dtype=torch.bfloat16, seed=4, heads=4, kv_heads=4)
    try:
        lse = torch.ops.aten._scaled_dot_product_flash_attention(
            q[None], k[None], k[None], 0.0, True, False, scale=scaling
        )[1][0]
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"no flash SDPA here: {exc}")
    own = column_mass_and_window_sums(q, k, positions, scaling, backend="triton")
    fed = column_mass_and_window_sums(q, k, positions, scaling, backend="triton", lse=lse.float().contiguous())
    for a, b in zip(fed, own, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("softcap", "window"), VARIANTS)
def test_compiled_restricted_attention(softcap, window):
    """fp32: the twin to 1e-5; bf16 with eager's roundings: most rows to 1e-6, none by more than a
    bf16 step; forced key splits and a reused lse give the same rows."""
    from restricted_oracle import random_csr, random_inputs

    from trustmass.kernels import restricted_attention
    from trustmass.kernels.triton_restricted import restricted_attention_triton

    q, k, v, rows = random_inputs(5, 8, 2, 96, 4096, 128, scale=2.0)
    ptr, idx = random_csr(5, 8, rows, 4096, window)
    q, k, v, rows, ptr, idx = (t.cuda() for t in (q, k, v, rows, ptr, idx))
    kw = {"scaling": 128**-0.5, "softcap": softcap, "window": window}
    got = restricted_attention(q, k, v, rows, ptr, idx, backend="triton", **kw)
    want = restricted_attention(q, k, v, rows, ptr, idx, backend="torch", **kw)
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    one_split = restricted_attention_triton(q, k, v, rows, ptr, idx, **kw, splits=1)
    reused = restricted_attention(q, k, v, rows, ptr, idx, backend="triton", lse=got[2], **kw)
    for a, b, c in zip(got, one_split, reused, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(a, c, rtol=1e-5, atol=1e-6)
    qb, kb, vb = (t.to(torch.bfloat16) for t in (q, k, v))
    kw["logits_dtype"] = torch.bfloat16
    out_tr, mass_tr, _ = restricted_attention(qb, kb, vb, rows, ptr, idx, backend="triton", **kw)
    out_tw, mass_tw, _ = restricted_attention(qb, kb, vb, rows, ptr, idx, backend="torch", **kw)
    dev = (out_tr - out_tw).abs().amax(-1)
    assert float(dev.max()) < 4e-2 and _share(dev, 1e-5) > 0.5, dev
    assert float((mass_tr - mass_tw).abs().max()) < 4e-3


def test_restricted_attention_refuses_a_bad_kept_set_on_cuda():
    from restricted_oracle import keep_all_csr, random_inputs

    from trustmass.kernels import restricted_attention

    q, k, v, _ = random_inputs(7, 4, 2, 5, 16, 8)
    rows = torch.tensor([0, 3, 7, 12, 15])
    ptr, idx = keep_all_csr(4, rows, 16, 4)
    idx[2] = 9  # a future key
    with pytest.raises(ValueError, match="kept_idx"):
        restricted_attention(*(t.cuda() for t in (q, k, v, rows, ptr, idx)), 0.3, window=4, backend="triton")
