"""Triton kernels for the capture side statistics (imported lazily; needs ``triton``).

Design (FlashAttention-2 style, tensor cores for bf16/fp16 models; issue 28 item 2)
===================================================================================

Four kernels, the three with dots tiled over (rows x keys) blocks of 16-128 with the head
dimension a constexpr (``BLOCK_D = next_pow2(d)``, at least 16):

* `_stats_kernel` -- the row statistics ``m`` (running max) and ``l = sum_j exp(logit_j - m)``
  of a tile of query rows, online over key blocks (FlashAttention's forward without the value
  product).  Rows come as a range (every row of a head: the column pass), as sampled positions
  (``sampled_row_probs``) or, in `trustmass.kernels.triton_restricted`, as the ``M`` rows of the
  ``G`` query heads of one KV head.  Each program may own a *split* of the keys (flash-decoding):
  a few rows over a long context get ``ceil(2 * SMs / programs)`` programs per row tile; the
  consumer combines the per-split ``(m_s, l_s)`` (``m = max m_s``, ``l = sum l_s e^(m_s - m)``).
  The key loop is split into key blocks every row of the tile sees (no mask evaluated) and the
  blocks at the diagonal or the window's edge (masked), as FlashAttention does.
* `_column_kernel` -- the column pass, one program per (key block of ``BLOCK_N`` keys, head): the
  key tile stays on chip while the program sweeps the row tiles at and below the diagonal in order,
  computing ``P^T = K Q^T`` tile by tile (``[BLOCK_N, BLOCK_M]``: the column sums are row sums of
  the accumulator, the cheap direction of the MMA layout), ``P = exp(logit - m) / l`` from the
  stored row statistics, and the running column mass.  A row that the capture needs (a sampled
  row ``i`` and the window starts ``i - w``) is looked up in a per-head row -> slot map; a tile that
  holds one takes a branch that forms the in-tile prefix (``cumsum`` in float64) and stores
  ``F(t) = sum_{u <= t} P[u, :]`` for those rows (a masked scatter: no loop over the sampled rows,
  so the tile loop stays a flat loop the compiler can software-pipeline), and with ``WANT_P`` the
  sampled rows of ``P`` themselves (so the fused `side_statistics_triton` needs no row pass).
  Such a tile adds its mass to the running sum from the same float64 scan, so ``F(i) - F(i - w)``
  is exactly 0 wherever the window's rows have ``P = 0``, as in the twin.  Rows that see none of
  the block (past a sliding window) cost one slot probe per tile.
* `_epilogue_kernel` -- ``acc = F(i)``, ``wsum_w = F(i) - F(i - w)`` (float64 difference, then
  float32) and the sampled rows, gathered through the slot map: one launch.
* `_row_probs_kernel` -- ``sampled_row_probs`` alone: exact probabilities of a (rows x key block)
  tile from the combined split statistics (or from a log-sum-exp the caller passes).

Passes over ``Q K^T``: the fused side statistics make two (statistics, column pass) -- the same
tensor-core FLOPs as the layer's own attention (``QK^T`` twice instead of ``QK^T`` and ``PV``) and
twice its exponentials.  With ``lse`` from the caller (the log-sum-exp the layer's flash/efficient
SDPA already returns), one.  Memory: O(H N) row statistics, O(H E N) float64 prefixes (``E`` =
rows x (1 + windows)), never N x N.

Numerics, tiles and the shared statistics pass: `trustmass.kernels.triton_common`.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import triton
import triton.language as tl

from trustmass.kernels.triton_common import (
    INTERPRET,
    _block_d,
    _combine,
    _config,
    _dot,
    _launch,
    _load_op,
    _log2l,
    _positions_max,
    _prob,
    _scale_logits,
    _stats_kernel,
    _visible,
    numerics,
    row_stats,
    split_keys,
    split_row_stats,
)

# --------------------------------------------------------------------------------------------------
# sampled rows alone


@triton.jit
def _row_probs_kernel(
    Q,
    K,
    POS,
    M_PART,
    L_PART,
    LSE,
    OUT,
    stride_qh,
    stride_qn,
    stride_qd,
    stride_kh,
    stride_kn,
    stride_kd,
    stride_ph,
    stride_pr,
    stride_ss,
    stride_sh,
    stride_sr,
    stride_lh,
    stride_ln,
    stride_oh,
    stride_or,
    stride_on,
    R,
    N,
    D,
    S,
    scaling,
    softcap,
    inv_softcap,
    window,
    HAS_LSE: tl.constexpr,
    HAS_SOFTCAP: tl.constexpr,
    HAS_WINDOW: tl.constexpr,
    LOGITS: tl.constexpr,
    DOT: tl.constexpr,
    NATIVE: tl.constexpr,
    BITS: tl.constexpr,
    LIBDEVICE: tl.constexpr,
    FAST: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    """``P[positions[h, r], key block]``: grid ``(key blocks, row tiles, heads)``."""
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    h = tl.program_id(2).to(tl.int64)
    offs_r = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = offs_r < R
    pos = tl.load(POS + h * stride_ph + offs_r * stride_pr, mask=row_ok, other=0).to(tl.int32)
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < D
    q = _load_op(
        Q + h * stride_qh + pos.to(tl.int64)[:, None] * stride_qn + offs_d[None, :] * stride_qd,
        row_ok[:, None] & d_ok[None, :],
        DOT,
        NATIVE,
        BITS,
    )
    if HAS_LSE:
        m = tl.load(LSE + h * stride_lh + pos * stride_ln, mask=row_ok, other=0.0)
        l = tl.full([BLOCK_M], 1.0, tl.float32)
    else:
        base = h * stride_sh + offs_r * stride_sr
        m, l = _combine(M_PART + base, L_PART + base, stride_ss, S, row_ok, FAST, LIBDEVICE)
        l = tl.where(row_ok, l, 1.0)
    lg = _log2l(l, FAST)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = offs_n < N
    k = _load_op(
        K + h * stride_kh + offs_n[:, None] * stride_kn + offs_d[None, :] * stride_kd,
        col_ok[:, None] & d_ok[None, :],
        DOT,
        NATIVE,
        BITS,
    )
    s = _dot(q, tl.trans(k), NATIVE)
    s = _scale_logits(s, scaling, softcap, inv_softcap, HAS_SOFTCAP, LOGITS, BITS, LIBDEVICE)
    p = _prob(s, m[:, None], l[:, None], lg[:, None], FAST, LIBDEVICE)
    p = tl.where(_visible(offs_n[None, :], pos[:, None], window, HAS_WINDOW), p, 0.0)
    tl.store(
        OUT + h * stride_oh + offs_r[:, None] * stride_or + offs_n[None, :] * stride_on,
        p,
        mask=row_ok[:, None] & col_ok[None, :],
    )


# --------------------------------------------------------------------------------------------------
# pass 2: the column pass


@triton.jit
def _column_tiles(
    running,
    kt_lo,
    kt_hi,
    j0,
    k,
    offs_n,
    col_ok,
    q_head,
    stride_qn,
    stride_qd,
    m_head,
    l_head,
    stride_sn,
    row_hi,
    slot_head,
    f_head,
    stride_fe,
    stride_fn,
    pc_head,
    stride_pe,
    stride_pn,
    N,
    E,
    R,
    offs_d,
    d_ok,
    scaling,
    softcap,
    inv_softcap,
    window,
    MASKED: tl.constexpr,
    HAS_L: tl.constexpr,
    WANT_P: tl.constexpr,
    HAS_SOFTCAP: tl.constexpr,
    HAS_WINDOW: tl.constexpr,
    LOGITS: tl.constexpr,
    DOT: tl.constexpr,
    NATIVE: tl.constexpr,
    BITS: tl.constexpr,
    LIBDEVICE: tl.constexpr,
    FAST: tl.constexpr,
    SUM64: tl.constexpr,
    BLOCK_M: tl.constexpr,
):
    """Row tiles ``j0 + kt * BLOCK_M`` for ``kt`` in ``[kt_lo, kt_hi)`` of one key block: P^T,
    the needed rows' prefixes, the running column mass (float64 ``[BLOCK_N]``)."""
    for kt in range(kt_lo, kt_hi):
        offs_m = j0 + kt * BLOCK_M + tl.arange(0, BLOCK_M)
        row_in = offs_m < N
        q = _load_op(
            q_head + offs_m.to(tl.int64)[:, None] * stride_qn + offs_d[None, :] * stride_qd,
            row_in[:, None] & d_ok[None, :],
            DOT,
            NATIVE,
            BITS,
        )
        live = offs_m < row_hi  # rows past the head's last sampled row: m = +inf, P = 0
        m = tl.load(m_head + offs_m * stride_sn, mask=live, other=float("inf"))
        if HAS_L:
            l = tl.load(l_head + offs_m * stride_sn, mask=live, other=1.0)
        else:
            l = tl.full([BLOCK_M], 1.0, tl.float32)
        lg = _log2l(l, FAST)
        s = _dot(k, tl.trans(q), NATIVE)  # [BLOCK_N keys, BLOCK_M rows]
        s = _scale_logits(s, scaling, softcap, inv_softcap, HAS_SOFTCAP, LOGITS, BITS, LIBDEVICE)
        p = _prob(s, m[None, :], l[None, :], lg[None, :], FAST, LIBDEVICE)
        if MASKED:
            p = tl.where(_visible(offs_n[:, None], offs_m[None, :], window, HAS_WINDOW), p, 0.0)
        slot = tl.load(slot_head + offs_m, mask=row_in, other=E)
        if tl.min(slot, axis=0) < E:  # the tile holds a needed row: store its prefix F(t)
            cum = tl.cumsum(p.to(tl.float64), axis=1)
            hit = slot < E
            tl.store(
                f_head + slot[None, :] * stride_fe + offs_n[:, None] * stride_fn,
                running[:, None] + cum,
                mask=hit[None, :] & col_ok[:, None],
            )
            if WANT_P:  # slots < R are sampled rows (entries with offset 0 come first)
                tl.store(
                    pc_head + slot[None, :] * stride_pe + offs_n[:, None] * stride_pn,
                    p,
                    mask=(slot < R)[None, :] & col_ok[:, None],
                )
            # the tile's mass from the same scan (its last column, picked exactly): F(i) - F(i - w)
            # is then exactly 0 wherever rows i - w + 1 .. i have P = 0, as the twin's window sums
            tile = tl.sum(tl.where((tl.arange(0, BLOCK_M) == BLOCK_M - 1)[None, :], cum, 0.0), axis=1)
        elif SUM64:
            tile = tl.sum(p.to(tl.float64), axis=1)
        else:
            tile = tl.sum(p, axis=1).to(tl.float64)
        running += tile
    return running


