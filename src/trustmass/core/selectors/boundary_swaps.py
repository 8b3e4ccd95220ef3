"""Boundary swaps between two kept sets and the random-swap control (related-methods A.2).

For selectors X and Y at the same budget on one row, the kept sets share most keys; the difference
is the disagreement ``D_out = K_X \\ K_Y`` (kept by X only) and ``D_in = K_Y \\ K_X`` (kept by Y
only), of equal size when both keep ``s`` keys.  A *boundary swap* of size ``m`` removes the ``m``
members of ``D_out`` that score lowest and adds the ``m`` members of ``D_in`` that score highest
(rank to rank, by a per-key score the caller names: X's own, Y's, or the mass ``p``), so ``m = 0``
is ``K_X`` and ``m = |D_in|`` is ``K_Y``.  The *random-swap control* of the same size exchanges ``m``
uniformly drawn kept keys for ``m`` drawn evicted ones, either over all of ``K_X x complement(K_X)``
(*unrestricted*) or inside ``D_out x D_in`` (*restricted*).  The gap recovered by a swap is

    (err(K_X) - err(K_X after the swap)) / (err(K_X) - err(K_Y)),

with ``err`` = es here (the model-level outcomes, held-out CE and next-token KL, swap the same sets
through the restricted forward).  Balancing is the es-driven case: each of its accepted swaps is a
one-for-one exchange at the boundary (:mod:`trustmass.core.selectors.balancing`).

Ties in a score are broken by key index (lower first), so every swap is deterministic given the score.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from trustmass.core.operator import REL_TOL, Instance, es

__all__ = [
    "SWAP_KINDS",
    "SwapCurve",
    "boundary_swap",
    "disagreement",
    "fraction_sizes",
    "gap_recovered",
    "random_swap",
    "swap_at_fraction",
    "swap_curve",
]

BOUNDARY, RANDOM, RANDOM_RESTRICTED = "boundary", "random", "random_restricted"
#: what a swap at a fraction of the disagreement exchanges (see :func:`swap_at_fraction`)
SWAP_KINDS = (BOUNDARY, RANDOM, RANDOM_RESTRICTED)


def _split(kept_x: np.ndarray, kept_y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(K_X minus K_Y, K_Y minus K_X), ascending (kept sets hold at most s keys: set arithmetic is
    faster than numpy's set routines on arrays this short)."""
    x, y = set(np.asarray(kept_x).tolist()), set(np.asarray(kept_y).tolist())
    return np.array(sorted(x - y), dtype=np.int64), np.array(sorted(y - x), dtype=np.int64)


