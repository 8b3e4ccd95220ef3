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
    """Triton vs twin for one `kernel_triton_cases.Case` with ``kernel="restricted"`` (rows = M).

    ``case.config`` / ``case.splits`` call the Triton host function with those tiles and key
    splits; ``case.lse`` runs it twice, the second time with the first call's log-sum-exp."""
    from kernel_triton_cases import compare

    from trustmass.kernels import restricted_attention
    from trustmass.kernels.triton_restricted import restricted_attention_triton

    m = max(case.rows, 2)
    q, k, v, rows = random_inputs(case.seed, case.heads, case.kv_heads, m, case.n, case.d, exact=case.exact)
    if case.rows == 1:  # one query row, the last position
        q, rows = q[:, -1:].contiguous(), rows[-1:]
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
    if case.config is not None or case.splits is not None:
        got = restricted_attention_triton(q, k, v, rows, ptr, idx, **kw, splits=case.splits, config=case.config)
    else:
        got = restricted_attention(q, k, v, rows, ptr, idx, backend="triton", **kw)
    if case.lse:  # the full-row log-sum-exp does not depend on the kept sets: reuse the first call's
        got = restricted_attention(q, k, v, rows, ptr, idx, backend="triton", lse=got[2], **kw)
    want = restricted_attention(q, k, v, rows, ptr, idx, backend="torch", **kw)
    result = compare(dict(zip(("out", "kept_mass", "lse"), zip(got, want, strict=True), strict=True)), case)
    result["kept_mass"]["empty_rows"] = int((ptr[1:] == ptr[:-1]).sum())
    return result


#: invalid kept sets / rows (value errors only: shapes and dtypes are checked before any kernel) and
#: the argument the error must name
INVALID = {
    "future-key": ("kept_idx", lambda a: a["kept_idx"].__setitem__(2, 9)),
    "negative-key": ("kept_idx", lambda a: a["kept_idx"].__setitem__(0, -1)),
    "outside-window": ("kept_idx", lambda a: a["kept_idx"].__setitem__(-1, 11)),
    "pointer-end": ("kept_ptr", lambda a: a["kept_ptr"].__setitem__(-1, a["kept_ptr"][-1] + 1)),
    "pointer-order": ("kept_ptr", lambda a: a["kept_ptr"].__setitem__(slice(1, 3), a["kept_ptr"][1:3].flip(0).clone())),
    "row-past-end": ("rows", lambda a: a.__setitem__("rows", a["rows"] + 1)),
}


def run_invalid_csr_case() -> dict:
    """The Triton path's in-kernel validation: each bad input raises the twin's ``ValueError``
    naming the argument (``raised`` 1) and a valid one does not."""
    import re

    from trustmass.kernels import restricted_attention

    result = {}
    for name, (arg, spoil) in {"valid": (None, lambda a: None), **INVALID}.items():
        q, k, v, _ = random_inputs(7, 4, 2, 5, 16, 8)
        rows = torch.tensor([0, 3, 7, 12, 15])
        ptr, idx = keep_all_csr(4, rows, 16, 4)
        a = {
            "q": q,
            "k": k,
            "v": v,
            "rows": rows,
            "kept_ptr": ptr.clone(),
            "kept_idx": idx.clone(),
            "scaling": 0.3,
            "window": 4,
        }
        spoil(a)
        try:
            restricted_attention(**a, backend="triton")
            ok = arg is None
            message = ""
        except ValueError as exc:
            ok = arg is not None and re.search(arg, str(exc)) is not None
            message = str(exc)
        result[name] = {"raised_as_expected": int(ok), "message": message}
    return result
