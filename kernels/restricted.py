"""PyTorch twin of the restricted-attention kernel: the CPU production path and the Triton oracle.

For query rows ``m`` (absolute positions ``rows[m]``) of query head ``h`` and a kept key set
``A = A(h, m)`` (CSR: ``kept_idx[kept_ptr[h*M+m] : kept_ptr[h*M+m+1]]``), with ``P`` the model's
full attention row over all visible keys (the eager semantics of `trustmass.kernels.reference`:
scaling, optional soft-cap, causal mask, optional sliding window ``i - W < j <= i``, float32
softmax, optional ``logits_dtype`` roundings of the logits)::

    kept_mass[h, m] = sum_{j in A} P[h, m, j]                          (float32, 1 - dropped mass)
    out[h, m]       = sum_{j in A} P[h, m, j] v_j / kept_mass[h, m]    (float32; 0 when A is empty)
    lse[h, m]       = log sum_{j visible} exp(logit[h, m, j])          (float32)

Query head ``h`` reads KV head ``h // (Hq // Hkv)`` (grouped-query attention, keys not expanded).

How (CPU-fast, no ``[Hq, M, N, d]``): the logits of the M rows against the keys any row can see
(``[Hq, M, n]``, ``n <= N``; what SDPA computes too) are soft-maxed in place exactly as eager
does, the kept entries of ``P`` are gathered straight from the CSR (``kept_mass`` sums them in
float64), and ``out`` is one sparse CSR x dense product ``[Hq*M, Hkv*n] @ [Hkv*n, d]`` (cost
``nnz * d``; no padding to the longest kept set, no gathered ``[nnz, d]`` copy of V) -- or, when
the kept sets cover most keys (``DENSE_PRODUCT_SHARE``), the same product with a dense weight
matrix (keep-all: the cost of SDPA's own value product).  ``lse`` is
``max + log(sum exp(logit - max))`` with ``1 / sum`` read back as the softmax's largest entry
(the entry at the max logit is ``exp(0) / sum``), so it costs one extra max pass, no exp pass.

Kept sets: any length ``>= 0``, any order; every index must be a key visible to its row (checked,
``ValueError``).  Duplicates are not detected: a duplicated key counts once per occurrence.
``P`` is not rounded to the model dtype before the value product (float32 weights and values,
float32 accumulation); ``logits_dtype`` emulates the roundings of the logits only.
"""

from __future__ import annotations

import warnings

import torch

from trustmass.kernels.reference import _EMULATED_DTYPES, _visible, transformed_logits

_FLOATS = (torch.float32, torch.bfloat16, torch.float16)
#: kept entries above 1/DENSE_PRODUCT_SHARE of the [Hq, M, n] logits: the value product runs dense
#: (a masked weight matrix and one bmm), below it sparse (CSR x dense); the same sums, other order
DENSE_PRODUCT_SHARE = 8


