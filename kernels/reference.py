"""PyTorch twins of the capture kernels: the CPU production path and the oracle for Triton.

Every function here computes the model's eager attention probabilities, row by row, exactly as
``transformers`` 5.2 ``eager_attention_forward`` does (Llama; Gemma-2 for soft-capping):

    logits = matmul(q, k^T) * scaling                  (in the model dtype)
    logits = tanh(logits / softcap) * softcap          (optional, in the model dtype)
    logits = logits + mask                             (causal; optional sliding window)
    P      = softmax(logits, dim=-1, dtype=float32)

The mask follows ``transformers.masking_utils``: key ``j`` is visible to query ``i`` iff
``j <= i`` (``causal_mask_function``) and, with a sliding window ``W``, ``j > i - W``
(``sliding_window_overlay``).  ``logits_dtype=None`` computes the logits in float32 (an fp32
model, or the exact real-valued reference); ``torch.bfloat16``/``torch.float16`` runs the same
torch ops in that dtype, so every rounding happens where eager rounds it (one rounding after the
fp32-accumulated matmul, one after the scaling, one after each soft-cap op).  The additive mask is
applied with ``masked_fill(-inf)``: for visible keys eager adds 0 (exact), masked keys end at 0.

``sampled_row_probs_torch`` runs eager's own ops on the sampled rows: its rows equal the rows of
eager's P bit for bit on the same device (tested on CPU against transformers' functions).  The
streamed column pass computes P block by block with the same ops (its softmax runs over the keys
up to the block's last row, so sums may differ from eager's in the last float32 bit).

Memory: ``sampled_row_probs_torch`` holds ``R x N`` logits per head; the streamed
``column_mass_and_window_sums_torch`` holds one ``block_rows x N`` block of P per head (plus
the same again in the logits dtype when emulating, and a gather buffer no larger than a block)
and its ``R x (1 + len(windows)) x N`` outputs.  Neither ever allocates ``N x N``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

DEFAULT_WINDOWS = (2, 4, 8, 16, 32)
DEFAULT_BLOCK_ROWS = 128  # fastest measured on the 2-core dev CPU at N = 4096 (256: +8%, 512: +33%)
_EMULATED_DTYPES = (torch.bfloat16, torch.float16)


def check_inputs(q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor, logits_dtype) -> tuple[int, int, int, int]:
    """Validate shapes/dtypes shared by every capture kernel; return (H, N, d, R)."""
    if q.dim() != 3 or k.dim() != 3:
        raise ValueError(f"q and k must be [heads, tokens, head_dim]; got q{tuple(q.shape)} k{tuple(k.shape)}")
    if q.shape != k.shape:
        raise ValueError(
            f"q{tuple(q.shape)} and k{tuple(k.shape)} differ: expand the KV heads per query head first "
            "(k.index_select(0, arange(Hq) // group))"
        )
    if q.dtype not in (torch.float32, torch.bfloat16, torch.float16) or k.dtype != q.dtype:
        raise TypeError(f"q and k must share a float32/bfloat16/float16 dtype; got {q.dtype} and {k.dtype}")
    if positions.dim() != 2 or positions.shape[0] != q.shape[0]:
        raise ValueError(f"positions must be [heads={q.shape[0]}, rows]; got {tuple(positions.shape)}")
    if positions.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"positions must be an integer (int64) tensor; got {positions.dtype}")
    if positions.device != q.device or k.device != q.device:
        raise ValueError(f"q, k and positions must share a device; got {q.device}, {k.device}, {positions.device}")
    if logits_dtype is not None and logits_dtype not in _EMULATED_DTYPES:
        raise TypeError(f"logits_dtype must be None, torch.bfloat16 or torch.float16; got {logits_dtype}")
    H, N, d = q.shape
    R = positions.shape[1]
    if R and (int(positions.min()) < 0 or int(positions.max()) >= N):
        raise ValueError(f"positions must lie in [0, {N - 1}]; got [{int(positions.min())}, {int(positions.max())}]")
    return H, N, d, R


def check_windows(windows: Sequence[int]) -> tuple[int, ...]:
    windows = tuple(int(w) for w in windows)
    if any(w < 1 for w in windows):
        raise ValueError(f"window sums need windows >= 1; got {windows}")
    return windows


def logits_compute_dtype(logits_dtype) -> torch.dtype:
    return torch.float32 if logits_dtype is None else logits_dtype


def transformed_logits(
    q: torch.Tensor, k: torch.Tensor, scaling: float, softcap: float | None, logits_dtype
) -> torch.Tensor:
    """``[..., M, d] x [..., n, d] -> [..., M, n]`` logits, rounded where eager rounds them.

    The op sequence is eager's own; in place only where the result is bitwise identical
    (an elementwise op writes the same value in or out of place).
    """
    dtype = logits_compute_dtype(logits_dtype)
    s = torch.matmul(q.to(dtype), k.to(dtype).transpose(-1, -2))
    s.mul_(scaling)
    if softcap is not None:
        s.div_(softcap).tanh_().mul_(softcap)
    return s


def _visible(rows: torch.Tensor, keys: torch.Tensor, window: int | None) -> torch.Tensor:
    """Boolean visibility ``rows[..., :, None]`` x ``keys[None, :]`` (causal, optional window)."""
    r = rows.unsqueeze(-1)
    vis = keys <= r
    if window is not None:
        vis &= keys > r - window
    return vis


def sampled_row_probs_torch(
    q: torch.Tensor,
    k: torch.Tensor,
    positions: torch.Tensor,
    scaling: float,
    softcap: float | None = None,
    window: int | None = None,
    logits_dtype=None,
) -> torch.Tensor:
    """Exact attention rows ``P[positions[h, r], :]`` -> float32 ``[H, R, N]`` (0 on masked keys)."""
    H, N, d, R = check_inputs(q, k, positions, logits_dtype)
    positions = positions.long()
    rows_q = q.gather(1, positions.unsqueeze(-1).expand(H, R, d))  # [H, R, d]
    s = transformed_logits(rows_q, k, scaling, softcap, logits_dtype)  # [H, R, N]
    if window is None:  # causal only: keys up to the earliest row are visible to every row
        first = int(positions.min()) + 1 if positions.numel() else N
        keys = torch.arange(first, N, device=q.device)
        s[..., first:].masked_fill_(~_visible(positions, keys, None), float("-inf"))
    else:
        s.masked_fill_(~_visible(positions, torch.arange(N, device=q.device), window), float("-inf"))
    return torch.softmax(s, dim=-1, dtype=torch.float32)


class _Workspace:
    """Flat buffers reused by every row block (no per-block allocation of block-sized tensors).

    Fresh large allocations are mmap-backed and page-fault on first touch (slow on VMs); one flat
    buffer per role, whose prefix is viewed as each block's shape, keeps the sweep allocation-free.
    """

    def __init__(self, H: int, rows: int, keys: int, hits: int, span: int, logits_dtype, device):
        # one spare row after the largest block of P: a zero row that padded gathers point at
        self.probs = torch.empty(H * rows * keys + keys, dtype=torch.float32, device=device)
        self.logits = None if logits_dtype is None else torch.empty(H * rows * keys, dtype=logits_dtype, device=device)
        self.chunks = torch.empty(H * (-(-rows // _CHUNK)) * keys, dtype=torch.float32, device=device)
        # gathered rows of at most `max_hits` sampled rows at a time: never more than one block of P
        self.max_hits = max(1, min(hits, (H * rows) // span))
        self.gathered = torch.empty(self.max_hits * span * keys, dtype=torch.float32, device=device)

    @staticmethod
    def view(buf: torch.Tensor, *shape: int) -> torch.Tensor:
        n = 1
        for s in shape:
            n *= s
        return buf[:n].view(shape)


_CHUNK = 32  # rows per float32 partial column sum; chunks are accumulated in float64


def _block_probs(
    q_rows: torch.Tensor,
    k_keys: torch.Tensor,
    row0: int,
    key0: int,
    scaling: float,
    softcap: float | None,
    window: int | None,
    logits_dtype,
    work: _Workspace,
) -> torch.Tensor:
    """P for query rows ``row0..row0+B-1`` over keys ``key0..row0+B-1``: complete rows, exact softmax.

    The ops of `transformed_logits` and eager's softmax, written into the workspace.
    """
    H, B, n = q_rows.shape[0], q_rows.shape[-2], k_keys.shape[-2]
    probs = work.view(work.probs, H, B, n)
    if logits_dtype is None:
        # fp32: GEMM's alpha scales the fp32 accumulator once, bitwise equal to matmul then mul_
        s = probs
        torch.baddbmm(s, q_rows.float(), k_keys.float().transpose(-1, -2), beta=0.0, alpha=scaling, out=s)
    else:  # eager's two roundings: the bf16 matmul result, then the bf16 product with scaling
        s = work.view(work.logits, H, B, n)
        torch.matmul(q_rows.to(logits_dtype), k_keys.to(logits_dtype).transpose(-1, -2), out=s)
        s.mul_(scaling)
    if softcap is not None:
        s.div_(softcap).tanh_().mul_(softcap)
    rows = torch.arange(row0, row0 + B, device=q_rows.device)
    if window is None:
        # only the trailing B x B square can hold masked keys (keys key0..row0-1 precede every row)
        keys = torch.arange(row0, key0 + n, device=q_rows.device)
        s[..., row0 - key0 :].masked_fill_(keys > rows.unsqueeze(-1), float("-inf"))
    else:
        keys = torch.arange(key0, key0 + n, device=q_rows.device)
        s.masked_fill_(~_visible(rows, keys, window), float("-inf"))
    if probs.device.type == "cpu":  # the CPU last-dim softmax works in place (bitwise as out of place)
        if s is not probs:
            probs.copy_(s)  # softmax(dtype=float32) = upcast, then the float32 softmax (bitwise)
        torch._softmax(probs, -1, False, out=probs)
    else:
        probs.copy_(torch.softmax(s, dim=-1, dtype=torch.float32))
    return probs


def column_mass_and_window_sums_torch(
    q: torch.Tensor,
    k: torch.Tensor,
    positions: torch.Tensor,
    scaling: float,
    softcap: float | None = None,
    window: int | None = None,
    logits_dtype=None,
    windows: Sequence[int] = DEFAULT_WINDOWS,
    block_rows: int = DEFAULT_BLOCK_ROWS,
) -> tuple[torch.Tensor, torch.Tensor]:
    """H2O accumulated column mass and SnapKV window sums at the sampled rows, streamed.

    ``acc[h, r, j] = sum_{t <= i} P[t, j]`` and ``wsum[h, r, w, j] = sum_{t = i-w+1 .. i, t >= 0}
    P[t, j]`` with ``i = positions[h, r]``; float32 ``[H, R, N]`` and ``[H, R, len(windows), N]``.

    Row blocks of P are computed one at a time (a block holds complete rows, so its softmax is
    exact) in row order -- the sweep.  Per block:

    * column sums of 32-row chunks in float32, accumulated across chunks and blocks in float64
      (the running column mass of all rows before a chunk);
    * for each sampled row ``i`` whose last ``L = max(max(windows), 32)`` rows meet the block,
      those rows are gathered (newest first) and cumulatively summed in float32: entry ``w - 1``
      is the block's share of the window-``w`` sum, and the entry reaching back to the start of
      ``i``'s chunk completes ``acc = running(before i's chunk) + that tail``.

    Every float32 sum of (positive) terms therefore runs over at most 32 rows (relative error
    <= 31 eps); everything longer is float64.  A head's rows past its own last sampled row are
    never computed; with a sliding window only keys ``>= block_start - W + 1`` are.  No Python loop runs over
    rows; one runs over row blocks.
    """
    H, N, _, R = check_inputs(q, k, positions, logits_dtype)
    windows = check_windows(windows)
    if block_rows < 1:
        raise ValueError(f"block_rows must be >= 1; got {block_rows}")
    device = q.device
    positions = positions.long()
    nw = len(windows)
    acc = torch.zeros(H * R, N, dtype=torch.float64, device=device)  # row h * R + r
    wsum = torch.zeros(H * R, nw, N, dtype=torch.float32, device=device)
    last = int(positions.max()) if R else -1
    if last < 0:
        return acc.view(H, R, N).float(), wsum.view(H, R, nw, N)
    span = max(max(windows, default=1), _CHUNK)  # rows gathered back from each sampled row
    w_index = torch.tensor([w - 1 for w in windows], device=device, dtype=torch.long)
    back = torch.arange(span, device=device)  # gathered row i - m for m = 0..span-1
    flat_hr = torch.arange(H * R, device=device).view(H, R)
    running = torch.zeros(H, N, dtype=torch.float64, device=device)  # P mass of rows before the block
    head_last = positions.max(dim=1).values  # a head's sweep ends at its own last sampled row
    local = torch.arange(H, device=device)  # head -> its index among the block's active heads
    block_rows = min(block_rows, last + 1)
    key_span = last + 1 if window is None else min(last + 1, block_rows + window - 1)
    work = _Workspace(H, block_rows, key_span, H * R, span, logits_dtype, device)
    for row0 in range(0, last + 1, block_rows):
        row1 = min(row0 + block_rows, last + 1)
        b = row1 - row0
        key0 = 0 if window is None else max(0, row0 - window + 1)
        n = row1 - key0
        q_rows, k_keys = q[:, row0:row1], k[:, key0:row1]
        active = None  # all heads
        if bool((head_last < row0).any()):  # some heads are done: compute the others only
            active = (head_last >= row0).nonzero().squeeze(1)
            local[active] = torch.arange(active.numel(), device=device)
            q_rows, k_keys = q_rows.index_select(0, active), k_keys.index_select(0, active)
        Ha = q_rows.shape[0]
        p = _block_probs(q_rows, k_keys, row0, key0, scaling, softcap, window, logits_dtype, work)
        # float32 sums of 32-row chunks
        n_chunks = -(-b // _CHUNK)
        full = b // _CHUNK
        chunk_sums = work.view(work.chunks, Ha, n_chunks, n)
        if full:
            torch.sum(p[:, : full * _CHUNK].view(Ha, full, _CHUNK, n), dim=2, out=chunk_sums[:, :full])
        if full < n_chunks:
            chunk_sums[:, full] = p[:, full * _CHUNK :].sum(dim=1)
        # sampled rows whose gather span meets this block, in passes that fit the gather buffer
        hit = (positions >= row0) & (positions - span + 1 < row1)
        if bool(hit.any()):
            h_all, r_all = hit.nonzero(as_tuple=True)
            p_rows = work.view(work.probs, Ha * b + 1, n)
            p_rows[Ha * b].zero_()  # padded gathers read this zero row
            for first in range(0, h_all.numel(), work.max_hits):
                h_idx, r_idx = h_all[first : first + work.max_hits], r_all[first : first + work.max_hits]
                hr = flat_hr[h_idx, r_idx]
                i = positions[h_idx, r_idx]
                rows = i.unsqueeze(-1) - row0 - back  # block-local rows i, i-1, ..., i-span+1
                flat = torch.where((rows >= 0) & (rows < b), local[h_idx].unsqueeze(-1) * b + rows, Ha * b)
                tails = work.view(work.gathered, h_idx.numel(), span, n)
                torch.index_select(p_rows, 0, flat.view(-1), out=tails.view(-1, n))
                tails.cumsum_(dim=1)  # tails[:, m] = sum of rows i-m..i inside this block
                wsum[:, :, key0:row1].index_add_(0, hr, tails.index_select(1, w_index))
                own = i < row1  # i itself lies in this block: its accumulated mass is complete here
                if bool(own.any()):
                    h_o, hr_o, t = h_idx[own], hr[own], i[own] - row0
                    c = t // _CHUNK  # i's chunk; the chunks before it are summed in float64
                    earlier = (torch.arange(n_chunks, device=device) < c.unsqueeze(-1)).double()
                    total = running[h_o, :row1].clone()
                    total[:, key0:row1] += torch.einsum("kc,kcn->kn", earlier, chunk_sums[local[h_o]].double())
                    total[:, key0:row1] += tails[own.nonzero().squeeze(1), t % _CHUNK]
                    acc[hr_o, :row1] = total
        if active is None:
            running[:, key0:row1] += chunk_sums.sum(dim=1, dtype=torch.float64)
        else:
            running[active, key0:row1] += chunk_sums.sum(dim=1, dtype=torch.float64)
    return acc.view(H, R, N).to(torch.float32), wsum.view(H, R, nw, N)
