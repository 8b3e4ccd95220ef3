"""Statistics frames of the ceiling records: the numbers behind Figures 1-2 and Tables 1, 2, 6, 8
(spec §1.4-1.8, §4, §8); the claims they regenerate are in :mod:`trustmass.report.frames.ceiling_claims`.

Every function here is pure: ceiling records (one polars frame, the contract of
:mod:`trustmass.ceiling.records`) in, one small tidy polars frame out, made with the statistics engine
(:mod:`trustmass.report.engine`).  :func:`summarize` computes Table 2 on the headline families over
every corpus and everything else on the headline population (headline families x headline corpus).
Each statistic is computed on two populations, labelled by the ``population`` column (spec §11.3):

- ``primary``: the first ``primary_docs`` (3) documents of every (model, corpus), by document id;
- ``all``: every document.

Intervals are document-cluster bootstrap 95% percentile intervals (spec §7.5; a document is a
(corpus, doc) pair of one model; B = 1000, seeded), except the Table 6
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
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import polars as pl

from trustmass.core.operator import REL_TOL
from trustmass.core.stats import auc_from_codes, cluster_bootstrap, score_codes, spearman
from trustmass.report.engine import (
    COUNT_COLUMNS,
    GroupStatistics,
    HeadlinePopulation,
    StatisticsSettings,
    frame_from_rows,
    groups,
    interval_columns,
    models_of,
    per_group,
    populations,
    with_document_columns,
)

__all__ = ["REQUIRED", "fig1", "fig2", "prepare", "summarize", "table1", "table2", "table6", "table8"]

#: "ES <= 0.9 es(A*)": the share column of Table 8, "balancing beats top-mass by >= 10%" [§1.4]
SHARE_FACTOR = 0.9
#: coverage thresholds on kappa_hat (claims 26, 29)
COVERAGE = (1.5, 2.0)

#: the record columns the statistics read (the contract of trustmass.ceiling.records.COLUMNS)
REQUIRED = (
    "model",
    "corpus",
    "doc",
    "layer",
    "head",
    "group_size",
    "query_pos",
    "budget",
    "dropped_mass",
    "D",
    "phi",
    "es_top",
    "es_pool",
    "es_bal",
    "n_swaps",
    "kappa_hat",
    "c_hat",
    "kappa_hat_bal",
    "pi_hat",
    "es_geo",
    "es_lev",
    "es_vote",
    "bound_2dm",
    "bound_var",
    "enumerated",
    "es_geo_pool",
    "es_lev_pool",
)
ROW = ("model", "corpus", "doc", "layer", "head", "query_pos")


# ================================================================================== preparation


def prepare(records: pl.DataFrame, settings: StatisticsSettings = StatisticsSettings()) -> pl.DataFrame:
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
    duplicated = records.select([*ROW, "budget"]).is_duplicated()
    if duplicated.any():
        first = records.filter(duplicated).row(0, named=True)
        where = ", ".join(f"{k}={first[k]}" for k in (*ROW, "budget"))
        raise ValueError(
            f"ceiling records: {int(duplicated.sum())} records share their (model, corpus, doc, layer, head, query_pos, "
            f"budget) with another, e.g. {where}; fix: read each records file once"
        )
    floats = [c for c, t in records.schema.items() if t in (pl.Float32, pl.Float64)]
    f = records.with_columns(
        [pl.col(c).cast(pl.Float64).fill_nan(None) for c in floats]
        + [
            pl.col("doc").cast(pl.Utf8),
            pl.col("corpus").cast(pl.Utf8),
            pl.col("model").cast(pl.Utf8),
            pl.col("enumerated").cast(pl.Boolean),
        ]
    )
    thr, tol = settings.kappa_threshold, REL_TOL
    es_top, es_pool, es_bal, es_vote = (pl.col(c) for c in ("es_top", "es_pool", "es_bal", "es_vote"))
    enumerated = pl.col("enumerated")
    f = with_document_columns(f, settings.primary_docs).with_columns(
        degenerate=(es_top.abs() <= tol * pl.col("D").abs())
        | (enumerated & pl.col("kappa_hat").is_infinite()).fill_null(False),
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
    at_map = f.filter(pl.col("is_map_budget")).select([*ROW, pl.col("dropped_mass").alias("_dm_map")])
    f = f.join(at_map, on=list(ROW), how="left")
    f = f.with_columns(
        mass_share_of_map=pl.when(pl.col("_dm_map") > 0).then(pl.col("dropped_mass") / pl.col("_dm_map")),
        _prepared=pl.lit(True),
    ).drop("_dm_map")
    return f


# ================================================================================== Figure 1


FIG1_SCHEMA = {
    "model": pl.Utf8,
    "population": pl.Utf8,
    "budget": pl.Int64,
    **COUNT_COLUMNS,
    **interval_columns("median_c_hat"),
    "median_remainder": pl.Float64,
    "median_remainder_low": pl.Float64,
    "median_remainder_high": pl.Float64,
    **interval_columns("median_bal_residual", "median_r_bal"),
    "n_labelled": pl.Int64,
    **interval_columns("median_c_hat_labelled"),
    "median_kappa_hat": pl.Float64,
}


def fig1(records: pl.DataFrame, settings: StatisticsSettings = StatisticsSettings()) -> pl.DataFrame:
    """Figure 1 (the ceiling), per (model, enumerated budget): median ``c_hat`` with interval; the
    remainder ``ES_pool/es_top`` (its median is ``1 - median c_hat``); balancing's residual
    ``es_bal/es_top``; the recovered share ``r_bal``; median ``c_hat`` on ``kappa_hat > threshold``."""
    frame = prepare(records, settings).filter(pl.col("enumerated"))
    st = GroupStatistics(settings)

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

    return frame_from_rows(per_group(frame, ["model", "budget"], one), FIG1_SCHEMA)


# ================================================================================== Figure 2


FIG2_SCHEMA = {
    "model": pl.Utf8,
    "population": pl.Utf8,
    "budget": pl.Int64,
    "layer": pl.Int64,
    "head": pl.Int64,
    **COUNT_COLUMNS,
    "median_dropped_mass": pl.Float64,
    "median_kappa_hat": pl.Float64,
    "flat": pl.Boolean,
    "label": pl.Boolean,
    "cell_auc": pl.Float64,
    "n_cells": pl.Int64,
    "n_flat": pl.Int64,
    "n_labelled_cells": pl.Int64,
    "flat_mass": pl.Float64,
    "kappa_threshold": pl.Float64,
}


def fig2(records: pl.DataFrame, settings: StatisticsSettings = StatisticsSettings()) -> pl.DataFrame:
    """Figure 2 (the map), per (model, layer, head) at the map budget: median dropped mass, median
    ``kappa_hat``, the flat flag (median dropped mass > ``flat_mass``), the cell label (median
    ``kappa_hat >= threshold``) and, repeated on every cell of a model, the cell-level AUC of the
    median dropped mass for the cell label (spec §4 Fig 2 [R])."""
    frame = prepare(records, settings).filter(pl.col("is_map_budget") & pl.col("enumerated"))
    st = GroupStatistics(settings)
    rows = []
    for population, pop in populations(frame):
        for key, g in groups(pop, ["model"]):
            cells = []
            for cell, c in groups(g, ["layer", "head"]):
                dm = st.median(c, "dropped_mass", "m", ci=False)["m"]
                kh = st.median(c, "kappa_hat", "k", ci=False)["k"]
                cells.append(
                    {
                        "population": population,
                        **key,
                        "budget": settings.map_budget,
                        **cell,
                        **st.counts(c),
                        "median_dropped_mass": dm,
                        "median_kappa_hat": kh,
                        "flat": None if dm is None else dm > settings.flat_mass,
                        "label": None if kh is None else kh >= settings.kappa_threshold,
                    }
                )
            scored = [r for r in cells if r["median_dropped_mass"] is not None and r["label"] is not None]
            value = math.nan
            if scored:
                codes = score_codes([r["median_dropped_mass"] for r in scored])
                value = auc_from_codes(codes, [r["label"] for r in scored])
            for r in cells:
                r.update(
                    cell_auc=None if math.isnan(value) else value,
                    n_cells=len(cells),
                    flat_mass=settings.flat_mass,
                    kappa_threshold=settings.kappa_threshold,
                    n_flat=sum(bool(x["flat"]) for x in cells),
                    n_labelled_cells=sum(bool(x["label"]) for x in cells),
                )
            rows.extend(cells)
    return frame_from_rows(rows, FIG2_SCHEMA)


# ================================================================================== Table 1


TABLE1_SCHEMA = {
    "model": pl.Utf8,
    "population": pl.Utf8,
    "budget": pl.Int64,
    "enumerated": pl.Boolean,
    "models": pl.Utf8,
    **COUNT_COLUMNS,
    **interval_columns("median_balancing_share"),
    "balancing_beats_10pct_share": pl.Float64,
    "n_mass_share": pl.Int64,
    "median_mass_share_of_map": pl.Float64,
}


def table1(records: pl.DataFrame, settings: StatisticsSettings = StatisticsSettings()) -> pl.DataFrame:
    """Table 1 (native budget), per (model, budget) over every budget, plus rows pooled over models
    (``model = "(pooled)"``): median balancing share ``1 - es_bal/es_top`` with interval; the fraction
    with ``es_bal <= 0.9 es_top``; the median over rows of ``dropped_mass_s / dropped_mass_8`` (the
    row's ``2 D m_s`` cap as a share of its ``s = 8`` value: the remaining-gap row)."""
    frame = prepare(records, settings)
    st = GroupStatistics(settings)

    def one(g: pl.DataFrame) -> dict:
        share = st.median(g, "mass_share_of_map", "median_mass_share_of_map", ci=False)
        return {
            "enumerated": bool(g["enumerated"].all()),
            "models": models_of(g),
            **st.counts(g),
            **st.median(g, "bal_share", "median_balancing_share"),
            "balancing_beats_10pct_share": st.share(g, "bal_beats", "x", ci=False)["x"],
            "n_mass_share": st.clean(g, "mass_share_of_map").height,
            **share,
        }

    return frame_from_rows(per_group(frame, ["model", "budget"], one, pooled_model=True), TABLE1_SCHEMA)


# ================================================================================== Table 2


TABLE2_SCHEMA = {
    "model": pl.Utf8,
    "population": pl.Utf8,
    "corpus": pl.Utf8,
    "budget": pl.Int64,
    **COUNT_COLUMNS,
    **interval_columns("label_share"),
    "share90": pl.Float64,
    **interval_columns("auc"),
    "auc_n_pos": pl.Int64,
    **interval_columns("median_kappa_hat"),
}


def table2(records: pl.DataFrame, settings: StatisticsSettings = StatisticsSettings()) -> pl.DataFrame:
    """Table 2 (content), per (model, corpus), pooled over the enumerated budgets (``budget`` null)
    and per enumerated budget: share with ``kappa_hat > threshold`` and the 0.9-form share, AUC of
    the dropped mass for the label, median ``kappa_hat``; intervals over documents."""
    frame = prepare(records, settings).filter(pl.col("enumerated"))
    st = GroupStatistics(settings)

    def one(g: pl.DataFrame) -> dict:
        return {
            **st.counts(g),
            **st.share(g, "label", "label_share"),
            "share90": st.share(g, "share90", "x", ci=False)["x"],
            **st.auc(g, "dropped_mass", "label", "auc"),
            **st.median(g, "kappa_hat", "median_kappa_hat"),
        }

    rows = per_group(frame, ["model", "corpus"], lambda g: {"budget": None, **one(g)})
    rows += per_group(frame, ["model", "corpus", "budget"], one)
    out = frame_from_rows(rows, TABLE2_SCHEMA)
    return out.sort(
        ["population", "model", "corpus", pl.col("budget").fill_null(0)], descending=[True, False, False, False]
    )


# ================================================================================== Table 6


TABLE6_SCHEMA = {
    "model": pl.Utf8,
    "population": pl.Utf8,
    "budget": pl.Int64,
    "group_size": pl.Int64,
    "n_layers": pl.Int64,
    **COUNT_COLUMNS,
    **interval_columns("auc"),
    "auc_n_pos": pl.Int64,
    "edge_rate": pl.Float64,
    "interior_rate": pl.Float64,
    **interval_columns("edge_int_ratio"),
    "rho_depth": pl.Float64,
    "rho_phi_es_pool": pl.Float64,
    "n_pooled": pl.Int64,
    **interval_columns("median_kappa_hat_bal"),
}


def table6(records: pl.DataFrame, settings: StatisticsSettings = StatisticsSettings()) -> pl.DataFrame:
    """Table 6 (panel), per model: at the map budget, AUC of the dropped mass for the label (document
    intervals), the edge/interior label-rate ratio (edges: first and last ``edge_layers`` layers; cell
    intervals), ``rho_depth`` (Spearman over layers of the per-layer median dropped mass and label
    rate); pooled over the enumerated budgets, ``rho(Phi, ES_pool)`` and median ``kappa_hat_bal``."""
    frame = prepare(records, settings).filter(pl.col("enumerated"))
    st = GroupStatistics(settings)
    rows = []
    for population, pop in populations(frame):
        for key, g in groups(pop, ["model"]):
            at_map = g.filter(pl.col("is_map_budget"))
            row = {"population": population, **key, "budget": settings.map_budget, **st.counts(at_map)}
            sizes = g["group_size"].unique().to_list()
            row["group_size"] = sizes[0] if len(sizes) == 1 else None
            row.update(st.auc(at_map, "dropped_mass", "label", "auc"))
            row.update(_edge_interior(st.clean(at_map, "label"), settings))
            row.update(_rho_depth(st.clean(at_map, "label", "dropped_mass")))
            row.update(st.spearman(g, "phi", "es_pool", "rho_phi_es_pool"))
            row["n_pooled"] = int((~g["degenerate"]).sum())
            row.update(st.median(g, "kappa_hat_bal", "median_kappa_hat_bal"))
            rows.append(row)
    return frame_from_rows(rows, TABLE6_SCHEMA)


def _edge_interior(g: pl.DataFrame, settings: StatisticsSettings) -> dict:
    out = {
        "n_layers": None,
        "edge_rate": None,
        "interior_rate": None,
        "edge_int_ratio": None,
        "edge_int_ratio_low": None,
        "edge_int_ratio_high": None,
    }
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
        iv = cluster_bootstrap(
            {"edge": edge, "y": y},
            ratio,
            cluster=cells,
            B=settings.bootstrap,
            seed=settings.seed,
            level=settings.level,
            nan_policy="omit",
        )
        out.update(edge_int_ratio_low=iv.low, edge_int_ratio_high=iv.high)
    return out


def _rho_depth(g: pl.DataFrame) -> dict:
    if g.height == 0:
        return {"rho_depth": None}
    per_layer = g.group_by("layer").agg(
        pl.col("dropped_mass").median().alias("m"), pl.col("label").cast(pl.Float64).mean().alias("r")
    )
    if per_layer.height < 2:
        return {"rho_depth": None}
    value = spearman(per_layer["m"].to_numpy(), per_layer["r"].to_numpy())
    return {"rho_depth": None if math.isnan(value) else value}


# ================================================================================== Table 8


TABLE8_SCHEMA = {
    "model": pl.Utf8,
    "population": pl.Utf8,
    "budget": pl.Int64,
    "group_size": pl.Int64,
    **COUNT_COLUMNS,
    "median_kappa_hat": pl.Float64,
    "share90": pl.Float64,
    "label_share": pl.Float64,
    "median_pi_hat": pl.Float64,
    "p99_pi_hat": pl.Float64,
    "rho_phi_es_pool": pl.Float64,
    "median_geo_ratio": pl.Float64,
    "median_lev_ratio": pl.Float64,
    "median_geo_pool_ratio": pl.Float64,
    "median_lev_pool_ratio": pl.Float64,
    "top_attains_share": pl.Float64,
    "coverage_1_5": pl.Float64,
    "coverage_2": pl.Float64,
    "median_n_swaps": pl.Float64,
    "median_vote_over_top": pl.Float64,
    "median_vote_over_pool": pl.Float64,
    "vote_degraded_share": pl.Float64,
    "vote_improved_share": pl.Float64,
}


def profile(st: GroupStatistics, g: pl.DataFrame) -> dict:
    """The per-budget profile statistics of one group (Table 8's columns)."""
    kh = st.clean(g, "kappa_hat")["kappa_hat"].to_numpy()
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


def table8(records: pl.DataFrame, settings: StatisticsSettings = StatisticsSettings()) -> pl.DataFrame:
    """Table 8 (per-budget profile), per (model, enumerated budget): median ``kappa_hat``, the 0.9-form
    share, median and 99th percentile of ``pi_hat``, ``rho(Phi, ES_pool)``, median geometric and
    leverage ratios over ``es_top`` (all keys and pool-restricted), the fraction where top-mass
    attains ES_pool, coverage ``kappa_hat <= 1.5`` and ``<= 2``, median swaps, and the group vote's
    cost (median ``es_vote/es_top``, ``es_vote/ES_pool``, fractions degraded and improved)."""
    frame = prepare(records, settings).filter(pl.col("enumerated"))
    st = GroupStatistics(settings)

    def one(g: pl.DataFrame) -> dict:
        sizes = g["group_size"].unique().to_list()
        return {"group_size": sizes[0] if len(sizes) == 1 else None, **profile(st, g)}

    return frame_from_rows(per_group(frame, ["model", "budget"], one), TABLE8_SCHEMA)


# ================================================================================== everything


def summarize(
    records: pl.DataFrame,
    settings: StatisticsSettings = StatisticsSettings(),
    population: HeadlinePopulation = HeadlinePopulation(),
) -> dict[str, pl.DataFrame]:
    """Every statistics frame of the ceiling records, the records prepared once: Table 2 on the headline
    families over every corpus, the others on the headline population."""
    frame = prepare(records, settings)
    headline = population.select(frame)
    out = {
        name: fn(headline, settings)
        for name, fn in (("fig1", fig1), ("fig2", fig2), ("table1", table1), ("table6", table6), ("table8", table8))
    }
    out["table2"] = table2(population.families(frame), settings)
    return {name: out[name] for name in ("fig1", "fig2", "table1", "table2", "table6", "table8")}
