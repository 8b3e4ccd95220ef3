"""Triton kernels for the capture side statistics (imported lazily; needs ``triton``).

Pattern of Triton's fused-attention tutorial (two passes over keys, probabilities recomputed for
any key block from stored row statistics), specialised to what the capture needs:

* `_row_stats_kernel` -- pass 1: per requested row, the running max ``m`` and the sum
  ``l = sum_j exp(logit_j - m)`` over the visible keys (online over key blocks).  ``m`` and ``l``
  are kept apart (not fused into one log-sum-exp), so pass 2 is eager's own
  ``exp(x - max) / sum``.
* `_row_probs_kernel` -- pass 2: exact probabilities of any key block, ``exp(logit - m) / l``.
* `_column_mass_kernel` -- one program per (key block, head) sweeps the row tiles in order,
  recomputing P for its key columns from the row statistics of every row, and accumulates the
  running column mass in float64; it stores the prefix mass ``F(t)`` at every needed row
  (``t = i`` and ``t = i - w``), and the host forms ``acc = F(i)``, ``wsum_w = F(i) - F(i - w)``.
  Memory: O(H N) row statistics and O(H R N) prefixes, no N x N.

Logits follow transformers' eager attention exactly: fp32 ``tl.dot`` (``input_precision="ieee"``,
no TF32) of the (upcast) q and k; with ``logits_dtype`` bf16/fp16 the result is rounded to that
dtype after the matmul, after ``* scaling`` and after each soft-cap op; CUDA eager divides by the
soft-cap as ``x * (1 / softcap)`` (a CPU-scalar divisor), and so do these kernels.

Interpreter (``TRITON_INTERPRET=1``, CPU tensors): bf16 operands are upcast right after
``tl.load`` (the interpreter's bf16 ``tl.dot`` is wrong), the bf16 rounding of logits is done on
the bit pattern (its fp32 -> bf16 cast truncates) and ``tanh``/``exp`` use ``tl`` math instead of
libdevice (extern calls do not run there).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import torch
import triton
import triton.language as tl

try:  # libdevice dispatches to the CUDA/HIP backend at compile time
    from triton.language.extra import libdevice
except ImportError:  # pragma: no cover - very old triton
    libdevice = None

INTERPRET = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")
_LOGITS_CODE = {None: 0, torch.bfloat16: 1, torch.float16: 2}


@triton.jit
def _round(x, LOGITS: tl.constexpr):
    """Round fp32 ``x`` to the emulated logits dtype (round to nearest even), back in fp32."""
    if LOGITS == 1:
        bits = x.to(tl.uint32, bitcast=True)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        x = bits.to(tl.float32, bitcast=True)
    elif LOGITS == 2:
        x = x.to(tl.float16).to(tl.float32)
    return x


@triton.jit
def _tanh(x, LIBDEVICE: tl.constexpr):
    if LIBDEVICE:
        y = libdevice.tanh(x)
    else:
        a = tl.abs(x)
        e = tl.exp(-2.0 * a)
        big = (1.0 - e) / (1.0 + e)
        z = a * a
        # odd Taylor series through x^17: < 1e-9 relative for |x| < 0.5
        c = 6404582.0 / 10854718875.0
        c = -929569.0 / 638512875.0 + z * c
        c = 21844.0 / 6081075.0 + z * c
        c = -1382.0 / 155925.0 + z * c
        c = 62.0 / 2835.0 + z * c
        c = -17.0 / 315.0 + z * c
        c = 2.0 / 15.0 + z * c
        c = -1.0 / 3.0 + z * c
        small = a + a * z * c
        y = tl.where(a < 0.5, small, big)
        y = tl.where(x < 0, -y, y)
    return y


@triton.jit
def _exp(x, LIBDEVICE: tl.constexpr):
    if LIBDEVICE:
        y = libdevice.exp(x)  # correctly rounded-ish expf, like torch's softmax (tl.exp is ex2.approx)
    else:
        y = tl.exp(x)
    return y


@triton.jit
def _scale_logits(
    s, scaling, softcap, inv_softcap, HAS_SOFTCAP: tl.constexpr, LOGITS: tl.constexpr, LIBDEVICE: tl.constexpr
):
    """fp32 dot products -> logits, rounded where eager rounds them (after the matmul, the scaling
    and each soft-cap op)."""
    s = _round(s, LOGITS)
    s = _round(s * scaling, LOGITS)
    if HAS_SOFTCAP:
        s = _round(s * inv_softcap, LOGITS)
        s = _round(_tanh(s, LIBDEVICE), LOGITS)
        s = _round(s * softcap, LOGITS)
    return s


@triton.jit
def _logits(
    q, k, scaling, softcap, inv_softcap, HAS_SOFTCAP: tl.constexpr, LOGITS: tl.constexpr, LIBDEVICE: tl.constexpr
):
    """``[M, D] x [N, D] -> [M, N]`` logits, rounded where eager rounds them."""
    s = tl.dot(q, tl.trans(k), input_precision="ieee")
    return _scale_logits(s, scaling, softcap, inv_softcap, HAS_SOFTCAP, LOGITS, LIBDEVICE)


@triton.jit
def _load_qk(ptr, offs, stride_r, offs_d, stride_d, ok, d_ok, LOGITS: tl.constexpr):
    """fp32 ``[len(offs), BLOCK_D]`` tile of q or k rows ``offs`` (0 where not ``ok``), upcast on
    load and rounded to the logits dtype (the model's q and k are in it)."""
    x = tl.load(ptr + offs[:, None] * stride_r + offs_d[None, :] * stride_d, mask=ok[:, None] & d_ok[None, :], other=0.0)
    return _round(x.to(tl.float32), LOGITS)


@triton.jit
def _visible(offs_n, pos, window, HAS_WINDOW: tl.constexpr):
    """``[rows, keys]``: key ``offs_n`` is visible from the row at position ``pos`` (causal, and
    inside the sliding window when there is one)."""
    vis = offs_n[None, :] <= pos[:, None]
    if HAS_WINDOW:
        vis = vis & (offs_n[None, :] > pos[:, None] - window)
    return vis


@triton.jit
def _online_stats(
    q,
    k_head,
    stride_kn,
    stride_kd,
    pos,
    row_ok,
    offs_d,
    d_ok,
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
):
    """``(m, l)`` of a tile of rows at positions ``pos`` over the keys of one head (``k_head``
    points at its first key): the running max and ``sum_j exp(logit_j - m)``, online over key
    blocks, only over the blocks some row of the tile can see."""
    hi = (tl.max(tl.where(row_ok, pos, 0), axis=0) + 1).to(tl.int32)  # keys past the last row are unseen
    lo = hi * 0
    if HAS_WINDOW:
        lo = tl.maximum(tl.min(tl.where(row_ok, pos, hi), axis=0) - window + 1, 0).to(tl.int32)
        lo = (lo // BLOCK_N) * BLOCK_N
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    for start in range(lo, hi, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        k = _load_qk(k_head, offs_n, stride_kn, offs_d, stride_kd, offs_n < hi, d_ok, LOGITS)
        s = _logits(q, k, scaling, softcap, inv_softcap, HAS_SOFTCAP, LOGITS, LIBDEVICE)
        s = tl.where(_visible(offs_n, pos, window, HAS_WINDOW), s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = _exp(m_i - m_safe, LIBDEVICE)
        p = _exp(s - m_safe[:, None], LIBDEVICE)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        m_i = m_new
    return m_i, l_i


@triton.jit
def _row_stats_kernel(
    Q,
    K,
    POS,
    M_OUT,
    L_OUT,
    stride_qh,
    stride_qn,
    stride_qd,
    stride_kh,
    stride_kn,
    stride_kd,
    stride_ph,
    stride_pr,
    stride_oh,
    stride_or,
    R,
    D,
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
    offs_r = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = offs_r < R
    pos = tl.load(POS + h * stride_ph + offs_r * stride_pr, mask=row_ok, other=0).to(tl.int64)
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < D
    q = _load_qk(Q + h * stride_qh, pos, stride_qn, offs_d, stride_qd, row_ok, d_ok, LOGITS)
    m_i, l_i = _online_stats(
        q, K + h * stride_kh, stride_kn, stride_kd, pos, row_ok, offs_d, d_ok, scaling, softcap, inv_softcap, window,
        HAS_SOFTCAP, HAS_WINDOW, LOGITS, LIBDEVICE, BLOCK_M, BLOCK_N,
    )  # fmt: skip
    tl.store(M_OUT + h * stride_oh + offs_r * stride_or, m_i, mask=row_ok)
    tl.store(L_OUT + h * stride_oh + offs_r * stride_or, l_i, mask=row_ok)


@triton.jit
def _row_probs_kernel(
    Q,
    K,
    POS,
    M_IN,
    L_IN,
    OUT,
    stride_qh,
    stride_qn,
    stride_qd,
    stride_kh,
    stride_kn,
    stride_kd,
    stride_ph,
    stride_pr,
    stride_sh,
    stride_sr,
    stride_oh,
    stride_or,
    stride_on,
    R,
    N,
    D,
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
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    h = tl.program_id(2)
    offs_r = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = offs_r < R
    pos = tl.load(POS + h * stride_ph + offs_r * stride_pr, mask=row_ok, other=0).to(tl.int64)
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < D
    q = _load_qk(Q + h * stride_qh, pos, stride_qn, offs_d, stride_qd, row_ok, d_ok, LOGITS)
    m = tl.load(M_IN + h * stride_sh + offs_r * stride_sr, mask=row_ok, other=0.0)
    l = tl.load(L_IN + h * stride_sh + offs_r * stride_sr, mask=row_ok, other=1.0)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = offs_n < N
    k = _load_qk(K + h * stride_kh, offs_n, stride_kn, offs_d, stride_kd, col_ok, d_ok, LOGITS)
    s = _logits(q, k, scaling, softcap, inv_softcap, HAS_SOFTCAP, LOGITS, LIBDEVICE)
    p = tl.div_rn(_exp(s - m[:, None], LIBDEVICE), l[:, None])
    p = tl.where(_visible(offs_n, pos, window, HAS_WINDOW), p, 0.0)
    tl.store(
        OUT + h * stride_oh + offs_r[:, None] * stride_or + offs_n[None, :] * stride_on,
        p,
        mask=row_ok[:, None] & col_ok[None, :],
    )


@triton.jit
def _column_mass_kernel(
    Q,
    K,
    M_IN,
    L_IN,
    POS,
    ROW_HI,
    OFF,
    F,
    stride_qh,
    stride_qn,
    stride_qd,
    stride_kh,
    stride_kn,
    stride_kd,
    stride_sh,
    stride_sn,
    stride_ph,
    stride_pr,
    stride_fh,
    stride_fr,
    stride_fo,
    stride_fn,
    R,
    N,
    D,
    NO,
    SPAN,
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
    """Prefix column mass ``F[h, r, o, j] = sum_{t <= i - OFF[o]} P[t, j]`` in float64.

    One program owns key columns ``j0..j0+BLOCK_N-1`` of one head and sweeps its row tiles in
    order, keeping the float64 mass of the rows before the tile; each needed row ``t`` is written
    once, by the tile holding it (pure stores: no read-modify-write of global memory).
    """
    pid_n = tl.program_id(0)
    h = tl.program_id(1)
    j0 = pid_n * BLOCK_N
    offs_n = j0 + tl.arange(0, BLOCK_N)
    col_ok = offs_n < N
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < D
    k = _load_qk(K + h * stride_kh, offs_n, stride_kn, offs_d, stride_kd, col_ok, d_ok, LOGITS)
    row_hi = tl.load(ROW_HI + h).to(tl.int32)  # max sampled position of this head + 1
    vis_hi = row_hi
    if HAS_WINDOW:  # rows from j0 + BLOCK_N - 1 + window on see none of these keys
        vis_hi = tl.minimum(row_hi, j0 + BLOCK_N - 1 + window)
    running = tl.zeros([BLOCK_N], tl.float64)  # P mass of the rows before the tile, per key
    for t0 in range((j0 // BLOCK_M) * BLOCK_M, row_hi, BLOCK_M):  # rows before j0 see none of them
        offs_m = t0 + tl.arange(0, BLOCK_M)
        p = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
        if t0 < vis_hi:
            row_ok = offs_m < row_hi
            q = _load_qk(Q + h * stride_qh, offs_m, stride_qn, offs_d, stride_qd, row_ok, d_ok, LOGITS)
            m = tl.load(M_IN + h * stride_sh + offs_m * stride_sn, mask=row_ok, other=0.0)
            l = tl.load(L_IN + h * stride_sh + offs_m * stride_sn, mask=row_ok, other=1.0)
            s = _logits(q, k, scaling, softcap, inv_softcap, HAS_SOFTCAP, LOGITS, LIBDEVICE)
            vis = _visible(offs_n, offs_m, window, HAS_WINDOW) & row_ok[:, None] & col_ok[None, :]
            p = tl.where(vis, tl.div_rn(_exp(s - m[:, None], LIBDEVICE), l[:, None]), 0.0)
        p64 = p.to(tl.float64)
        for r in range(R):
            i = tl.load(POS + h * stride_ph + r * stride_pr).to(tl.int32)
            if (i >= t0) & (i - SPAN < t0 + BLOCK_M):  # some needed row i - OFF[o] is in this tile
                for o in range(NO):
                    t = i - tl.load(OFF + o).to(tl.int32)
                    if (t >= t0) & (t < t0 + BLOCK_M):
                        part = tl.sum(tl.where(offs_m[:, None] <= t, p64, 0.0), axis=0)
                        tl.store(
                            F + h * stride_fh + r * stride_fr + o * stride_fo + offs_n * stride_fn,
                            running + part,
                            mask=col_ok,
                        )
        running += tl.sum(p64, axis=0)


def _common(q: torch.Tensor, softcap, logits_dtype):
    if logits_dtype not in _LOGITS_CODE:
        raise TypeError(f"logits_dtype must be None, torch.bfloat16 or torch.float16; got {logits_dtype}")
    if not q.is_cuda and not INTERPRET:
        raise RuntimeError(
            "the Triton capture kernels need CUDA tensors; to run them on CPU, set TRITON_INTERPRET=1 "
            "before triton is imported"
        )
    libdevice_ok = (not INTERPRET) and libdevice is not None
    soft = dict(
        HAS_SOFTCAP=softcap is not None,
        softcap=float(softcap) if softcap is not None else 1.0,
        # CUDA eager computes x / c for a Python-scalar c as x * (1/c), the reciprocal in float32
        inv_softcap=float(torch.tensor(1.0, dtype=torch.float32) / torch.tensor(float(softcap), dtype=torch.float32))
        if softcap is not None
        else 1.0,
    )
    return libdevice_ok, soft


def _block_d(d: int) -> int:
    return max(16, triton.next_power_of_2(d))


def row_stats(q, k, positions, scaling, softcap=None, window=None, logits_dtype=None, *, block_m=16, block_n=64):
    """Pass 1: (m, l) per requested row, float32 ``[H, R]`` each."""
    libdevice_ok, soft = _common(q, softcap, logits_dtype)
    H, _, D = q.shape
    R = positions.shape[1]
    m = torch.empty(H, R, dtype=torch.float32, device=q.device)
    l = torch.empty(H, R, dtype=torch.float32, device=q.device)
    if R == 0:
        return m, l
    grid = (triton.cdiv(R, block_m), H)
    _row_stats_kernel[grid](
        q,
        k,
        positions,
        m,
        l,
        q.stride(0),
        q.stride(1),
        q.stride(2),
        k.stride(0),
        k.stride(1),
        k.stride(2),
        positions.stride(0),
        positions.stride(1),
        m.stride(0),
        m.stride(1),
        R,
        D,
        float(scaling),
        soft["softcap"],
        soft["inv_softcap"],
        int(window or 0),
        HAS_SOFTCAP=soft["HAS_SOFTCAP"],
        HAS_WINDOW=window is not None,
        LOGITS=_LOGITS_CODE[logits_dtype],
        LIBDEVICE=libdevice_ok,
        BLOCK_M=block_m,
        BLOCK_N=block_n,
        BLOCK_D=_block_d(D),
    )
    return m, l


def sampled_row_probs_triton(
    q, k, positions, scaling, softcap=None, window=None, logits_dtype=None, *, block_m=16, block_n=64
):
    """Exact rows ``P[positions[h, r], :]``: pass 1 (row statistics), pass 2 (probabilities)."""
    libdevice_ok, soft = _common(q, softcap, logits_dtype)
    positions = positions.long().contiguous()
    H, N, D = q.shape
    R = positions.shape[1]
    out = torch.empty(H, R, N, dtype=torch.float32, device=q.device)
    if R == 0:
        return out
    m, l = row_stats(q, k, positions, scaling, softcap, window, logits_dtype, block_m=block_m, block_n=block_n)
    grid = (triton.cdiv(N, block_n), triton.cdiv(R, block_m), H)
    _row_probs_kernel[grid](
        q,
        k,
        positions,
        m,
        l,
        out,
        q.stride(0),
        q.stride(1),
        q.stride(2),
        k.stride(0),
        k.stride(1),
        k.stride(2),
        positions.stride(0),
        positions.stride(1),
        m.stride(0),
        m.stride(1),
        out.stride(0),
        out.stride(1),
        out.stride(2),
        R,
        N,
        D,
        float(scaling),
        soft["softcap"],
        soft["inv_softcap"],
        int(window or 0),
        HAS_SOFTCAP=soft["HAS_SOFTCAP"],
        HAS_WINDOW=window is not None,
        LOGITS=_LOGITS_CODE[logits_dtype],
        LIBDEVICE=libdevice_ok,
        BLOCK_M=block_m,
        BLOCK_N=block_n,
        BLOCK_D=_block_d(D),
    )
    return out


def column_mass_and_window_sums_triton(
    q,
    k,
    positions,
    scaling,
    softcap=None,
    window=None,
    logits_dtype=None,
    windows: Sequence[int] = (2, 4, 8, 16, 32),
    *,
    block_m=32,
    block_n=64,
):
    """H2O accumulated mass and SnapKV window sums, from float64 prefixes (see `_column_mass_kernel`).

    ``acc = F(i)`` and ``wsum_w = F(i) - F(i - w)`` with ``F(t) = sum_{u <= t} P[u]`` (0 for t < 0).
    Memory: row statistics ``[H, N]`` and the prefixes ``[H, R, 1 + len(windows), N]`` in float64.
    """
    libdevice_ok, soft = _common(q, softcap, logits_dtype)
    positions = positions.long().contiguous()
    H, N, D = q.shape
    R = positions.shape[1]
    windows = tuple(int(w) for w in windows)
    offsets = (0, *windows)
    prefix = torch.zeros(H, R, len(offsets), N, dtype=torch.float64, device=q.device)
    if R:
        row_hi = (positions.max(dim=1).values + 1).contiguous()  # [H]
        rows = int(row_hi.max())
        all_rows = torch.arange(rows, device=q.device).expand(H, rows)  # stride 0 over heads
        m, l = row_stats(q, k, all_rows, scaling, softcap, window, logits_dtype, block_m=block_m, block_n=block_n)
        off = torch.tensor(offsets, dtype=torch.int64, device=q.device)
        grid = (triton.cdiv(rows, block_n), H)
        _column_mass_kernel[grid](
            q,
            k,
            m,
            l,
            positions,
            row_hi,
            off,
            prefix,
            q.stride(0),
            q.stride(1),
            q.stride(2),
            k.stride(0),
            k.stride(1),
            k.stride(2),
            m.stride(0),
            m.stride(1),
            positions.stride(0),
            positions.stride(1),
            prefix.stride(0),
            prefix.stride(1),
            prefix.stride(2),
            prefix.stride(3),
            R,
            N,
            D,
            len(offsets),
            max(offsets),
            float(scaling),
            soft["softcap"],
            soft["inv_softcap"],
            int(window or 0),
            HAS_SOFTCAP=soft["HAS_SOFTCAP"],
            HAS_WINDOW=window is not None,
            LOGITS=_LOGITS_CODE[logits_dtype],
            LIBDEVICE=libdevice_ok,
            BLOCK_M=block_m,
            BLOCK_N=block_n,
            BLOCK_D=_block_d(D),
        )
    acc = prefix[:, :, 0]
    wsum = acc.unsqueeze(2) - prefix[:, :, 1:]
    return acc.to(torch.float32), wsum.to(torch.float32)


__all__ = [
    "INTERPRET",
    "column_mass_and_window_sums_triton",
    "row_stats",
    "sampled_row_probs_triton",
]