@triton.jit
def _column_kernel(
    Q,
    K,
    M_IN,
    L_IN,
    ROW_HI,
    SLOT,
    F,
    PC,
    stride_qh,
    stride_qn,
    stride_qd,
    stride_kh,
    stride_kn,
    stride_kd,
    stride_sh,
    stride_sn,
    stride_slh,
    stride_fh,
    stride_fe,
    stride_fn,
    stride_ph,
    stride_pe,
    stride_pn,
    N,
    D,
    E,
    R,
    scaling,
    softcap,
    inv_softcap,
    window,
    HAS_L: tl.constexpr,
    WANT_P: tl.constexpr,
    HAS_SOFTCAP: tl.constexpr,
    HAS_WINDOW: tl.constexpr,
    LOGITS: tl.constexpr,
    DOT: tl.constexpr,
    NATIVE: tl.constexpr,
    BITS: tl.constexpr,
    LIBDEVICE: tl.constexpr,
    FAST: tl.constexpr,
    SUM64: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    """Prefix column mass ``F[h, slot(t), j] = sum_{u <= t} P[u, j]`` (float64) at every needed row
    ``t`` (``SLOT[h, t] < E``), and with ``WANT_P`` the sampled rows ``PC[h, slot, j] = P[t, j]``;
    grid ``(key blocks, heads)``.  Pure stores: each needed row is written once per key block, by
    the row tile holding it; rows before the block (and keys past a head's rows) stay 0."""
    pid_n = tl.program_id(0)
    h = tl.program_id(1).to(tl.int64)
    j0 = pid_n * BLOCK_N
    offs_n = j0 + tl.arange(0, BLOCK_N)
    col_ok = offs_n < N
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < D
    k = _load_op(
        K + h * stride_kh + offs_n[:, None] * stride_kn + offs_d[None, :] * stride_kd,
        col_ok[:, None] & d_ok[None, :],
        DOT,
        NATIVE,
        BITS,
    )
    row_hi = tl.load(ROW_HI + h).to(tl.int32)  # the head's last sampled row + 1
    vis_end = row_hi
    if HAS_WINDOW:  # rows from j0 + BLOCK_N - 1 + window on see none of these keys
        vis_end = tl.minimum(row_hi, j0 + BLOCK_N - 1 + window)
    n_end = tl.maximum(vis_end - j0 + BLOCK_M - 1, 0) // BLOCK_M  # row tiles that see some key
    n_diag = (BLOCK_N - 1 + BLOCK_M - 1) // BLOCK_M  # tiles crossing the diagonal
    n_full = n_end
    if HAS_WINDOW:  # tiles whose last row still sees the block's first key
        n_full = tl.minimum(window // BLOCK_M, n_end)
    running = tl.zeros([BLOCK_N], tl.float64)
    q_head = Q + h * stride_qh
    m_head = M_IN + h * stride_sh
    l_head = L_IN + h * stride_sh
    slot_head = SLOT + h * stride_slh
    f_head = F + h * stride_fh
    pc_head = PC + h * stride_ph
    running = _column_tiles(
        running,
        0,
        tl.minimum(n_diag, n_end),
        j0,
        k,
        offs_n,
        col_ok,
        q_head,
        stride_qn,
        stride_qd,
        m_head,
        l_head,
        stride_sn,
        row_hi,
        slot_head,
        f_head,
        stride_fe,
        stride_fn,
        pc_head,
        stride_pe,
        stride_pn,
        N,
        E,
        R,
        offs_d,
        d_ok,
        scaling,
        softcap,
        inv_softcap,
        window,
        True,
        HAS_L,
        WANT_P,
        HAS_SOFTCAP,
        HAS_WINDOW,
        LOGITS,
        DOT,
        NATIVE,
        BITS,
        LIBDEVICE,
        FAST,
        SUM64,
        BLOCK_M,
    )
    running = _column_tiles(
        running,
        n_diag,
        n_full,
        j0,
        k,
        offs_n,
        col_ok,
        q_head,
        stride_qn,
        stride_qd,
        m_head,
        l_head,
        stride_sn,
        row_hi,
        slot_head,
        f_head,
        stride_fe,
        stride_fn,
        pc_head,
        stride_pe,
        stride_pn,
        N,
        E,
        R,
        offs_d,
        d_ok,
        scaling,
        softcap,
        inv_softcap,
        window,
        False,
        HAS_L,
        WANT_P,
        HAS_SOFTCAP,
        HAS_WINDOW,
        LOGITS,
        DOT,
        NATIVE,
        BITS,
        LIBDEVICE,
        FAST,
        SUM64,
        BLOCK_M,
    )
    running = _column_tiles(
        running,
        tl.maximum(n_diag, n_full),
        n_end,
        j0,
        k,
        offs_n,
        col_ok,
        q_head,
        stride_qn,
        stride_qd,
        m_head,
        l_head,
        stride_sn,
        row_hi,
        slot_head,
        f_head,
        stride_fe,
        stride_fn,
        pc_head,
        stride_pe,
        stride_pn,
        N,
        E,
        R,
        offs_d,
        d_ok,
        scaling,
        softcap,
        inv_softcap,
        window,
        True,
        HAS_L,
        WANT_P,
        HAS_SOFTCAP,
        HAS_WINDOW,
        LOGITS,
        DOT,
        NATIVE,
        BITS,
        LIBDEVICE,
        FAST,
        SUM64,
        BLOCK_M,
    )
    if HAS_WINDOW:  # needed rows past the window's reach hold the final column mass
        for kt in range(n_end, tl.maximum(row_hi - j0 + BLOCK_M - 1, 0) // BLOCK_M):
            offs_m = j0 + kt * BLOCK_M + tl.arange(0, BLOCK_M)
            slot = tl.load(slot_head + offs_m, mask=offs_m < N, other=E)
            if tl.min(slot, axis=0) < E:
                val = running[:, None] + tl.zeros([BLOCK_N, BLOCK_M], tl.float64)
                tl.store(
                    f_head + slot[None, :] * stride_fe + offs_n[:, None] * stride_fn,
                    val,
                    mask=(slot < E)[None, :] & col_ok[:, None],
                )


@triton.jit
def _epilogue_kernel(
    F,
    PC,
    SLOT,
    POS,
    OFF,
    ACC,
    WSUM,
    P_OUT,
    stride_fh,
    stride_fe,
    stride_fn,
    stride_ch,
    stride_ce,
    stride_cn,
    stride_slh,
    stride_ph,
    stride_pr,
    stride_ah,
    stride_ar,
    stride_an,
    stride_wh,
    stride_wr,
    stride_ww,
    stride_wn,
    stride_oh,
    stride_or,
    stride_on,
    N,
    R,
    NO,
    WANT_P: tl.constexpr,
    BLOCK: tl.constexpr,
):
    """``acc = F(i)``, ``wsum_w = F(i) - F(i - w)`` (0 for ``i - w < 0``) in float64 then float32,
    and the sampled rows of P; grid ``(key blocks, heads)``."""
    pid = tl.program_id(0)
    h = tl.program_id(1).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    ok = offs < N
    for r in range(R):
        i = tl.load(POS + h * stride_ph + r * stride_pr)
        s0 = tl.load(SLOT + h * stride_slh + i)
        f0 = tl.load(F + h * stride_fh + s0 * stride_fe + offs * stride_fn, mask=ok, other=0.0)
        tl.store(ACC + h * stride_ah + r * stride_ar + offs * stride_an, f0.to(tl.float32), mask=ok)
        if WANT_P:
            p = tl.load(PC + h * stride_ch + s0 * stride_ce + offs * stride_cn, mask=ok, other=0.0)
            tl.store(P_OUT + h * stride_oh + r * stride_or + offs * stride_on, p, mask=ok)
        for o in range(1, NO):
            t = i - tl.load(OFF + o)
            so = tl.load(SLOT + h * stride_slh + tl.maximum(t, 0))
            before = (offs * 0 + t) < 0  # the window reaches past row 0: F = 0
            fo = tl.load(F + h * stride_fh + so * stride_fe + offs * stride_fn, mask=ok & ~before, other=0.0)
            tl.store(
                WSUM + h * stride_wh + r * stride_wr + (o - 1) * stride_ww + offs * stride_wn,
                (f0 - fo).to(tl.float32),
                mask=ok,
            )


def sampled_row_probs_triton(
    q,
    k,
    positions,
    scaling,
    softcap=None,
    window=None,
    logits_dtype=None,
    *,
    lse=None,
    splits=None,
    config=None,
    max_position=None,
):
    """Exact rows ``P[positions[h, r], :]``, float32 ``[H, R, N]``: split statistics (skipped when
    ``lse`` ``[H, N]`` is given), then one probabilities tile per (key block, row tile, head)."""
    nm = numerics(q, softcap, logits_dtype)
    positions = positions.long().contiguous()
    H, N, D = q.shape
    R = positions.shape[1]
    out = torch.empty(H, R, N, dtype=torch.float32, device=q.device)
    if R == 0 or H == 0:
        return out
    cfg = _config("rows", D, nm["flags"]["FAST"], config)
    if lse is None:
        m, l = split_row_stats(q, k, positions, scaling, softcap, window, logits_dtype, splits=splits, config=config)
        lse_t, S = m, m.shape[0]  # lse_t: a placeholder pointer
    else:
        m = l = lse_t = lse
        S = 1
    grid = (triton.cdiv(N, cfg["BLOCK_N"]), triton.cdiv(R, cfg["BLOCK_M"]), H)
    st = (m.stride(0), m.stride(1), m.stride(2)) if lse is None else (0, 0, 0)
    _row_probs_kernel[grid](
        q,
        k,
        positions,
        m,
        l,
        lse_t,
        out,
        q.stride(0),
        q.stride(1),
        q.stride(2),
        k.stride(0),
        k.stride(1),
        k.stride(2),
        positions.stride(0),
        positions.stride(1),
        *st,
        lse_t.stride(0),
        lse_t.stride(-1),
        out.stride(0),
        out.stride(1),
        out.stride(2),
        R,
        N,
        D,
        S,
        float(scaling),
        nm["softcap"],
        nm["inv_softcap"],
        int(window or 0),
        HAS_LSE=lse is not None,
        HAS_WINDOW=window is not None,
        **nm["flags"],
        BLOCK_M=cfg["BLOCK_M"],
        BLOCK_N=cfg["BLOCK_N"],
        BLOCK_D=_block_d(D),
        **_launch(cfg),
    )
    return out


_OFFSETS_CACHE: dict = {}


def _slot_map(positions: torch.Tensor, offsets: tuple[int, ...], N: int):
    """Per head, needed row ``t`` -> slot: the smallest entry ``e = o * R + r`` with
    ``positions[h, r] - offsets[o] == t`` (int32 ``[H, N + 1]``, ``E`` where no entry needs the
    row; column ``N`` collects the entries before row 0).  Entries with offset 0 (the sampled rows)
    come first, so a sampled row's slot is ``< R`` and names the first ``r`` at that position."""
    H, R = positions.shape
    E = R * len(offsets)
    key = (positions.device, offsets, R)
    if key not in _OFFSETS_CACHE:
        _OFFSETS_CACHE[key] = (
            torch.tensor(offsets, dtype=torch.int64, device=positions.device),
            torch.arange(E, dtype=torch.int32, device=positions.device),
        )
    off, entries = _OFFSETS_CACHE[key]
    t = (positions.unsqueeze(1) - off.view(1, -1, 1)).reshape(H, E)  # [H, E], offset-major
    t = torch.where(t >= 0, t, N)
    slot = torch.full((H, N + 1), E, dtype=torch.int32, device=positions.device)
    slot.scatter_reduce_(1, t, entries.expand(H, E), reduce="amin")
    return slot, E


def side_statistics_triton(
    q,
    k,
    positions,
    scaling,
    softcap=None,
    window=None,
    logits_dtype=None,
    windows: Sequence[int] = (2, 4, 8, 16, 32),
    *,
    lse=None,
    want_rows=True,
    config=None,
    max_position=None,
):
    """The capture's side statistics of one layer in two passes over ``QK^T`` (one with ``lse``):
    ``(p [H, R, N] or None, acc [H, R, N], wsum [H, R, len(windows), N])``, float32.

    ``acc = F(i)`` and ``wsum_w = F(i) - F(i - w)`` with ``F(t) = sum_{u <= t} P[u]`` (0 for t < 0).
    ``lse`` (float32 ``[H, >= max position + 1]``, natural log): row log-sum-exps of the same
    transformed logits (e.g. from the layer's own flash SDPA with ``logits_dtype=None``); the
    statistics pass is skipped and ``P = exp(logit - lse)``.
    Memory: row statistics ``[H, rows]``, prefixes ``[H, R (1 + len(windows)), N]`` float64."""
    nm = numerics(q, softcap, logits_dtype)
    flags = nm["flags"]
    positions = positions.long().contiguous()
    H, N, D = q.shape
    R = positions.shape[1]
    windows = tuple(int(w) for w in windows)
    offsets = (0, *windows)
    NO = len(offsets)
    acc = torch.zeros(H, R, N, dtype=torch.float32, device=q.device)
    wsum = torch.zeros(H, R, len(windows), N, dtype=torch.float32, device=q.device)
    p_out = torch.zeros(H, R, N, dtype=torch.float32, device=q.device) if want_rows else None
    if R == 0 or H == 0:
        return p_out, acc, wsum
    rows = _positions_max(positions, max_position) + 1
    row_hi = (positions.amax(dim=1) + 1).to(torch.int32)  # [H]
    cfg_s = _config("stats", D, flags["FAST"], config)
    cfg_c = _config("column", D, flags["FAST"], config)
    common = (float(scaling), nm["softcap"], nm["inv_softcap"], int(window or 0))
    if lse is None:
        m = torch.empty(1, H, rows, dtype=torch.float32, device=q.device)
        l = torch.empty_like(m)
        _stats_kernel[(triton.cdiv(rows, cfg_s["BLOCK_M"]), 1, H)](
            q,
            k,
            row_hi,
            row_hi,
            m,
            l,
            q.stride(0),
            q.stride(1),
            q.stride(2),
            k.stride(0),
            k.stride(1),
            k.stride(2),
            0,
            0,
            m.stride(0),
            m.stride(1),
            m.stride(2),
            rows,
            N,
            D,
            1,
            triton.cdiv(N, cfg_s["BLOCK_N"]),
            *common,
            ROWS=0,
            HAS_WINDOW=window is not None,
            **flags,
            BLOCK_M=cfg_s["BLOCK_M"],
            BLOCK_N=cfg_s["BLOCK_N"],
            BLOCK_D=_block_d(D),
            **_launch(cfg_s),
        )
        m, l = m[0], l[0]
    else:
        m = l = lse
    slot, E = _slot_map(positions, offsets, N)
    F = torch.zeros(H, E, N, dtype=torch.float64, device=q.device)
    pc = torch.zeros(H, R, N, dtype=torch.float32, device=q.device) if want_rows else F
    _column_kernel[(triton.cdiv(rows, cfg_c["BLOCK_N"]), H)](
        q,
        k,
        m,
        l,
        row_hi,
        slot,
        F,
        pc,
        q.stride(0),
        q.stride(1),
        q.stride(2),
        k.stride(0),
        k.stride(1),
        k.stride(2),
        m.stride(0),
        m.stride(1),
        slot.stride(0),
        F.stride(0),
        F.stride(1),
        F.stride(2),
        pc.stride(0),
        pc.stride(1),
        pc.stride(2),
        N,
        D,
        E,
        R,
        *common,
        HAS_L=lse is None,
        WANT_P=want_rows,
        HAS_WINDOW=window is not None,
        SUM64=not flags["FAST"],
        **flags,
        BLOCK_M=cfg_c["BLOCK_M"],
        BLOCK_N=cfg_c["BLOCK_N"],
        BLOCK_D=_block_d(D),
        **_launch(cfg_c),
    )
    cfg_e = _config("epilogue", D, flags["FAST"], config)
    off, _ = _OFFSETS_CACHE[(positions.device, offsets, R)]
    p_t = p_out if want_rows else acc
    _epilogue_kernel[(triton.cdiv(N, cfg_e["BLOCK"]), H)](
        F,
        pc,
        slot,
        positions,
        off,
        acc,
        wsum,
        p_t,
        F.stride(0),
        F.stride(1),
        F.stride(2),
        pc.stride(0),
        pc.stride(1),
        pc.stride(2),
        slot.stride(0),
        positions.stride(0),
        positions.stride(1),
        acc.stride(0),
        acc.stride(1),
        acc.stride(2),
        wsum.stride(0),
        wsum.stride(1),
        wsum.stride(2),
        wsum.stride(3),
        p_t.stride(0),
        p_t.stride(1),
        p_t.stride(2),
        N,
        R,
        NO,
        WANT_P=want_rows,
        BLOCK=cfg_e["BLOCK"],
        **_launch(cfg_e),
    )
    return p_out, acc, wsum


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
    lse=None,
    config=None,
    max_position=None,
):
    """H2O accumulated mass and SnapKV window sums (`side_statistics_triton` without the rows)."""
    _, acc, wsum = side_statistics_triton(
        q,
        k,
        positions,
        scaling,
        softcap,
        window,
        logits_dtype,
        windows,
        lse=lse,
        want_rows=False,
        config=config,
        max_position=max_position,
    )
    return acc, wsum


__all__ = [
    "INTERPRET",
    "column_mass_and_window_sums_triton",
    "numerics",
    "row_stats",
    "sampled_row_probs_triton",
    "side_statistics_triton",
    "split_keys",
    "split_row_stats",
]
