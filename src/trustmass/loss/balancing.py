"""Balancing (paper spec §1.5) for many rows at once, choosing the registry's kept sets.

Per row, as ``core.selectors.ceiling_rules.Balancing`` on ``SelectorInput``: the instance is the
row's positive-mass visible keys with p renormalised in float64 (p / p.sum()), mu = sum_j p_j v_j
and w_j = p_j (v_j - mu).  With s = min(budget, #positive) the start is A*_s (descending p, ties to
the smaller position); the candidate pool C_s is A*_s plus the `extra` outside keys of largest
||w_j|| (ties to the smaller position; a row with at most s + extra positive keys pools them all).
Each round evaluates every swap (out in A, in in C_s \\ A) directly,

    g' = (g_A - w_out) + w_in,   p' = (p(A) - p_out) + p_in,   es' = ||g'|| / p',

takes the lexicographically first (out, in) pair (ascending positions) among the minimal es' and
accepts it iff es' < es(A) (1 - REL_TOL); rows stop independently.  The kept set is padded with the
smallest zero-mass visible positions up to min(budget, i + 1), as ``SelectorInput.on_positions``.
"""

from __future__ import annotations

import torch

from trustmass.core.operator import REL_TOL
from trustmass.loss.batched import compress, first_argmin, numpy_sum, top_k_mask
from trustmass.loss.evidence import LayerRows

#: largest float64 temporary (elements) one chunk of rows may build
CHUNK_ELEMENTS = 1 << 23
#: relative error bound of ||v - mu||^2 = ||v||^2 - 2 v.mu + ||mu||^2 against (||v|| + ||mu||)^2
EXPANSION_TOL = 1e-12
#: relative slack for the rounding of sqrt and products in the error bounds
ROUNDING_TOL = 1e-12