def check_restricted_inputs(q, k, v, rows, kept_ptr, kept_idx, window, logits_dtype, *, check_values: bool = True):
    """Validate the restricted-attention arguments; return ``(Hq, Hkv, M, N, d)``.

    Shapes, dtypes and devices always; with ``check_values`` also the CSR contents (pointer
    monotonicity and ends, every kept index a visible key of its row) -- O(nnz) work, one
    device synchronisation on CUDA.
    """
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dim() != 3:
            raise ValueError(f"{name} must be [heads, tokens, head_dim]; got {name}{tuple(t.shape)}")
        if t.dtype not in _FLOATS:
            raise TypeError(f"{name} must be float32/bfloat16/float16; got {t.dtype}")
    Hq, M, d = q.shape
    Hkv, N, _ = k.shape
    if k.dtype != q.dtype or v.dtype != q.dtype:
        raise TypeError(f"q, k and v must share a dtype; got {q.dtype}, {k.dtype}, {v.dtype}")
    if v.shape != k.shape:
        raise ValueError(f"v{tuple(v.shape)} must have k's shape {tuple(k.shape)} (KV heads, keys, head_dim)")
    if k.shape[2] != d:
        raise ValueError(f"q{tuple(q.shape)} and k{tuple(k.shape)} differ in head_dim")
    if Hkv < 1 or Hq % Hkv:
        raise ValueError(f"q's {Hq} query heads must be a multiple of k's {Hkv} KV heads")
    if rows.dim() != 1 or rows.shape[0] != M:
        raise ValueError(f"rows must be [M={M}] (one absolute position per query row); got {tuple(rows.shape)}")
    if kept_ptr.dim() != 1 or kept_ptr.shape[0] != Hq * M + 1:
        raise ValueError(f"kept_ptr must be [Hq*M + 1 = {Hq * M + 1}] CSR pointers; got {tuple(kept_ptr.shape)}")
    if kept_idx.dim() != 1:
        raise ValueError(f"kept_idx must be a 1-D tensor of key positions; got {tuple(kept_idx.shape)}")
    for name, t in (("rows", rows), ("kept_ptr", kept_ptr), ("kept_idx", kept_idx)):
        if t.dtype not in (torch.int64, torch.int32):
            raise TypeError(f"{name} must be an integer (int64) tensor; got {t.dtype}")
    if len({t.device for t in (q, k, v, rows, kept_ptr, kept_idx)}) != 1:
        raise ValueError("q, k, v, rows, kept_ptr and kept_idx must share a device")
    if logits_dtype is not None and logits_dtype not in _EMULATED_DTYPES:
        raise TypeError(f"logits_dtype must be None, torch.bfloat16 or torch.float16; got {logits_dtype}")
    if window is not None and int(window) < 1:
        raise ValueError(f"window must be None or >= 1; got {window}")
    if check_values:
        if M and (int(rows.min()) < 0 or int(rows.max()) >= N):
            raise ValueError(f"rows must lie in [0, {N - 1}]; got [{int(rows.min())}, {int(rows.max())}]")
        nnz = kept_idx.shape[0]
        if int(kept_ptr[0]) != 0 or int(kept_ptr[-1]) != nnz:
            raise ValueError(
                f"kept_ptr must start at 0 and end at len(kept_idx) = {nnz}; got {int(kept_ptr[0])}..{int(kept_ptr[-1])}"
            )
        if bool((kept_ptr[1:] < kept_ptr[:-1]).any()):
            raise ValueError("kept_ptr must be non-decreasing (CSR pointers)")
        if nnz:
            _check_visible(rows, kept_ptr, kept_idx, Hq, window)
    return Hq, Hkv, M, N, d


def _check_visible(rows, kept_ptr, kept_idx, Hq: int, window) -> None:
    """``ValueError`` naming the first kept index that is not a visible key of its row."""
    counts = kept_ptr[1:] - kept_ptr[:-1]
    pos = torch.repeat_interleave(rows.long().repeat(Hq), counts, output_size=kept_idx.shape[0])
    ok = (kept_idx >= 0) & (kept_idx <= pos)
    if window is not None:
        ok &= kept_idx > pos - int(window)
    if not bool(ok.all()):
        e = int((~ok).nonzero()[0, 0])
        raise ValueError(
            f"kept_idx[{e}] = {int(kept_idx[e])} is not a key visible to its row at position {int(pos[e])}"
            + ("" if window is None else f" (window {int(window)})")
        )


def _entry_rows(kept_ptr: torch.Tensor, nnz: int) -> torch.Tensor:
    """Flat row ``h * M + m`` of every CSR entry (int64 ``[nnz]``)."""
    counts = kept_ptr[1:] - kept_ptr[:-1]
    return torch.repeat_interleave(torch.arange(counts.shape[0], device=kept_ptr.device), counts, output_size=nnz)


