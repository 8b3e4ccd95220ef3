"""The PyTorch twins against the dense eager oracle (and the oracle against transformers itself)."""

from types import SimpleNamespace

import pytest
import torch
from kernel_oracle import dense_column_stats, dense_probs, dense_rows, hf_additive_mask, random_case

from trustmass.kernels import column_mass_and_window_sums_torch, sampled_row_probs_torch

WINDOWS = (2, 4, 8, 16, 32)
# (logits dtype, softcap, sliding window)
VARIANTS = [
    (None, None, None),
    (None, None, 13),
    (None, 8.0, None),
    (None, 8.0, 13),
    (torch.bfloat16, None, None),
    (torch.bfloat16, 8.0, 13),
    (torch.float16, 8.0, None),
]
IDS = [f"{'fp32' if dt is None else str(dt)[6:]}-cap{c}-win{w}" for dt, c, w in VARIANTS]


def _inputs(logits_dtype, seed=0, n=96, heads=4, kv_heads=2, d=32, rows=5):
    q, k, positions = random_case(seed, heads, n, d, rows, kv_heads=kv_heads, scale=2.0)
    if logits_dtype is not None:  # a bf16/fp16 model hands its own dtype to the capture
        q, k = q.to(logits_dtype), k.to(logits_dtype)
    return q, k, positions, d**-0.5


@pytest.mark.parametrize(("logits_dtype", "softcap", "window"), VARIANTS, ids=IDS)
def test_sampled_rows_bitwise_equal_eager(logits_dtype, softcap, window):
    q, k, positions, scaling = _inputs(logits_dtype)
    P = dense_probs(q, k, scaling, softcap, window, logits_dtype)
    p = sampled_row_probs_torch(q, k, positions, scaling, softcap, window, logits_dtype)
    assert p.dtype == torch.float32 and p.shape == (4, 5, 96)
    expected = dense_rows(P, positions)
    # the same torch ops on the same rows: equal to eager bit for bit (checked at 1e-6 to name the size)
    torch.testing.assert_close(p, expected, rtol=0, atol=1e-6)
    assert torch.equal(p, expected)
    # masked keys are exact zeros; rows sum to one
    i = positions.unsqueeze(-1)
    j = torch.arange(96)
    masked = (j > i) if window is None else (j > i) | (j <= i - window)
    assert torch.all(p[masked] == 0)
    torch.testing.assert_close(p.double().sum(-1), torch.ones(4, 5, dtype=torch.float64), rtol=0, atol=1e-6)


@pytest.mark.parametrize(("logits_dtype", "softcap", "window"), VARIANTS, ids=IDS)
@pytest.mark.parametrize("block_rows", [1, 7, 32, 64, 1000])
def test_column_mass_and_window_sums_match_dense(logits_dtype, softcap, window, block_rows):
    q, k, positions, scaling = _inputs(logits_dtype, seed=1)
    P = dense_probs(q, k, scaling, softcap, window, logits_dtype)
    acc_ref, wsum_ref = dense_column_stats(P, positions, WINDOWS)
    acc, wsum = column_mass_and_window_sums_torch(
        q, k, positions, scaling, softcap, window, logits_dtype, windows=WINDOWS, block_rows=block_rows
    )
    assert acc.dtype == wsum.dtype == torch.float32
    assert acc.shape == (4, 5, 96) and wsum.shape == (4, 5, len(WINDOWS), 96)
    # A 1-row block's float16 logits come from a matrix-vector product, which some CPUs' BLAS accumulates in
    # another order than the matrix product eager runs: a float16 ulp on a few logits (5.6e-5 measured on
    # 2026-12-02's machine); every other block size, and every float32 / bfloat16 case, is held to 1e-6.
    tol = 2e-4 if (block_rows == 1 and logits_dtype == torch.float16) else 1e-6
    torch.testing.assert_close(acc.double(), acc_ref, rtol=tol, atol=tol)
    torch.testing.assert_close(wsum.double(), wsum_ref, rtol=tol, atol=tol)


