"""Cluster bootstraps of a quantile and of an AUC computed from cluster multiplicities, without
building a resample: the same resamples (same seed) and the same values, bit for bit, as
:func:`trustmass.core.stats.cluster_bootstrap` with :func:`~trustmass.core.stats.median` /
``quantile`` or :func:`~trustmass.core.stats.auc_from_codes` as the statistic (tested), at a small
fraction of its cost: the statistics frames bootstrap thousands of cells with B = 1000."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from trustmass.core.stats import (
    ClusterIndex,
    Interval,
    as_binary_labels,
    as_float_sample,
    auc_from_codes,
    interpolate_type7,
    interval_from_replicates,
    median,
    quantile,
)

__all__ = ["cluster_bootstrap_auc", "cluster_bootstrap_quantile"]

#: the (clusters x rows) cumulative counts up to which the quantile bootstrap bisects all resamples at once
_BISECT_LIMIT = 20_000_000


def _first_above_by_bisection(codes_sorted: np.ndarray, weights: np.ndarray, *targets: np.ndarray) -> list[np.ndarray]:
    """Per target vector t (one entry per resample b): the first sorted position i with
    ``sum_c weights[b, c] * (rows of cluster c among the first i + 1) > t[b]``, by one bisection of
    all resamples together over the clusters' cumulative counts."""
    n, n_clusters = codes_sorted.size, weights.shape[1]
    dtype = np.int32 if n < 2**31 else np.int64
    cumulative = np.zeros((n, n_clusters), dtype=dtype)
    cumulative[np.arange(n), codes_sorted] = 1
    np.cumsum(cumulative, axis=0, out=cumulative)
    out = []
    for target in targets:
        low, high = np.zeros(target.size, dtype=np.int64), np.full(target.size, n - 1, dtype=np.int64)
        while np.any(low < high):
            mid = (low + high) // 2
            above = (cumulative[mid] * weights).sum(axis=1) > target
            low, high = np.where(above, low, mid + 1), np.where(above, mid, high)
        out.append(low)
    return out


def _first_above_by_scan(codes_sorted: np.ndarray, weights: np.ndarray, *targets: np.ndarray) -> list[np.ndarray]:
    """:func:`_first_above_by_bisection` one resample at a time (no clusters x rows table)."""
    out = [np.empty(t.size, dtype=np.int64) for t in targets]
    for b in range(weights.shape[0]):
        cum = np.cumsum(weights[b][codes_sorted])
        for found, target in zip(out, targets):
            found[b] = np.searchsorted(cum, target[b], side="right")
    return out


def cluster_bootstrap_quantile(
    values: Any,
    clusters: Any,
    q: float = 0.5,
    B: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> Interval:
    """:func:`~trustmass.core.stats.cluster_bootstrap` of the type-7 ``q``-quantile (the median by default), computed from
    cluster multiplicities over one global sort instead of a selection per resample.  Same resamples
    (same ``seed``) and the same values as :func:`~trustmass.core.stats.cluster_bootstrap` with the statistic
    :func:`~trustmass.core.stats.median` (``q = 0.5``) or ``quantile(., q)`` (other ``q``)."""
    x = as_float_sample(values)
    index = ClusterIndex(clusters)
    if x.size != index.n_rows:
        raise ValueError(f"values and clusters differ in length ({x.size} vs {index.n_rows})")
    if not (isinstance(B, int) and B >= 1):
        raise ValueError(f"B must be a positive integer, got {B!r}")
    picks = index.draw(np.random.default_rng(seed), B)
    order = np.argsort(x, kind="stable")
    sorted_x = x[order]
    weights = index.multiplicities(picks).astype(np.int64)  # (B, clusters)
    h = ((weights @ index.counts) - 1) * q  # each resample's type-7 position
    lo = np.floor(h).astype(np.int64)
    hi = np.minimum(lo + 1, weights @ index.counts - 1)
    # the element at 0-based position t of a resample's sorted values: the first i whose weighted
    # count of the first i + 1 sorted values exceeds t
    first_above = _first_above_by_bisection if index.n_clusters * x.size <= _BISECT_LIMIT else _first_above_by_scan
    i_lo, i_hi = first_above(index.codes[order], weights, lo, hi)
    a, b = sorted_x[i_lo], sorted_x[i_hi]
    if q == 0.5:
        with np.errstate(invalid="ignore"):
            mid = np.where(np.isposinf(b) & np.isfinite(a), math.inf, (a + b) / 2.0)  # _mid, per resample
        reps = np.where(h != lo, mid, interpolate_type7(a, b, h - lo))
    else:
        reps = np.asarray(interpolate_type7(a, b, h - lo), dtype=np.float64).reshape(-1)
    estimate = median(x) if q == 0.5 else quantile(x, q)
    return interval_from_replicates(estimate, reps, B, level, index.n_clusters, seed, "propagate")


def cluster_bootstrap_auc(
    codes: Any,
    label: Any,
    clusters: Any,
    B: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    n_codes: int | None = None,
) -> Interval:
    """:func:`~trustmass.core.stats.cluster_bootstrap` of :func:`~trustmass.core.stats.auc_from_codes` with
    ``nan_policy='omit'``, without building
    a resample.  The Mann-Whitney count splits over cluster pairs: U[c, d] counts the positives of
    cluster c above the negatives of cluster d (ties half), so a resample drawing cluster c w_c times
    has U = w' U w, n_pos = w . pos and n_neg = w . neg: O(clusters x (codes + rows)) once, then
    O(clusters^2) per resample.  Same resamples (same ``seed``) and the same values bit for bit:
    every sum is of integers and half-integers, exact in float64.  A resample lacking a class gives
    NaN and is omitted."""
    from scipy import sparse

    c = np.asarray(codes).reshape(-1).astype(np.int64)
    y = as_binary_labels(label, c.size)
    index = ClusterIndex(clusters)
    if c.size != index.n_rows:
        raise ValueError(f"codes and clusters differ in length ({c.size} vs {index.n_rows})")
    if not (isinstance(B, int) and B >= 1):
        raise ValueError(f"B must be a positive integer, got {B!r}")
    k, n_clusters = (int(c.max()) + 1 if n_codes is None else int(n_codes)), index.n_clusters

    def table(rows: np.ndarray):  # (codes x clusters) counts of the given rows
        ones = np.ones(int(rows.sum()))
        return sparse.csc_matrix((ones, (c[rows], index.codes[rows])), shape=(k, n_clusters))

    positives, negatives = table(y), table(~y)
    u = np.empty((n_clusters, n_clusters))
    for d in range(n_clusters):
        neg = negatives[:, d].toarray().reshape(-1)
        below = np.cumsum(neg) - neg  # negatives of cluster d with a strictly smaller score
        u[:, d] = positives.T @ (below + 0.5 * neg)
    weights = index.multiplicities(index.draw(np.random.default_rng(seed), B))
    pairs = (weights @ np.asarray(positives.sum(axis=0)).reshape(-1)) * (
        weights @ np.asarray(negatives.sum(axis=0)).reshape(-1)
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = np.where(pairs > 0, ((weights @ u) * weights).sum(axis=1) / pairs, math.nan)
    return interval_from_replicates(auc_from_codes(c, y, k), reps, B, level, n_clusters, seed, "omit")
