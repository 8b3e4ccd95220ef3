"""The balancing selector (paper spec §1.5): local swaps from top-mass inside the candidate pool.

Start at A = A*_s.  Each round evaluates every swap of one kept key `out` for one pool key `in`
outside A, takes the swap that most decreases es(A) and stops when none does.  es strictly
decreases over a finite set, so it terminates.  For a swap,

    g' = g_A - w_out + w_in,   p' = p(A) - p_out + p_in,   es' = ||g'|| / p'.

Balancing reads mu (the dense output): a decode-time rule or a prefill teacher.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trustmass.core.operator import REL_TOL, Instance, es, top_mass


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
    pool = np.asarray(pool, dtype=np.int64)
    if not np.all(np.isin(kept, pool)):
        raise ValueError("the balancing pool must contain the top-mass set A*_s")
    swaps = 0
    limit = max_swaps if max_swaps is not None else np.iinfo(np.int64).max
    while swaps < limit:
        outside = np.setdiff1d(pool, kept)  # sorted
        if outside.size == 0:
            break
        w_kept, w_out = inst.w_of(kept), inst.w_of(outside)
        g = w_kept.sum(axis=0)
        mass = inst.p[kept].sum()
        current = np.linalg.norm(g) / mass
        # every (out, in) swap at once: (s, m, d) residuals, (s, m) masses
        g_swap = g[None, None, :] - w_kept[:, None, :] + w_out[None, :, :]
        mass_swap = mass - inst.p[kept][:, None] + inst.p[outside][None, :]
        es_swap = np.linalg.norm(g_swap, axis=2) / mass_swap
        best = int(np.argmin(es_swap))  # row-major: lexicographically first (out, in)
        if not es_swap.flat[best] < current * (1.0 - REL_TOL):
            break
        o, i = divmod(best, outside.size)
        kept = np.sort(np.concatenate((np.delete(kept, o), [outside[i]])))
        swaps += 1
    return Balanced(kept=kept, es=es(inst, kept), swaps=swaps)
