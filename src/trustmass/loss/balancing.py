"""Balancing (paper spec §1.5) for many rows at once, choosing the registry's kept sets.

Per row, as ``core.selectors.ceiling_rules.Balancing`` on ``SelectorInput``: the instance is the
row's positive-mass visible keys with p renormalised in float64 (p / p.sum()), mu = sum_j p_j v_j
and w_j = p_j (v_j - mu).  With s = min(budget, #positive) the start is A*_s (descending p, ties to
the smaller position); the candidate pool C_s is A*_s plus the `extra` outside keys of largest
||w_j|| (ties to the smaller position; a row with at most s + extra positive keys pools them all).
Each round evaluates every swap (out in A, in in C_s \\ A) directly,

    g' = (g_A - w_out) + w_in,   p' = (p(A) - p_out) + p_in,   es' = ||g'|| / p',

takes the lexicographically first (out, in) pair (ascending positions) among the minimal es' and
accepts it iff es' < es(A) (1 - REL_TOL) less the rounding margin of ``core.selectors.balancing``
(which keeps the descent finite where es is at the rounding level); rows stop independently.  The kept set is padded with the
smallest zero-mass visible positions up to min(budget, i + 1), as ``SelectorInput.on_positions``.
"""

from __future__ import annotations

import torch

from trustmass.core.operator import REL_TOL
from trustmass.core.selectors.balancing import UNIT_ROUNDOFF
from trustmass.loss.batched import compress, first_argmin, numpy_sum, sequential_sum, top_k_mask
from trustmass.loss.evidence import LayerRows

#: largest float64 temporary (elements) one chunk of rows may build
CHUNK_ELEMENTS = 1 << 23
#: relative slack for the rounding of sqrt and products in the error bounds
ROUNDING_TOL = 1e-12
#: relative error bound of ||v - mu||^2 = ||v||^2 - 2 v.mu + ||mu||^2 against (||v|| + ||mu||)^2
EXPANSION_TOL = 1e-12
#: relative slack of the float32 triangle-inequality bounds on ||w_j|| (float32 rounding: ~1e-7)
TRIANGLE_TOL = 1e-5
#: rows with more triangle survivors than this are re-scored in a batch of their own
TRIANGLE_WIDTH = 64
#: bound on |expanded - exact| ||g_A - w_out + w_in||^2 relative to (||g_A - w_out|| + ||w_in||)^2
SCREEN_TOL = 1e-12