def row_chunks(n_rows: int, per_row: int):
    """Slices of rows whose temporaries hold at most CHUNK_ELEMENTS elements."""
    step = max(1, CHUNK_ELEMENTS // max(1, per_row))
    return [slice(a, min(a + step, n_rows)) for a in range(0, n_rows, step)]


def dense_output(rows: LayerRows, pn: torch.Tensor) -> torch.Tensor:
    """float64 [R, d]: mu = sum_j pn_j v_j per row (pn the renormalised masses, 0 off the instance)."""
    v = rows.values.double()
    return torch.bmm(rows.grouped(pn), v).reshape(pn.shape[0], -1)


def exact_errors(rows: LayerRows, pn: torch.Tensor, mu: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """float64 [R, K]: ||w_j|| = pn_j ||v_j - mu|| at positions index [R, K], the squared distance
    summed over d left to right (as ``core.operator._row_distances``)."""
    out = torch.empty(index.shape, dtype=torch.float64)
    values = rows.values.double()
    every = torch.arange(index.shape[0])
    for part in row_chunks(index.shape[0], index.shape[1] * values.shape[-1]):
        diff = rows.gather_kv(values, index[part], every[part]) - mu[part, None, :]
        acc = torch.zeros(diff.shape[:2], dtype=torch.float64)
        for c in range(diff.shape[-1]):
            acc = acc + diff[..., c] * diff[..., c]
        out[part] = pn[part].gather(1, index[part]) * acc.sqrt()
    return out


def largest_errors(rows: LayerRows, pn: torch.Tensor, mu: torch.Tensor, eligible: torch.Tensor, k: int) -> torch.Tensor:
    """bool [R, N]: the k eligible keys of largest ||w_j|| per row, ties to the smaller position.

    All N distances come from the expansion ||v||^2 - 2 v.mu + ||mu||^2 (one matrix product) with
    bounds lo <= ||w_j|| <= hi; only keys whose hi reaches the k-th largest lo can be among the k
    largest, and those are re-scored exactly (:func:`exact_errors`) before the tie rule is applied."""
    v = rows.values.double()
    v_norm2 = (v * v).sum(dim=-1)  # [Hkv, N]
    v_mu = torch.bmm(rows.grouped(mu), v.transpose(1, 2)).reshape(pn.shape)
    v_norm2 = rows.ungrouped(v_norm2)
    mu_norm2 = (mu * mu).sum(dim=-1, keepdim=True)
    approx = v_norm2 - 2.0 * v_mu + mu_norm2
    tol = EXPANSION_TOL * (v_norm2.sqrt() + mu_norm2.sqrt()) ** 2
    lo = pn * (approx - tol).clamp(min=0).sqrt() * (1 - ROUNDING_TOL)
    hi = pn * (approx + tol).clamp(min=0).sqrt() * (1 + ROUNDING_TOL)
    low_k = lo.masked_fill(~eligible, float("-inf")).topk(k, dim=1).values[:, -1:]
    candidate = eligible & (hi >= low_k)
    width = int(candidate.sum(dim=1).max())
    index = compress(candidate, width)
    valid = index >= 0
    error = exact_errors(rows, pn, mu, index.clamp(min=0))
    chosen = top_k_mask(error, k, valid)
    n = eligible.shape[1]
    out = torch.zeros(eligible.shape[0], n + 1, dtype=torch.bool)  # column N: the padding slots
    out.scatter_(1, index.masked_fill(~valid, n), chosen)
    return out[:, :n] & eligible


def candidate_pools(rows: LayerRows, pn, mu, top, positive, budget: int, extra: int) -> torch.Tensor:
    """bool [R, N]: C_s = A*_s plus the `extra` outside keys of largest ||w_j|| (all positive keys
    where at most s + extra are positive)."""
    n_positive = positive.sum(dim=1)
    pool = positive.clone()
    big = n_positive > budget + extra
    if extra > 0 and bool(big.any()):
        eligible = positive & ~top & big[:, None]
        pool = torch.where(big[:, None], top | largest_errors(rows, pn, mu, eligible, extra), pool)
    elif extra == 0:
        pool = torch.where(big[:, None], top, pool)
    return pool


def best_swaps(w, pm, kept_slot, valid, budget: int):
    """One round for a set of rows: (accept bool, out slot, in slot) of each row's best swap.

    w [r, P, d] and pm [r, P] are the pool's w-vectors and masses by slot (positions ascending)."""
    key = torch.where(kept_slot, 0, torch.where(valid, 1, 2))
    order = key.sort(dim=1, stable=True).indices
    out_slots, in_slots = order[:, :budget], order[:, budget:]
    in_valid = key.gather(1, in_slots) == 1
    wk = w.gather(1, out_slots[..., None].expand(-1, -1, w.shape[-1]))
    wi = w.gather(1, in_slots[..., None].expand(-1, -1, w.shape[-1]))
    pk, pi = pm.gather(1, out_slots), pm.gather(1, in_slots)
    g = wk[:, 0]
    for j in range(1, budget):  # numpy sums the kept rows (axis 0) left to right
        g = g + wk[:, j]
    mass = numpy_sum(pk)
    current = numpy_sum(g * g).sqrt() / mass
    g_swap = (g[:, None, None, :] - wk[:, :, None, :]) + wi[:, None, :, :]
    es_swap = numpy_sum(g_swap * g_swap).sqrt() / ((mass[:, None, None] - pk[:, :, None]) + pi[:, None, :])
    es_swap = es_swap.masked_fill(~in_valid[:, None, :], float("inf"))
    best = first_argmin(es_swap)
    n_in = in_slots.shape[1]
    accept = es_swap.reshape(es_swap.shape[0], -1).gather(1, best[:, None])[:, 0] < current * (1.0 - REL_TOL)
    return accept, out_slots.gather(1, (best // n_in)[:, None])[:, 0], in_slots.gather(1, (best % n_in)[:, None])[:, 0]


def swap_rounds(w, pm, kept_slot, valid, budget: int) -> torch.Tensor:
    """Run rounds until no row improves; updates kept_slot in place, returns swaps per row."""
    swaps = torch.zeros(kept_slot.shape[0], dtype=torch.int64)
    live = torch.arange(kept_slot.shape[0])
    per_row = budget * max(1, w.shape[1] - budget) * w.shape[-1]
    while live.numel():
        improved = []
        for part in row_chunks(live.numel(), per_row):
            rows = live[part]
            accept, out_slot, in_slot = best_swaps(w[rows], pm[rows], kept_slot[rows], valid[rows], budget)
            rows, out_slot, in_slot = rows[accept], out_slot[accept], in_slot[accept]
            kept_slot[rows, out_slot] = False
            kept_slot[rows, in_slot] = True
            improved.append(rows)
        live = torch.cat(improved)
        swaps[live] += 1
    return swaps


def balancing_mask(rows: LayerRows, budget: int, extra: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(bool [R, N] kept set, int64 [R] accepted swaps) of balancing at `budget` with `extra` pool keys."""
    visible = rows.visible
    p = rows.flat(rows.p)
    positive = (p > 0) & visible
    p64 = torch.where(positive, p.double(), 0.0)
    pn = p64 / p64.sum(dim=1, keepdim=True).clamp(min=torch.finfo(torch.float64).tiny)
    top = top_k_mask(p, budget, positive)
    kept = top.clone()
    swaps = torch.zeros(p.shape[0], dtype=torch.int64)
    active = positive.sum(dim=1) > budget
    if bool(active.any()):
        mu = dense_output(rows, pn)
        pool = candidate_pools(rows, pn, mu, top, positive, budget, extra)
        act = active.nonzero()[:, 0]
        slots = compress(pool[act], budget + extra)
        valid = slots >= 0
        at = slots.clamp(min=0)
        kept_slot = top[act].gather(1, at) & valid
        pm = pn[act].gather(1, at)
        w = pm[..., None] * (rows.gather_kv(rows.values.double(), at, act) - mu[act, None, :])
        swaps[act] = swap_rounds(w, pm, kept_slot, valid, budget)
        chosen = torch.zeros(act.numel(), p.shape[1] + 1, dtype=torch.bool)  # column N: the padding slots
        chosen.scatter_(1, slots.masked_fill(~valid, p.shape[1]), kept_slot)
        kept[act] = chosen[:, :-1]
    return pad_zero_mass(kept, visible & ~positive, budget, rows.n_visible), swaps


def pad_zero_mass(kept: torch.Tensor, zero: torch.Tensor, budget: int, n_visible: torch.Tensor) -> torch.Tensor:
    """Add the smallest zero-mass visible positions until each row keeps min(budget, i + 1) keys."""
    short = torch.clamp(torch.minimum(n_visible, torch.tensor(budget)) - kept.sum(dim=1), min=0)
    return kept | (zero & (zero.cumsum(dim=1) <= short[:, None]))
