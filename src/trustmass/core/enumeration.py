"""Candidate pools and the exact pool optimum ES_pool (paper spec §1.4, §3.1-3.2).

The candidate set C_s is the top-mass set A*_s plus the e(s) keys outside it with the largest
single-key error ||w_j|| = p_j ||v_j - mu||.  ES_pool(s) = min over size-s subsets of C_s of
es(A), found by exhaustive enumeration.

Search (numba): with Gram matrix G = W_C W_C^T of the pool's w-vectors,

    es(A)^2 = ||g_A||^2 / p(A)^2,   ||g_A||^2 = sum_{a,b in A} G_ab.

A depth-first walk over subsets in lexicographic order carries the partial sums, so every leaf
costs O(1) (two loads, three adds, one divide), independent of d.  When e < s the walk runs over
the e *dropped* pool keys R instead (complement trick, far fewer levels):

    ||g_A||^2 = ||g_C||^2 - 2 sum_{j in R} <g_C, w_j> + sum_{a,b in R} G_ab,   p(A) = p(C) - p(R).

The best few subsets by the fast value are then re-evaluated directly from m_A in float64 and
the argmin is taken from those direct values (guards against cancellation in the Gram sums).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numba
import numpy as np

from trustmass.core.config_conflict import ConfigConflict
from trustmass.core.operator import REL_TOL, Instance, es, top_mass
from trustmass.core.subset_cap import subset_cap_problem

#: paper defaults: at most 2·10^5 subsets per instance, at most 24 extra keys (e = 24/12/6/4)
DEFAULT_SUBSET_CAP = 200_000
DEFAULT_MAX_EXTRA = 24


def extras_for_budget(s: int, subset_cap: int = DEFAULT_SUBSET_CAP, max_extra: int = DEFAULT_MAX_EXTRA) -> int:
    """e(s): the largest e <= max_extra with C(s+e, s) <= subset_cap (reproduces 24/12/6/4)."""
    if s < 1:
        raise ValueError(f"budget s must be >= 1, got {s}")
    problem = subset_cap_problem(s, subset_cap)
    if problem:
        raise ConfigConflict(problem, fields=("enumeration.subset_cap",))
    e = 0
    while e < max_extra and math.comb(s + e + 1, s) <= subset_cap:
        e += 1
    return e


@dataclass(frozen=True)
class PoolRule:
    """e(s), the extra keys of the candidate pool C_s at budget s: the configured override where one
    is given, else ``extras_for_budget(s, subset_cap, max_extra)``.  One value, built from the config's
    ``enumeration`` block, that the ceiling, the audit and the balancing rule all read."""

    subset_cap: int = DEFAULT_SUBSET_CAP
    max_extra: int = DEFAULT_MAX_EXTRA
    extra_override: tuple[tuple[int, int], ...] = ()  # (budget, e) pairs; a {budget: e} mapping is accepted

    def __post_init__(self):
        pairs = dict(self.extra_override)  # a mapping or pairs; kept as sorted pairs (hashable, one repr)
        object.__setattr__(self, "extra_override", tuple(sorted((int(s), int(e)) for s, e in pairs.items())))

    @classmethod
    def from_config(cls, cfg: dict) -> PoolRule:
        """From the validated config's keys enumeration/{subset_cap, max_extra, extra_override}."""
        enumeration = cfg["enumeration"]
        return cls(int(enumeration["subset_cap"]), int(enumeration["max_extra"]), enumeration["extra_override"])

    def extra(self, s: int) -> int:
        """e(s) at budget s."""
        override = dict(self.extra_override)
        return override[s] if s in override else extras_for_budget(s, self.subset_cap, self.max_extra)


def budget_settings(cfg: dict) -> dict:
    """The budget and enumeration keys of a validated config as settings fields (the ceiling's and
    the audit's settings share them: ``CeilingSettings.from_config``, ``AuditSettings.from_config``)."""
    return {
        "enumerated": tuple(cfg["budgets"]["enumerated"]),
        "native": tuple(cfg["budgets"]["native"]),
        "pool": PoolRule.from_config(cfg),
    }


def candidate_pool(inst: Instance, s: int, extra: int) -> np.ndarray:
    """C_s, sorted by key index: A*_s plus the `extra` outside keys of largest ||w_j||.

    Ties in ||w_j|| go to the smaller index.  A row with fewer than s + extra keys pools them all.
    """
    n = inst.n_keys
    if n <= s + extra:
        return np.arange(n)
    kept = inst.mass_order[:s]
    # at most s of the first s + extra keys by error are already kept
    head = inst.error_order[: s + extra]
    extras = head[~np.isin(head, kept)][:extra]
    return np.sort(np.concatenate((kept, extras)))