def restricted_attention_torch(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    rows: torch.Tensor,
    kept_ptr: torch.Tensor,
    kept_idx: torch.Tensor,
    scaling: float,
    softcap: float | None = None,
    window: int | None = None,
    logits_dtype=None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(out [Hq, M, d], kept_mass [Hq, M], lse [Hq, M])``, float32 (see the module docstring)."""
    Hq, Hkv, M, _, d = check_restricted_inputs(q, k, v, rows, kept_ptr, kept_idx, window, logits_dtype)
    device = q.device
    lse = torch.empty(Hq, M, dtype=torch.float32, device=device)
    if M == 0 or Hq == 0:
        zeros = torch.zeros(Hq, M, dtype=torch.float32, device=device)
        return torch.zeros(Hq, M, d, dtype=torch.float32, device=device), zeros, lse
    G = Hq // Hkv
    rows = rows.long()
    # the keys some row sees: [lo, hi)
    hi = int(rows.max()) + 1
    lo = 0 if window is None else max(0, int(rows.min()) - int(window) + 1)
    n = hi - lo
    # logits [Hkv, G*M, n] == [Hq, M, n]: query head h = kv * G + g reads KV head kv
    q_g, k_g = q.reshape(Hkv, G * M, d), k[:, lo:hi]
    if logits_dtype is None:  # fp32: GEMM's alpha scales the accumulator once, bitwise equal to matmul then mul_
        s = torch.empty(Hkv, G * M, n, dtype=torch.float32, device=device)
        torch.baddbmm(s, q_g.float(), k_g.float().transpose(-1, -2), beta=0.0, alpha=scaling, out=s)
        if softcap is not None:
            s.div_(softcap).tanh_().mul_(softcap)
    else:
        s = transformed_logits(q_g, k_g, scaling, softcap, logits_dtype)
    s = s.view(Hq, M, n)
    keys = torch.arange(lo, hi, device=device)
    if window is None:  # only keys after the first row can be masked
        first = int(rows.min()) + 1
        s[..., first - lo :].masked_fill_(~_visible(rows, keys[first - lo :], None), float("-inf"))
    else:
        s.masked_fill_(~_visible(rows, keys, window), float("-inf"))
    m = s.amax(dim=-1)
    probs = s if s.dtype == torch.float32 else s.float()  # softmax(dtype=float32) = upcast, then softmax
    if device.type == "cpu":  # the CPU last-dim softmax works in place (bitwise as out of place)
        torch._softmax(probs, -1, False, out=probs)
    else:
        probs = torch.softmax(probs, dim=-1)
    # the largest probability sits at the max logit: exp(0) / l, so log(l) = -log(max P)
    torch.sub(m.float(), probs.amax(dim=-1).log(), out=lse)
    out, kept_mass = kept_rows_attention(probs, v, kept_ptr, kept_idx, lo)
    return out, kept_mass, lse


def kept_rows_attention(
    probs: torch.Tensor, v: torch.Tensor, kept_ptr: torch.Tensor, kept_idx: torch.Tensor, lo: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """The gather half of the twin: ``(out [Hq, M, d], kept_mass [Hq, M])`` from rows ``P`` already
    computed, float32 ``probs [Hq, M, n]`` over the keys ``lo .. lo + n - 1`` (``v`` ``[Hkv, N, d]``;
    the CSR as :func:`restricted_attention_torch`'s, indices absolute, not checked here).

    A caller that holds the exact rows anyway (the loss stage's selection reads them) skips the
    logits and softmax pass: on the CPU that pass costs as much as the rest of the operator."""
    Hq, M, n = probs.shape
    Hkv, d = v.shape[0], v.shape[-1]
    G, hi = Hq // Hkv, lo + n
    device = probs.device
    kept_ptr, kept_idx = kept_ptr.long(), kept_idx.long()
    mass = torch.zeros(Hq * M, dtype=torch.float64, device=device)
    out = torch.zeros(Hq, M, d, dtype=torch.float32, device=device)
    nnz = kept_idx.shape[0]
    if nnz == 0 or M == 0:
        return out, mass.view(Hq, M).float()
    entry = _entry_rows(kept_ptr, nnz)  # h * M + m
    p = probs.view(-1).index_select(0, entry * n + (kept_idx - lo))  # P at the kept entries, [nnz]
    mass.index_add_(0, entry, p.double())
    if nnz * DENSE_PRODUCT_SHARE >= Hq * M * n:  # most keys kept (keep-all): one dense batched product
        weights = torch.zeros(Hq * M * n, dtype=torch.float32, device=device)
        weights.index_put_((entry * n + (kept_idx - lo),), p, accumulate=True)  # duplicates count per occurrence
        acc = torch.bmm(weights.view(Hkv, G * M, n), v[:, lo:hi].float()).view(Hq * M, d)
    else:
        cols = torch.div(entry, M * G, rounding_mode="floor") * n + (kept_idx - lo)  # KV head * n + key
        with warnings.catch_warnings():  # "sparse CSR support is in beta" (a one-time notice)
            warnings.simplefilter("ignore", UserWarning)
            a = torch.sparse_csr_tensor(kept_ptr, cols, p, size=(Hq * M, Hkv * n), check_invariants=False)
            acc = a @ v[:, lo:hi].float().reshape(Hkv * n, d)  # [Hq*M, d], float32
    kept_mass = mass.float()
    # an empty kept set (or one whose mass underflows to 0) has out = 0, not 0 / 0
    out.view(Hq * M, d).copy_(torch.where(kept_mass.unsqueeze(-1) > 0, acc / kept_mass.unsqueeze(-1), 0.0))
    return out, kept_mass.view(Hq, M)
