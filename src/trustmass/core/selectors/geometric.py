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

import numba
import numpy as np

from trustmass.core.operator import Instance, ef, es


@dataclass(frozen=True)
class Geometric:
    kept: np.ndarray  # A^geo_s, key indices ascending
    support: np.ndarray  # FW support in order of entry (before padding)
    es: float  # es(A^geo_s)
    ef_fw: float  # ef(A^geo_s): the Frank-Wolfe estimate of EF(s) (NaN when not asked for)
    iterations: int


@dataclass(frozen=True)
class FrankWolfeTrace:
    """One Frank-Wolfe run: the order keys entered the support and its size at each iteration.

    A run for a smaller budget s is a prefix of the run for a larger one (same start, same steps;
    it only stops earlier), so one trace at the largest budget serves every budget.
    """

    order: np.ndarray  # key indices in order of entry
    size_at_start: np.ndarray  # support size at the start of iteration t = 1, 2, ... (index t-1)
    gap_stop: int | None  # iteration whose FW gap fell below tolerance (the run stops there)

    def support(self, s: int, iter_factor: int = 50) -> tuple[np.ndarray, int]:
        """The support a run with budget s ends with, and the iteration it stops at."""
        reach = np.flatnonzero(self.size_at_start >= s)
        stops = [iter_factor * s + 1]
        if reach.size:
            stops.append(int(reach[0]) + 1)
        if self.gap_stop is not None:
            stops.append(self.gap_stop)
        stop = min(stops)
        if stop - 1 >= self.size_at_start.shape[0]:
            raise ValueError(f"trace too short for s={s}: trace it with a budget >= {s}")
        return self.order[: int(self.size_at_start[stop - 1])], stop


def frank_wolfe_trace(
    inst: Instance,
    s_max: int,
    candidates: np.ndarray | None = None,
    gap_tol: float = 1e-12,
    iter_factor: int = 50,
) -> FrankWolfeTrace:
    """Run Frank-Wolfe over `candidates` (default: all keys) as for budget s_max, recording the path."""
    keys = np.arange(inst.n_keys) if candidates is None else np.sort(np.asarray(candidates, dtype=np.int64))
    V = np.ascontiguousarray(inst.v[keys], dtype=np.float64)
    mu = np.ascontiguousarray(inst.mu, dtype=np.float64)
    scale2 = max(float(inst.deviation_norms[keys].max()) ** 2, np.finfo(float).tiny)
    start = int(np.argmin(inst.deviation_norms[keys]))  # first index among ties
    support, sizes, gap_stop = _frank_wolfe_loop(V, mu, start, int(s_max), int(iter_factor), float(gap_tol), scale2)
    return FrankWolfeTrace(order=keys[support], size_at_start=sizes, gap_stop=None if gap_stop < 0 else int(gap_stop))


@numba.njit(cache=True, nogil=True)
def _frank_wolfe_loop(V, mu, start, s_max, iter_factor, gap_tol, scale2):  # pragma: no cover (compiled)
    """The iterations (support in order of entry, support size per iteration, gap stop or -1).

    The same array operations as a numpy loop (products through BLAS, first index among ties), so
    the path is bit-identical to one; compiled because the pool-restricted runs are thousands of
    iterations on a few dozen keys, where the interpreter's per-step cost dominates.
    """
    x = V[start].copy()
    support = np.empty(s_max + 1, dtype=np.int64)
    in_support = np.zeros(V.shape[0], dtype=np.bool_)
    support[0] = start
    in_support[start] = True
    n_support = 1
    sizes = np.empty(iter_factor * s_max + 2, dtype=np.int64)
    n_sizes = 0
    gap_stop = -1
    for t in range(1, iter_factor * s_max + 2):
        sizes[n_sizes] = n_support
        n_sizes += 1
        if n_support >= s_max or t > iter_factor * s_max:
            break
        grad = x - mu
        dots = V @ grad
        j = np.argmin(dots)
        gap = grad @ x - dots[j]
        step = V[j] - x
        denom = step @ step
        if gap <= gap_tol * scale2 or denom == 0.0:
            gap_stop = t
            break
        gamma = min(max(((mu - x) @ step) / denom, 0.0), 1.0)
        x = x + gamma * step
        if gamma > 0.0 and not in_support[j]:
            support[n_support] = j
            n_support += 1
            in_support[j] = True
    return support[:n_support], sizes[:n_sizes], gap_stop


def frank_wolfe_support(
    inst: Instance,
    s: int,
    candidates: np.ndarray | None = None,
    gap_tol: float = 1e-12,
    iter_factor: int = 50,
) -> tuple[np.ndarray, int]:
    """Keys entering the Frank-Wolfe iterate (in order) for budget s, and the stopping iteration."""
    return frank_wolfe_trace(inst, s, candidates, gap_tol, iter_factor).support(s, iter_factor)


def geometric(
    inst: Instance,
    s: int,
    candidates: np.ndarray | None = None,
    gap_tol: float = 1e-12,
    iter_factor: int = 50,
    with_ef: bool = True,
    trace: FrankWolfeTrace | None = None,
) -> Geometric:
    """A^geo_s and EF_FW; `candidates` restricts the search (e.g. to the pool C_s).

    Pass a `trace` (of the same candidates, at a budget >= s) to share one run across budgets.
    """
    if trace is None:
        trace = frank_wolfe_trace(inst, s, candidates, gap_tol, iter_factor)
    support, iterations = trace.support(s, iter_factor)
    chosen = set(support.tolist())
    padding = [j for j in inst.mass_order[: s + len(support)] if j not in chosen]
    kept = np.sort(np.concatenate((support, np.array(padding[: s - len(support)], dtype=np.int64))))
    ef_fw = ef(inst, kept) if with_ef else float("nan")
    return Geometric(kept=kept, support=support, es=es(inst, kept), ef_fw=ef_fw, iterations=iterations)