# ---------------------------------------------------------------------------------------------
# the search kernel
# ---------------------------------------------------------------------------------------------


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _insert_best(best_r, best_sets, r, chosen, k):
    """Keep the n_best smallest r (sorted ascending) and their subsets."""
    nb = best_r.shape[0]
    pos = nb - 1
    while pos > 0 and best_r[pos - 1] > r:
        best_r[pos] = best_r[pos - 1]
        for t in range(k):
            best_sets[pos, t] = best_sets[pos - 1, t]
        pos -= 1
    best_r[pos] = r
    for t in range(k):
        best_sets[pos, t] = chosen[t]


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _dfs_min_ratio(G2, lin, q, c0, m0, k, n_best):
    """min over k-subsets R of [c0 + sum_R lin + sum_{a<b in R} G2_ab] / (m0 + sum_R q)^2.

    Returns (best values ascending, their subsets as pool positions, number of subsets visited).
    Subsets are visited in lexicographic order and only a strictly smaller value displaces an
    incumbent, so among exact ties the lexicographically first subset wins.
    """
    n = lin.shape[0]
    best_r = np.full(n_best, np.inf)
    best_sets = np.full((n_best, k), -1, dtype=np.int64)
    chosen = np.empty(k, dtype=np.int64)
    visited = 0
    if k == 1:
        for j in range(n):
            m = m0 + q[j]
            r = (c0 + lin[j]) / (m * m)
            if r < best_r[n_best - 1]:
                chosen[0] = j
                _insert_best(best_r, best_sets, r, chosen, k)
        return best_r, best_sets, n
    # cross[t, l] = lin[l] + sum_{a chosen at depths < t} G2[a, l]
    cross = np.empty((k - 1, n))
    cross[0, :] = lin
    val = np.empty(k - 1)
    mass = np.empty(k - 1)
    val[0] = c0
    mass[0] = m0
    chosen[0] = -1
    thresh = np.inf
    t = 0
    while t >= 0:
        chosen[t] += 1
        j = chosen[t]
        if j > n - (k - t):
            t -= 1
            continue
        v = val[t] + cross[t, j]
        m = mass[t] + q[j]
        if t == k - 2:  # the last element l > j is a leaf loop
            for l in range(j + 1, n):
                mm = m + q[l]
                r = (v + cross[t, l] + G2[j, l]) / (mm * mm)
                if r < thresh:
                    chosen[k - 1] = l
                    _insert_best(best_r, best_sets, r, chosen, k)
                    thresh = best_r[n_best - 1]
            visited += n - j - 1
        else:
            t += 1
            val[t] = v
            mass[t] = m
            for l in range(j + 1, n):
                cross[t, l] = cross[t - 1, l] + G2[j, l]
            chosen[t] = j
    return best_r, best_sets, visited


@dataclass(frozen=True)
class PoolOptimum:
    es_pool: float  # min es over size-s subsets of the pool, recomputed directly
    kept: np.ndarray  # argmin kept set (key indices, ascending)
    pool: np.ndarray  # the candidate set C_s (key indices, ascending)
    n_subsets: int  # subsets enumerated
    complement: bool  # whether the dropped keys were enumerated
    es_fast: float  # the kernel's Gram-sum value at the argmin

    @property
    def fast_relative_error(self) -> float:
        """|kernel value - direct value| / direct at the argmin: the cancellation check."""
        return abs(self.es_fast - self.es_pool) / max(self.es_pool, np.finfo(float).tiny)


def search_pool(W: np.ndarray, pC: np.ndarray, s: int, n_best: int, use_complement: bool | None):
    """Run the kernel on pool vectors W (n x d) and masses pC; returns kept positions and stats."""
    n = W.shape[0]
    G = W @ W.T
    extra = n - s
    complement = (extra < s) if use_complement is None else use_complement
    if complement:
        row = G.sum(axis=1)  # <g_C, w_j>
        lin = np.diag(G) - 2.0 * row
        best_r, best_sets, visited = _dfs_min_ratio(2.0 * G, lin, -pC, float(row.sum()), float(pC.sum()), extra, n_best)
    else:
        best_r, best_sets, visited = _dfs_min_ratio(2.0 * G, np.diag(G).copy(), pC, 0.0, 0.0, s, n_best)
    sets, fast = [], []
    for r, b in zip(best_r, best_sets):
        if not np.isfinite(r):
            continue
        fast.append(np.sqrt(max(r, 0.0)))
        if complement:
            mask = np.ones(n, dtype=bool)
            mask[b] = False
            sets.append(np.flatnonzero(mask))
        else:
            sets.append(np.sort(b))
    return np.array(sets), np.array(fast), int(visited), complement


