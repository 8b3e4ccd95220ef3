"""The shared parts of the Triton kernels (imported lazily; needs ``triton``): the device helpers
(logit rounding, the dot in the model's dtype or IEEE fp32, exp/tanh, visibility), the row-statistics
pass ``_stats_kernel`` the capture and the restricted attention both run, and the host side that
picks numerics, tiles and key splits.  The capture's own kernels: `trustmass.kernels.triton_kernels`;
the restricted attention: `trustmass.kernels.triton_restricted`.

Numerics
--------
Three cases, chosen per call (``DOT`` below):

* **fp32 model** (fp32 inputs, ``logits_dtype=None``): as exact as before this redesign -- fp32
  ``tl.dot`` with ``input_precision="ieee"`` (no TF32), libdevice ``exp``, ``div_rn`` for
  ``exp(x - m) / l`` (eager's own formula), the tile column sums and the running column mass in
  float64 (``SUM64``; cheap next to an fp32 dot that runs on the FMA units anyway).
* **bf16/fp16 model with eager's roundings** (``logits_dtype`` bf16/fp16): q and k go into
  ``tl.dot`` in the model dtype (tensor cores), fp32 accumulation -- what cuBLAS does for eager's
  ``matmul(q, k^T)`` -- and the fp32 result is rounded to the model dtype after the matmul, after
  ``* scaling`` and after each soft-cap op, as eager rounds it (``_round``: one ``cvt.rn`` each).
  The rounded logits then go through an fp32 softmax: ``exp2((x - m) log2 e - log2 l)``
  (``ex2.approx``, about 1e-6 relative to eager's ``expf(x - m) / l``, far below one bf16 step of a
  logit) and the tile column sums in fp32 (a tree over <= ``BLOCK_M`` rows), accumulated across
  tiles in float64 (one float64 add per key per row tile: free) -- so acc and the window sums keep
  the twin's precision.  A logit whose fp32 dot lands within an ulp of a bf16 rounding boundary may
  round the other way than cuBLAS (summation order), as before.
* **bf16/fp16 inputs without emulation** (``logits_dtype=None``, the model's flash attention
  semantics: fp32 logits of bf16 operands): native ``tl.dot`` (products of bf16 values are exact in
  fp32, so this equals the fp32 dot of the upcast inputs up to summation order), no rounding, the
  fast softmax.  This is the case where a caller may pass the LSE its flash SDPA returned.

Under the interpreter (``TRITON_INTERPRET=1``, CPU tensors) the same kernels run with
``NATIVE=False``: tiles are upcast to fp32 right after ``tl.load`` and rounded to the model dtype
on their bit pattern (the interpreter's bf16 ``tl.dot`` multiplies raw bits and its fp32 -> bf16
cast does not round to nearest even), then an fp32 ``"ieee"`` dot -- numerically the native
path's products with fp32 accumulation -- and ``tanh``/``exp`` use ``tl`` math instead of
libdevice (extern calls do not run there).  So every dtype path, mask and tile edge runs on the
CPU against the twins; only the native operand cast, ``cvt.rn`` and the MMA's summation order are
left for a GPU to confirm.

CUDA eager divides by the soft-cap as ``x * (1 / softcap)`` (a CPU-scalar divisor), and so do these
kernels.  Tile sizes (`_config`) are first guesses for Hopper (not tuned: nothing here has run on
a GPU); every host function takes ``config=`` to override them.

Roofline per call (H200: bf16 dense ~990 TFLOP/s, fp32 non-tensor ~67 TFLOP/s, HBM ~4.8 TB/s,
~4.2e12 exponentials/s; `trustmass.bench.gpu_sections.side_roofline`, the table in
``benchmarks/gpu/README.md`` "Kernel design"): the fused side statistics of one layer at 32 query
heads, N = 32,768, d = 128, bf16 run ``2 passes x 2 d x H N^2 / 2`` = 8.8e12 tensor FLOPs (8.9 ms at peak:
the FLOPs of the layer's causal SDPA, which measured 14.7 ms), 3.4e10 exponentials (8.2 ms of
the special-function units, twice SDPA's) and ~2.9e11 other fp32 operations (~8.7 ms, estimated),
reading and writing ~2.2 GB (0.45 ms): compute bound, three pipes each near 9 ms.  Run one after
another at peak rates they sum to 26 ms, inside the <= 2x target (29.4 ms); at SDPA's achieved 60 %
of tensor peak the MMAs alone take 14.8 ms, so the target holds only if the exponentials and the
roundings overlap the MMAs (software pipelining across tiles).  With the layer's log-sum-exp passed
in, every term halves.  Tiles compile for sm_90a to ``wgmma`` without register spills
(``tests/kernels/test_kernel_compile.py``, no GPU needed).
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

try:  # libdevice dispatches to the CUDA/HIP backend at compile time
    from triton.language.extra import libdevice
except ImportError:  # pragma: no cover - very old triton
    libdevice = None

INTERPRET = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")
_LOGITS_CODE = {None: 0, torch.bfloat16: 1, torch.float16: 2}
_DTYPE_CODE = {torch.float32: 0, torch.bfloat16: 1, torch.float16: 2}
_SM_COUNT: dict = {}


# --------------------------------------------------------------------------------------------------
# numerics


@triton.jit
def _round(x, LOGITS: tl.constexpr, BITS: tl.constexpr):
    """Round fp32 ``x`` to the emulated logits dtype (round to nearest even), back in fp32.

    ``BITS``: on the bit pattern (the interpreter); else the hardware conversion (``cvt.rn``)."""
    if LOGITS == 1:
        if BITS:
            bits = x.to(tl.uint32, bitcast=True)
            bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
            x = bits.to(tl.float32, bitcast=True)
        else:
            x = x.to(tl.bfloat16).to(tl.float32)
    elif LOGITS == 2:
        x = x.to(tl.float16).to(tl.float32)
    return x


@triton.jit
def _load_op(ptrs, mask, DOT: tl.constexpr, NATIVE: tl.constexpr, BITS: tl.constexpr):
    """A q or k tile as a ``tl.dot`` operand: in the dot dtype (``NATIVE``: bf16/fp16 straight into
    the tensor cores), else fp32 holding the values rounded to it (fp32 models; the interpreter)."""
    x = tl.load(ptrs, mask=mask, other=0.0)
    if NATIVE:
        if DOT == 1:
            x = x.to(tl.bfloat16)
        else:
            x = x.to(tl.float16)
    else:
        x = _round(x.to(tl.float32), DOT, BITS)
    return x


@triton.jit
def _dot(a, b, NATIVE: tl.constexpr):
    """fp32-accumulated ``a @ b``: bf16/fp16 MMA, or IEEE fp32 (no TF32)."""
    if NATIVE:
        s = tl.dot(a, b)
    else:
        s = tl.dot(a, b, input_precision="ieee")
    return s


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
def _exp(x, FAST: tl.constexpr, LIBDEVICE: tl.constexpr):
    """``e^x``: ``ex2.approx`` (FAST: bf16/fp16 models) or libdevice ``expf`` (fp32 models, as
    torch's softmax)."""
    if FAST:
        y = tl.exp2(x * 1.4426950408889634)
    elif LIBDEVICE:
        y = libdevice.exp(x)
    else:
        y = tl.exp(x)
    return y


@triton.jit
def _scale_logits(
    s,
    scaling,
    softcap,
    inv_softcap,
    HAS_SOFTCAP: tl.constexpr,
    LOGITS: tl.constexpr,
    BITS: tl.constexpr,
    LIBDEVICE: tl.constexpr,
):
    """fp32 dot products -> logits, rounded where eager rounds them (after the matmul, the scaling
    and each soft-cap op)."""
    s = _round(s, LOGITS, BITS)
    s = _round(s * scaling, LOGITS, BITS)
    if HAS_SOFTCAP:
        s = _round(s * inv_softcap, LOGITS, BITS)
        s = _round(_tanh(s, LIBDEVICE), LOGITS, BITS)
        s = _round(s * softcap, LOGITS, BITS)
    return s


@triton.jit
def _prob(s, m, l, lg, FAST: tl.constexpr, LIBDEVICE: tl.constexpr):
    """``P = exp(s - m) / l`` (``m``, ``l``, ``lg = log2 l`` broadcast to ``s``): eager's formula
    with libdevice ``expf`` and a correctly rounded division, or (FAST) one ``ex2``."""
    if FAST:
        p = tl.exp2((s - m) * 1.4426950408889634 - lg)
    else:
        p = tl.div_rn(_exp(s - m, False, LIBDEVICE), l)
    return p


@triton.jit
def _log2l(l, FAST: tl.constexpr):
    if FAST:
        lg = tl.log2(l)
    else:
        lg = l
    return lg


@triton.jit
def _visible(keys, rows, window, HAS_WINDOW: tl.constexpr):
    """Key ``keys`` is visible from the row at position ``rows`` (both broadcast: causal, and
    inside the sliding window ``rows - window < keys`` when there is one)."""
    vis = keys <= rows
    if HAS_WINDOW:
        vis = vis & (keys > rows - window)
    return vis


@triton.jit
def _combine(m_ptrs, l_ptrs, stride_s, S, row_ok, FAST: tl.constexpr, LIBDEVICE: tl.constexpr):
    """``(m, l)`` of rows from ``S`` key splits: ``m = max m_s``, ``l = sum l_s exp(m_s - m)``
    (``S = 1``: the stored pair itself, bitwise)."""
    m = tl.load(m_ptrs, mask=row_ok, other=float("-inf"))
    for s in range(1, S):
        m = tl.maximum(m, tl.load(m_ptrs + s * stride_s, mask=row_ok, other=float("-inf")))
    m_safe = tl.where(m == float("-inf"), 0.0, m)
    l = tl.zeros_like(m)
    for s in range(S):
        ms = tl.load(m_ptrs + s * stride_s, mask=row_ok, other=float("-inf"))
        l += tl.load(l_ptrs + s * stride_s, mask=row_ok, other=0.0) * _exp(ms - m_safe, FAST, LIBDEVICE)
    return m, l


# --------------------------------------------------------------------------------------------------
# pass 1: row statistics (online over key blocks, optionally split over keys)


@triton.jit
def _stats_blocks(
    m_i,
    l_i,
    q,
    k_head,
    stride_kn,
    stride_kd,
    pos,
    offs_d,
    d_ok,
    N,
    kb_lo,
    kb_hi,
    scaling,
    softcap,
    inv_softcap,
    window,
    MASKED: tl.constexpr,
    HAS_SOFTCAP: tl.constexpr,
    HAS_WINDOW: tl.constexpr,
    LOGITS: tl.constexpr,
    DOT: tl.constexpr,
    NATIVE: tl.constexpr,
    BITS: tl.constexpr,
    LIBDEVICE: tl.constexpr,
    FAST: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """Fold key blocks ``kb_lo .. kb_hi - 1`` into the running ``(m_i, l_i)`` of the rows at
    ``pos``; ``MASKED=False`` for blocks every row sees whole (no mask evaluated)."""
    for kb in range(kb_lo, kb_hi):
        offs_n = kb * BLOCK_N + tl.arange(0, BLOCK_N)
        ptrs = k_head + offs_n[:, None] * stride_kn + offs_d[None, :] * stride_kd
        if MASKED:
            k = _load_op(ptrs, (offs_n < N)[:, None] & d_ok[None, :], DOT, NATIVE, BITS)
        else:
            k = _load_op(ptrs, d_ok[None, :], DOT, NATIVE, BITS)
        s = _dot(q, tl.trans(k), NATIVE)
        s = _scale_logits(s, scaling, softcap, inv_softcap, HAS_SOFTCAP, LOGITS, BITS, LIBDEVICE)
        if MASKED:
            s = tl.where(_visible(offs_n[None, :], pos[:, None], window, HAS_WINDOW), s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = _exp(m_i - m_safe, FAST, LIBDEVICE)
        p = _exp(s - m_safe[:, None], FAST, LIBDEVICE)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        m_i = m_new
    return m_i, l_i


@triton.jit
def _stats_kernel(
    Q,
    K,
    POS,
    ROW_HI,
    M_OUT,
    L_OUT,
    stride_qh,
    stride_qm,
    stride_qd,
    stride_kh,
    stride_kn,
    stride_kd,
    stride_ph,
    stride_pm,
    stride_os,
    stride_oh,
    stride_om,
    n_rows,
    N,
    D,
    G,
    blocks_per_split,
    scaling,
    softcap,
    inv_softcap,
    window,
    ROWS: tl.constexpr,
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
    """``(m, l)`` of a tile of rows over one split of the keys; grid ``(row tiles, splits, heads)``
    (row tiles fastest: the programs running together share a split's K blocks in L2).

    ``ROWS`` 0: rows ``0 .. ROW_HI[h] - 1`` of head ``h`` (q row = position); 1: ``POS[h, r]``,
    ``r < n_rows`` (q row = position); 2: ``M = n_rows`` rows at ``POS[m]`` of the ``G`` query
    heads of KV head ``h``, flattened ``r = m * G + g`` (q row ``m`` of head ``h * G + g``; the
    outputs are indexed by (query head, m)).  Writes ``M_OUT[split, head, row]`` (and ``L_OUT``).
    """
    pid_m = tl.program_id(0)
    pid_s = tl.program_id(1)
    hk = tl.program_id(2).to(tl.int64)
    if ROWS == 0:  # the causal triangle: the longest row tiles (the last rows) start first
        pid_m = tl.num_programs(0) - 1 - pid_m
    offs_r = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    if ROWS == 2:
        row_ok = offs_r < n_rows * G
        m_idx = offs_r // G
        h_row = hk * G + (offs_r % G)
        pos = tl.load(POS + m_idx * stride_pm, mask=row_ok, other=0).to(tl.int32)
        q_off = h_row * stride_qh + m_idx * stride_qm
        o_off = h_row * stride_oh + m_idx * stride_om
    elif ROWS == 1:
        row_ok = offs_r < n_rows
        pos = tl.load(POS + hk * stride_ph + offs_r * stride_pm, mask=row_ok, other=0).to(tl.int32)
        q_off = hk * stride_qh + pos.to(tl.int64) * stride_qm
        o_off = hk * stride_oh + offs_r * stride_om
    else:
        row_ok = offs_r < tl.load(ROW_HI + hk)
        pos = offs_r
        q_off = hk * stride_qh + offs_r.to(tl.int64) * stride_qm
        o_off = hk * stride_oh + offs_r * stride_om
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < D
    q = _load_op(Q + q_off[:, None] + offs_d[None, :] * stride_qd, row_ok[:, None] & d_ok[None, :], DOT, NATIVE, BITS)
    k_head = K + hk * stride_kh
    # key blocks: [kb_lo, kb_hi) some row sees; [kf_lo, kf_hi) every row sees whole
    pmin = tl.min(tl.where(row_ok, pos, N), axis=0)
    pmax = tl.max(tl.where(row_ok, pos, -1), axis=0)
    kb_hi = (pmax + BLOCK_N) // BLOCK_N  # pmax >= -1
    kf_hi = tl.maximum(pmin + 1, 0) // BLOCK_N
    kb_lo = kb_hi * 0
    kf_lo = kb_hi * 0
    if HAS_WINDOW:
        kb_lo = tl.maximum(pmin - window + 1, 0) // BLOCK_N
        kf_lo = (tl.maximum(pmax - window + 1, 0) + BLOCK_N - 1) // BLOCK_N
    s_lo = pid_s * blocks_per_split
    s_hi = s_lo + blocks_per_split
    b0 = tl.minimum(tl.maximum(kf_lo, kb_lo), kb_hi)  # [kb_lo, b0) masked (window edge)
    b1 = tl.maximum(tl.minimum(kf_hi, kb_hi), b0)  # [b0, b1) whole, [b1, kb_hi) masked (diagonal)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    m_i, l_i = _stats_blocks(
        m_i,
        l_i,
        q,
        k_head,
        stride_kn,
        stride_kd,
        pos,
        offs_d,
        d_ok,
        N,
        tl.maximum(kb_lo, s_lo),
        tl.minimum(b0, s_hi),
        scaling,
        softcap,
        inv_softcap,
        window,
        True,
        HAS_SOFTCAP,
        HAS_WINDOW,
        LOGITS,
        DOT,
        NATIVE,
        BITS,
        LIBDEVICE,
        FAST,
        BLOCK_N,
    )
    m_i, l_i = _stats_blocks(
        m_i,
        l_i,
        q,
        k_head,
        stride_kn,
        stride_kd,
        pos,
        offs_d,
        d_ok,
        N,
        tl.maximum(b0, s_lo),
        tl.minimum(b1, s_hi),
        scaling,
        softcap,
        inv_softcap,
        window,
        False,
        HAS_SOFTCAP,
        HAS_WINDOW,
        LOGITS,
        DOT,
        NATIVE,
        BITS,
        LIBDEVICE,
        FAST,
        BLOCK_N,
    )
    m_i, l_i = _stats_blocks(
        m_i,
        l_i,
        q,
        k_head,
        stride_kn,
        stride_kd,
        pos,
        offs_d,
        d_ok,
        N,
        tl.maximum(b1, s_lo),
        tl.minimum(kb_hi, s_hi),
        scaling,
        softcap,
        inv_softcap,
        window,
        True,
        HAS_SOFTCAP,
        HAS_WINDOW,
        LOGITS,
        DOT,
        NATIVE,
        BITS,
        LIBDEVICE,
        FAST,
        BLOCK_N,
    )
    out = pid_s * stride_os + o_off
    tl.store(M_OUT + out, m_i, mask=row_ok)
    tl.store(L_OUT + out, l_i, mask=row_ok)


# --------------------------------------------------------------------------------------------------
# host side


def _common(q: torch.Tensor, softcap, logits_dtype):
    """``(libdevice_ok, soft)``; refuses CPU tensors without the interpreter."""
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


def numerics(q: torch.Tensor, softcap, logits_dtype) -> dict:
    """The constexpr flags of a call (see the module docstring) and its scalar soft-cap arguments.

    ``DOT``: dtype of the ``tl.dot`` operands (0 fp32 IEEE, 1 bf16, 2 fp16) -- the logits dtype when
    emulating, else the inputs' dtype; ``FAST``: the bf16/fp16 softmax (``DOT != 0``); ``NATIVE``:
    the operands go into ``tl.dot`` in that dtype (compiled only); ``BITS``: rounding on the bit
    pattern (interpreter); ``SUM64``: float64 tile column sums (fp32 models)."""
    libdevice_ok, soft = _common(q, softcap, logits_dtype)
    dot = _LOGITS_CODE[logits_dtype] if logits_dtype is not None else _DTYPE_CODE.get(q.dtype, 0)
    flags = dict(
        HAS_SOFTCAP=soft["HAS_SOFTCAP"],
        LOGITS=_LOGITS_CODE[logits_dtype],
        DOT=dot,
        NATIVE=(dot != 0) and not INTERPRET,
        BITS=INTERPRET,
        LIBDEVICE=libdevice_ok,
        FAST=dot != 0,
    )
    return {"flags": flags, "softcap": soft["softcap"], "inv_softcap": soft["inv_softcap"]}


def _block_d(d: int) -> int:
    return max(16, triton.next_power_of_2(d))


def _config(kind: str, d: int, fast: bool, override: dict | None = None) -> dict:
    """Tile sizes and launch shape per kernel (``override`` wins).

    First guesses for Hopper, not timed (no GPU here): each compiles for sm_90a without register
    spills under Triton 3.9's ``triton.compile`` + ptxas (checked ahead of time, no device:
    ``tests/kernels/test_kernel_compile.py``), the bf16/fp16 ones to ``wgmma``, with the tile loops
    software-pipelined.  ``BLOCK_M`` counts query rows, ``BLOCK_N`` keys.  bf16/fp16:
    128-row tiles for the statistics (FlashAttention forward's shape); the column pass holds a
    128-key tile as the MMA's A operand and streams 32-row Q tiles (FlashAttention-2 backward's
    dK/dV loop shape; 64-row tiles spill, the prefix branch's float64 scan being the largest live
    set).  fp32 IEEE (FMA units, fp32 operands in shared memory): 32-64."""
    big = d > 64
    if kind == "stats":  # FlashAttention forward without PV: Q tile in registers, K streamed
        if fast:
            cfg = dict(BLOCK_M=128, BLOCK_N=64 if big else 128, num_warps=8, num_stages=3)
        else:
            cfg = dict(BLOCK_M=32 if big else 64, BLOCK_N=32, num_warps=8, num_stages=2)
    elif kind == "column":  # K tile resident, Q streamed
        if fast:
            cfg = dict(BLOCK_M=32, BLOCK_N=128, num_warps=8, num_stages=3)
        else:
            cfg = dict(BLOCK_M=32, BLOCK_N=64, num_warps=8, num_stages=2)
    elif kind == "rows":  # a few sampled rows: split statistics, then one (rows x key block) tile each
        cfg = dict(BLOCK_M=16, BLOCK_N=64 if fast else 32, num_warps=4, num_stages=2)
    elif kind == "epilogue":
        cfg = dict(BLOCK=256, num_warps=4, num_stages=1)
    else:  # pragma: no cover
        raise ValueError(kind)
    if override:
        cfg.update({key: value for key, value in override.items() if key in cfg})
    return cfg


def _launch(cfg: dict) -> dict:
    return {"num_warps": cfg["num_warps"], "num_stages": cfg["num_stages"]}


def target_programs(device: torch.device) -> int:
    """Programs that fill the device: twice its multiprocessors (8 under the interpreter)."""
    if device.type != "cuda":
        return 8
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _SM_COUNT:
        _SM_COUNT[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return 2 * _SM_COUNT[index]


def split_keys(base_programs: int, n_blocks: int, device: torch.device, splits: int | None = None) -> tuple[int, int]:
    """``(splits, key blocks per split)`` for a flash-decoding statistics pass: enough programs to
    fill the device, at most 64 splits, each a whole number of key blocks."""
    n_blocks = max(1, n_blocks)
    if splits is None:
        splits = -(-target_programs(device) // max(1, base_programs))
    splits = max(1, min(int(splits), n_blocks, 64))
    per = -(-n_blocks // splits)
    return -(-n_blocks // per), per


def _positions_max(positions: torch.Tensor, max_position: int | None) -> int:
    return int(positions.max()) if max_position is None else int(max_position)


def split_row_stats(
    q, k, positions, scaling, softcap=None, window=None, logits_dtype=None, *, splits=None, config=None
):
    """Partial ``(m, l)`` of the rows ``positions[h, r]`` over key splits: float32 ``[S, H, R]``
    each (``S = 1``: the row statistics themselves)."""
    nm = numerics(q, softcap, logits_dtype)
    H, N, D = q.shape
    R = positions.shape[1]
    cfg = _config("rows", D, nm["flags"]["FAST"], config)
    n_blocks = triton.cdiv(N, cfg["BLOCK_N"])
    S, per = split_keys(triton.cdiv(R, cfg["BLOCK_M"]) * H, n_blocks, q.device, splits)
    m = torch.empty(S, H, R, dtype=torch.float32, device=q.device)
    l = torch.empty(S, H, R, dtype=torch.float32, device=q.device)
    if R == 0 or H == 0:
        return m, l
    _stats_kernel[(triton.cdiv(R, cfg["BLOCK_M"]), S, H)](
        q,
        k,
        positions,
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
        m.stride(2),
        R,
        N,
        D,
        1,
        per,
        float(scaling),
        nm["softcap"],
        nm["inv_softcap"],
        int(window or 0),
        ROWS=1,
        HAS_WINDOW=window is not None,
        **nm["flags"],
        BLOCK_M=cfg["BLOCK_M"],
        BLOCK_N=cfg["BLOCK_N"],
        BLOCK_D=_block_d(D),
        **_launch(cfg),
    )
    return m, l


def row_stats(q, k, positions, scaling, softcap=None, window=None, logits_dtype=None, **kw):
    """``(m, l)`` per requested row, float32 ``[H, R]`` each (the split statistics combined)."""
    m, l = split_row_stats(q, k, positions, scaling, softcap, window, logits_dtype, **kw)
    if m.shape[0] == 1:
        return m[0], l[0]
    top = m.amax(0)
    safe = torch.where(top == float("-inf"), torch.zeros_like(top), top)
    return top, (l * torch.exp(m - safe)).sum(0)