def test_window_sums_examples_by_hand():
    """Worked example: position 0 (a single visible key) and the newest row's own window."""
    q, k, positions, scaling = _inputs(None, seed=2, heads=2, kv_heads=1)
    positions[:, 0] = 0
    acc, wsum = column_mass_and_window_sums_torch(q, k, positions, scaling, windows=(1, 2, 200))
    # row 0 sees only key 0 with probability 1: every sum over rows {0} is e_0
    e0 = torch.zeros(96)
    e0[0] = 1
    assert torch.equal(acc[:, 0], e0.expand(2, 96))
    assert torch.equal(wsum[:, 0, 0], e0.expand(2, 96))
    # window 1 is the row itself; a window longer than the prefix is the accumulated mass
    p = sampled_row_probs_torch(q, k, positions, scaling)
    torch.testing.assert_close(wsum[:, :, 0], p, rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(wsum[:, :, 2], acc, rtol=1e-6, atol=1e-6)
    # the accumulated mass of row i sums to i + 1 (each row of P sums to one)
    torch.testing.assert_close(acc.double().sum(-1), (positions + 1).double(), rtol=1e-6, atol=0)


def test_long_context_relative_accuracy():
    """N = 1024, a heavy first column (accumulated mass ~156): float64 chunk sums keep rtol 1e-6."""
    q, k, positions = random_case(3, 2, 1024, 16, 4, scale=3.0)
    scaling = 0.25
    P = dense_probs(q, k, scaling)
    acc_ref, wsum_ref = dense_column_stats(P, positions, WINDOWS)
    acc, wsum = column_mass_and_window_sums_torch(q, k, positions, scaling, windows=WINDOWS, block_rows=128)
    torch.testing.assert_close(acc.double(), acc_ref, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(wsum.double(), wsum_ref, rtol=1e-6, atol=1e-6)


def test_rows_past_the_last_position_do_not_matter():
    """Keys/queries after max(positions) are never read: garbage there changes nothing."""
    q, k, positions, scaling = _inputs(None, seed=4)
    positions = positions.clamp(max=60)
    acc, wsum = column_mass_and_window_sums_torch(q, k, positions, scaling, block_rows=16)
    q2, k2 = q.clone(), k.clone()
    q2[:, 61:], k2[:, 61:] = float("nan"), float("nan")
    acc2, wsum2 = column_mass_and_window_sums_torch(q2, k2, positions, scaling, block_rows=16)
    assert torch.equal(acc, acc2) and torch.equal(wsum, wsum2)
    assert torch.all(acc[..., 61:] == 0)


@pytest.mark.parametrize("window", [None, 5])
def test_oracle_is_transformers_eager(window):
    """The oracle reproduces transformers 5.2 eager attention (Gemma-2's, with soft-capping) bit for bit."""
    from transformers.models.gemma2.modeling_gemma2 import eager_attention_forward as gemma2_eager
    from transformers.models.llama.modeling_llama import eager_attention_forward as llama_eager

    q, k, _, scaling = _inputs(torch.bfloat16, seed=5, heads=2, kv_heads=1)
    module = SimpleNamespace(num_key_value_groups=1, training=False, head_dim=q.shape[-1])
    query, key = q.unsqueeze(0), k.unsqueeze(0)
    for dtype in (torch.float32, torch.bfloat16):
        mask = hf_additive_mask(q.shape[1], window, dtype)
        _, w_llama = llama_eager(module, query.to(dtype), key.to(dtype), key.to(dtype), mask, scaling=scaling)
        _, w_gemma = gemma2_eager(
            module, query.to(dtype), key.to(dtype), key.to(dtype), mask, scaling=scaling, softcap=8.0
        )
        logits_dtype = None if dtype == torch.float32 else dtype
        # eager returns softmax(..., float32).to(query.dtype): compare after the same cast
        assert torch.equal(dense_probs(q, k, scaling, None, window, logits_dtype).to(dtype), w_llama[0])
        assert torch.equal(dense_probs(q, k, scaling, 8.0, window, logits_dtype).to(dtype), w_gemma[0])


def test_sliding_window_convention_is_transformers():
    """Visible iff i - W < j <= i (masking_utils.sliding_window_overlay + causal)."""
    mask = hf_additive_mask(10, 3, torch.float32)[0, 0] == 0
    i, j = torch.arange(10).unsqueeze(-1), torch.arange(10)
    assert torch.equal(mask, (j <= i) & (j > i - 3))
    q, k, _, scaling = _inputs(None, seed=6, n=10, heads=1, kv_heads=1)
    p = sampled_row_probs_torch(q, k, torch.tensor([[9, 2]]), scaling, window=3)
    assert torch.equal(p[0, 0] > 0, mask[9]) and torch.equal(p[0, 1] > 0, mask[2])


def test_bf16_emulation_differs_from_fp32_logits():
    """The emulation is not a no-op: fp32 logits of bf16 inputs give different rows."""
    q, k, positions, scaling = _inputs(torch.bfloat16, seed=7)
    emulated = sampled_row_probs_torch(q, k, positions, scaling, logits_dtype=torch.bfloat16)
    plain = sampled_row_probs_torch(q, k, positions, scaling)
    assert (emulated - plain).abs().max() > 1e-4
    torch.testing.assert_close(plain, dense_rows(dense_probs(q, k, scaling), positions), rtol=0, atol=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        (dict(q=torch.zeros(2, 8, 4), k=torch.zeros(1, 8, 4)), ValueError),
        (dict(positions=torch.tensor([[0, 8], [1, 2]])), ValueError),
        (dict(positions=torch.tensor([[0.0, 1.0], [1.0, 2.0]])), TypeError),
        (dict(positions=torch.tensor([[0, 1]])), ValueError),
        (dict(q=torch.zeros(2, 8, 4, dtype=torch.float64), k=torch.zeros(2, 8, 4, dtype=torch.float64)), TypeError),
        (dict(logits_dtype=torch.float64), TypeError),
    ],
)
def test_bad_inputs_are_named(kwargs, error):
    args = dict(q=torch.zeros(2, 8, 4), k=torch.zeros(2, 8, 4), positions=torch.tensor([[0, 1], [2, 3]]))
    logits_dtype = kwargs.pop("logits_dtype", None)
    args.update(kwargs)
    with pytest.raises(error):
        sampled_row_probs_torch(args["q"], args["k"], args["positions"], 0.5, logits_dtype=logits_dtype)
    with pytest.raises(error):
        column_mass_and_window_sums_torch(args["q"], args["k"], args["positions"], 0.5, logits_dtype=logits_dtype)
