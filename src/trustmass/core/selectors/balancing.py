"""The balancing selector (paper spec §1.5): local swaps from top-mass inside the candidate pool.

Start at A = A*_s.  Each round evaluates every swap of one kept key `out` for one pool key `in`
outside A, takes the swap that most decreases es(A) and stops when none does.  es strictly
decreases over a finite set, so it terminates.  For a swap,

    g' = g_A - w_out + w_in,   p' = p(A) - p_out + p_in,   es' = ||g'|| / p'.

Balancing reads mu (the dense output): a decode-time rule or a prefill teacher.

Termination in floating point.  es strictly decreases in exact arithmetic only: where es(A) is at
the rounding level of g_A (a row whose top-s keys hold all but ~1e-17 of the mass), the incremental
es' and the next round's fresh es(A) disagree by more than the spec's relative 1e-12, and the descent
swaps back and forth for ever (found on a shuffled-text control row of Qwen2.5-Coder: es(A*_256) =
1.8e-17, 20,000 swaps without end).  A swap is therefore accepted only if it also beats es(A) by the
rounding margin of the two evaluations,

    es' < es(A) (1 - 1e-12) - (noise / p(A) + noise / p_low),
    noise = (m + d + 4) u sum_{j in pool} ||w_j||,   p_low = p(A) - max_{A} p_out + min_{pool - A} p_in,

(m pool keys, u the unit roundoff; noise bounds the error of a computed ||g|| for any kept set of the
pool, summed or updated, and p_low is below every p'): each accepted swap then decreases the exact
es, so the descent ends.  On ordinary rows the margin (~1e-13 of ||w||) decides nothing the 1e-12
rule did not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from trustmass.core.operator import REL_TOL, Instance, es, top_mass

#: float64's unit roundoff (half the machine epsilon): the relative error of one rounded operation
UNIT_ROUNDOFF = float(np.finfo(np.float64).eps) / 2


@dataclass(frozen=True)
class Balanced:
    kept: np.ndarray  # A_bal, key indices ascending
    es: float  # es(A_bal), recomputed directly
    swaps: int  # number of accepted swaps


def balancing(inst: Instance, s: int, pool: np.ndarray, max_swaps: int | None = None) -> Balanced:
    """Run balancing with swap candidates drawn from `pool` (which must contain A*_s).

    A swap is accepted only if es' < es(A)(1 - 1e-12); among equal best swaps the
    lexicographically first (out, in) pair (by key index) is taken.
    """
    kept = top_mass(inst, s)
    pool = np.unique(np.asarray(pool, dtype=np.int64))  # sorted: positions in it order keys by index
    in_kept = np.isin(pool, kept)
    if int(in_kept.sum()) != kept.shape[0]:
        raise ValueError("the balancing pool must contain the top-mass set A*_s")
    limit = max_swaps if max_swaps is not None else np.iinfo(np.int64).max
    w = np.ascontiguousarray(inst.w_of(pool))
    swaps = _swap_descent(w, np.ascontiguousarray(inst.p[pool]), in_kept, REL_TOL, limit)
    kept = pool[in_kept]
    return Balanced(kept=kept, es=es(inst, kept), swaps=swaps)


@numba.njit(cache=True, nogil=True)
def _swap_descent(w, p, in_kept, rel_tol, limit):  # pragma: no cover (compiled)
    """Best-improvement swaps over the pool rows (w_j, p_j); updates `in_kept`, returns the swap count.

    Every (out, in) pair is scored from the running g_A and p(A) in O(d); strict `<` keeps the
    first best pair in (out, in) order, i.e. the lexicographically first by key index.
    """
    m, d = w.shape
    total = 0.0  # sum of ||w_j|| over the pool: the scale of every rounding error below
    for j in range(m):
        acc = 0.0
        for c in range(d):
            acc += w[j, c] * w[j, c]
        total += np.sqrt(acc)
    noise = (m + d + 4) * UNIT_ROUNDOFF * total
    g = np.empty(d)
    swaps = 0
    while swaps < limit:
        kept = np.flatnonzero(in_kept)
        outside = np.flatnonzero(~in_kept)
        if outside.size == 0:
            break
        g[:] = 0.0
        mass = 0.0
        for a in kept:
            g += w[a]
            mass += p[a]
        current = np.sqrt(g @ g) / mass
        p_out_max, p_in_min = 0.0, np.inf
        for a in kept:
            p_out_max = max(p_out_max, p[a])
        for b in outside:
            p_in_min = min(p_in_min, p[b])
        mass_low = mass - p_out_max + p_in_min
        threshold = current * (1.0 - rel_tol) - (noise / mass + noise / mass_low)
        best, best_out, best_in = np.inf, -1, -1
        for a in kept:
            for b in outside:
                acc = 0.0
                for c in range(d):
                    t = g[c] - w[a, c] + w[b, c]
                    acc += t * t
                score = np.sqrt(acc) / (mass - p[a] + p[b])
                if score < best:
                    best, best_out, best_in = score, a, b
        if not best < threshold:
            break
        in_kept[best_out] = False
        in_kept[best_in] = True
        swaps += 1
    return swaps
