"""The forced-weight operator on one attention row (paper spec §1.1-1.3).

An *instance* is a strictly positive probability row ``p`` over ``N`` keys with value vectors
``v`` (N x d).  Eviction keeps a set ``A`` and renormalises, returning

    m_A = sum_{j in A} p_j v_j / p(A).

Everything here is float64 numpy, pure functions of (p, v, A); no I/O.  Kept sets are index
arrays (any order).  Key identities (Lemma 2.1): with w_j = p_j (v_j - mu) and g_A = sum_A w_j,

    es(A) = ||mu - m_A|| = ||g_A|| / p(A) = pbar(A) * ||m_{A^c} - m_A||.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

import numba
import numpy as np

from trustmass.core.simplex import project_onto_hull

#: relative tolerance for "exact" comparisons in float64 (spec §1.2)
REL_TOL = 1e-12


@dataclass(frozen=True)
class Instance:
    """One attention row: masses ``p`` (N,), values ``v`` (N, d), derived quantities cached."""

    p: np.ndarray
    v: np.ndarray

    @classmethod
    def from_arrays(cls, p, v, renormalize: bool = False) -> "Instance":
        p = np.asarray(p, dtype=np.float64).reshape(-1)
        v = np.asarray(v, dtype=np.float64)
        if v.ndim == 1:
            v = v[:, None]
        if v.ndim != 2 or v.shape[0] != p.shape[0]:
            raise ValueError(f"values must be (N, d) with N = len(p) = {p.shape[0]}; got {v.shape}")
        if p.shape[0] == 0:
            raise ValueError("an instance needs at least one key")
        if not np.all(np.isfinite(p)) or not np.all(np.isfinite(v)):
            raise ValueError("p and v must be finite")
        if np.any(p <= 0):
            raise ValueError("p must be strictly positive (spec §1.1); drop masked keys first")
        total = p.sum()
        if renormalize:
            p = p / total
        elif abs(total - 1.0) > 1e-6:
            raise ValueError(f"p must sum to 1 (got {total!r}); pass renormalize=True to rescale")
        return cls(p=p, v=v)

    @property
    def n_keys(self) -> int:
        return self.p.shape[0]

    @cached_property
    def mu(self) -> np.ndarray:
        """The dense output sum_j p_j v_j."""
        return self.p @ self.v

    @cached_property
    def w(self) -> np.ndarray:
        """w_j = p_j (v_j - mu) for every key (N x d); rows sum to zero.  Hot paths use w_of."""
        return self.w_of(np.arange(self.n_keys))

    def w_of(self, keys: np.ndarray) -> np.ndarray:
        """w_j for the given keys only (pools are a few dozen keys of thousands)."""
        return self.p[keys, None] * (self.v[keys] - self.mu)

    @cached_property
    def deviation_norms(self) -> np.ndarray:
        """||v_j - mu|| for every key, in one pass without an N x d temporary."""
        return _row_distances(self.v, self.mu)

    @cached_property
    def single_key_errors(self) -> np.ndarray:
        """||w_j|| = p_j ||v_j - mu||, the score that ranks candidate keys."""
        return self.p * self.deviation_norms

    @cached_property
    def mass_order(self) -> np.ndarray:
        """All keys by descending mass, ties to the smaller index; A*_s is its first s entries."""
        return descending_order(self.p)

    @cached_property
    def error_order(self) -> np.ndarray:
        """All keys by descending single-key error ||w_j||, ties to the smaller index."""
        return descending_order(self.single_key_errors)


def captured_instance(p: np.ndarray, values: np.ndarray) -> tuple[Instance, np.ndarray, int, float]:
    """The instance of a captured attention row over the positions it could see (float32 ``p`` with
    zeros outside a sliding window, ``values`` one row per position): (instance over the positive-mass
    keys, renormalised in float64; their positions; how many visible keys had zero mass; raw sum - 1).
    Every stage that scores a captured row builds it this way."""
    positive = np.flatnonzero(p > 0)
    mass = p[positive].astype(np.float64)
    raw = float(mass.sum())
    inst = Instance.from_arrays(mass / raw, values[positive].astype(np.float64))
    return inst, positive, int(p.shape[0] - positive.shape[0]), raw - 1.0


def descending_order(score: np.ndarray) -> np.ndarray:
    """Indices by descending score, ties by ascending index (the spec's tie rule everywhere)."""
    return np.lexsort((np.arange(score.shape[0]), -np.asarray(score)))


@numba.njit(cache=True, nogil=True)
def _row_distances(v, mu):
    n, d = v.shape
    out = np.empty(n)
    for i in range(n):
        acc = 0.0
        for k in range(d):
            t = v[i, k] - mu[k]
            acc += t * t
        out[i] = np.sqrt(acc)
    return out


# ---------------------------------------------------------------------------------------------
# kept-set quantities
# ---------------------------------------------------------------------------------------------


def _idx(A) -> np.ndarray:
    a = np.asarray(A, dtype=np.int64).reshape(-1)
    if a.size == 0:
        raise ValueError("a kept set must be nonempty")
    return a


def kept_mass(inst: Instance, A) -> float:
    """p(A)."""
    return float(inst.p[_idx(A)].sum())


def dropped_mass(inst: Instance, A) -> float:
    """pbar(A) = 1 - p(A), computed as the sum of the dropped masses to avoid cancellation."""
    mask = np.ones(inst.n_keys, dtype=bool)
    mask[_idx(A)] = False
    return float(inst.p[mask].sum())


def renormalized_mean(inst: Instance, A) -> np.ndarray:
    """m_A = sum_{j in A} p_j v_j / p(A)."""
    a = _idx(A)
    pa = inst.p[a]
    return (pa @ inst.v[a]) / pa.sum()


def residual(inst: Instance, A) -> np.ndarray:
    """g_A = sum_{j in A} p_j (v_j - mu)."""
    return inst.w_of(_idx(A)).sum(axis=0)


def es(inst: Instance, A) -> float:
    """Forced-weight error ||mu - m_A|| (computed directly from m_A)."""
    return float(np.linalg.norm(inst.mu - renormalized_mean(inst, A)))


def drop_distortion(inst: Instance, c) -> float:
    """d(c) = (a / (1 - a))^2 ||mu_c - mu||^2: 002's value-consequence distortion of dropping the
    keys `c` and keeping the rest (a = p(c), mu_c = m_c the attention-weighted centroid of c).

    It equals es([N] minus c)^2 (related-methods §0): a (mu_c - mu) = g_c = -g_{c^c} and 1 - a = p(c^c),
    so d(c) = ||g_c||^2 / p(c^c)^2 = (||g_{c^c}|| / p(c^c))^2.  Computed in that form, g summed over
    whichever side holds less mass and p(c^c) summed directly: the centroid form loses digits to
    1 - a and to mu_c - mu, both tending to 0 as c takes nearly all the mass (~1e-10 D measured).
    """
    drop = np.zeros(inst.n_keys, dtype=bool)
    drop[_idx(c)] = True
    if drop.all():
        raise ValueError("dropping every key leaves nothing to renormalise; keep at least one key")
    kept = float(inst.p[~drop].sum())
    lighter = drop if float(inst.p[drop].sum()) <= kept else ~drop
    g = inst.w_of(np.flatnonzero(lighter)).sum(axis=0)
    return float(g @ g) / kept**2


def ef(inst: Instance, A, tol: float = 1e-12) -> float:
    """Free-weight error dist(mu, conv{v_j : j in A}): exact simplex-QP projection."""
    a = _idx(A)
    return project_onto_hull(inst.v[a], inst.mu, tol=tol).distance


# ---------------------------------------------------------------------------------------------
# row statistics and bounds
# ---------------------------------------------------------------------------------------------


def radius(inst: Instance) -> float:
    """D = max_j ||v_j - mu||."""
    return float(inst.deviation_norms.max())


def sigma(inst: Instance) -> float:
    """sigma = sqrt(sum_j p_j ||v_j - mu||^2)."""
    return float(np.sqrt(inst.p @ inst.deviation_norms**2))


def top_k(score: np.ndarray, k: int, exclude: np.ndarray | None = None) -> np.ndarray:
    """The k largest scores, ordered by descending score then ascending index (the tie rule).

    O(N): a partition finds the k-th value; only keys at or above it are sorted.  Keys flagged in
    the boolean mask `exclude` are never chosen.
    """
    score = np.asarray(score, dtype=np.float64)
    cand = np.arange(score.shape[0]) if exclude is None else np.flatnonzero(~exclude)
    k = min(int(k), cand.shape[0])
    if k <= 0:
        return np.empty(0, dtype=np.int64)
    sc = score[cand]
    if k < cand.shape[0]:
        kth = np.partition(sc, sc.shape[0] - k)[sc.shape[0] - k]
        above = sc >= kth
        cand, sc = cand[above], sc[above]
    return cand[np.lexsort((cand, -sc))[:k]]


def top_mass(inst: Instance, s: int) -> np.ndarray:
    """A*_s, sorted by index (descending mass, ties to the smaller index).  s >= N keeps all."""
    return np.sort(inst.mass_order[: int(s)])


def least_dropped_mass(inst: Instance, s: int) -> float:
    """m̄_s = pbar(A*_s)."""
    return dropped_mass(inst, top_mass(inst, s))


def single_key_error(inst: Instance) -> np.ndarray:
    """||w_j|| = p_j ||v_j - mu|| for every key."""
    return inst.single_key_errors


def phi(inst: Instance, s: int) -> float:
    """Phi = ||g_{A*_s}||, the one-pass O(Nd) statistic."""
    return float(np.linalg.norm(residual(inst, top_mass(inst, s))))


def mass_cap_bound(inst: Instance, s: int) -> float:
    """2 D m̄_s >= es(A*_s) (Lemma 2.1.6): what any selector can gain over top-mass."""
    return 2.0 * radius(inst) * least_dropped_mass(inst, s)


def variance_bound(inst: Instance, A) -> float:
    """sqrt(pbar(A)/p(A)) * sigma >= es(A) (the variance refinement)."""
    return float(np.sqrt(dropped_mass(inst, A) / kept_mass(inst, A)) * sigma(inst))


def is_zero(x: float, scale: float) -> bool:
    """x == 0 up to relative tolerance REL_TOL of the instance scale (e.g. D)."""
    return abs(x) <= REL_TOL * max(abs(scale), np.finfo(float).tiny)


def ratio_kappa(es_top: float, es_opt: float, scale: float) -> float:
    """kappa = es(A*)/ES with the degenerate rules of spec §1.2."""
    if is_zero(es_top, scale):
        return 1.0
    if is_zero(es_opt, scale):
        return float("inf")
    return es_top / es_opt


def closable_share(es_top: float, es_opt: float, scale: float) -> float:
    """c = 1 - ES/es(A*) = 1 - 1/kappa, with c = 0 when es(A*) = 0 and c = 1 when ES = 0."""
    if is_zero(es_top, scale):
        return 0.0
    if is_zero(es_opt, scale):
        return 1.0
    return 1.0 - es_opt / es_top


def ratio_penalty(es_opt: float, ef_opt: float, scale: float) -> float:
    """pi = ES/EF; +inf when EF = 0."""
    if is_zero(ef_opt, scale):
        return float("inf")
    return es_opt / ef_opt


# ---------------------------------------------------------------------------------------------
# exact rational arithmetic (for zero tests on integer instances, e.g. the Partition reduction)
# ---------------------------------------------------------------------------------------------


def es_squared_rational(p, v, A) -> Fraction:
    """es(A)^2 exactly, for rational p and v (d given by v's rows).  Slow; tests and certificates."""
    p = [Fraction(x) for x in p]
    v = [[Fraction(c) for c in np.atleast_1d(row)] for row in v]
    d = len(v[0])
    a = [int(j) for j in A]
    mu = [sum(p[j] * v[j][k] for j in range(len(p))) for k in range(d)]
    pa = sum(p[j] for j in a)
    m = [sum(p[j] * v[j][k] for j in a) / pa for k in range(d)]
    return sum((mu[k] - m[k]) ** 2 for k in range(d))
