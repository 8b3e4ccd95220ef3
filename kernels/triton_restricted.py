"""Triton kernels of `trustmass.kernels.restricted_attention` (imported lazily; needs ``triton``).

Two passes, the numerics of `trustmass.kernels.triton_kernels` (fp32 ``tl.dot`` with
``input_precision="ieee"``, eager's roundings under ``logits_dtype``, bf16/fp16 upcast right after
``tl.load``, ``tl`` math under the interpreter):

* `_restricted_stats_kernel` -- pass 1, grid ``(ceil(M / BLOCK_M), Hq)``: for a tile of query rows
  (``q[h, m]`` at absolute position ``rows[m]``) the running max ``m`` and the sum
  ``l = sum_j exp(logit_j - m)`` over the visible keys of KV head ``h // G``, online over key
  blocks (``m`` and ``l`` kept apart, so pass 2 forms eager's ``exp(x - max) / sum``).
* `_restricted_gather_kernel` -- pass 2, one program per ``(row, head)``: walks the row's CSR kept
  set in chunks of ``BLOCK_K`` keys, gathers their K and V rows, recomputes the logits,
  ``p = exp(logit - m) / l`` and accumulates ``sum p v`` and ``sum p`` in float32; stores
  ``out = acc / mass`` (0 for an empty set) and ``kept_mass = mass``.

``lse = m + log(l)`` is formed on the host.  The host dispatcher validates the CSR (every index a
visible key); the gather also masks indices outside ``[0, N)`` so a bad index can never read out
of bounds.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from trustmass.kernels.triton_kernels import (
    _LOGITS_CODE,
    _block_d,
    _common,
    _exp,
    _load_qk,
    _online_stats,
    _round,
    _scale_logits,
)


@triton.jit
def _restricted_stats_kernel(
    Q,
    K,
    ROWS,
    M_OUT,
    L_OUT,
    stride_qh,
    stride_qm,
    stride_qd,
    stride_kh,
    stride_kn,
    stride_kd,
    stride_oh,
    stride_om,
    M,
    D,
    G,
    scaling,
    softcap,
    inv_softcap,
    window,
    HAS_SOFTCAP: tl.constexpr,
    HAS_WINDOW: tl.constexpr,
    LOGITS: tl.constexpr,
    LIBDEVICE: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    pid_m = tl.program_id(0)
    h = tl.program_id(1)
    kv = h // G
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = offs_m < M
    pos = tl.load(ROWS + offs_m, mask=row_ok, other=0).to(tl.int64)
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < D
    q = _load_qk(Q + h * stride_qh, offs_m, stride_qm, offs_d, stride_qd, row_ok, d_ok, LOGITS)
    m_i, l_i = _online_stats(
        q, K + kv * stride_kh, stride_kn, stride_kd, pos, row_ok, offs_d, d_ok, scaling, softcap, inv_softcap, window,
        HAS_SOFTCAP, HAS_WINDOW, LOGITS, LIBDEVICE, BLOCK_M, BLOCK_N,
    )  # fmt: skip
    tl.store(M_OUT + h * stride_oh + offs_m * stride_om, m_i, mask=row_ok)
    tl.store(L_OUT + h * stride_oh + offs_m * stride_om, l_i, mask=row_ok)


@triton.jit
def _restricted_gather_kernel(
    Q,
    K,
    V,
    PTR,
    IDX,
    M_IN,
    L_IN,
    OUT,
    MASS,
    stride_qh,
    stride_qm,
    stride_qd,
    stride_kh,
    stride_kn,
    stride_kd,
    stride_vh,
    stride_vn,
    stride_vd,
    stride_sh,
    stride_sm,
    stride_oh,
    stride_om,
    stride_od,
    M,
    N,
    D,
    G,
    scaling,
    softcap,
    inv_softcap,
    HAS_SOFTCAP: tl.constexpr,
    LOGITS: tl.constexpr,
    LIBDEVICE: tl.constexpr,
    BLOCK_K: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    row = tl.program_id(0)
    h = tl.program_id(1)
    kv = h // G
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < D
    q = tl.load(Q + h * stride_qh + row * stride_qm + offs_d * stride_qd, mask=d_ok, other=0.0).to(tl.float32)
    q = _round(q, LOGITS)
    m = tl.load(M_IN + h * stride_sh + row * stride_sm)
    l = tl.load(L_IN + h * stride_sh + row * stride_sm)
    begin = tl.load(PTR + h * M + row).to(tl.int32)
    end = tl.load(PTR + h * M + row + 1).to(tl.int32)
    acc = tl.zeros([BLOCK_D], tl.float32)
    mass = tl.zeros([BLOCK_K], tl.float32)
    for start in range(begin, end, BLOCK_K):
        offs_e = start + tl.arange(0, BLOCK_K)
        idx = tl.load(IDX + offs_e, mask=offs_e < end, other=-1).to(tl.int64)
        ok = (idx >= 0) & (idx < N)
        k = tl.load(
            K + kv * stride_kh + idx[:, None] * stride_kn + offs_d[None, :] * stride_kd,
            mask=ok[:, None] & d_ok[None, :],
            other=0.0,
        ).to(tl.float32)
        k = _round(k, LOGITS)
        s = tl.sum(q[None, :] * k, axis=1)
        s = _scale_logits(s, scaling, softcap, inv_softcap, HAS_SOFTCAP, LOGITS, LIBDEVICE)
        p = tl.where(ok, tl.div_rn(_exp(s - m, LIBDEVICE), l), 0.0)
        v = tl.load(
            V + kv * stride_vh + idx[:, None] * stride_vn + offs_d[None, :] * stride_vd,
            mask=ok[:, None] & d_ok[None, :],
            other=0.0,
        ).to(tl.float32)
        acc += tl.sum(p[:, None] * v, axis=0)
        mass += p
    total = tl.sum(mass, axis=0)
    out = tl.where(total > 0, acc / tl.where(total > 0, total, 1.0), 0.0)
    tl.store(OUT + h * stride_oh + row * stride_om + offs_d * stride_od, out, mask=d_ok)
    tl.store(MASS + h * M + row, total)


def restricted_attention_triton(
    q,
    k,
    v,
    rows,
    kept_ptr,
    kept_idx,
    scaling,
    softcap=None,
    window=None,
    logits_dtype=None,
    *,
    block_m=16,
    block_n=64,
    block_k=32,
):
    """``(out [Hq, M, d], kept_mass [Hq, M], lse [Hq, M])`` float32; inputs validated by the caller."""
    libdevice_ok, soft = _common(q, softcap, logits_dtype)
    Hq, M, D = q.shape
    Hkv, N, _ = k.shape
    G = Hq // Hkv
    rows = rows.long().contiguous()
    kept_ptr = kept_ptr.long().contiguous()
    kept_idx = kept_idx.long().contiguous()
    out = torch.empty(Hq, M, D, dtype=torch.float32, device=q.device)
    mass = torch.empty(Hq, M, dtype=torch.float32, device=q.device)
    m = torch.empty(Hq, M, dtype=torch.float32, device=q.device)
    l = torch.empty(Hq, M, dtype=torch.float32, device=q.device)
    if M == 0 or Hq == 0:
        return out, mass, m
    flags = {"HAS_SOFTCAP": soft["HAS_SOFTCAP"], "LOGITS": _LOGITS_CODE[logits_dtype], "LIBDEVICE": libdevice_ok}
    _restricted_stats_kernel[(triton.cdiv(M, block_m), Hq)](
        q,
        k,
        rows,
        m,
        l,
        q.stride(0),
        q.stride(1),
        q.stride(2),
        k.stride(0),
        k.stride(1),
        k.stride(2),
        m.stride(0),
        m.stride(1),
        M,
        D,
        G,
        float(scaling),
        soft["softcap"],
        soft["inv_softcap"],
        int(window or 0),
        HAS_WINDOW=window is not None,
        BLOCK_M=block_m,
        BLOCK_N=block_n,
        BLOCK_D=_block_d(D),
        **flags,
    )
    _restricted_gather_kernel[(M, Hq)](
        q,
        k,
        v,
        kept_ptr,
        kept_idx,
        m,
        l,
        out,
        mass,
        q.stride(0),
        q.stride(1),
        q.stride(2),
        k.stride(0),
        k.stride(1),
        k.stride(2),
        v.stride(0),
        v.stride(1),
        v.stride(2),
        m.stride(0),
        m.stride(1),
        out.stride(0),
        out.stride(1),
        out.stride(2),
        M,
        N,
        D,
        G,
        float(scaling),
        soft["softcap"],
        soft["inv_softcap"],
        BLOCK_K=block_k,
        BLOCK_D=_block_d(D),
        **flags,
    )
    return out, mass, m + torch.log(l)


__all__ = ["restricted_attention_triton"]