def row_chunks(n_rows: int, per_row: int):
    """Slices of rows whose temporaries hold at most CHUNK_ELEMENTS elements."""
    step = max(1, CHUNK_ELEMENTS // max(1, per_row))
    return [slice(a, min(a + step, n_rows)) for a in range(0, n_rows, step)]


def dense_output(rows: LayerRows, pn: torch.Tensor) -> torch.Tensor:
    """float64 [R, d]: mu = sum_j pn_j v_j per row (pn the renormalised masses, 0 off the instance)."""
    v = rows.values.double()
    return torch.bmm(rows.grouped(pn), v).reshape(pn.shape[0], -1)


def exact_errors(
    rows: LayerRows, pn: torch.Tensor, mu: torch.Tensor, index: torch.Tensor, which: torch.Tensor | None = None
) -> torch.Tensor:
    """float64 [r, K]: ||w_j|| = pn_j ||v_j - mu|| at positions index [r, K] of the flat rows
    `which` (default: all R), the squared distance summed over d left to right (as
    ``core.operator._row_distances``)."""
    which = torch.arange(index.shape[0], device=index.device) if which is None else which
    out = torch.empty(index.shape, dtype=torch.float64, device=index.device)
    values = rows.values.double()
    for part in row_chunks(index.shape[0], index.shape[1] * values.shape[-1]):
        at = which[part]
        diff = rows.gather_kv(values, index[part], at) - mu[at, None, :]
        acc = sequential_sum(diff * diff)  # left to right, as core.operator._row_distances
        out[part] = pn[at].gather(1, index[part]) * acc.sqrt()
    return out


def largest_errors(rows: LayerRows, pn: torch.Tensor, mu: torch.Tensor, eligible: torch.Tensor, k: int) -> torch.Tensor:
    """bool [R, N]: the k eligible keys of largest ||w_j|| per row, ties to the smaller position.

    A screen keeps the keys that can be among the k largest -- by the triangle inequality
    pn_j | ||v_j|| - ||mu|| | <= ||w_j|| <= pn_j (||v_j|| + ||mu||), in float32 with a TRIANGLE_TOL
    slack, a key survives iff its upper bound reaches the row's k-th largest lower bound (no matrix
    product; on SmolLM2 rows a median ~30 of ~2,000 keys survive); rows with more than
    TRIANGLE_WIDTH survivors are narrowed by :func:`_expansion_screen`, and the rest re-scored
    exactly (:func:`exact_errors`; rows still crowded in a batch of their own, so one crowded row
    does not widen every row's) before the tie rule is applied."""
    v_norm = rows.ungrouped(rows.values.float().norm(dim=-1))  # [R, N]
    mu_norm = mu.norm(dim=-1, keepdim=True).float()
    p32 = pn.float()
    hi = p32 * (v_norm + mu_norm) * (1 + TRIANGLE_TOL)
    lo = (p32 * (v_norm - mu_norm).abs() * (1 - TRIANGLE_TOL)).masked_fill(~eligible, float("-inf"))
    candidate = eligible & (hi >= lo.topk(k, dim=1).values[:, -1:])
    crowded = candidate.sum(dim=1) > TRIANGLE_WIDTH
    if bool(crowded.any()):
        which = crowded.nonzero()[:, 0]
        candidate[which] &= _expansion_screen(rows, pn[which], mu[which], eligible[which], k, which)
        crowded = candidate.sum(dim=1) > TRIANGLE_WIDTH
    n = eligible.shape[1]
    out = torch.zeros(eligible.shape[0], n + 1, dtype=torch.bool, device=eligible.device)  # column N: the padding slots
    for which in (~crowded).nonzero()[:, 0], crowded.nonzero()[:, 0]:
        if which.numel() == 0:
            continue
        part = candidate[which]
        index = compress(part, int(part.sum(dim=1).max()))
        valid = index >= 0
        error = exact_errors(rows, pn, mu, index.clamp(min=0), which)
        out[which] = out[which].scatter(1, index.masked_fill(~valid, n), top_k_mask(error, k, valid))
    return out[:, :n] & eligible


def _expansion_screen(rows: LayerRows, pn, mu, eligible, k: int, which: torch.Tensor) -> torch.Tensor:
    """bool [r, N] for the flat rows `which`: the keys whose bound from the expansion
    ||v_j - mu||^2 = ||v_j||^2 - 2 v_j.mu + ||mu||^2 (one product per KV head, float64, the slack
    EXPANSION_TOL (||v_j|| + ||mu||)^2) reaches the row's k-th largest lower bound."""
    v = rows.values.double()
    kv = rows.kv_of_row[which]
    v_mu = torch.empty(pn.shape, dtype=torch.float64, device=pn.device)
    for head in kv.unique().tolist():
        at = kv == head
        v_mu[at] = mu[at] @ v[head].T
    v_norm2 = (v * v).sum(dim=-1)[kv]  # [r, N]
    mu_norm2 = (mu * mu).sum(dim=-1, keepdim=True)
    approx = v_norm2 - 2.0 * v_mu + mu_norm2
    tol = EXPANSION_TOL * (v_norm2.sqrt() + mu_norm2.sqrt()) ** 2
    lo = pn * (approx - tol).clamp(min=0).sqrt() * (1 - ROUNDING_TOL)
    hi = pn * (approx + tol).clamp(min=0).sqrt() * (1 + ROUNDING_TOL)
    low_k = lo.masked_fill(~eligible, float("-inf")).topk(k, dim=1).values[:, -1:]
    return eligible & (hi >= low_k)


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


def _swap_slots(w, pm, kept_slot, valid, budget: int):
    """The pool split of one round: kept slots (out), the others (in), their w-vectors and masses,
    g_A summed left to right (as numpy sums the kept rows, axis 0), p(A) and the acceptance threshold
    es(A) (1 - REL_TOL) - margin (``core.selectors.balancing._swap_descent``, the same operations)."""
    key = torch.where(kept_slot, 0, torch.where(valid, 1, 2))
    order = key.sort(dim=1, stable=True).indices
    out_slots, in_slots = order[:, :budget], order[:, budget:]
    in_valid = key.gather(1, in_slots) == 1
    wk = w.gather(1, out_slots[..., None].expand(-1, -1, w.shape[-1]))
    wi = w.gather(1, in_slots[..., None].expand(-1, -1, w.shape[-1]))
    pk, pi = pm.gather(1, out_slots), pm.gather(1, in_slots)
    g = wk[:, 0]
    for j in range(1, budget):
        g = g + wk[:, j]
    mass = numpy_sum(pk)
    current = numpy_sum(g * g).sqrt() / mass
    norms = torch.where(valid, sequential_sum(w * w).sqrt(), 0.0)
    noise = ((valid.sum(dim=1) + (w.shape[-1] + 4)).double() * UNIT_ROUNDOFF) * sequential_sum(norms)
    p_in_min = pi.masked_fill(~in_valid, float("inf")).min(dim=1).values
    mass_low = (mass - pk.max(dim=1).values) + p_in_min
    threshold = current * (1.0 - REL_TOL) - (noise / mass + noise / mass_low)
    return out_slots, in_slots, in_valid, wk, wi, pk, pi, g, mass, threshold


def _decision(es_best, best, threshold, out_slots, in_slots):
    n_in = in_slots.shape[1]
    accept = es_best < threshold
    return accept, out_slots.gather(1, (best // n_in)[:, None])[:, 0], in_slots.gather(1, (best % n_in)[:, None])[:, 0]


def exact_best_swaps(w, pm, kept_slot, valid, budget: int):
    """One round for a set of rows: (accept bool, out slot, in slot) of each row's best swap, every
    es' = ||g_A - w_out + w_in|| / p' summed over d in numpy's order (the registry's arithmetic).

    w [r, P, d] and pm [r, P] are the pool's w-vectors and masses by slot (positions ascending)."""
    out_slots, in_slots, in_valid, wk, wi, pk, pi, g, mass, threshold = _swap_slots(w, pm, kept_slot, valid, budget)
    g_swap = (g[:, None, None, :] - wk[:, :, None, :]) + wi[:, None, :, :]
    es_swap = numpy_sum(g_swap * g_swap).sqrt() / ((mass[:, None, None] - pk[:, :, None]) + pi[:, None, :])
    es_swap = es_swap.masked_fill(~in_valid[:, None, :], float("inf"))
    best = first_argmin(es_swap)
    es_best = es_swap.reshape(es_swap.shape[0], -1).gather(1, best[:, None])[:, 0]
    return _decision(es_best, best, threshold, out_slots, in_slots)


def best_swaps(w, pm, kept_slot, valid, budget: int):
    """:func:`exact_best_swaps`, decided for most rows from a screen and exactly for the rest.

    With h = g_A - w_out (rounded as the exact path rounds it), ``||h + w_in||^2`` is expanded as
    ``||h||^2 + ||w_in||^2 + 2 h.w_in`` (one batched product instead of an [r, s, P - s, d]
    temporary) with the bound ``SCREEN_TOL (||h|| + ||w_in||)^2`` on its distance from the exact
    path's value (float64 rounding of either is below 1e-13 of that scale for d <= 256).  A row is
    decided by the screen when no swap can pass the acceptance threshold (every lower bound at or
    above it), or when one swap's upper bound lies below every other lower bound
    and below the threshold (it is then the exact minimum and accepted); every other row (near
    ties, swaps at the threshold) goes through the exact path.  The decisions are the exact path's."""
    out_slots, in_slots, in_valid, wk, wi, pk, pi, g, mass, threshold = _swap_slots(w, pm, kept_slot, valid, budget)
    h = g[:, None, :] - wk  # [r, s, d]: bitwise the exact path's g - w_out
    h2, i2 = (h * h).sum(-1), (wi * wi).sum(-1)  # [r, s], [r, n_in]
    n2 = h2[:, :, None] + i2[:, None, :] + 2.0 * torch.bmm(h, wi.transpose(1, 2))
    tol = SCREEN_TOL * (h2.sqrt()[:, :, None] + i2.sqrt()[:, None, :]) ** 2
    den = (mass[:, None, None] - pk[:, :, None]) + pi[:, None, :]
    lo = ((n2 - tol).clamp(min=0).sqrt() / den * (1 - ROUNDING_TOL)).masked_fill(~in_valid[:, None, :], float("inf"))
    hi = ((n2 + tol).sqrt() / den * (1 + ROUNDING_TOL)).masked_fill(~in_valid[:, None, :], float("inf"))
    lo, hi = lo.reshape(lo.shape[0], -1), hi.reshape(hi.shape[0], -1)
    candidate = hi.argmin(dim=1)
    hi_best = hi.gather(1, candidate[:, None])[:, 0]
    lo_others = lo.scatter(1, candidate[:, None], float("inf")).min(dim=1).values
    reject = lo.min(dim=1).values >= threshold
    accept = (hi_best < lo_others) & (hi_best < threshold)
    _, out_slot, in_slot = _decision(hi_best, candidate, threshold, out_slots, in_slots)
    unsure = (~(accept | reject)).nonzero()[:, 0]
    if unsure.numel():
        exact = exact_best_swaps(w[unsure], pm[unsure], kept_slot[unsure], valid[unsure], budget)
        accept[unsure], out_slot[unsure], in_slot[unsure] = exact
    return accept, out_slot, in_slot


def swap_rounds(w, pm, kept_slot, valid, budget: int) -> torch.Tensor:
    """Run rounds until no row improves; updates kept_slot in place, returns swaps per row."""
    swaps = torch.zeros(kept_slot.shape[0], dtype=torch.int64, device=kept_slot.device)
    live = torch.arange(kept_slot.shape[0], device=kept_slot.device)
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
    swaps = torch.zeros(p.shape[0], dtype=torch.int64, device=p.device)
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
        chosen = torch.zeros(
            act.numel(), p.shape[1] + 1, dtype=torch.bool, device=p.device
        )  # column N: the padding slots
        chosen.scatter_(1, slots.masked_fill(~valid, p.shape[1]), kept_slot)
        kept[act] = chosen[:, :-1]
    return pad_zero_mass(kept, visible & ~positive, budget, rows.n_visible), swaps


def pad_zero_mass(kept: torch.Tensor, zero: torch.Tensor, budget: int, n_visible: torch.Tensor) -> torch.Tensor:
    """Add the smallest zero-mass visible positions until each row keeps min(budget, i + 1) keys."""
    short = torch.clamp(
        torch.minimum(n_visible, torch.tensor(budget, device=n_visible.device)) - kept.sum(dim=1), min=0
    )
    return kept | (zero & (zero.cumsum(dim=1) <= short[:, None]))
