"""`restricted_attention`'s PyTorch twin against transformers' attention and a float64 dense oracle.

The Triton kernels are compared with this twin under the interpreter in `kernel_triton_cases.py`
(the ``restricted-*`` cases, consumed by `test_kernel_triton.py`).
"""

import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch
from kernel_oracle import dense_probs, dense_rows, hf_additive_mask
from restricted_oracle import dense_reference, keep_all_csr, random_csr, random_inputs, visible
from test_kernel_memory import LargestTensor
from torch.utils._pytree import tree_flatten

from trustmass.kernels import restricted_attention, restricted_attention_torch, sampled_row_probs_torch

HQ, HKV, N, D, M = 4, 2, 96, 32, 17
# (softcap, sliding window)
VARIANTS = [(None, None), (None, 13), (8.0, None), (8.0, 13)]
IDS = [f"cap{c}-win{w}" for c, w in VARIANTS]


def _model_attention(q_full, k, v, scaling, softcap, window, impl):
    """transformers' own attention output ``[Hq, N, d]`` (Llama eager / SDPA; Gemma-2 eager for soft-capping)."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward
    from transformers.models.gemma2.modeling_gemma2 import eager_attention_forward as gemma2_eager
    from transformers.models.llama.modeling_llama import eager_attention_forward as llama_eager

    module = SimpleNamespace(num_key_value_groups=q_full.shape[0] // k.shape[0], training=False, is_causal=True)
    mask = hf_additive_mask(q_full.shape[1], window, torch.float32)
    args = (module, q_full.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), mask)
    if impl == "sdpa":
        out, _ = sdpa_attention_forward(*args, scaling=scaling)
    elif softcap is None:
        out, _ = llama_eager(*args, scaling=scaling)
    else:
        out, _ = gemma2_eager(*args, scaling=scaling, softcap=softcap)
    return out[0].transpose(0, 1)  # [1, N, Hq, d] -> [Hq, N, d]


# SDPA has no soft-capping: transformers runs Gemma-2's soft-capped attention in eager
MODEL_VARIANTS = [("eager", c, w) for c, w in VARIANTS] + [("sdpa", c, w) for c, w in VARIANTS if c is None]


@pytest.mark.parametrize(
    ("impl", "softcap", "window"), MODEL_VARIANTS, ids=[f"{i}-cap{c}-win{w}" for i, c, w in MODEL_VARIANTS]
)
def test_keep_all_equals_the_models_attention(impl, softcap, window):
    q_full, k, v, _ = random_inputs(0, HQ, HKV, N, N, D, scale=2.0)
    rows = torch.tensor([0, 1, 2, 12, 13, 14, 40, 64, 77, 90, 95])
    scaling = D**-0.5
    expected = _model_attention(q_full, k, v, scaling, softcap, window, impl)[:, rows]
    q = q_full[:, rows]
    ptr, idx = keep_all_csr(HQ, rows, N, window)
    out, mass, lse = restricted_attention(q, k, v, rows, ptr, idx, scaling, softcap, window, backend="torch")
    assert out.dtype == mass.dtype == lse.dtype == torch.float32
    assert out.shape == (HQ, rows.numel(), D) and mass.shape == lse.shape == (HQ, rows.numel())
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-5)
    torch.testing.assert_close(mass, torch.ones_like(mass), rtol=0, atol=1e-6)
    ref_out, _, ref_lse = dense_reference(q, k, v, rows, ptr, idx, scaling, softcap, window)
    torch.testing.assert_close(out.double(), ref_out, rtol=0, atol=1e-6)
    torch.testing.assert_close(lse.double(), ref_lse, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(("softcap", "window"), VARIANTS, ids=IDS)
@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("product", ["sparse", "dense"])
def test_ragged_kept_sets_equal_the_dense_oracle(softcap, window, seed, product, monkeypatch):
    """Both value products of the twin (CSR x dense, and the dense weight matrix it takes when the
    kept sets cover most keys) against the float64 oracle."""
    from trustmass.kernels import restricted

    monkeypatch.setattr(restricted, "DENSE_PRODUCT_SHARE", 0 if product == "sparse" else 10**9)
    q, k, v, rows = random_inputs(seed, HQ, HKV, M, N, D, scale=2.0)
    ptr, idx = random_csr(seed, HQ, rows, N, window)
    lengths = ptr[1:] - ptr[:-1]
    n_visible = visible(rows, N, window).sum(-1).repeat(HQ)
    assert (lengths == 0).any() and (lengths == 1).any()  # the case covers empty, single-key and keep-all sets
    assert ((lengths == n_visible) & (n_visible > 8)).any() and ((lengths > 1) & (lengths < n_visible)).any()
    scaling = D**-0.5
    out, mass, lse = restricted_attention_torch(q, k, v, rows, ptr, idx, scaling, softcap, window)
    ref_out, ref_mass, ref_lse = dense_reference(q, k, v, rows, ptr, idx, scaling, softcap, window)
    torch.testing.assert_close(out.double(), ref_out, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(mass.double(), ref_mass, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(lse.double(), ref_lse, rtol=1e-6, atol=1e-6)
    empty = (lengths == 0).view(HQ, M)
    assert torch.all(out[empty] == 0) and torch.all(mass[empty] == 0)
    assert torch.all(mass[~empty] > 0) and torch.all(mass <= 1 + 1e-6)
    # a single kept key: out is that key's value, whatever its weight
    single = (lengths == 1).nonzero().squeeze(1)
    h, m = single // M, single % M
    torch.testing.assert_close(out[h, m], v[h // (HQ // HKV), idx[ptr[single]]], rtol=1e-6, atol=1e-6)


def test_kept_order_does_not_matter():
    q, k, v, rows = random_inputs(3, HQ, HKV, M, N, D)
    ptr, idx = random_csr(3, HQ, rows, N, None)
    a = restricted_attention_torch(q, k, v, rows, ptr, idx, 0.2)
    flipped = torch.cat([idx[ptr[r] : ptr[r + 1]].flip(0) for r in range(HQ * M)])
    assert not torch.equal(flipped, idx)
    b = restricted_attention_torch(q, k, v, rows, ptr, flipped, 0.2)
    for x, y in zip(a, b, strict=True):
        torch.testing.assert_close(x, y, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("logits_dtype", [torch.bfloat16, torch.float16])
def test_kept_probabilities_are_eagers_own(logits_dtype):
    """With emulated logits the kept weights are eager's P entries (sampled_row_probs_torch, bitwise eager)."""
    q, k, v, rows = random_inputs(4, HQ, HKV, M, N, D, scale=2.0, dtype=logits_dtype)
    ptr, idx = random_csr(4, HQ, rows, N, 13)
    scaling = D**-0.5
    _, mass, _ = restricted_attention_torch(q, k, v, rows, ptr, idx, scaling, 8.0, 13, logits_dtype)
    q_full = torch.zeros(HQ, N, D, dtype=logits_dtype)
    q_full[:, rows] = q
    k_exp = k.repeat_interleave(HQ // HKV, 0)
    p = sampled_row_probs_torch(q_full, k_exp, rows.expand(HQ, M), scaling, 8.0, 13, logits_dtype)
    torch.testing.assert_close(
        p, dense_rows(dense_probs(q_full, k_exp, scaling, 8.0, 13, logits_dtype), rows.expand(HQ, M))
    )
    kept = torch.zeros(HQ * M, N, dtype=torch.float64)
    for r in range(HQ * M):
        kept[r, idx[ptr[r] : ptr[r + 1]]] = 1
    expected = (p.double().view(HQ * M, N) * kept).sum(-1).view(HQ, M)
    torch.testing.assert_close(mass.double(), expected, rtol=1e-6, atol=1e-7)
    plain = restricted_attention_torch(q, k, v, rows, ptr, idx, scaling, 8.0, 13)[1]
    assert (plain - mass).abs().max() > 1e-4  # the emulation is not a no-op


def test_no_kept_keys_at_all():
    q, k, v, rows = random_inputs(5, HQ, HKV, M, N, D)
    ptr, idx = torch.zeros(HQ * M + 1, dtype=torch.int64), torch.zeros(0, dtype=torch.int64)
    out, mass, lse = restricted_attention(q, k, v, rows, ptr, idx, 0.2, backend="torch")
    assert torch.all(out == 0) and torch.all(mass == 0)
    _, _, ref_lse = dense_reference(q, k, v, rows, ptr, idx, 0.2)
    torch.testing.assert_close(lse.double(), ref_lse, rtol=1e-6, atol=1e-6)


class LargestDenseTensor(LargestTensor):
    """`LargestTensor` that also passes sparse results (a CSR tensor wraps its inputs' storages)."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        existing = {
            t.untyped_storage().data_ptr()
            for t in tree_flatten((args, kwargs))[0]
            if isinstance(t, torch.Tensor) and t.layout == torch.strided
        }
        for t in tree_flatten(out)[0]:
            fresh = isinstance(t, torch.Tensor) and t.layout == torch.strided
            if fresh and t.untyped_storage().data_ptr() not in existing:
                elements = t.untyped_storage().nbytes() // t.element_size()
                if elements > self.largest:
                    self.largest, self.op = elements, func
        return out


def test_never_materialises_rows_by_keys_by_dim():
    """Largest fresh allocation stays O(Hq M N) (the logits), far below Hq M N d, for keep-all sets."""
    hq, hkv, m, n, d = 4, 2, 64, 512, 32
    q, k, v, _ = random_inputs(6, hq, hkv, m, n, d)
    rows = torch.arange(n - m, n)
    ptr, idx = keep_all_csr(hq, rows, n, None)
    with LargestDenseTensor() as probe:
        restricted_attention_torch(q, k, v, rows, ptr, idx, 0.2)
    assert probe.largest <= hq * m * n + hq * m, (probe.largest, probe.op)
    assert idx.numel() * d > 16 * probe.largest  # a gather of the kept V rows would have been caught


def _bad(**changes):
    q, k, v, rows = random_inputs(7, HQ, HKV, 5, 16, 8)
    rows = torch.tensor([0, 3, 7, 12, 15])
    ptr, idx = keep_all_csr(HQ, rows, 16, 4)
    args = {"q": q, "k": k, "v": v, "rows": rows, "kept_ptr": ptr, "kept_idx": idx, "scaling": 0.3, "window": 4}
    for key, fn in changes.items():
        args[key] = fn(args[key])
    return args


@pytest.mark.parametrize(
    ("changes", "name"),
    [
        ({"kept_ptr": lambda p: p[:-1]}, "kept_ptr"),
        ({"kept_ptr": lambda p: p.unsqueeze(0)}, "kept_ptr"),
        ({"kept_ptr": lambda p: torch.cat([p[:-1], p[-1:] + 1])}, "kept_ptr"),
        ({"kept_ptr": lambda p: torch.cat([p[:1], p[2:3], p[1:2], p[3:]])}, "kept_ptr"),
        ({"kept_idx": lambda i: torch.where(torch.arange(i.numel()) == 2, 9, i)}, "kept_idx"),  # a future key
        ({"kept_idx": lambda i: torch.where(torch.arange(i.numel()) == 0, -1, i)}, "kept_idx"),
        (
            {"kept_idx": lambda i: torch.where(torch.arange(i.numel()) == i.numel() - 1, 11, i)},
            "kept_idx",
        ),  # out of the window
        ({"kept_idx": lambda i: i.view(1, -1)}, "kept_idx"),
        ({"rows": lambda r: r[:-1]}, "rows"),
        ({"rows": lambda r: r + 1}, "rows"),
        ({"v": lambda v: v[:, :-1]}, "v"),
        ({"k": lambda k: k[:1]}, "k"),
        ({"q": lambda q: q[:3]}, "query heads"),
        ({"q": lambda q: q[..., :-1]}, "head_dim"),
        ({"window": lambda w: 0}, "window"),
    ],
)
def test_bad_inputs_name_the_argument(changes, name):
    args = _bad(**changes)
    with pytest.raises(ValueError, match=name):
        restricted_attention(**args, backend="torch")
    with pytest.raises(ValueError, match=name):
        restricted_attention_torch(**args)


def test_the_bad_input_fixture_is_valid():
    restricted_attention(**_bad(), backend="torch")  # the unchanged arguments are accepted


@pytest.mark.parametrize(
    "changes",
    [{"kept_idx": lambda i: i.float()}, {"v": lambda v: v.double()}, {"logits_dtype": lambda _: torch.float64}],
)
def test_bad_dtypes_are_type_errors(changes):
    args = _bad(**{k: v for k, v in changes.items() if k != "logits_dtype"})
    if "logits_dtype" in changes:
        args["logits_dtype"] = torch.float64
    with pytest.raises(TypeError):
        restricted_attention(**args, backend="torch")


def test_runs_without_triton():
    code = (
        "import sys; sys.modules['triton'] = None  # as if triton were not installed\n"
        "import torch, trustmass.kernels as K\n"
        "q, k = torch.randn(2, 3, 4), torch.randn(1, 8, 4)\n"
        "ptr = torch.tensor([0, 1, 1, 2, 3, 3, 5]); idx = torch.tensor([0, 4, 1, 6, 7])\n"
        "out, mass, lse = K.restricted_attention(q, k, k, torch.tensor([2, 4, 7]), ptr, idx, 0.5)\n"
        "assert out.shape == (2, 3, 4) and mass.shape == lse.shape == (2, 3)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_visibility_helper_is_the_transformers_mask():
    rows = torch.arange(20)
    for window in (None, 5):
        assert torch.equal(visible(rows, 20, window), hf_additive_mask(20, window, torch.float32)[0, 0] == 0)
