"""Row-batched building blocks of the batched selectors, each exact against its numpy counterpart.

* :func:`top_k_mask`: the k largest scores of every row with the project's tie rule (descending
  score, then ascending position), as ``core.operator.top_k`` -- never torch.topk's tie order;
* :func:`compress`: a boolean row mask -> its positions ascending, padded with -1;
* :func:`numpy_sum`: a last-axis sum in numpy's pairwise order (bit-identical to ``ndarray.sum``
  on float64), for scores the numpy rules compare without tolerance;
* :func:`sequential_sum`: a last-axis sum strictly left to right (a scalar loop's order);
* :func:`first_argmin`: the first index of the row minimum (numpy's argmin convention).
"""

from __future__ import annotations

import torch

#: numpy's pairwise-summation block (numpy/_core/src/umath/loops_utils.h: PW_BLOCKSIZE)
PAIRWISE_BLOCK = 128


def top_k_mask(score: torch.Tensor, k, eligible: torch.Tensor | None) -> torch.Tensor:
    """bool [R, N]: per row the k largest `score` among the `eligible` keys (None: every key), ties
    to the smaller position; all eligible keys where fewer than k are eligible.  `k` is an int or
    int64 [R].  Scores must be finite."""
    rows, n = score.shape
    k = torch.as_tensor(k, dtype=torch.int64, device=score.device).expand(rows).clamp(0, n)
    k_max = int(k.max()) if rows else 0
    if k_max == 0:
        return torch.zeros(rows, n, dtype=torch.bool, device=score.device)
    masked = score if eligible is None else torch.where(eligible, score, float("-inf"))
    return _top_k_of(masked, k, k_max, eligible is not None)


def _top_k_of(masked: torch.Tensor, k: torch.Tensor, k_max: int, has_ineligible: bool) -> torch.Tensor:
    """The top k of rows whose ineligible keys hold -inf.  One torch.topk of k + 1 values and indices
    per row: where the (k+1)-th value is strictly below the k-th, the top k indices are the answer
    whatever order topk gives equal values; the other rows (a tie across the k-th place) take every
    key above the k-th value t, then the keys equal to t in ascending position."""
    rows, n = masked.shape
    width = min(k_max + 1, n)
    values, index = masked.topk(width, dim=1)
    kth = values.gather(1, (k - 1).clamp(min=0)[:, None])
    has_next = k < width  # k == width only where k == n: every key is in the top k
    after = values.gather(1, k.clamp(max=width - 1)[:, None])
    clean = ~has_next | (after < kth)[:, 0] | torch.isneginf(kth)[:, 0]  # -inf: fewer eligible than k, all taken
    ranked = torch.arange(width, device=masked.device) < k[:, None]  # on the values' device, as k (issue 28)
    out = torch.zeros(rows, n, dtype=torch.bool, device=masked.device).scatter_(1, index, ranked)
    if has_ineligible and bool(torch.isneginf(kth).any()):  # a row with fewer eligible keys than k
        out &= masked > float("-inf")
    if not bool(clean.all()):
        tied = ~clean
        out[tied] = _top_k_with_ties(masked[tied], k[tied], kth[tied])
    return out  # k = 0 rows are empty on both paths (nothing ranks above the row maximum)


def _top_k_with_ties(masked: torch.Tensor, k: torch.Tensor, kth: torch.Tensor) -> torch.Tensor:
    """The rows of :func:`_top_k_of` whose k-th value t is tied beyond the k-th place: every key
    above t, then the keys equal to t in ascending position while places remain (kth is finite
    here, so -inf keys are never taken)."""
    above, tie = masked > kth, masked == kth
    need = k - above.sum(dim=1)
    rank = tie.to(torch.int32).cumsum(dim=1)
    return above | (tie & (rank <= need[:, None]))


def compress(mask: torch.Tensor, width: int) -> torch.Tensor:
    """int64 [R, width]: the positions where `mask` is set, ascending, padded with -1 (a row with
    more than `width` set positions keeps its first `width`)."""
    rows = mask.shape[0]
    out = torch.full((rows, width), -1, dtype=torch.int64, device=mask.device)
    if width == 0 or rows == 0:
        return out
    row, col = mask.nonzero(as_tuple=True)  # row-major: positions ascending within each row
    start = torch.zeros(rows, dtype=torch.int64, device=mask.device)
    start[1:] = torch.bincount(row, minlength=rows).cumsum(0)[:-1]
    rank = torch.arange(row.shape[0], device=mask.device) - start[row]
    keep = rank < width
    out[row[keep], rank[keep]] = col[keep]
    return out


def to_csr(kept: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(kept_ptr int64 [rows + 1], kept_idx int64): the kept sets [..., width] (padded with -1) as
    CSR over the flattened leading axes; row r's keys are kept_idx[kept_ptr[r]:kept_ptr[r + 1]]."""
    flat = kept.reshape(-1, kept.shape[-1])
    valid = flat >= 0
    ptr = torch.zeros(flat.shape[0] + 1, dtype=torch.int64, device=kept.device)
    ptr[1:] = valid.sum(dim=1).cumsum(dim=0)
    return ptr, flat[valid]


def mask_to_csr(mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(ptr [R + 1], idx): the set positions of each row of ``mask`` (bool [R, N]), ascending, as CSR."""
    ptr = torch.zeros(mask.shape[0] + 1, dtype=torch.int64, device=mask.device)
    ptr[1:] = mask.sum(dim=1).cumsum(dim=0)
    return ptr, mask.nonzero()[:, 1]


def sequential_sum(x: torch.Tensor) -> torch.Tensor:
    """Sum over the last axis strictly left to right (as a scalar loop, ``core.operator``'s numba
    kernels): on the CPU torch's cumsum is that loop (one pass; tested bitwise), elsewhere a loop."""
    if x.device.type == "cpu":
        return x.cumsum(dim=-1)[..., -1] if x.shape[-1] else x.sum(dim=-1)
    total = torch.zeros(x.shape[:-1], dtype=x.dtype, device=x.device)
    for i in range(x.shape[-1]):
        total = total + x[..., i]
    return total


def numpy_sum(x: torch.Tensor) -> torch.Tensor:
    """Sum over the last axis in numpy's pairwise order: fewer than 8 terms left to right; up to
    128 terms eight running partial sums combined as ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)), then the
    remainder left to right; longer halves at a multiple of 8 and recurses."""
    n = x.shape[-1]
    if n < 8:
        total = torch.zeros(x.shape[:-1], dtype=x.dtype, device=x.device)
        for i in range(n):
            total = total + x[..., i]
        return total
    if n <= PAIRWISE_BLOCK:
        whole = n - n % 8
        r = x[..., :8]
        for i in range(8, whole, 8):
            r = r + x[..., i : i + 8]
        total = ((r[..., 0] + r[..., 1]) + (r[..., 2] + r[..., 3])) + (
            (r[..., 4] + r[..., 5]) + (r[..., 6] + r[..., 7])
        )
        for i in range(whole, n):
            total = total + x[..., i]
        return total
    half = n // 2
    half -= half % 8
    return numpy_sum(x[..., :half]) + numpy_sum(x[..., half:])


def first_argmin(x: torch.Tensor) -> torch.Tensor:
    """int64 [R]: the first index of each row's minimum over the flattened trailing axes."""
    flat = x.reshape(x.shape[0], -1)
    low = flat.min(dim=1, keepdim=True).values
    index = torch.arange(flat.shape[1], device=x.device).expand_as(flat)
    return index.masked_fill(flat != low, flat.shape[1]).min(dim=1).values
