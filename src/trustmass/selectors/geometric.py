"""The Frank-Wolfe geometric selector and the EF estimate (paper spec §1.6, App B.3).

Frank-Wolfe minimises f(lam) = 1/2 ||sum_j lam_j v_j - mu||^2 over the simplex on the keys,
starting at the key nearest to mu, adding one vertex (the linear-minimisation oracle's choice)
per step with exact line search.  It stops when the support reaches s, when the FW gap falls
below `gap_tol` (relative to D^2), or after `iter_factor * s` iterations.  A^geo_s is the
support padded with top-mass keys (in mass order) to size s; padding only enlarges the hull.
EF_FW = ef(A^geo_s), the exact projection of mu onto that hull, so EF_FW >= EF(s).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trustmass.operator import Instance, ef, es


@dataclass(frozen=True)
class Geometric:
    kept: np.ndarray  # A^geo_s, key indices ascending
    support: np.ndarray  # FW support in order of entry (before padding)
    es: float  # es(A^geo_s)
    ef_fw: float  # ef(A^geo_s): the Frank-Wolfe estimate of EF(s) (NaN when not asked for)
    iterations: int


def frank_wolfe_support(
    inst: Instance,
    s: int,
    candidates: np.ndarray | None = None,
    gap_tol: float = 1e-12,
    iter_factor: int = 50,
) -> tuple[np.ndarray, int]:
    """Keys entering the Frank-Wolfe iterate (in order), over `candidates` (default: all keys)."""
    keys = np.arange(inst.n_keys) if candidates is None else np.sort(np.asarray(candidates, dtype=np.int64))
    V = inst.v[keys]
    mu = inst.mu
    scale2 = max(float(inst.deviation_norms[keys].max()) ** 2, np.finfo(float).tiny)
    start = int(np.argmin(inst.deviation_norms[keys]))  # first index among ties
    x = V[start].copy()
    support = [start]
    iterations = 0
    for iterations in range(1, iter_factor * s + 1):
        if len(support) >= s:
            break
        grad = x - mu
        dots = V @ grad
        j = int(np.argmin(dots))
        gap = float(grad @ x - dots[j])
        if gap <= gap_tol * scale2:
            break
        step = V[j] - x
        denom = float(step @ step)
        if denom == 0.0:
            break
        gamma = min(max(float((mu - x) @ step) / denom, 0.0), 1.0)
        x = x + gamma * step
        if gamma > 0.0 and j not in support:
            support.append(j)
    return keys[np.array(support, dtype=np.int64)], iterations


def geometric(
    inst: Instance,
    s: int,
    candidates: np.ndarray | None = None,
    gap_tol: float = 1e-12,
    iter_factor: int = 50,
    with_ef: bool = True,
) -> Geometric:
    """A^geo_s and EF_FW; `candidates` restricts the search (e.g. to the pool C_s)."""
    support, iterations = frank_wolfe_support(inst, s, candidates, gap_tol, iter_factor)
    padding = [j for j in inst.mass_order[: s + len(support)] if j not in set(support.tolist())]
    kept = np.sort(np.concatenate((support, np.array(padding[: s - len(support)], dtype=np.int64))))
    ef_fw = ef(inst, kept) if with_ef else float("nan")
    return Geometric(kept=kept, support=support, es=es(inst, kept), ef_fw=ef_fw, iterations=iterations)