def disagreement(kept_x: np.ndarray, kept_y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(D_out, D_in)``: keys kept by X only and by Y only, each ascending."""
    if np.size(kept_x) != np.size(kept_y):
        raise ValueError(
            f"the kept sets differ in size ({np.size(kept_x)} vs {np.size(kept_y)}): compare selectors at one budget"
        )
    return _split(kept_x, kept_y)


def fraction_sizes(n_out: int, n_in: int, fraction: float) -> tuple[int, int]:
    """How many keys of ``D_out`` leave and of ``D_in`` enter in a swap of `fraction` of the
    disagreement: ``round(fraction * |D|)`` each, half up (rows differ in |D|, so swaps across rows
    are sized by fraction; on one row with ``|D_out| = |D_in|`` this is ``m`` rank-to-rank pairs)."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"swap fraction {fraction} outside [0, 1]")
    return int(np.floor(n_out * fraction + 0.5)), int(np.floor(n_in * fraction + 0.5))


def swap_at_fraction(
    kept_x: np.ndarray,
    kept_y: np.ndarray,
    fraction: float,
    score: np.ndarray,
    kind: str = BOUNDARY,
    rng: np.random.Generator | None = None,
    eligible: np.ndarray | None = None,
) -> np.ndarray:
    """``K_X`` after a swap of `fraction` of its disagreement with ``K_Y`` (the sets may differ in
    size, e.g. where a rule keeps keys without mass): ``boundary`` moves the lowest-`score` keys of
    ``D_out`` out and the highest of ``D_in`` in (ties by key index); ``random_restricted`` draws both
    inside the disagreement, ``random`` draws the leaving keys from ``K_X`` and the entering ones from
    `eligible` (default: every key of `score`) outside ``K_X``.  Fraction 0 is ``K_X``; a boundary or
    restricted swap at fraction 1 is ``K_Y``."""
    kept_x = np.asarray(kept_x, dtype=np.int64)
    d_out, d_in = _split(kept_x, kept_y)
    m_out, m_in = fraction_sizes(d_out.size, d_in.size, fraction)
    if kind == BOUNDARY:
        leave = _ranked(d_out, score, descending=False)[:m_out]
        enter = _ranked(d_in, score, descending=True)[:m_in]
    elif kind in (RANDOM, RANDOM_RESTRICTED):
        if rng is None:
            raise ValueError("a random swap needs rng")
        if kind == RANDOM:
            allowed = np.zeros(np.shape(score)[0], dtype=bool)
            allowed[slice(None) if eligible is None else np.asarray(eligible, dtype=np.int64)] = True
            allowed[kept_x] = False
            d_out, d_in = np.sort(kept_x), np.flatnonzero(allowed)
        leave = rng.choice(d_out, size=min(m_out, d_out.size), replace=False)
        enter = rng.choice(d_in, size=min(m_in, d_in.size), replace=False)
    else:
        raise ValueError(f"swap kind {kind!r}; fix: one of {SWAP_KINDS}")
    return np.array(sorted((set(kept_x.tolist()) - set(leave.tolist())) | set(enter.tolist())), dtype=np.int64)


def _ranked(keys: np.ndarray, score: np.ndarray, descending: bool) -> np.ndarray:
    """``keys`` by score (descending or ascending), ties by key index."""
    s = np.asarray(score, dtype=np.float64)[keys]
    order = np.lexsort((keys, -s if descending else s))
    return keys[order]


def boundary_swap(kept_x: np.ndarray, kept_y: np.ndarray, m: int, score: np.ndarray) -> np.ndarray:
    """``K_X`` after its ``m`` lowest-scoring keys of ``D_out`` make way for the ``m`` highest of ``D_in``."""
    d_out, d_in = disagreement(kept_x, kept_y)
    if not 0 <= m <= d_in.size:
        raise ValueError(f"swap size m = {m} outside 0..{d_in.size} (the disagreement's size)")
    leave = _ranked(d_out, score, descending=False)[:m]
    enter = _ranked(d_in, score, descending=True)[:m]
    return np.sort(np.concatenate([np.setdiff1d(kept_x, leave), enter]))


def random_swap(
    kept_x: np.ndarray, kept_y: np.ndarray, m: int, n_keys: int, rng: np.random.Generator, restricted: bool
) -> np.ndarray:
    """``K_X`` after ``m`` uniformly drawn kept keys are exchanged for ``m`` drawn evicted ones, inside
    the disagreement (``restricted``) or over every kept / evicted key of the row."""
    kept_x = np.asarray(kept_x, dtype=np.int64)
    if restricted:
        leave_from, enter_from = disagreement(kept_x, kept_y)
    else:
        leave_from, enter_from = kept_x, np.setdiff1d(np.arange(n_keys), kept_x)
    if not 0 <= m <= min(leave_from.size, enter_from.size):
        raise ValueError(f"swap size m = {m} outside 0..{min(leave_from.size, enter_from.size)}")
    leave = rng.choice(leave_from, size=m, replace=False)
    enter = rng.choice(enter_from, size=m, replace=False)
    return np.sort(np.concatenate([np.setdiff1d(kept_x, leave), enter]))


def gap_recovered(err_x: float, err_swapped: float, err_y: float) -> float | None:
    """The share of X's gap to Y a swap closes; None when X and Y err alike (no gap to close)."""
    gap = err_x - err_y
    if abs(gap) <= REL_TOL * max(abs(err_x), abs(err_y), 1e-300):
        return None
    return (err_x - err_swapped) / gap


@dataclass(frozen=True)
class SwapCurve:
    """es after boundary and random swaps of each size ``m = 0..|D_in|`` on one row."""

    sizes: np.ndarray  # m
    es_x: float
    es_y: float
    es_boundary: np.ndarray  # [m]
    es_random: np.ndarray  # [m], mean over seeds, unrestricted
    es_random_restricted: np.ndarray  # [m], mean over seeds, inside the disagreement

    def recovered(self, which: str = "boundary") -> list[float | None]:
        """Gap recovered at each ``m`` by ``boundary``, ``random`` or ``random_restricted`` swaps."""
        values = {
            "boundary": self.es_boundary,
            "random": self.es_random,
            "random_restricted": self.es_random_restricted,
        }[which]
        return [gap_recovered(self.es_x, float(v), self.es_y) for v in values]

    @property
    def swap_improves(self) -> bool:
        """Does the full boundary swap (X's set turned into Y's) lower es?  The boundary's sign."""
        return self.es_y < self.es_x * (1.0 - REL_TOL)


def swap_curve(
    inst: Instance,
    kept_x: np.ndarray,
    kept_y: np.ndarray,
    score: np.ndarray,
    seeds: Sequence[int],
    sizes: Sequence[int] | None = None,
) -> SwapCurve:
    """Boundary swaps ranked by ``score`` and the two random controls (one draw per seed, averaged)."""
    d_out, d_in = disagreement(kept_x, kept_y)
    ms = np.arange(d_in.size + 1) if sizes is None else np.asarray(sorted(sizes), dtype=np.int64)
    n = inst.n_keys
    boundary = np.array([es(inst, boundary_swap(kept_x, kept_y, int(m), score)) for m in ms])
    rand = np.zeros((len(seeds), ms.size))
    restricted = np.zeros((len(seeds), ms.size))
    for k, seed in enumerate(seeds):
        for j, m in enumerate(ms):
            rng = np.random.default_rng([int(seed), int(m)])
            rand[k, j] = es(inst, random_swap(kept_x, kept_y, int(m), n, rng, restricted=False))
            restricted[k, j] = es(inst, random_swap(kept_x, kept_y, int(m), n, rng, restricted=True))
    return SwapCurve(ms, es(inst, kept_x), es(inst, kept_y), boundary, rand.mean(axis=0), restricted.mean(axis=0))
