"""Inputs and a float64 dense oracle for `trustmass.kernels.restricted_attention` (small shapes only).

Independent of `trustmass.kernels`: the keys are expanded per query head like transformers'
``repeat_kv``, the full ``[Hq, M, N]`` logits are masked (``j <= i``, ``j > i - W``) and
soft-maxed in float64, and the restricted output is the ``P``-weighted mean of the kept values.
Also builds CSR kept sets (keep-all, random ragged) and runs the Triton-vs-twin interpreter cases.
"""

from __future__ import annotations

import torch


def random_inputs(seed, heads, kv_heads, m, n, d, *, scale=1.0, exact=False, dtype=torch.float32):
    """q ``[heads, m, d]``, k and v ``[kv_heads, n, d]`` and sorted distinct rows ``[m]`` holding 0 and n-1."""
    g = torch.Generator().manual_seed(seed)
    if exact:  # multiples of 1/8: q.k exact in float32 whatever the summation order
        q = torch.randint(-8, 8, (heads, m, d), generator=g).float() / 8
        k = torch.randint(-8, 8, (kv_heads, n, d), generator=g).float() / 8
    else:
        q = torch.randn(heads, m, d, generator=g) * scale
        k = torch.randn(kv_heads, n, d, generator=g)
    k[:, 0] += 2.0 * k[:, 0].sign()  # a heavier first key: an attention-sink-like column
    v = torch.randn(kv_heads, n, d, generator=g)
    rows = torch.cat([torch.tensor([0, n - 1]), 1 + torch.randperm(n - 2, generator=g)[: m - 2]]).sort().values
    return q.to(dtype), k.to(dtype), v.to(dtype), rows


def visible(rows: torch.Tensor, n: int, window: int | None) -> torch.Tensor:
    j = torch.arange(n)
    vis = j <= rows.unsqueeze(-1)
    if window is not None:
        vis &= j > rows.unsqueeze(-1) - window
    return vis


def keep_all_csr(heads: int, rows: torch.Tensor, n: int, window: int | None):
    vis = visible(rows, n, window)
    sets = [vis[m].nonzero().squeeze(1) for _ in range(heads) for m in range(rows.shape[0])]
    return _csr(sets)


def random_csr(seed: int, heads: int, rows: torch.Tensor, n: int, window: int | None):
    """Ragged kept sets in random order: lengths 0..#visible, with empty, single-key and keep-all rows."""
    g = torch.Generator().manual_seed(seed)
    vis = visible(rows, n, window)
    sets = []
    for h in range(heads):
        for m in range(rows.shape[0]):
            keys = vis[m].nonzero().squeeze(1)
            keys = keys[torch.randperm(keys.numel(), generator=g)]
            special = (h * rows.shape[0] + m) % 5
            length = (
                [0, 1, keys.numel()][special]
                if special < 3
                else int(torch.randint(0, keys.numel() + 1, (1,), generator=g))
            )
            sets.append(keys[:length])
    return _csr(sets)


def _csr(sets):
    ptr = torch.zeros(len(sets) + 1, dtype=torch.int64)
    ptr[1:] = torch.tensor([s.numel() for s in sets], dtype=torch.int64).cumsum(0)
    idx = torch.cat(sets).long() if sets else torch.zeros(0, dtype=torch.int64)
    return ptr, idx


def dense_reference(q, k, v, rows, kept_ptr, kept_idx, scaling, softcap=None, window=None):
    """float64 ``(out, kept_mass, lse)`` from the full masked softmax (empty set: out 0, mass 0)."""
    heads, m, _ = q.shape
    group = heads // k.shape[0]
    n = k.shape[1]
    ke = k.double().repeat_interleave(group, 0)
    ve = v.double().repeat_interleave(group, 0)
    s = torch.matmul(q.double(), ke.transpose(-1, -2)) * scaling
    if softcap is not None:
        s = torch.tanh(s / softcap) * softcap
    s = s.masked_fill(~visible(rows, n, window), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    P = torch.softmax(s, dim=-1)
    kept = torch.zeros(heads * m, n, dtype=torch.float64)
    for r in range(heads * m):
        sel = kept_idx[kept_ptr[r] : kept_ptr[r + 1]]
        kept[r].index_add_(0, sel, torch.ones(sel.numel(), dtype=torch.float64))  # a duplicate counts twice
    W = P * kept.view(heads, m, n)
    mass = W.sum(-1)
    out = torch.matmul(W, ve) / mass.unsqueeze(-1)
    out = torch.where(mass.unsqueeze(-1) > 0, out, 0.0)
    return out, mass, lse


def run_restricted_case(case) -> dict:
    """Triton vs twin for one `kernel_triton_cases.Case` with ``kernel="restricted"`` (rows = M)."""
    from trustmass.kernels import restricted_attention

    q, k, v, rows = random_inputs(case.seed, case.heads, case.kv_heads, case.rows, case.n, case.d, exact=case.exact)
    dtype = getattr(torch, case.input_dtype)
    q, k, v = q.to(dtype), k.to(dtype), v.to(dtype)
    if case.kept == "all":
        ptr, idx = keep_all_csr(case.heads, rows, case.n, case.window)
    else:
        ptr, idx = random_csr(case.seed + 1, case.heads, rows, case.n, case.window)
    kw = {
        "scaling": case.d**-0.5,
        "softcap": case.softcap,
        "window": case.window,
        "logits_dtype": None if case.logits_dtype is None else getattr(torch, case.logits_dtype),
    }
    got = restricted_attention(q, k, v, rows, ptr, idx, backend="triton", **kw)
    want = restricted_attention(q, k, v, rows, ptr, idx, backend="torch", **kw)
    result = {}
    for name, a, b in zip(("out", "kept_mass", "lse"), got, want, strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype == torch.float32, (name, a.shape, b.shape, a.dtype)
        diff = (a.double() - b.double()).abs()
        excess = diff - (case.tol["atol"] + case.tol["rtol"] * b.double().abs())
        excess = excess.nan_to_num(nan=float("inf"), posinf=float("inf"))  # NaN must fail (NaN > 0 is False)
        result[name] = {
            "max_abs": float(diff.max()),
            "max_excess_over_tol": float(excess.max()),
            "nonzero_where_twin_zero": int(((a != 0) & (b == 0)).sum()),
        }
    result["kept_mass"]["empty_rows"] = int((ptr[1:] == ptr[:-1]).sum())
    return result
