"""Access-law distances (related-methods A.4, Stage I): the math, on numpy arrays, no I/O.

An *access law* is a probability vector over the keys of one (layer, query head): which keys a query
reads.  The prefill gives several estimates of the law the first decode step will follow (``p*``):

* ``p_T``, the last prefill row;
* the tail mean ``pbar_tail,K = (1/K) sum_{t >= T-K} A[t, :]``, the mean of the last K rows;
* the full prefill mixture ``pbar_all = (1/T) sum_t A[t, :] = C / T``, where ``C_i = sum_{t >= i} A[t, i]``
  is H2O's cumulative attention (every row sums to one, so ``sum_i C_i = T``: the normalised C *is*
  the full mixture);
* the count-debiased law ``C_i / (T - i)`` normalised (0-indexed ``i``: ``T - i`` causal rows see key
  ``i``), which divides out the exposure that makes early keys collect mass from more rows.

Distances are total variation, ``TV(p, q) = 1/2 sum_i |p_i - q_i|``, on the common domain (the
shorter vector zero-extended).  TV is a metric, so Prop. 3's triangle
``TV(p*, pbar_tail,K) <= TV(p*, p_T) + TV(p_T, pbar_tail,K)`` holds for any laws; its second term
needs the prefill alone.

Head-sum dilution (App. G): with ``m_h`` the mass query head ``h``'s last rows put on a planted target,
the participation ratio ``r_eff = (sum_h m_h)^2 / sum_h m_h^2`` counts the heads that carry it
(1: one head, H: all H heads equally).
"""

from __future__ import annotations

import numpy as np

__all__ = ["count_debiased", "mean_position", "normalised", "participation_ratio", "total_variation"]


def total_variation(p: np.ndarray, q: np.ndarray) -> np.ndarray | float:
    """``1/2 sum_i |p_i - q_i|`` over the last axis; the shorter last axis is zero-extended."""
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    n = max(p.shape[-1], q.shape[-1])
    pad = lambda x: np.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, n - x.shape[-1])])  # noqa: E731
    tv = 0.5 * np.abs(pad(p) - pad(q)).sum(axis=-1)
    return float(tv) if np.ndim(tv) == 0 else tv


def normalised(x: np.ndarray) -> np.ndarray:
    """``x / sum(x)`` over the last axis (a row that sums to 0 stays 0)."""
    x = np.asarray(x, dtype=np.float64)
    total = x.sum(axis=-1, keepdims=True)
    return np.divide(x, total, out=np.zeros_like(x), where=total > 0)


def count_debiased(column_mass: np.ndarray) -> np.ndarray:
    """The count-debiased law ``C_i / (T - i)``, normalised, from cumulative attention ``C`` (last axis: keys)."""
    c = np.asarray(column_mass, dtype=np.float64)
    n = c.shape[-1]
    return normalised(c / (n - np.arange(n)))


def mean_position(p: np.ndarray) -> np.ndarray | float:
    """The law's mean key position relative to the last, ``sum_i i p_i / (T - 1)`` in [0, 1] (last axis)."""
    p = np.asarray(p, dtype=np.float64)
    n = p.shape[-1]
    out = (p * np.arange(n)).sum(axis=-1) / max(n - 1, 1)
    return float(out) if np.ndim(out) == 0 else out


def participation_ratio(m: np.ndarray) -> float:
    """``(sum m)^2 / sum m^2`` of non-negative per-head masses: in [1, len(m)]; NaN when every m is 0."""
    m = np.asarray(m, dtype=np.float64).reshape(-1)
    if np.any(m < 0):
        raise ValueError(f"participation_ratio needs non-negative masses; got min {m.min()}")
    square = float((m * m).sum())
    return float(m.sum()) ** 2 / square if square > 0 else float("nan")