def pool_optimum(
    inst: Instance,
    s: int,
    extra: int,
    n_verify: int = 2,
    use_complement: bool | None = None,
) -> PoolOptimum:
    """ES_pool(s) over the candidate set with `extra` keys beyond A*_s.

    The `n_verify` best subsets by the fast Gram value (the argmin and runner-up by default) are
    re-evaluated by direct m_A computation; the smallest direct value wins, ties (relative
    1e-12) to the lexicographically smaller kept set.
    """
    pool = candidate_pool(inst, s, extra)
    if pool.shape[0] <= s:  # fewer keys than the budget: everything is kept
        value = es(inst, pool)
        return PoolOptimum(value, pool, pool, 1, False, value)
    W = inst.w_of(pool)
    sets, fast, visited, complement = search_pool(W, inst.p[pool], s, n_verify, use_complement)
    direct = np.array([es(inst, pool[c]) for c in sets])
    best = 0
    for i in range(1, len(sets)):
        tie = abs(direct[i] - direct[best]) <= REL_TOL * max(direct[best], direct[i])
        if direct[i] < direct[best] and not tie:
            best = i
        elif tie and tuple(pool[sets[i]]) < tuple(pool[sets[best]]):
            best = i
    return PoolOptimum(
        es_pool=float(direct[best]),
        kept=pool[sets[best]],
        pool=pool,
        n_subsets=visited,
        complement=complement,
        es_fast=float(fast[best]),
    )


# ---------------------------------------------------------------------------------------------
# references: plain numpy over index arrays, and brute force over all keys (tests, benchmarks)
# ---------------------------------------------------------------------------------------------


def subset_errors_numpy(W: np.ndarray, p: np.ndarray, s: int, chunk: int = 65_536):
    """es of every size-s subset of the rows of W, by vectorised numpy (the plain reference).

    Yields (index array (m x s), es (m,)) chunks in lexicographic order.
    """
    combos = itertools.combinations(range(W.shape[0]), s)
    while True:
        block = np.array(list(itertools.islice(combos, chunk)), dtype=np.int64)
        if block.size == 0:
            return
        g = W[block].sum(axis=1)
        yield block, np.linalg.norm(g, axis=1) / p[block].sum(axis=1)


def pool_optimum_numpy(inst: Instance, s: int, extra: int) -> tuple[float, np.ndarray, int]:
    """ES_pool by plain numpy enumeration: (es, kept key indices, subsets)."""
    pool = candidate_pool(inst, s, extra)
    if pool.shape[0] <= s:
        return es(inst, pool), pool, 1
    best, best_set, count = np.inf, None, 0
    for block, vals in subset_errors_numpy(inst.w_of(pool), inst.p[pool], s):
        i = int(np.argmin(vals))
        count += len(vals)
        if vals[i] < best:
            best, best_set = float(vals[i]), pool[block[i]]
    return best, best_set, count


def exact_optimum_bruteforce(inst: Instance, s: int) -> tuple[float, np.ndarray]:
    """ES(s) over *all* keys by brute force (small N only): (es, lexicographically first argmin)."""
    if inst.n_keys <= s:
        keys = np.arange(inst.n_keys)
        return es(inst, keys), keys
    blocks, vals = zip(*subset_errors_numpy(inst.w, inst.p, s))
    blocks, vals = np.concatenate(blocks), np.concatenate(vals)
    near = np.flatnonzero(vals <= vals.min() * (1 + 1e-9) + 1e-300)  # lexicographic order
    direct = np.array([es(inst, blocks[i]) for i in near])
    first = int(np.flatnonzero(direct <= direct.min() * (1 + REL_TOL) + 1e-300)[0])
    return float(direct[first]), blocks[near[first]]


def top_mass_error(inst: Instance, s: int) -> float:
    """es(A*_s)."""
    return es(inst, top_mass(inst, s))
