"""The statistics behind every reported number (spec §8, §3.6, §7.5): pure functions over numpy/polars.

- :func:`cluster_bootstrap` — one estimator for every interval: resample clusters (documents) with
  replacement, recompute the statistic, 95% percentile interval (§7.5).  Seeded (numpy Generator);
  :func:`paired_bootstrap_difference` reuses the same resamples for both statistics,
  :func:`independent_bootstrap_difference` resamples two samples independently.
- :func:`auc` / :func:`auc_result` — ROC AUC by the Mann–Whitney U statistic with tie-averaged
  ranks; :func:`roc_curve`.  A sample with one label only has no AUC: NaN, with the reason.
- :func:`spearman` (tie-averaged ranks), :func:`kendall_tau_b`, :func:`rank_average`.
- :func:`quantile` (type 7, numpy's default "linear") and :func:`median`.
- :func:`wilson_upper` — the Wilson-95 upper bound of §3.6; :func:`median_cap` — the
  distribution-free cap on a median when at most a fraction ``f`` of the values are raised.
- :func:`binned_medians` (deciles of x, median y per bin) and :func:`coverage` (fraction <= threshold).

Closed-form bootstraps of a quantile and an AUC (no resample built): :mod:`trustmass.core.bootstrap_closed_form`.

Fast bootstrap: pass ``columns=[...]`` (or a mapping of numpy arrays) and the statistic receives a
``dict`` of numpy arrays per resample, so no polars work happens inside the loop; row indices per
cluster are computed once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

__all__ = [
    "ROC",
    "Z95",
    "AUCResult",
    "ClusterIndex",
    "Interval",
    "auc",
    "auc_from_codes",
    "as_binary_labels",
    "as_float_sample",
    "auc_result",
    "binned_medians",
    "bootstrap_replicates",
    "cluster_bootstrap",
    "coverage",
    "independent_bootstrap_difference",
    "interpolate_type7",
    "interval_from_replicates",
    "kendall_tau_b",
    "median",
    "median_cap",
    "paired_bootstrap_difference",
    "percentile_interval",
    "quantile",
    "rank_average",
    "roc_curve",
    "score_codes",
    "spearman",
    "wilson_upper",
]

#: the two-sided 95% normal quantile used by the paper (§3.6)
Z95 = 1.959964


# ----------------------------------------------------------------------------- quantiles


def as_float_sample(values: Any, name: str = "values") -> np.ndarray:
    """``values`` as a flat float64 array; NaN raises ``ValueError`` naming ``name``."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if np.isnan(x).any():
        raise ValueError(f"{name} contains NaN ({int(np.isnan(x).sum())} of {x.size}); drop or fill them first")
    return x


def quantile(values: Any, q: float | Sequence[float] | np.ndarray) -> float | np.ndarray:
    """Type-7 quantile (numpy's default linear interpolation): for sorted ``x`` of size ``n``,
    ``h = (n-1) q`` and ``x[floor h] + (h - floor h) (x[floor h + 1] - x[floor h])``.

    Unlike ``np.quantile`` it returns +inf (not NaN) when interpolating towards +inf and an exact
    neighbour when both neighbours are equal (including infinite ones), so ``kappa_hat = +inf``
    records behave.  NaN input raises ``ValueError``.
    """
    x = as_float_sample(values)
    if x.size == 0:
        raise ValueError("quantile of an empty sample is undefined")
    qs = np.asarray(q, dtype=np.float64)
    if np.any((qs < 0) | (qs > 1)) or np.isnan(qs).any():
        raise ValueError(f"quantile levels must lie in [0, 1], got {q!r}")
    h = (x.size - 1) * qs
    lo = np.floor(h).astype(np.int64)
    hi = np.minimum(lo + 1, x.size - 1)
    frac = h - lo
    x = np.partition(x, np.unique(np.r_[lo.reshape(-1), hi.reshape(-1)]))  # O(n): only the needed ranks
    return interpolate_type7(x[lo], x[hi], frac)


