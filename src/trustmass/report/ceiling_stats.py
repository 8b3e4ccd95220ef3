"""Summaries of the ceiling records: the numbers behind Figures 1-2, Tables 1, 2, 6, 8 and the
headline claims of §2.1-2.3 (spec §1.4-1.8, §4, §8, §9).

Every function here is pure: all ceiling records of a study (one polars frame, the contract of
:mod:`trustmass.ceiling.records`) in, one small tidy polars frame out.  Each statistic is computed on two
populations, labelled by the ``population`` column (spec §11.3):

- ``primary``: the first ``primary_docs`` (3) documents of every (model, corpus), by document id;
- ``all``: every document.

Intervals are document-cluster bootstrap 95% percentile intervals (spec §7.5; a document is a
(corpus, doc) pair of one model; B = 1000, seeded) from :mod:`trustmass.core.stats`, except the Table 6
edge/interior ratio, which resamples cells (layer, head) as the paper states ("head-cluster
intervals").  Spearman correlations and quantiles other than medians carry no interval.

Degenerate records (spec §1.2) are excluded from every statistic and counted (``n_degenerate``):
a record is degenerate when its top-mass error is zero (``es_top <= 1e-12 D``: the budget keeps the
whole row, so every ratio over ``es_top`` is 0/0) or, at an enumerated budget, when ES_pool is zero
(``kappa_hat = +inf``).  Missing values (nulls, NaN) of the column a statistic reads are dropped
for that statistic only.

Conventions fixed here (spec refs in brackets):

- instance label ``kappa_hat > kappa_threshold`` (default 1.11) [§1.4]; the "share" columns use the
  0.9 form ``ES_pool <= 0.9 es_top`` [§1.4, A]; cell label ``cell median kappa_hat >= threshold`` [§4 Fig 2, R];
- "top-mass attains ES_pool": ``kappa_hat <= 1 + 1e-12`` [§1.4 C];
- ``r_bal = (es_top - es_bal) / (es_top - ES_pool)`` when ``es_top > ES_pool (1 + 1e-12)``, else 1 [§1.5 C];
- remaining-gap share (Table 1 last row): the median over rows of ``dropped_mass_s / dropped_mass_8``
  (the row's ``2 D m_s / 2 D m_8``) [§11.17 R];
- vote degraded / improved: ``es_vote > es_top (1 + 1e-12)`` / ``es_vote < es_top (1 - 1e-12)`` [§1.8];
- network edges (Table 6): the first and last ``edge_layers`` (2) layers [§4 Table 6 C];
- per-layer profiles (rho_depth), edge/int, the map and the group vote at the map budget (s = 8).

The claim values the records regenerate are listed in one table, :data:`HEADLINE`, which maps each
(claim id, value name of ``data/claims.yaml``) to the summary frame and column it is read from.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import polars as pl

from trustmass.core.stats import (
    ClusterIndex,
    auc_from_codes,
    cluster_bootstrap,
    cluster_bootstrap_quantile,
    median,
    percentile_interval,
    quantile,
    score_codes,
    spearman,
)

__all__ = [
    "HEADLINE",
    "POOLED",
    "POPULATIONS",
    "SUMMARIES",
    "HeadlineValue",
    "SummarySettings",
    "fig1",
    "fig2",
    "headline",
    "prepare",
    "summarize",
    "table1",
    "table2",
    "table6",
    "table8",
]

#: the two populations every statistic is computed on (spec §11.3)
POPULATIONS = ("primary", "all")
#: ``model`` value of rows pooled over every model (Table 1's last row)
POOLED = "(pooled)"
#: the summary frames, in the order the rule writes them
SUMMARIES = ("fig1", "fig2", "table1", "table2", "table6", "table8", "headline")

#: relative tolerance of the equality tests (kappa_hat = 1, vote = top-mass, es_top = 0) [§1.4 C]
REL_TOL = 1e-12
#: "ES <= 0.9 es(A*)": the share column of Table 8, "balancing beats top-mass by >= 10%" [§1.4]
SHARE_FACTOR = 0.9
#: coverage thresholds on kappa_hat (claims 26, 29)
COVERAGE = (1.5, 2.0)

#: the record columns the summaries read (the contract of trustmass.ceiling.records.COLUMNS)
REQUIRED = (
    "model", "corpus", "doc", "layer", "head", "group_size", "query_pos", "budget", "dropped_mass", "D",
    "phi", "es_top", "es_pool", "es_bal", "n_swaps", "kappa_hat", "c_hat", "kappa_hat_bal", "pi_hat",
    "es_geo", "es_lev", "es_vote", "bound_2dm", "bound_var", "enumerated", "es_geo_pool", "es_lev_pool",
)  # fmt: skip
_ROW = ("model", "corpus", "doc", "layer", "head", "query_pos")


@dataclass(frozen=True)
class SummarySettings:
    """Everything the summaries read from the config (defaults: the paper's protocol)."""

    kappa_threshold: float = 1.11  # labels.kappa_threshold
    bootstrap: int = 1000  # statistics.bootstrap (B; 0 = no intervals)
    level: float = 0.95  # statistics.level
    seed: int = 0  # seed
    primary_docs: int = 3  # statistics.primary_docs
    map_budget: int = 8  # statistics.map_budget
    flat_mass: float = 0.25  # statistics.flat_mass
    edge_layers: int = 2  # statistics.edge_layers

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> SummarySettings:
        """From the resolved workflow config (keys ``seed``, ``labels``, ``statistics``)."""
        stats = config.get("statistics", {}) or {}
        known = {f for f in cls.__dataclass_fields__ if f not in ("kappa_threshold", "seed")}
        unknown = sorted(set(stats) - known - {"figure_population"})
        if unknown:
            raise ValueError(f"config.statistics: unknown keys {unknown}; known: {sorted(known)}")
        base = cls(kappa_threshold=float(config.get("labels", {}).get("kappa_threshold", 1.11)), seed=int(config.get("seed", 0)))
        return replace(base, **{k: v for k, v in stats.items() if k in known})


# ================================================================================== preparation


def prepare(records: pl.DataFrame, settings: SummarySettings = SummarySettings()) -> pl.DataFrame:
    """The records with the derived columns every summary reads.

    Adds ``cluster`` (the document: ``corpus/doc``), ``primary`` (first ``primary_docs`` documents of
    the (model, corpus) by doc id), ``degenerate``, the labels and the per-record ratios.  NaN in
    float columns becomes null.  Raises ``ValueError`` naming missing contract columns.
    """
    if "_prepared" in records.columns:
        return records
    missing = [c for c in REQUIRED if c not in records.columns]
    if missing:
        raise ValueError(
            f"ceiling records lack the columns {missing}; fix: regenerate them with the ceiling rule "
            "(the record contract is trustmass.ceiling.records.COLUMNS)"
        )
    duplicated = records.select([*_ROW, "budget"]).is_duplicated()
    if duplicated.any():
        first = records.filter(duplicated).row(0, named=True)
        where = ", ".join(f"{k}={first[k]}" for k in (*_ROW, "budget"))
        raise ValueError(
            f"ceiling records: {int(duplicated.sum())} records share their (model, corpus, doc, layer, head, query_pos, "
            f"budget) with another, e.g. {where}; fix: read each records file once"
        )
    floats = [c for c, t in records.schema.items() if t in (pl.Float32, pl.Float64)]
    f = records.with_columns(
        [pl.col(c).cast(pl.Float64).fill_nan(None) for c in floats]
        + [pl.col("doc").cast(pl.Utf8), pl.col("corpus").cast(pl.Utf8), pl.col("model").cast(pl.Utf8),
           pl.col("enumerated").cast(pl.Boolean)]
    )  # fmt: skip
    thr, tol = settings.kappa_threshold, REL_TOL
    es_top, es_pool, es_bal, es_vote = (pl.col(c) for c in ("es_top", "es_pool", "es_bal", "es_vote"))
    enumerated = pl.col("enumerated")
    f = f.with_columns(
        cluster=pl.concat_str([pl.col("corpus"), pl.col("doc")], separator="/"),
        primary=pl.col("doc").rank("dense").over(["model", "corpus"]) <= settings.primary_docs,
        degenerate=(es_top.abs() <= tol * pl.col("D").abs()) | (enumerated & pl.col("kappa_hat").is_infinite()).fill_null(False),
    )
    f = f.with_columns(
        label=pl.when(enumerated).then(pl.col("kappa_hat") > thr),
        share90=pl.when(enumerated).then(es_pool <= SHARE_FACTOR * es_top),
        top_attains=pl.when(enumerated).then(pl.col("kappa_hat") <= 1.0 + tol),
        remainder=pl.when(enumerated).then(es_pool / es_top),
        bal_residual=es_bal / es_top,
        bal_share=1.0 - es_bal / es_top,
        bal_beats=es_bal <= SHARE_FACTOR * es_top,
        r_bal=pl.when(enumerated).then(
            pl.when(es_top > es_pool * (1.0 + tol)).then((es_top - es_bal) / (es_top - es_pool)).otherwise(1.0)
        ),
        geo_ratio=pl.col("es_geo") / es_top,
        lev_ratio=pl.col("es_lev") / es_top,
        geo_pool_ratio=pl.col("es_geo_pool") / es_top,
        lev_pool_ratio=pl.col("es_lev_pool") / es_top,
        vote_over_top=es_vote / es_top,
        vote_over_pool=pl.when(enumerated).then(es_vote / es_pool),
        vote_degraded=es_vote > es_top * (1.0 + tol),
        vote_improved=es_vote < es_top * (1.0 - tol),
        is_map_budget=pl.col("budget") == settings.map_budget,
    )
    at_map = f.filter(pl.col("is_map_budget")).select([*_ROW, pl.col("dropped_mass").alias("_dm_map")])
    f = f.join(at_map, on=list(_ROW), how="left")
    f = f.with_columns(
        mass_share_of_map=pl.when(pl.col("_dm_map") > 0).then(pl.col("dropped_mass") / pl.col("_dm_map")),
        _prepared=pl.lit(True),
    ).drop("_dm_map")
    return f


def _populations(frame: pl.DataFrame) -> Iterable[tuple[str, pl.DataFrame]]:
    yield "primary", frame.filter(pl.col("primary"))
    yield "all", frame


def _groups(frame: pl.DataFrame, keys: Sequence[str]) -> Iterable[tuple[dict, pl.DataFrame]]:
    """Groups of ``frame`` by ``keys`` in sorted key order (one group, ``{}``, when keys are empty)."""
    if not keys:
        if frame.height:
            yield {}, frame
        return
    for key, g in sorted(frame.group_by(list(keys)), key=lambda kg: tuple(_sortable(k) for k in kg[0])):
        yield dict(zip(keys, key)), g


def _sortable(x: Any) -> tuple:
    return (x is None, x if x is not None else 0)


# ================================================================================== statistics


@dataclass
class _Stats:
    """Statistics of one group; every interval uses the same document resamples (same seed)."""

    settings: SummarySettings

    # --- helpers
    def _clean(self, g: pl.DataFrame, *cols: str) -> pl.DataFrame:
        g = g.filter(~pl.col("degenerate"))
        for c in cols:
            g = g.filter(pl.col(c).is_not_null())
        return g

    def _ci(self) -> bool:
        return self.settings.bootstrap > 0

    # --- statistics: each returns {name: estimate, name_low, name_high} (intervals: ci=True)
    def median(self, g: pl.DataFrame, col: str, name: str, ci: bool = True) -> dict:
        return self.quantile(g, col, name, 0.5, ci)

    def quantile(self, g: pl.DataFrame, col: str, name: str, q: float, ci: bool = False) -> dict:
        g = self._clean(g, col)
        out: dict = {name: None}
        if ci:
            out.update({f"{name}_low": None, f"{name}_high": None})
        if g.height == 0:
            return out
        x = g[col].to_numpy()
        out[name] = median(x) if q == 0.5 else float(quantile(x, q))
        if ci and self._ci():
            iv = cluster_bootstrap_quantile(x, g["cluster"].to_numpy(), q, self.settings.bootstrap, self.settings.seed, self.settings.level)
            out.update({f"{name}_low": iv.low, f"{name}_high": iv.high})
        return out

    def share(self, g: pl.DataFrame, col: str, name: str, ci: bool = True) -> dict:
        """Fraction of true values of a boolean column (interval: ratio of cluster sums per resample)."""
        g = self._clean(g, col)
        out: dict = {name: None}
        if ci:
            out.update({f"{name}_low": None, f"{name}_high": None})
        if g.height == 0:
            return out
        x = g[col].cast(pl.Float64).to_numpy()
        out[name] = float(x.mean())
        if ci and self._ci():
            low, high = _bootstrap_mean(x, g["cluster"].to_numpy(), self.settings)
            out.update({f"{name}_low": low, f"{name}_high": high})
        return out

    def auc(self, g: pl.DataFrame, score: str, label: str, name: str, ci: bool = True) -> dict:
        """AUC of ``score`` for ``label`` (Mann-Whitney, ties averaged); resamples lacking a class are dropped."""
        g = self._clean(g, score, label)
        out: dict = {name: None, f"{name}_n_pos": 0}
        if ci:
            out.update({f"{name}_low": None, f"{name}_high": None})
        if g.height == 0:
            return out
        y = g[label].to_numpy().astype(bool)
        out[f"{name}_n_pos"] = int(y.sum())
        codes = score_codes(g[score].to_numpy())
        k = int(codes.max()) + 1
        est = auc_from_codes(codes, y, k)
        out[name] = None if math.isnan(est) else est
        if ci and self._ci() and out[name] is not None:
            iv = cluster_bootstrap(
                {"c": codes, "y": y}, lambda d: auc_from_codes(d["c"], d["y"], k), cluster=g["cluster"].to_numpy(),
                B=self.settings.bootstrap, seed=self.settings.seed, level=self.settings.level, nan_policy="omit",
            )  # fmt: skip
            out.update({f"{name}_low": iv.low, f"{name}_high": iv.high})
        return out

    def spearman(self, g: pl.DataFrame, x: str, y: str, name: str) -> dict:
        g = self._clean(g, x, y)
        if g.height < 2:
            return {name: None}
        value = spearman(g[x].to_numpy(), g[y].to_numpy())
        return {name: None if math.isnan(value) else value}

    def counts(self, g: pl.DataFrame) -> dict:
        return {
            "n": int((~g["degenerate"]).sum()),
            "n_docs": int(g["cluster"].n_unique()),
            "n_degenerate": int(g["degenerate"].sum()),
        }


def _bootstrap_mean(x: np.ndarray, clusters: np.ndarray, settings: SummarySettings) -> tuple[float, float]:
    """Cluster-bootstrap percentile interval of a mean, from per-cluster sums: the same resamples and
    the same replicates as ``cluster_bootstrap(x, np.mean, clusters, B, seed)``, in one matrix product."""
    index = ClusterIndex(clusters)
    picks = index.draw(np.random.default_rng(settings.seed), settings.bootstrap)
    sums = np.bincount(index.codes, weights=x, minlength=index.n_clusters)
    weight = np.zeros((settings.bootstrap, index.n_clusters))
    np.add.at(weight, (np.arange(settings.bootstrap)[:, None], picks), 1.0)
    reps = (weight @ sums) / (weight @ index.counts)
    return percentile_interval(reps, settings.level)


def _frame(rows: list[dict], schema: Mapping[str, Any]) -> pl.DataFrame:
    """Rows (dicts) as a frame with exactly ``schema`` (missing keys null, extra keys an error)."""
    for row in rows:
        extra = set(row) - set(schema)
        if extra:
            raise KeyError(f"summary row has columns outside its schema: {sorted(extra)}")
    if not rows:
        return pl.DataFrame(schema=dict(schema))
    return pl.DataFrame([{k: row.get(k) for k in schema} for row in rows], schema=dict(schema), strict=False)


def _ci_cols(*names: str) -> dict:
    out = {}
    for n in names:
        out.update({n: pl.Float64, f"{n}_low": pl.Float64, f"{n}_high": pl.Float64})
    return out


_COUNTS = {"n": pl.Int64, "n_docs": pl.Int64, "n_degenerate": pl.Int64}


def _per_group(frame: pl.DataFrame, keys: Sequence[str], fn: Callable[[pl.DataFrame], dict], pooled_model: bool = False) -> list[dict]:
    """Rows of ``fn`` per population and group; with ``pooled_model`` also rows pooled over models."""
    rows = []
    for population, pop in _populations(frame):
        for key, g in _groups(pop, keys):
            rows.append({"population": population, **key, **fn(g)})
        if pooled_model:
            other = [k for k in keys if k != "model"]
            for key, g in _groups(pop, other):
                rows.append({"population": population, "model": POOLED, **key, **fn(g)})
    return rows


def _models(g: pl.DataFrame) -> str:
    return ",".join(sorted(g["model"].unique().to_list()))


# ================================================================================== Figure 1


FIG1_SCHEMA = {
    "model": pl.Utf8, "population": pl.Utf8, "budget": pl.Int64, **_COUNTS,
    **_ci_cols("median_c_hat"), "median_remainder": pl.Float64, "median_remainder_low": pl.Float64,
    "median_remainder_high": pl.Float64, **_ci_cols("median_bal_residual", "median_r_bal"),
    "n_labelled": pl.Int64, **_ci_cols("median_c_hat_labelled"), "median_kappa_hat": pl.Float64,
}  # fmt: skip


def fig1(records: pl.DataFrame, settings: SummarySettings = SummarySettings()) -> pl.DataFrame:
    """Figure 1 (the ceiling), per (model, enumerated budget): median ``c_hat`` with interval; the
    remainder ``ES_pool/es_top`` (its median is ``1 - median c_hat``); balancing's residual
    ``es_bal/es_top``; the recovered share ``r_bal``; median ``c_hat`` on ``kappa_hat > threshold``."""
    frame = prepare(records, settings).filter(pl.col("enumerated"))
    st = _Stats(settings)

    def one(g: pl.DataFrame) -> dict:
        out = {**st.counts(g), **st.median(g, "c_hat", "median_c_hat")}
        c, lo, hi = out["median_c_hat"], out["median_c_hat_low"], out["median_c_hat_high"]
        out.update(
            median_remainder=None if c is None else 1.0 - c,
            median_remainder_low=None if hi is None else 1.0 - hi,
            median_remainder_high=None if lo is None else 1.0 - lo,
        )
        out.update(st.median(g, "bal_residual", "median_bal_residual"))
        out.update(st.median(g, "r_bal", "median_r_bal"))
        labelled = g.filter(pl.col("label").fill_null(False))
        out["n_labelled"] = int((~labelled["degenerate"]).sum())
        out.update(st.median(labelled, "c_hat", "median_c_hat_labelled"))
        out.update(st.median(g, "kappa_hat", "median_kappa_hat", ci=False))
        return out

    return _frame(_per_group(frame, ["model", "budget"], one), FIG1_SCHEMA)


# ================================================================================== Figure 2


FIG2_SCHEMA = {
    "model": pl.Utf8, "population": pl.Utf8, "budget": pl.Int64, "layer": pl.Int64, "head": pl.Int64, **_COUNTS,
    "median_dropped_mass": pl.Float64, "median_kappa_hat": pl.Float64, "flat": pl.Boolean, "label": pl.Boolean,
    "cell_auc": pl.Float64, "n_cells": pl.Int64, "n_flat": pl.Int64, "n_labelled_cells": pl.Int64,
    "flat_mass": pl.Float64, "kappa_threshold": pl.Float64,
}  # fmt: skip


def fig2(records: pl.DataFrame, settings: SummarySettings = SummarySettings()) -> pl.DataFrame:
    """Figure 2 (the map), per (model, layer, head) at the map budget: median dropped mass, median
    ``kappa_hat``, the flat flag (median dropped mass > ``flat_mass``), the cell label (median
    ``kappa_hat >= threshold``) and, repeated on every cell of a model, the cell-level AUC of the
    median dropped mass for the cell label (spec §4 Fig 2 [R])."""
    frame = prepare(records, settings).filter(pl.col("is_map_budget") & pl.col("enumerated"))
    st = _Stats(settings)
    rows = []
    for population, pop in _populations(frame):
        for key, g in _groups(pop, ["model"]):
            cells = []
            for cell, c in _groups(g, ["layer", "head"]):
                dm = st.median(c, "dropped_mass", "m", ci=False)["m"]
                kh = st.median(c, "kappa_hat", "k", ci=False)["k"]
                cells.append({
                    "population": population, **key, "budget": settings.map_budget, **cell, **st.counts(c),
                    "median_dropped_mass": dm, "median_kappa_hat": kh,
                    "flat": None if dm is None else dm > settings.flat_mass,
                    "label": None if kh is None else kh >= settings.kappa_threshold,
                })  # fmt: skip
            scored = [r for r in cells if r["median_dropped_mass"] is not None and r["label"] is not None]
            value = math.nan
            if scored:
                codes = score_codes([r["median_dropped_mass"] for r in scored])
                value = auc_from_codes(codes, [r["label"] for r in scored])
            for r in cells:
                r.update(
                    cell_auc=None if math.isnan(value) else value, n_cells=len(cells),
                    flat_mass=settings.flat_mass, kappa_threshold=settings.kappa_threshold,
                    n_flat=sum(bool(x["flat"]) for x in cells), n_labelled_cells=sum(bool(x["label"]) for x in cells),
                )  # fmt: skip
            rows.extend(cells)
    return _frame(rows, FIG2_SCHEMA)


# ================================================================================== Table 1


TABLE1_SCHEMA = {
    "model": pl.Utf8, "population": pl.Utf8, "budget": pl.Int64, "enumerated": pl.Boolean, "models": pl.Utf8, **_COUNTS,
    **_ci_cols("median_balancing_share"), "balancing_beats_10pct_share": pl.Float64,
    "n_mass_share": pl.Int64, "median_mass_share_of_map": pl.Float64,
}  # fmt: skip


def table1(records: pl.DataFrame, settings: SummarySettings = SummarySettings()) -> pl.DataFrame:
    """Table 1 (native budget), per (model, budget) over every budget, plus rows pooled over models
    (``model = "(pooled)"``): median balancing share ``1 - es_bal/es_top`` with interval; the fraction
    with ``es_bal <= 0.9 es_top``; the median over rows of ``dropped_mass_s / dropped_mass_8`` (the
    row's ``2 D m_s`` cap as a share of its ``s = 8`` value: the remaining-gap row)."""
    frame = prepare(records, settings)
    st = _Stats(settings)

    def one(g: pl.DataFrame) -> dict:
        share = st.median(g, "mass_share_of_map", "median_mass_share_of_map", ci=False)
        return {
            "enumerated": bool(g["enumerated"].all()), "models": _models(g), **st.counts(g),
            **st.median(g, "bal_share", "median_balancing_share"),
            "balancing_beats_10pct_share": st.share(g, "bal_beats", "x", ci=False)["x"],
            "n_mass_share": st._clean(g, "mass_share_of_map").height, **share,
        }  # fmt: skip

    return _frame(_per_group(frame, ["model", "budget"], one, pooled_model=True), TABLE1_SCHEMA)


# ================================================================================== Table 2


TABLE2_SCHEMA = {
    "model": pl.Utf8, "population": pl.Utf8, "corpus": pl.Utf8, "budget": pl.Int64, **_COUNTS,
    **_ci_cols("label_share"), "share90": pl.Float64, **_ci_cols("auc"), "auc_n_pos": pl.Int64,
    **_ci_cols("median_kappa_hat"),
}  # fmt: skip


def table2(records: pl.DataFrame, settings: SummarySettings = SummarySettings()) -> pl.DataFrame:
    """Table 2 (content), per (model, corpus), pooled over the enumerated budgets (``budget`` null)
    and per enumerated budget: share with ``kappa_hat > threshold`` and the 0.9-form share, AUC of
    the dropped mass for the label, median ``kappa_hat``; intervals over documents."""
    frame = prepare(records, settings).filter(pl.col("enumerated"))
    st = _Stats(settings)

    def one(g: pl.DataFrame) -> dict:
        return {
            **st.counts(g), **st.share(g, "label", "label_share"), "share90": st.share(g, "share90", "x", ci=False)["x"],
            **st.auc(g, "dropped_mass", "label", "auc"), **st.median(g, "kappa_hat", "median_kappa_hat"),
        }  # fmt: skip

    rows = _per_group(frame, ["model", "corpus"], lambda g: {"budget": None, **one(g)})
    rows += _per_group(frame, ["model", "corpus", "budget"], one)
    out = _frame(rows, TABLE2_SCHEMA)
    return out.sort(["population", "model", "corpus", pl.col("budget").fill_null(0)], descending=[True, False, False, False])


# ================================================================================== Table 6


TABLE6_SCHEMA = {
    "model": pl.Utf8, "population": pl.Utf8, "budget": pl.Int64, "group_size": pl.Int64, "n_layers": pl.Int64, **_COUNTS,
    **_ci_cols("auc"), "auc_n_pos": pl.Int64, "edge_rate": pl.Float64, "interior_rate": pl.Float64,
    **_ci_cols("edge_int_ratio"), "rho_depth": pl.Float64, "rho_phi_es_pool": pl.Float64,
    "n_pooled": pl.Int64, **_ci_cols("median_kappa_hat_bal"),
}  # fmt: skip


def table6(records: pl.DataFrame, settings: SummarySettings = SummarySettings()) -> pl.DataFrame:
    """Table 6 (panel), per model: at the map budget, AUC of the dropped mass for the label (document
    intervals), the edge/interior label-rate ratio (edges: first and last ``edge_layers`` layers; cell
    intervals), ``rho_depth`` (Spearman over layers of the per-layer median dropped mass and label
    rate); pooled over the enumerated budgets, ``rho(Phi, ES_pool)`` and median ``kappa_hat_bal``."""
    frame = prepare(records, settings).filter(pl.col("enumerated"))
    st = _Stats(settings)
    rows = []
    for population, pop in _populations(frame):
        for key, g in _groups(pop, ["model"]):
            at_map = g.filter(pl.col("is_map_budget"))
            row = {"population": population, **key, "budget": settings.map_budget, **st.counts(at_map)}
            sizes = g["group_size"].unique().to_list()
            row["group_size"] = sizes[0] if len(sizes) == 1 else None
            row.update(st.auc(at_map, "dropped_mass", "label", "auc"))
            row.update(_edge_interior(st._clean(at_map, "label"), settings))
            row.update(_rho_depth(st._clean(at_map, "label", "dropped_mass")))
            row.update(st.spearman(g, "phi", "es_pool", "rho_phi_es_pool"))
            row["n_pooled"] = int((~g["degenerate"]).sum())
            row.update(st.median(g, "kappa_hat_bal", "median_kappa_hat_bal"))
            rows.append(row)
    return _frame(rows, TABLE6_SCHEMA)


def _edge_interior(g: pl.DataFrame, settings: SummarySettings) -> dict:
    out = {"n_layers": None, "edge_rate": None, "interior_rate": None, "edge_int_ratio": None,
           "edge_int_ratio_low": None, "edge_int_ratio_high": None}  # fmt: skip
    if g.height == 0:
        return out
    layers = sorted(g["layer"].unique().to_list())
    k = settings.edge_layers
    edges = set(layers[:k]) | set(layers[-k:]) if k > 0 else set()
    out["n_layers"] = len(layers)
    edge = g["layer"].is_in(sorted(edges)).to_numpy()
    y = g["label"].to_numpy().astype(float)
    if not edge.any() or edge.all():
        return out

    def ratio(d: Mapping[str, np.ndarray]) -> float:
        e, lab = d["edge"], d["y"]
        if not e.any() or e.all():
            return math.nan
        inner = lab[~e].mean()
        return lab[e].mean() / inner if inner > 0 else math.nan

    out["edge_rate"], out["interior_rate"] = float(y[edge].mean()), float(y[~edge].mean())
    value = ratio({"edge": edge, "y": y})
    out["edge_int_ratio"] = None if math.isnan(value) else value
    if settings.bootstrap > 0 and out["edge_int_ratio"] is not None:
        cells = (g["layer"].cast(pl.Utf8) + "/" + g["head"].cast(pl.Utf8)).to_numpy()
        iv = cluster_bootstrap({"edge": edge, "y": y}, ratio, cluster=cells, B=settings.bootstrap, seed=settings.seed,
                               level=settings.level, nan_policy="omit")  # fmt: skip
        out.update(edge_int_ratio_low=iv.low, edge_int_ratio_high=iv.high)
    return out


def _rho_depth(g: pl.DataFrame) -> dict:
    if g.height == 0:
        return {"rho_depth": None}
    per_layer = g.group_by("layer").agg(pl.col("dropped_mass").median().alias("m"), pl.col("label").cast(pl.Float64).mean().alias("r"))
    if per_layer.height < 2:
        return {"rho_depth": None}
    value = spearman(per_layer["m"].to_numpy(), per_layer["r"].to_numpy())
    return {"rho_depth": None if math.isnan(value) else value}


# ================================================================================== Table 8


TABLE8_SCHEMA = {
    "model": pl.Utf8, "population": pl.Utf8, "budget": pl.Int64, "group_size": pl.Int64, **_COUNTS,
    "median_kappa_hat": pl.Float64, "share90": pl.Float64, "label_share": pl.Float64,
    "median_pi_hat": pl.Float64, "p99_pi_hat": pl.Float64, "rho_phi_es_pool": pl.Float64,
    "median_geo_ratio": pl.Float64, "median_lev_ratio": pl.Float64,
    "median_geo_pool_ratio": pl.Float64, "median_lev_pool_ratio": pl.Float64,
    "top_attains_share": pl.Float64, "coverage_1_5": pl.Float64, "coverage_2": pl.Float64,
    "median_n_swaps": pl.Float64, "median_vote_over_top": pl.Float64, "median_vote_over_pool": pl.Float64,
    "vote_degraded_share": pl.Float64, "vote_improved_share": pl.Float64,
}  # fmt: skip


def _profile(st: _Stats, g: pl.DataFrame) -> dict:
    """The per-budget profile statistics of one group (Table 8's columns)."""
    kh = st._clean(g, "kappa_hat")["kappa_hat"].to_numpy()
    return {
        **st.counts(g),
        "median_kappa_hat": st.median(g, "kappa_hat", "x", ci=False)["x"],
        "share90": st.share(g, "share90", "x", ci=False)["x"],
        "label_share": st.share(g, "label", "x", ci=False)["x"],
        "median_pi_hat": st.median(g, "pi_hat", "x", ci=False)["x"],
        "p99_pi_hat": st.quantile(g, "pi_hat", "x", 0.99)["x"],
        "rho_phi_es_pool": st.spearman(g, "phi", "es_pool", "x")["x"],
        "median_geo_ratio": st.median(g, "geo_ratio", "x", ci=False)["x"],
        "median_lev_ratio": st.median(g, "lev_ratio", "x", ci=False)["x"],
        "median_geo_pool_ratio": st.median(g, "geo_pool_ratio", "x", ci=False)["x"],
        "median_lev_pool_ratio": st.median(g, "lev_pool_ratio", "x", ci=False)["x"],
        "top_attains_share": st.share(g, "top_attains", "x", ci=False)["x"],
        "coverage_1_5": float((kh <= COVERAGE[0]).mean()) if kh.size else None,
        "coverage_2": float((kh <= COVERAGE[1]).mean()) if kh.size else None,
        "median_n_swaps": st.median(g, "n_swaps", "x", ci=False)["x"],
        "median_vote_over_top": st.median(g, "vote_over_top", "x", ci=False)["x"],
        "median_vote_over_pool": st.median(g, "vote_over_pool", "x", ci=False)["x"],
        "vote_degraded_share": st.share(g, "vote_degraded", "x", ci=False)["x"],
        "vote_improved_share": st.share(g, "vote_improved", "x", ci=False)["x"],
    }


def table8(records: pl.DataFrame, settings: SummarySettings = SummarySettings()) -> pl.DataFrame:
    """Table 8 (per-budget profile), per (model, enumerated budget): median ``kappa_hat``, the 0.9-form
    share, median and 99th percentile of ``pi_hat``, ``rho(Phi, ES_pool)``, median geometric and
    leverage ratios over ``es_top`` (all keys and pool-restricted), the fraction where top-mass
    attains ES_pool, coverage ``kappa_hat <= 1.5`` and ``<= 2``, median swaps, and the group vote's
    cost (median ``es_vote/es_top``, ``es_vote/ES_pool``, fractions degraded and improved)."""
    frame = prepare(records, settings).filter(pl.col("enumerated"))
    st = _Stats(settings)

    def one(g: pl.DataFrame) -> dict:
        sizes = g["group_size"].unique().to_list()
        return {"group_size": sizes[0] if len(sizes) == 1 else None, **_profile(st, g)}

    return _frame(_per_group(frame, ["model", "budget"], one), TABLE8_SCHEMA)


# ================================================================================== headline


HEADLINE_SCHEMA = {
    "claim_id": pl.Int64, "value_name": pl.Utf8, "by_key": pl.Utf8, "by_value": pl.Utf8, "population": pl.Utf8,
    "estimate": pl.Float64, "low": pl.Float64, "high": pl.Float64, "n_instances": pl.Int64, "n_docs": pl.Int64,
    "models": pl.Utf8, "n_excluded": pl.Int64, "source": pl.Utf8,
}  # fmt: skip


@dataclass(frozen=True)
class HeadlineValue:
    """One claim value and where it is read from.

    ``source``: a summary frame (fig1, fig2, table1, table2, table6, table8) or a headline-only
    frame (pooled: per budget over all models; group_vote: per group size at the map budget;
    bounds: per (model, bound); counts: per model and overall).  ``column`` holds the estimate
    (``<column>_low``/``_high`` the interval when ``ci``); ``keys`` label the row (``by_key``);
    ``where`` filters the frame (column -> allowed values; "map" = the map budget, "enumerated"/"native"
    = the budgets present; group_size "shared" = group size > 1).  Estimates stay fractions where
    the claim states percent (the claims report scales them).
    """

    claim: int
    value: str
    source: str
    column: str
    keys: tuple[str, ...]
    where: Mapping[str, Any] = field(default_factory=dict)
    ci: bool = False
    n_column: str = "n"
    note: str = ""


_MB = {"budget": "map"}
_ENUM = {"budget": "enumerated"}
_NATIVE = {"budget": "native"}
_MODEL_BUDGET = ("model", "budget")

#: claim value -> statistic (spec §9 claims 2, 8, 11-15, 22-35, 37-38 and the Table 6/8 appendix ones)
HEADLINE: tuple[HeadlineValue, ...] = (
    HeadlineValue(2, "median_c_hat", "fig1", "median_c_hat", _MODEL_BUDGET, ci=True),
    HeadlineValue(8, "median_r_bal", "fig1", "median_r_bal", _MODEL_BUDGET, ci=True),
    HeadlineValue(11, "median_vote_cost_over_top_mass", "group_vote", "median_vote_over_top", ("group_size",), {"group_size": "shared"}),
    HeadlineValue(12, "median_vote_cost_over_es_pool", "group_vote", "median_vote_over_pool", ("group_size",), {"group_size": "shared"}),
    HeadlineValue(13, "vote_degraded_share", "group_vote", "vote_degraded_share", ("group_size",), {"group_size": "shared"}),
    HeadlineValue(13, "vote_improved_share", "group_vote", "vote_improved_share", ("group_size",), {"group_size": "shared"}),
    HeadlineValue(14, "vote_over_top_mass", "group_vote", "worst_vote_over_top", ("group_size",), {"group_size": (1,)},
                  note="the ratio farthest from 1 over every group-size-1 row (all budgets); 1 exactly when the vote is top-mass"),
    HeadlineValue(15, "n_instances", "counts", "n_records_enumerated", (), note="records at the enumerated budgets, every model"),
    HeadlineValue(15, "n_families", "counts", "n_models", ()),
    HeadlineValue(15, "rows_per_head_per_doc", "counts", "rows_per_head_per_doc", ()),
    HeadlineValue(15, "n_docs", "counts", "docs_per_corpus", ()),
    HeadlineValue(22, "median_pi_hat", "table8", "median_pi_hat", _MODEL_BUDGET),
    HeadlineValue(22, "p99_pi_hat", "table8", "p99_pi_hat", _MODEL_BUDGET),
    HeadlineValue(23, "median_geometric_ratio", "table8", "median_geo_ratio", _MODEL_BUDGET),
    HeadlineValue(24, "median_c_hat", "fig1", "median_c_hat", _MODEL_BUDGET, ci=True),
    HeadlineValue(24, "n_families", "counts", "n_models", ()),
    HeadlineValue(24, "median_c_hat_ci95", "fig1", "median_c_hat", _MODEL_BUDGET, ci=True,
                  note="estimate = the median; low/high = its interval, whose endpoints the claim bounds"),
    HeadlineValue(25, "median_c_hat_labelled", "fig1", "median_c_hat_labelled", _MODEL_BUDGET, ci=True, n_column="n_labelled"),
    HeadlineValue(26, "coverage_kappa_hat_le_1_5", "pooled", "coverage_1_5", ("budget",), {"budget": (4, 8)}),
    HeadlineValue(26, "coverage_kappa_hat_le_2", "pooled", "coverage_2", ("budget",), {"budget": (4, 8)}),
    HeadlineValue(27, "top_mass_attains_pool_share", "pooled", "top_attains_share", ("budget",)),
    HeadlineValue(28, "median_r_bal", "fig1", "median_r_bal", _MODEL_BUDGET, ci=True),
    HeadlineValue(28, "median_r_bal_ci95", "fig1", "median_r_bal", _MODEL_BUDGET, ci=True),
    HeadlineValue(29, "coverage_kappa_hat_le_1_5", "table8", "coverage_1_5", ("model",), {"budget": (4,)}),
    HeadlineValue(29, "coverage_kappa_hat_le_2", "table8", "coverage_2", ("model",), {"budget": (4,)}),
    HeadlineValue(30, "median_kappa_hat_covered", "covered", "median_kappa_hat", ("model",),
                  note="[R] covered = kappa_hat <= 1.5, pooled over the enumerated budgets"),
    HeadlineValue(30, "p90_kappa_hat_covered", "covered", "p90_kappa_hat", ("model",)),
    HeadlineValue(31, "mass_cap_share_of_s8", "table1", "median_mass_share_of_map", _MODEL_BUDGET, _NATIVE, n_column="n_mass_share"),
    HeadlineValue(32, "median_balancing_share", "table1", "median_balancing_share", _MODEL_BUDGET, _NATIVE, ci=True),
    HeadlineValue(33, "balancing_beats_top_mass_10pct_share", "table1", "balancing_beats_10pct_share", _MODEL_BUDGET),
    HeadlineValue(34, "cell_auc", "fig2_models", "cell_auc", ("model",), n_column="n_cells"),
    HeadlineValue(35, "auc_dropped_mass", "table6", "auc", ("model",), ci=True),
    HeadlineValue(37, "spearman_bound_es_top", "bounds", "rho_es_top", ("model", "bound")),
    HeadlineValue(37, "spearman_bound_kappa_hat", "bounds", "rho_kappa_hat", ("model", "bound")),
    HeadlineValue(38, "spearman_phi_es_pool_reference", "table8", "rho_phi_es_pool", _MODEL_BUDGET),
    HeadlineValue(38, "spearman_phi_es_pool_per_family", "table6", "rho_phi_es_pool", ("model",), n_column="n_pooled"),
    HeadlineValue(41, "n_instances", "counts_model", "n_records_enumerated", ("model",), note="Table 2 instances: every corpus"),
    HeadlineValue(41, "auc_ci_half_width", "table2_pooled", "auc_half_width", ("model", "corpus")),
    HeadlineValue(41, "share_ci_half_width", "table2_pooled", "label_share_half_width", ("model", "corpus")),
    HeadlineValue(83, "auc_ci_half_width", "table6", "auc_half_width", ("model",)),
    HeadlineValue(86, "spearman_label_dropped_mass", "bounds_model", "rho_label_dropped_mass", ("model",)),
    HeadlineValue(88, "median_geometric_ratio_s32", "table8", "median_geo_ratio", ("model",), {"budget": (32,)}),
    HeadlineValue(88, "median_leverage_ratio_s32", "table8", "median_lev_ratio", ("model",), {"budget": (32,)}),
    HeadlineValue(89, "median_n_swaps", "table8", "median_n_swaps", _MODEL_BUDGET),
    HeadlineValue(96, "median_balancing_share", "table1", "median_balancing_share", _MODEL_BUDGET, _NATIVE, ci=True),
    HeadlineValue(96, "balancing_beats_top_mass_10pct_share", "table1", "balancing_beats_10pct_share", _MODEL_BUDGET, _NATIVE),
    HeadlineValue(99, "spearman_bound_2dm_es_top", "bounds_model", "rho_bound_2dm_es_top", ("model",)),
    HeadlineValue(99, "spearman_bound_var_es_top", "bounds_model", "rho_bound_var_es_top", ("model",)),
    HeadlineValue(99, "spearman_bound_2dm_kappa_hat", "bounds_model", "rho_bound_2dm_kappa_hat", ("model",)),
    HeadlineValue(99, "spearman_bound_var_kappa_hat", "bounds_model", "rho_bound_var_kappa_hat", ("model",)),
    HeadlineValue(99, "spearman_dropped_mass_kappa_hat", "bounds_model", "rho_dropped_mass_kappa_hat", ("model",)),
)  # fmt: skip


def _headline_sources(frame: pl.DataFrame, settings: SummarySettings, given: Mapping[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """Every frame the :data:`HEADLINE` table reads (summary frames reused when given)."""
    st = _Stats(settings)
    enum = frame.filter(pl.col("enumerated"))
    out = {name: given[name] if name in given else fn(frame, settings)
           for name, fn in (("fig1", fig1), ("fig2", fig2), ("table1", table1), ("table2", table2),
                            ("table6", table6), ("table8", table8))}  # fmt: skip
    out["table1"] = out["table1"].filter(pl.col("model") != POOLED)
    out["fig2_models"] = out["fig2"].group_by(["population", "model"]).agg(
        pl.col("cell_auc").first(), pl.col("n_cells").first(), pl.col("n_docs").max(), pl.col("n_degenerate").sum()
    )
    out["table2_pooled"] = out["table2"].filter(pl.col("budget").is_null()).with_columns(
        auc_half_width=(pl.col("auc_high") - pl.col("auc_low")) / 2,
        label_share_half_width=(pl.col("label_share_high") - pl.col("label_share_low")) / 2,
    )
    out["table6"] = out["table6"].with_columns(auc_half_width=(pl.col("auc_high") - pl.col("auc_low")) / 2)

    def pooled(g: pl.DataFrame) -> dict:
        return {"models": _models(g), **_profile(st, g)}

    out["pooled"] = _frame(_per_group(enum, ["budget"], pooled), {"population": pl.Utf8, "budget": pl.Int64, "models": pl.Utf8, **{
        k: v for k, v in TABLE8_SCHEMA.items() if k not in ("model", "population", "budget", "group_size")}})  # fmt: skip

    def vote(g: pl.DataFrame) -> dict:
        clean = st._clean(g, "vote_over_top")
        ratio = clean["vote_over_top"].to_numpy()
        worst = float(ratio[np.argmax(np.abs(ratio - 1.0))]) if ratio.size else None
        at_map = g.filter(pl.col("is_map_budget"))
        return {
            "models": _models(g), **st.counts(at_map),
            "median_vote_over_top": st.median(at_map, "vote_over_top", "x", ci=False)["x"],
            "median_vote_over_pool": st.median(at_map, "vote_over_pool", "x", ci=False)["x"],
            "vote_degraded_share": st.share(at_map, "vote_degraded", "x", ci=False)["x"],
            "vote_improved_share": st.share(at_map, "vote_improved", "x", ci=False)["x"],
            "worst_vote_over_top": worst,
        }  # fmt: skip

    out["group_vote"] = pl.DataFrame(_per_group(frame, ["group_size"], vote), infer_schema_length=None)

    def covered(g: pl.DataFrame) -> dict:
        kept = g.filter(pl.col("kappa_hat") <= COVERAGE[0])
        return {**st.counts(kept), "median_kappa_hat": st.median(kept, "kappa_hat", "x", ci=False)["x"],
                "p90_kappa_hat": st.quantile(kept, "kappa_hat", "x", 0.9)["x"]}  # fmt: skip

    out["covered"] = pl.DataFrame(_per_group(enum, ["model"], covered), infer_schema_length=None)

    def bounds(g: pl.DataFrame) -> list[dict]:
        rows = []
        for bound in ("bound_2dm", "bound_var"):
            rows.append({"bound": bound, **st.counts(g), "rho_es_top": st.spearman(g, bound, "es_top", "x")["x"],
                         "rho_kappa_hat": st.spearman(g, bound, "kappa_hat", "x")["x"]})  # fmt: skip
        return rows

    rows = []
    for population, pop in _populations(enum):
        for key, g in _groups(pop, ["model"]):
            rows += [{"population": population, **key, **r} for r in bounds(g)]
    out["bounds"] = pl.DataFrame(rows, infer_schema_length=None)

    def bounds_model(g: pl.DataFrame) -> dict:
        row = {**st.counts(g)}
        for bound in ("bound_2dm", "bound_var"):
            row[f"rho_{bound}_es_top"] = st.spearman(g, bound, "es_top", "x")["x"]
            row[f"rho_{bound}_kappa_hat"] = st.spearman(g, bound, "kappa_hat", "x")["x"]
        row["rho_dropped_mass_kappa_hat"] = st.spearman(g, "dropped_mass", "kappa_hat", "x")["x"]
        row["rho_label_dropped_mass"] = st.spearman(g.with_columns(pl.col("label").cast(pl.Float64)), "label", "dropped_mass", "x")["x"]
        return row

    out["bounds_model"] = pl.DataFrame(_per_group(enum, ["model"], bounds_model), infer_schema_length=None)

    def counts(g: pl.DataFrame) -> dict:
        e = g.filter(pl.col("enumerated"))
        per_cell = e.group_by(["model", "corpus", "doc", "layer", "head"]).agg(pl.col("query_pos").n_unique().alias("r"))
        docs = g.group_by(["model", "corpus"]).agg(pl.col("doc").n_unique().alias("d"))
        return {
            "n": e.height, "n_docs": int(g["cluster"].n_unique()), "n_degenerate": int(e["degenerate"].sum()),
            "models": _models(g), "n_models": g["model"].n_unique(), "n_records_enumerated": e.height,
            "rows_per_head_per_doc": median(per_cell["r"].to_numpy()) if per_cell.height else None,
            "docs_per_corpus": median(docs["d"].to_numpy()) if docs.height else None,
        }  # fmt: skip

    out["counts"] = pl.DataFrame(_per_group(frame, [], counts), infer_schema_length=None)
    out["counts_model"] = pl.DataFrame(_per_group(frame, ["model"], counts), infer_schema_length=None)
    return out


def _resolve_where(where: Mapping[str, Any], settings: SummarySettings, budgets: Mapping[str, tuple[int, ...]]) -> dict:
    out = {}
    for col, allowed in where.items():
        if allowed == "map":
            allowed = (settings.map_budget,)
        elif allowed in ("enumerated", "native"):
            allowed = budgets[allowed]
        out[col] = allowed
    return out


def headline(
    records: pl.DataFrame,
    settings: SummarySettings = SummarySettings(),
    summaries: Mapping[str, pl.DataFrame] | None = None,
) -> pl.DataFrame:
    """One row per regenerated claim value (:data:`HEADLINE`) and group, on both populations.

    ``by_key`` names the row's group dimensions, comma-separated (``"model,budget"``; null for a
    study-wide value), ``by_value`` their values in the same order (``"smollm2-135m,8"``).  Estimates
    are in natural units: fractions stay fractions even where the claim states percent (the claims
    report scales them, :mod:`trustmass.report.claims_report`).  ``n_instances`` counts the records behind
    the estimate, ``n_excluded`` the degenerate ones left out; ``source`` names the summary column.
    ``summaries`` reuses already computed summary frames (same records and settings).
    """
    from trustmass.report.claims_data import claim as claim_of

    frame = prepare(records, settings)
    budgets = {
        "enumerated": tuple(sorted(frame.filter(pl.col("enumerated"))["budget"].unique().to_list())),
        "native": tuple(sorted(frame.filter(~pl.col("enumerated"))["budget"].unique().to_list())),
    }
    sources = _headline_sources(frame, settings, summaries or {})
    rows = []
    for spec in HEADLINE:
        claim_of(spec.claim).value(spec.value)  # KeyError naming the claim's values if the table is stale
        source = sources[spec.source]
        if source.height == 0:
            continue
        for col, allowed in _resolve_where(spec.where, settings, budgets).items():
            if col == "group_size" and allowed == "shared":
                source = source.filter(pl.col("group_size") > 1)
            else:
                source = source.filter(pl.col(col).is_in(list(allowed)))
        sort_cols = ["population", *spec.keys]
        for rec in source.sort(sort_cols, descending=[True] + [False] * len(spec.keys)).iter_rows(named=True):
            est = rec.get(spec.column)
            if est is None or (isinstance(est, float) and math.isnan(est)):
                continue
            low = rec.get(f"{spec.column}_low") if spec.ci else None
            high = rec.get(f"{spec.column}_high") if spec.ci else None
            rows.append({
                "claim_id": spec.claim, "value_name": spec.value,
                "by_key": ",".join(spec.keys) or None,
                "by_value": ",".join(str(rec[k]) for k in spec.keys) or None,
                "population": rec["population"], "estimate": est, "low": low, "high": high,
                "n_instances": rec.get(spec.n_column), "n_docs": rec.get("n_docs"),
                "models": rec["model"] if "model" in rec and rec["model"] != POOLED else rec.get("models"),
                "n_excluded": rec.get("n_degenerate"), "source": f"{spec.source}.{spec.column}",
            })  # fmt: skip
    return _frame(rows, HEADLINE_SCHEMA)


# ================================================================================== everything


def summarize(records: pl.DataFrame, settings: SummarySettings = SummarySettings()) -> dict[str, pl.DataFrame]:
    """Every summary frame (:data:`SUMMARIES`), the records prepared once."""
    frame = prepare(records, settings)
    out = {name: fn(frame, settings) for name, fn in (("fig1", fig1), ("fig2", fig2), ("table1", table1),
                                                      ("table2", table2), ("table6", table6), ("table8", table8))}  # fmt: skip
    out["headline"] = headline(frame, settings, out)
    return out
