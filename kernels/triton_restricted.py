"""Triton kernels of `trustmass.kernels.restricted_attention` (imported lazily; needs ``triton``).

Design (issue 28 item 2): the operator needs, per query row, the log-sum-exp of its *full* row
(all ``N`` visible keys) and then only the ``|A|`` kept keys.  At ``N = 32,768`` the full-row scan
is nearly all the work, and one program per (16-row tile, head) scanning all keys left most of the
GPU idle; so two kernels:

* pass 1, `trustmass.kernels.triton_common._stats_kernel` in its grouped mode -- split-N
  statistics (flash-decoding): grid ``(ceil(G M / BLOCK_M), splits, Hkv)``, row tiles fastest so
  the programs running together read the same K blocks (L2).  A program takes the
  ``G x M`` rows of the ``G`` query heads that share one KV head (flattened ``r = m G + g``, so the
  K tile it streams serves all of them: grouped-query heads read their KV head once per tile) over
  one split of the key blocks, and writes partial ``(m_s, l_s)``; the number of splits fills the
  device (``2 x SMs`` programs, at most 64 splits).  Tiles and numerics as the capture's: bf16/fp16
  operands straight into ``tl.dot`` (fp32 accumulation), the logits rounded where eager rounds
  them, key blocks every row sees whole without a mask, fp32 models on the exact IEEE path.
* pass 2, `_restricted_gather_kernel` -- one program per (row, query head), programs of one KV
  head adjacent (its K and V stay in L2): combines the splits' ``(m_s, l_s)`` into ``m``, ``l`` and
  ``lse = m + log l``, walks the row's CSR kept set in chunks of ``BLOCK_K`` keys, gathers their K
  and V rows, recomputes the logits (fp32 products of the model-dtype values, summed in fp32 --
  the MMA's products, another summation order), ``p = exp(logit - m) / l`` and accumulates
  ``sum p v`` and ``sum p`` in float32; stores ``out = acc / mass`` (0 for an empty set),
  ``kept_mass`` and ``lse``.  It also checks every kept index against its row (visible key:
  ``0 <= j <= i``, inside the window) and the CSR pointers, and flags the row: the host reads the
  flags once after both kernels (one device synchronisation per call) and, on a flag, reruns the
  twin's full check to raise its ``ValueError``.  Indices are clamped and masked, so a bad CSR can
  never read out of bounds.

``lse`` from the caller (``[Hq, M]``, e.g. from an earlier call on the same rows: the full-row
log-sum-exp does not depend on the kept sets) skips pass 1.

Roofline (H200; `trustmass.bench.gpu_sections.restricted_roofline`, ``benchmarks/gpu/README.md``):
pass 1 is ``2 Hq M N d`` tensor FLOPs -- half of SDPA's ``4 Hq M N d`` for the same rows and keys
-- plus ``Hq M N`` exponentials, and reads K about once (the row tiles of a split run together);
pass 2 moves ``nnz x (2 d x 2 + 8)`` bytes of gathered K and V rows and indices (``nnz = Hq M
budget``) and ``4 nnz d`` fp32 FLOPs.  At 32/8 heads, d = 128, N = 32,768: M = 128, budget 128 --
pass 1 0.035 ms of tensor time, the gather 0.27 GB (0.056 ms at HBM rate), SDPA 0.069 ms at peak;
M = 1,024, budget 512 -- pass 1 0.28 ms, the gather 8.6 GB (1.8 ms at HBM rate; less where L2
serves it: a KV head's K and V, 16 MB, fit the 50 MB L2 while its programs run), SDPA 0.56 ms at
peak.  So the gathered bytes, not the full-row pass, bound the large-budget cases.  Where kept
sets are dense (above roughly 1/36 of the visible keys, e.g. budget 512 of N = 4,096), a masked
dense second pass (FlashAttention's ``P V`` over all key blocks under the kept mask, like the
twin's dense product) would move fewer bytes than the gather; not built here (no GPU to place the
crossover on).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from trustmass.kernels.restricted import check_restricted_inputs
from trustmass.kernels.triton_common import (
    _block_d,
    _exp,
    _launch,
    _log2l,
    _prob,
    _round,
    _scale_logits,
    _stats_kernel,
    numerics,
    split_keys,
)


@triton.jit
def _restricted_gather_kernel(
    Q,
    K,
    V,
    ROWS,
    PTR,
    IDX,
    M_PART,
    L_PART,
    LSE_IN,
    OUT,
    MASS,
    LSE_OUT,
    BAD,
    stride_qh,
    stride_qm,
    stride_qd,
    stride_kh,
    stride_kn,
    stride_kd,
    stride_vh,
    stride_vn,
    stride_vd,
    stride_ss,
    stride_sh,
    stride_sm,
    stride_oh,
    stride_om,
    stride_od,
    M,
    N,
    D,
    G,
    S,
    nnz,
    n_sets,
    scaling,
    softcap,
    inv_softcap,
    window,
    HAS_LSE: tl.constexpr,
    S_PAD: tl.constexpr,
    HAS_SOFTCAP: tl.constexpr,
    HAS_WINDOW: tl.constexpr,
    LOGITS: tl.constexpr,
    DOT: tl.constexpr,
    BITS: tl.constexpr,
    LIBDEVICE: tl.constexpr,
    FAST: tl.constexpr,
    BLOCK_K: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    row = tl.program_id(0)
    h = tl.program_id(1).to(tl.int64)
    kv = h // G
    r = h * M + row  # flat (head, row): CSR set and the per-row outputs
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < D
    pos = tl.load(ROWS + row).to(tl.int64)
    q = tl.load(Q + h * stride_qh + row * stride_qm + offs_d * stride_qd, mask=d_ok, other=0.0).to(tl.float32)
    q = _round(q, DOT, BITS)
    if HAS_LSE:
        m = tl.load(LSE_IN + h * stride_sh + row * stride_sm)
        l = m * 0.0 + 1.0
    else:  # combine the key splits: m = max m_s, l = sum l_s exp(m_s - m)
        offs_s = tl.arange(0, S_PAD)
        base = h * stride_sh + row * stride_sm + offs_s * stride_ss
        ms = tl.load(M_PART + base, mask=offs_s < S, other=float("-inf"))
        ls = tl.load(L_PART + base, mask=offs_s < S, other=0.0)
        m = tl.max(ms, axis=0)
        l = tl.sum(ls * _exp(ms - m, FAST, LIBDEVICE), axis=0)
    lse = m + tl.log(l)
    lg = _log2l(l, FAST)
    # the CSR pointers, checked and clamped: a bad set reads nothing out of bounds
    b_raw = tl.load(PTR + r)
    e_raw = tl.load(PTR + r + 1)
    bad = (e_raw < b_raw) | (b_raw < 0) | (e_raw > nnz) | (pos < 0) | (pos >= N)
    bad = bad | ((r == 0) & (b_raw != 0)) | ((r == n_sets - 1) & (e_raw != nnz))
    begin = tl.minimum(tl.maximum(b_raw, 0), nnz).to(tl.int32)
    end = tl.maximum(tl.minimum(e_raw, nnz), begin).to(tl.int32)
    acc = tl.zeros([BLOCK_D], tl.float32)
    mass = tl.zeros([BLOCK_K], tl.float32)
    n_bad = tl.zeros([BLOCK_K], tl.int32)
    for start in range(begin, end, BLOCK_K):
        offs_e = start + tl.arange(0, BLOCK_K)
        e_ok = offs_e < end
        idx = tl.load(IDX + offs_e, mask=e_ok, other=0).to(tl.int64)
        vis = (idx >= 0) & (idx <= pos)
        if HAS_WINDOW:
            vis = vis & (idx > pos - window)
        n_bad += (e_ok & ~vis).to(tl.int32)
        ok = e_ok & (idx >= 0) & (idx < N)
        k = tl.load(
            K + kv * stride_kh + idx[:, None] * stride_kn + offs_d[None, :] * stride_kd,
            mask=ok[:, None] & d_ok[None, :],
            other=0.0,
        ).to(tl.float32)
        k = _round(k, DOT, BITS)
        s = tl.sum(q[None, :] * k, axis=1)
        s = _scale_logits(s, scaling, softcap, inv_softcap, HAS_SOFTCAP, LOGITS, BITS, LIBDEVICE)
        p = tl.where(ok, _prob(s, m, l, lg, FAST, LIBDEVICE), 0.0)
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
    tl.store(MASS + r, total)
    tl.store(LSE_OUT + r, lse)
    tl.store(BAD + r, (bad | (tl.sum(n_bad, axis=0) > 0)).to(tl.int32))


def _config(kind: str, d: int, fast: bool, group_rows: int, override: dict | None) -> dict:
    """Tile sizes (first guesses for Hopper, spill-free under an ahead-of-time sm_90a compile, not
    timed; ``override`` wins).  The statistics tile spans the ``G M`` rows of a KV head: 128 rows
    (``wgmma``) when there are that many, else 64, else 16-32 (``mma``)."""
    big = d > 64
    if kind == "stats":
        if fast and group_rows >= 128:
            cfg = dict(BLOCK_M=128, BLOCK_N=64 if big else 128, num_warps=8, num_stages=3)
        elif fast and group_rows > 32:
            cfg = dict(BLOCK_M=64, BLOCK_N=64, num_warps=4, num_stages=3)
        elif fast:
            cfg = dict(
                BLOCK_M=max(16, triton.next_power_of_2(max(1, group_rows))), BLOCK_N=64, num_warps=4, num_stages=3
            )
        else:
            cfg = dict(BLOCK_M=32 if big else 64, BLOCK_N=32, num_warps=8, num_stages=2)
    else:  # one (row, head) per program: K and V rows of BLOCK_K kept keys at a time; a gather is
        # latency bound, so the tile is kept small (108-128 registers: 4 CTAs per SM in flight)
        cfg = dict(BLOCK_K=16 if big else 32, num_warps=4, num_stages=2)
    if override:
        cfg.update({key: value for key, value in override.items() if key in cfg})
    return cfg


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
    lse=None,
    splits=None,
    config=None,
):
    """``(out [Hq, M, d], kept_mass [Hq, M], lse [Hq, M])`` float32.

    Shapes, dtypes and devices are checked up front (no device read); the CSR contents and ``rows``
    are checked inside the gather kernel and read back once, after both kernels: a bad input raises
    the twin's ``ValueError`` (`trustmass.kernels.restricted.check_restricted_inputs`)."""
    Hq, Hkv, M, N, D = check_restricted_inputs(
        q, k, v, rows, kept_ptr, kept_idx, window, logits_dtype, check_values=False
    )
    nm = numerics(q, softcap, logits_dtype)
    flags = nm["flags"]
    G = Hq // Hkv
    rows = rows.long().contiguous()
    kept_ptr = kept_ptr.long().contiguous()
    kept_idx = kept_idx.long().contiguous()
    out = torch.empty(Hq, M, D, dtype=torch.float32, device=q.device)
    mass = torch.empty(Hq, M, dtype=torch.float32, device=q.device)
    lse_out = torch.empty(Hq, M, dtype=torch.float32, device=q.device)
    if M == 0 or Hq == 0:
        return out, mass, lse_out
    common = (float(scaling), nm["softcap"], nm["inv_softcap"], int(window or 0))
    cfg_s = _config("stats", D, flags["FAST"], G * M, config)
    if lse is None:
        n_blocks = triton.cdiv(N, cfg_s["BLOCK_N"])
        row_tiles = triton.cdiv(G * M, cfg_s["BLOCK_M"])
        S, per = split_keys(row_tiles * Hkv, n_blocks, q.device, splits)
        m_part = torch.empty(S, Hq, M, dtype=torch.float32, device=q.device)
        l_part = torch.empty_like(m_part)
        _stats_kernel[(row_tiles, S, Hkv)](
            q,
            k,
            rows,
            rows,
            m_part,
            l_part,
            q.stride(0),
            q.stride(1),
            q.stride(2),
            k.stride(0),
            k.stride(1),
            k.stride(2),
            0,
            rows.stride(0),
            m_part.stride(0),
            m_part.stride(1),
            m_part.stride(2),
            M,
            N,
            D,
            G,
            per,
            *common,
            ROWS=2,
            HAS_WINDOW=window is not None,
            **flags,
            BLOCK_M=cfg_s["BLOCK_M"],
            BLOCK_N=cfg_s["BLOCK_N"],
            BLOCK_D=_block_d(D),
            **_launch(cfg_s),
        )
        lse_in, strides = m_part, (m_part.stride(0), m_part.stride(1), m_part.stride(2))
    else:
        if lse.shape != (Hq, M) or lse.dtype != torch.float32 or lse.device != q.device:
            raise ValueError(
                f"lse must be float32 [Hq={Hq}, M={M}] on {q.device}; got {lse.dtype} {tuple(lse.shape)} on {lse.device}"
            )
        S = 1
        m_part = l_part = lse_in = lse
        strides = (0, lse.stride(0), lse.stride(1))
    cfg_g = _config("gather", D, flags["FAST"], G * M, config)
    bad = torch.empty(Hq * M, dtype=torch.int32, device=q.device)
    _restricted_gather_kernel[(M, Hq)](
        q,
        k,
        v,
        rows,
        kept_ptr,
        kept_idx,
        m_part,
        l_part,
        lse_in,
        out,
        mass,
        lse_out,
        bad,
        q.stride(0),
        q.stride(1),
        q.stride(2),
        k.stride(0),
        k.stride(1),
        k.stride(2),
        v.stride(0),
        v.stride(1),
        v.stride(2),
        *strides,
        out.stride(0),
        out.stride(1),
        out.stride(2),
        M,
        N,
        D,
        G,
        S,
        kept_idx.shape[0],
        Hq * M,
        *common,
        HAS_LSE=lse is not None,
        S_PAD=max(2, triton.next_power_of_2(S)),
        HAS_WINDOW=window is not None,
        HAS_SOFTCAP=flags["HAS_SOFTCAP"],
        LOGITS=flags["LOGITS"],
        DOT=flags["DOT"],
        BITS=flags["BITS"],
        LIBDEVICE=flags["LIBDEVICE"],
        FAST=flags["FAST"],
        BLOCK_K=cfg_g["BLOCK_K"],
        BLOCK_D=_block_d(D),
        **_launch(cfg_g),
    )
    if bool(bad.any()):  # the one device read: name the first bad argument as the twin does
        check_restricted_inputs(q, k, v, rows, kept_ptr, kept_idx, window, logits_dtype)
        raise ValueError(
            "restricted_attention: the CSR kept sets or rows are invalid (a kept index is not a visible key of its row)"
        )
    return out, mass, lse_out


__all__ = ["restricted_attention_triton"]