def interpolate_type7(a: np.ndarray, b: np.ndarray, frac: np.ndarray) -> float | np.ndarray:
    """Type-7 interpolation between neighbours ``a <= b``, bit for bit numpy's ``_lerp`` (so results
    equal ``np.quantile``), plus: exact when ``a == b``, +inf towards +inf, -inf away from -inf."""
    a, b, frac = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), np.asarray(frac, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        diff = b - a
        out = np.where(frac >= 0.5, b - diff * (1 - frac), a + diff * frac)
    out = np.where((frac == 0) | (a == b), a, out)
    out = np.where((frac > 0) & np.isposinf(b) & np.isfinite(a), np.inf, out)
    out = np.where((frac < 1) & np.isneginf(a) & np.isfinite(b), -np.inf, out)
    return float(out) if out.ndim == 0 else out


def median(values: Any) -> float:
    """Median with linear interpolation (type 7 at 0.5), computed as ``np.median`` does (the mean of
    the two middle values for even ``n``), so it equals ``np.median`` bit for bit; ``quantile(x, 0.5)``
    can differ from it in the last bit.  NaN input raises ``ValueError``."""
    x = as_float_sample(values)
    if x.size == 0:
        raise ValueError("median of an empty sample is undefined")
    k = x.size // 2
    if x.size % 2:
        return float(np.partition(x, k)[k])
    x = np.partition(x, [k - 1, k])
    return _mid(x[k - 1], x[k])


def _mid(a: float, b: float) -> float:
    """Mean of the two middle values (numpy's median), +inf when the upper one is +inf."""
    if np.isposinf(b) and np.isfinite(a):
        return math.inf
    return float((a + b) / 2.0)


def coverage(values: Any, threshold: float) -> float:
    """Fraction of ``values`` at or below ``threshold`` (e.g. the share with ``kappa_hat <= 1.5``)."""
    x = as_float_sample(values)
    if x.size == 0:
        raise ValueError("coverage of an empty sample is undefined")
    return float(np.count_nonzero(x <= threshold) / x.size)


def binned_medians(x: Any, y: Any, bins: int = 10) -> pl.DataFrame:
    """Median of ``y`` within quantile bins of ``x`` (deciles by default; spec §8, claim 85).

    Bin edges are the type-7 quantiles of ``x`` at ``0, 1/bins, ..., 1``; bin ``k`` holds
    ``edge_k <= x < edge_{k+1}`` (the last bin is closed), so tied ``x`` values share a bin and a bin
    can be empty when ties straddle an edge (its medians are then NaN).  Returns a frame with
    columns ``bin, x_low, x_high, n, x_median, y_median``.
    """
    xs, ys = as_float_sample(x, "x"), as_float_sample(y, "y")
    if xs.size != ys.size:
        raise ValueError(f"x and y differ in length ({xs.size} vs {ys.size})")
    if xs.size == 0:
        raise ValueError("binned_medians needs at least one point")
    if not (isinstance(bins, int) and bins >= 1):
        raise ValueError(f"bins must be a positive integer, got {bins!r}")
    edges = np.asarray(quantile(xs, np.linspace(0.0, 1.0, bins + 1)))
    which = np.searchsorted(edges[1:-1], xs, side="right")
    rows = []
    for k in range(bins):
        mask = which == k
        n = int(mask.sum())
        rows.append(
            {
                "bin": k,
                "x_low": float(edges[k]),
                "x_high": float(edges[k + 1]),
                "n": n,
                "x_median": median(xs[mask]) if n else math.nan,
                "y_median": median(ys[mask]) if n else math.nan,
            }
        )
    return pl.DataFrame(
        rows,
        schema={
            "bin": pl.Int64,
            "x_low": pl.Float64,
            "x_high": pl.Float64,
            "n": pl.Int64,
            "x_median": pl.Float64,
            "y_median": pl.Float64,
        },
    )


# ----------------------------------------------------------------------------- Wilson and the median cap


def wilson_upper(k: Any, n: Any, z: float = Z95) -> float | np.ndarray:
    """Wilson score upper bound on a rate ``k/n`` (spec §3.6)::

        f_hi = [k/n + z²/(2n) + z·sqrt((k/n)(1-k/n)/n + z²/(4n²))] / (1 + z²/n)

    ``n = 240``, ``k = 0/2/8/36`` gives 0.0158/0.0299/0.0644/0.2007.
    """
    k_arr, n_arr = np.asarray(k, dtype=np.float64), np.asarray(n, dtype=np.float64)
    if np.any(n_arr <= 0) or np.any(k_arr < 0) or np.any(k_arr > n_arr):
        raise ValueError(f"Wilson bound needs 0 <= k <= n and n > 0, got k={k!r}, n={n!r}")
    p = k_arr / n_arr
    centre = p + z * z / (2 * n_arr)
    spread = z * np.sqrt(p * (1 - p) / n_arr + z * z / (4 * n_arr * n_arr))
    out = (centre + spread) / (1 + z * z / n_arr)
    return float(out) if out.ndim == 0 else out


def median_cap(values: Any, f: float) -> float:
    """Largest median the sample can reach when at most a fraction ``f`` of its values are raised
    (and the rest are unchanged): a distribution-free cap on the median (spec §3.6).

    With ``m = floor(f·n)`` values raised, the ``i``-th smallest new value is at most the
    ``(i+m)``-th smallest old one (at least ``i`` of the ``i+m`` smallest stay put), and raising the
    ``m`` smallest values to +inf attains that.  So the cap is the type-7 median of the sorted
    sample with its ``m`` smallest values moved to +inf: the order statistic ``x_(⌈n/2⌉+m)`` for odd
    ``n``, the mean of ``x_(n/2+m)`` and ``x_(n/2+m+1)`` for even ``n`` (+inf if the rank passes
    ``n``).  This is the spec's "(0.5+f)-quantile" made exact: the interpolated type-7 quantile at
    ``0.5+f`` can sit below the reachable median (``n = 5, f = 0.2``: ``q_0.7`` interpolates between
    ``x_(3)`` and ``x_(4)``, yet raising ``x_(1)`` moves the median to ``x_(4)``), so it is no cap.
    """
    x = np.sort(as_float_sample(values))
    if x.size == 0:
        raise ValueError("median_cap of an empty sample is undefined")
    if not (0.0 <= f <= 1.0):
        raise ValueError(f"f must be a fraction in [0, 1], got {f!r}")
    m = math.floor(f * x.size + 1e-9)  # the tolerance keeps e.g. 0.29 * 100 at 29, not 28
    worst = np.concatenate([x[m:], np.full(m, np.inf)])
    return median(worst)


# ----------------------------------------------------------------------------- ranks, AUC, correlations


def rank_average(values: Any) -> np.ndarray:
    """Ranks 1..n with ties given their average rank (scipy's ``rankdata(method='average')``)."""
    x = as_float_sample(values)
    n = x.size
    if n == 0:
        return np.empty(0)
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    new_group = np.empty(n, dtype=bool)
    new_group[0] = True
    new_group[1:] = xs[1:] != xs[:-1]
    group = np.cumsum(new_group) - 1
    counts = np.bincount(group)
    ends = np.cumsum(counts)  # 1-based rank of each group's last member
    ranks = np.empty(n)
    ranks[order] = (ends - (counts - 1) / 2.0)[group]
    return ranks


def as_binary_labels(label: Any, n: int) -> np.ndarray:
    """``label`` as a flat boolean array of length ``n`` (boolean or 0/1 input, else ``ValueError``)."""
    y = np.asarray(label).reshape(-1)
    if y.size != n:
        raise ValueError(f"score and label differ in length ({n} vs {y.size})")
    if y.dtype != bool:
        if not np.all(np.isin(y, (0, 1))):
            raise ValueError("label must be boolean or 0/1")
        y = y.astype(bool)
    return y


@dataclass(frozen=True)
class AUCResult:
    """ROC AUC with the class sizes; ``value`` is NaN and ``reason`` says why when undefined."""

    value: float
    n_pos: int
    n_neg: int
    reason: str | None = None


def auc_result(score: Any, label: Any) -> AUCResult:
    """ROC AUC of ``score`` for ``label`` via the Mann–Whitney U statistic with tie-averaged ranks:
    ``AUC = (R_pos - n_pos (n_pos + 1) / 2) / (n_pos n_neg)`` = P(score_pos > score_neg) + ½ P(tie)."""
    s = as_float_sample(score, "score")
    y = as_binary_labels(label, s.size)
    n_pos = int(np.count_nonzero(y))
    n_neg = int(y.size - n_pos)
    if y.size == 0:
        return AUCResult(math.nan, 0, 0, "empty sample")
    if n_pos == 0:
        return AUCResult(math.nan, 0, n_neg, f"no positive labels (all {n_neg} negative)")
    if n_neg == 0:
        return AUCResult(math.nan, n_pos, 0, f"no negative labels (all {n_pos} positive)")
    ranks = rank_average(s)
    u = ranks[y].sum() - n_pos * (n_pos + 1) / 2.0
    return AUCResult(float(u / (n_pos * n_neg)), n_pos, n_neg)


def score_codes(score: Any) -> np.ndarray:
    """Dense integer ranks of ``score`` (0 for the smallest distinct value): compute once on the full
    sample, then :func:`auc_from_codes` scores any resample without sorting."""
    return np.unique(as_float_sample(score, "score"), return_inverse=True)[1].astype(np.int64).reshape(-1)


def auc_from_codes(codes: Any, label: Any, n_codes: int | None = None) -> float:
    """:func:`auc` for scores given as order-preserving integer codes (:func:`score_codes`), in
    O(n + n_codes) by counting instead of ranking; the fast path inside a bootstrap.  NaN when one
    label is missing."""
    c = np.asarray(codes).reshape(-1)
    y = as_binary_labels(label, c.size)
    n_pos = int(np.count_nonzero(y))
    n_neg = int(y.size - n_pos)
    if n_pos == 0 or n_neg == 0:
        return math.nan
    k = int(c.max()) + 1 if n_codes is None else n_codes
    pos = np.bincount(c[y], minlength=k).astype(np.float64)
    neg = np.bincount(c[~y], minlength=k).astype(np.float64)
    below = np.cumsum(neg) - neg  # negatives with a strictly smaller score
    return float((pos * (below + 0.5 * neg)).sum() / (n_pos * n_neg))


def auc(score: Any, label: Any) -> float:
    """ROC AUC (NaN when only one label is present; :func:`auc_result` gives the reason)."""
    return auc_result(score, label).value


@dataclass(frozen=True)
class ROC:
    """ROC curve points for thresholds ``score >= t`` (descending, starting at +inf)."""

    fpr: np.ndarray
    tpr: np.ndarray
    thresholds: np.ndarray
    auc: float
    reason: str | None = None


def roc_curve(score: Any, label: Any) -> ROC:
    """ROC curve: one point per distinct score (plus the origin at threshold +inf).  The trapezoid
    area under it equals :func:`auc` (ties give diagonal segments).  With one label only, the rates
    are NaN and ``reason`` says why."""
    s = as_float_sample(score, "score")
    y = as_binary_labels(label, s.size)
    res = auc_result(s, y)
    order = np.argsort(-s, kind="mergesort")
    ss, ys = s[order], y[order]
    last = np.r_[ss[1:] != ss[:-1], True] if ss.size else np.empty(0, dtype=bool)
    tp = np.cumsum(ys)[last]
    fp = np.cumsum(~ys)[last]
    thresholds = np.r_[np.inf, ss[last]]
    tp, fp = np.r_[0, tp], np.r_[0, fp]
    if res.reason is not None:
        nan = np.full(thresholds.size, np.nan)
        return ROC(nan, nan.copy(), thresholds, math.nan, res.reason)
    return ROC(fp / res.n_neg, tp / res.n_pos, thresholds, res.value)


def spearman(x: Any, y: Any) -> float:
    """Spearman rank correlation: Pearson correlation of tie-averaged ranks (NaN if either is constant)."""
    a, b = as_float_sample(x, "x"), as_float_sample(y, "y")
    if a.size != b.size:
        raise ValueError(f"x and y differ in length ({a.size} vs {b.size})")
    if a.size < 2:
        return math.nan
    ra, rb = rank_average(a), rank_average(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    denom = math.sqrt(float(ra @ ra) * float(rb @ rb))
    return float(ra @ rb / denom) if denom > 0 else math.nan


def kendall_tau_b(x: Any, y: Any) -> float:
    """Kendall's tau-b (tie-corrected), by direct pair counting; for short vectors such as family
    orderings (claim 100).  NaN if either vector is constant."""
    a, b = as_float_sample(x, "x"), as_float_sample(y, "y")
    if a.size != b.size:
        raise ValueError(f"x and y differ in length ({a.size} vs {b.size})")
    if a.size > 5000:
        raise ValueError("kendall_tau_b counts pairs directly; use it for at most 5000 points")
    iu = np.triu_indices(a.size, k=1)
    da = np.sign(a[:, None] - a[None, :])[iu]
    db = np.sign(b[:, None] - b[None, :])[iu]
    n_a, n_b = np.count_nonzero(da), np.count_nonzero(db)
    if n_a == 0 or n_b == 0:
        return math.nan
    return float((da * db).sum() / math.sqrt(n_a * n_b))


# ----------------------------------------------------------------------------- bootstrap


@dataclass(frozen=True)
class Interval:
    """A point estimate with its bootstrap percentile interval."""

    estimate: float
    low: float
    high: float
    B: int
    level: float = 0.95
    n_clusters: int = 0
    n_invalid: int = 0  # resamples whose statistic was NaN (dropped under nan_policy="omit")
    seed: int | None = None

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2.0

    def excludes(self, x: float = 0.0) -> bool:
        """True when ``x`` lies outside ``[low, high]`` (e.g. a paired difference excluding 0)."""
        return bool(x < self.low or x > self.high)


class ClusterIndex:
    """Row indices grouped by cluster, computed once, for fast cluster resampling."""

    def __init__(self, clusters: Any):
        values = np.asarray(clusters).reshape(-1)
        if values.size == 0:
            raise ValueError("cannot bootstrap an empty sample")
        self.keys, inverse = np.unique(values, return_inverse=True)
        self.codes = inverse.reshape(-1)  # cluster position of each row
        self.order = np.argsort(self.codes, kind="stable")
        self.counts = np.bincount(self.codes, minlength=self.keys.size)
        self.starts = np.r_[0, np.cumsum(self.counts)[:-1]]
        self.n_rows = values.size

    @property
    def n_clusters(self) -> int:
        return int(self.keys.size)

    def draw(self, rng: np.random.Generator, B: int) -> np.ndarray:
        """``B`` resamples of cluster positions, each of ``n_clusters`` drawn with replacement."""
        return rng.integers(0, self.n_clusters, size=(B, self.n_clusters))

    def multiplicities(self, picks: np.ndarray) -> np.ndarray:
        """``(B, n_clusters)`` float64: how often each resample drew each cluster."""
        B, C = picks.shape[0], self.n_clusters
        flat = (picks + C * np.arange(B)[:, None]).reshape(-1)
        return np.bincount(flat, minlength=B * C).reshape(B, C).astype(np.float64)

    def rows(self, picks: np.ndarray) -> np.ndarray:
        """Row indices of the picked clusters, concatenated in pick order."""
        lengths = self.counts[picks]
        ends = np.cumsum(lengths)
        shift = np.repeat(self.starts[picks] - (ends - lengths), lengths)
        return self.order[shift + np.arange(ends[-1] if ends.size else 0)]


def _prepare(frame: Any, cluster: Any, columns: Sequence[str] | None):
    """(cluster labels, gather(rows) -> the statistic's input, full input)."""
    if isinstance(frame, pl.DataFrame):
        clusters = frame.get_column(cluster).to_numpy() if isinstance(cluster, str) else np.asarray(cluster)
        if columns is not None:
            arrays = {c: frame.get_column(c).to_numpy() for c in columns}
            return clusters, (lambda idx: {c: a[idx] for c, a in arrays.items()}), arrays
        return clusters, (lambda idx: frame[idx]), frame
    if isinstance(frame, Mapping):
        names = list(frame) if columns is None else list(columns)
        arrays = {c: np.asarray(frame[c]) for c in names}
        clusters = np.asarray(frame[cluster]) if isinstance(cluster, str) else np.asarray(cluster)
        return clusters, (lambda idx: {c: a[idx] for c, a in arrays.items()}), arrays
    array = np.asarray(frame)
    if isinstance(cluster, str):
        raise TypeError("for a plain array, pass the cluster labels themselves as `cluster`")
    return np.asarray(cluster), (lambda idx: array[idx]), array


def bootstrap_replicates(
    frame: Any,
    statistic: Callable[[Any], Any],
    cluster: Any = "doc",
    B: int = 1000,
    seed: int = 0,
    columns: Sequence[str] | None = None,
) -> np.ndarray:
    """The statistic on ``B`` cluster resamples: shape ``(B,)`` for a scalar statistic, ``(B, k)``
    for a vector one.

    ``frame`` is a polars DataFrame, a mapping of equal-length numpy arrays, or one numpy array.
    ``cluster`` names the cluster column (or gives the labels).  The statistic receives a polars
    DataFrame (a frame without ``columns``), a dict of numpy arrays (a frame with ``columns``, or a
    mapping) or a numpy array.  Resamples depend only on ``seed`` and the cluster labels, so two
    calls with the same seed resample the same documents.
    """
    if not (isinstance(B, int) and B >= 1):
        raise ValueError(f"B must be a positive integer, got {B!r}")
    clusters, gather, _ = _prepare(frame, cluster, columns)
    index = ClusterIndex(clusters)
    picks = index.draw(np.random.default_rng(seed), B)
    first = np.asarray(statistic(gather(index.rows(picks[0]))), dtype=np.float64)
    out = np.empty((B,) + first.shape)
    out[0] = first
    for b in range(1, B):
        out[b] = statistic(gather(index.rows(picks[b])))
    return out


def percentile_interval(replicates: Any, level: float = 0.95, nan_policy: str = "propagate"):
    """Percentile interval (type-7 quantiles at (1-level)/2 and (1+level)/2) of bootstrap replicates,
    per column for ``(B, k)`` input.  NaN replicates give a NaN interval unless ``nan_policy='omit'``."""
    if not (0 < level < 1):
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    if nan_policy not in ("propagate", "omit"):
        raise ValueError("nan_policy must be 'propagate' or 'omit'")
    reps = np.asarray(replicates, dtype=np.float64)
    alpha = (1.0 - level) / 2.0
    cols = reps.reshape(reps.shape[0], -1)
    lows, highs = np.empty(cols.shape[1]), np.empty(cols.shape[1])
    for j in range(cols.shape[1]):
        col = cols[:, j]
        bad = np.isnan(col)
        if bad.all() or (bad.any() and nan_policy == "propagate"):
            lows[j] = highs[j] = math.nan
            continue
        lows[j], highs[j] = quantile(col[~bad], [alpha, 1.0 - alpha])
    if reps.ndim == 1:
        return float(lows[0]), float(highs[0])
    return lows.reshape(reps.shape[1:]), highs.reshape(reps.shape[1:])


def interval_from_replicates(
    estimate: Any, reps: np.ndarray, B: int, level: float, n_clusters: int, seed: int, nan_policy: str
) -> Interval:
    """The :class:`Interval` of a scalar ``estimate`` from its bootstrap replicates (percentile interval)."""
    est = np.asarray(estimate, dtype=np.float64)
    if est.ndim != 0:
        raise TypeError(
            "the statistic must return a scalar; for vector statistics use "
            "bootstrap_replicates() and percentile_interval()"
        )
    low, high = percentile_interval(reps, level, nan_policy)
    return Interval(float(est), low, high, B, level, n_clusters, int(np.isnan(reps).sum()), seed)


def cluster_bootstrap(
    frame: Any,
    statistic: Callable[[Any], Any],
    cluster: Any = "doc",
    B: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    columns: Sequence[str] | None = None,
    nan_policy: str = "propagate",
) -> Interval:
    """Cluster (document) bootstrap percentile interval of a scalar statistic (spec §7.5).

    Example, the median ``c_hat`` of one (family, budget) with documents as clusters::

        cluster_bootstrap(records, lambda d: np.median(d["c_hat"]), columns=["c_hat"])
    """
    clusters, _, full = _prepare(frame, cluster, columns)
    estimate = statistic(full)
    reps = bootstrap_replicates(frame, statistic, cluster, B, seed, columns)
    return interval_from_replicates(estimate, reps, B, level, ClusterIndex(clusters).n_clusters, seed, nan_policy)


def paired_bootstrap_difference(
    frame: Any,
    stat_a: Callable[[Any], Any],
    stat_b: Callable[[Any], Any],
    cluster: Any = "doc",
    B: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    columns: Sequence[str] | None = None,
    nan_policy: str = "propagate",
) -> Interval:
    """Interval of ``stat_a - stat_b`` when both are measured on the same documents: each resample
    draws one set of documents and evaluates both statistics on it (paired, spec §7.5)."""
    clusters, _, full = _prepare(frame, cluster, columns)
    estimate = float(stat_a(full)) - float(stat_b(full))
    reps = bootstrap_replicates(frame, lambda d: float(stat_a(d)) - float(stat_b(d)), cluster, B, seed, columns)
    return interval_from_replicates(estimate, reps, B, level, ClusterIndex(clusters).n_clusters, seed, nan_policy)


def independent_bootstrap_difference(
    frame_a: Any,
    frame_b: Any,
    statistic: Callable[[Any], Any],
    cluster: Any = "doc",
    B: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    columns: Sequence[str] | None = None,
    nan_policy: str = "propagate",
) -> Interval:
    """Interval of ``statistic(a) - statistic(b)`` for samples not measured together: the two are
    resampled independently (child seeds of ``seed``), spec §7.5."""
    seed_a, seed_b = (int(s.generate_state(1)[0]) for s in np.random.SeedSequence(seed).spawn(2))
    _, _, full_a = _prepare(frame_a, cluster, columns)
    _, _, full_b = _prepare(frame_b, cluster, columns)
    estimate = float(statistic(full_a)) - float(statistic(full_b))
    reps_a = bootstrap_replicates(frame_a, statistic, cluster, B, seed_a, columns)
    reps_b = bootstrap_replicates(frame_b, statistic, cluster, B, seed_b, columns)
    return interval_from_replicates(estimate, reps_a - reps_b, B, level, 0, seed, nan_policy)
