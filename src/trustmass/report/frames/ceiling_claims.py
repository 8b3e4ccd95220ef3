"""The claim values the ceiling records regenerate (spec §9: §2.1-2.3 and the App B ones), as rows of
the one headline schema (:mod:`trustmass.report.headline`).

:data:`HEADLINE` (declared in :mod:`trustmass.report.frames.ceiling_values`) maps each (claim, value name of
``data/claims.yaml``) to the statistics frame and column it is read from.  The frames are the figure/table frames
of :mod:`trustmass.report.frames.ceiling` plus a few made only for claims (``pooled``: per budget over the headline
families; ``group_vote``: per group size; ``bounds``/``bounds_model``; ``covered``; ``counts``;
``content``/``content_budgets``: Table 2's population, budgets pooled / per budget; ``deep_layers``;
``pi_by_mass``; ``family_order``).  Symbolic ``where`` values resolve here (:func:`_resolved`) before
``declared_rows`` reads every declaration.

:func:`statistics` is the rule ``ceiling_statistics``: the ceiling records in, the frames of
:mod:`trustmass.report.frames.ceiling` and the headline out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import polars as pl

from trustmass.core.stats import kendall_tau_b, median, spearman
from trustmass.plumbing.rule_io import read_parquets
from trustmass.report.engine import (
    POOLED,
    GroupStatistics,
    HeadlinePopulation,
    StatisticsSettings,
    frame_from_rows,
    groups,
    models_of,
    per_group,
    populations,
)
from trustmass.report.frames.ceiling import COVERAGE, TABLE8_SCHEMA, prepare, profile, summarize
from trustmass.report.frames.ceiling_values import HEADLINE
from trustmass.report.headline import HeadlineValue, declared_rows, headline_frame
from trustmass.report.statistics import Frames, Inputs, bootstrap_seeds

__all__ = ["HEADLINE", "THRESHOLD_SWEEP", "claim_frames", "headline", "statistics"]

#: the kappa_hat thresholds of claim 100's sweep (the paper: 1.00-1.43)
THRESHOLD_SWEEP = (1.0, 1.05, 1.11, 1.2, 1.3, 1.43)
#: deciles of m_s * sqrt(s) for claim 85's binned medians of pi_hat
PI_BINS = 10


def _half_widths(frame: pl.DataFrame, *names: str) -> pl.DataFrame:
    return frame.with_columns(
        [((pl.col(f"{n}_high") - pl.col(f"{n}_low")) / 2).alias(f"{n}_half_width") for n in names]
    )


def _over_stated_budget(table: pl.DataFrame, column: str, budget: int, name: str) -> pl.DataFrame:
    """``table`` with ``name``: ``column`` over the same (population, model)'s value at ``budget`` (claim 32's "at
    or above the s = 32 level"); null where the run has no such budget or its value is not positive."""
    base = table.filter(pl.col("budget") == budget).select("population", "model", pl.col(column).alias("_base"))
    return (
        table.join(base, on=["population", "model"], how="left", maintain_order="left")
        .with_columns(pl.when(pl.col("_base") > 0).then(pl.col(column) / pl.col("_base")).alias(name))
        .drop("_base")
    )


def _claim_frames(
    records: pl.DataFrame,
    population: HeadlinePopulation,
    settings: StatisticsSettings,
    frames: Mapping[str, pl.DataFrame],
    content: Mapping[str, str],
) -> dict[str, pl.DataFrame]:
    """Every frame :data:`HEADLINE` reads, from the prepared records of the whole study: the headline
    population (most claims), the headline families on every corpus (Table 2's), every model on
    the headline corpus (claim 1's panel) and every model (claim 17)."""
    headline = population.select(records)
    families = population.families(records)
    panel = HeadlinePopulation(corpus=population.corpus).select(records)
    st = GroupStatistics(settings)
    enum = headline.filter(pl.col("enumerated"))
    out = dict(frames)
    table1 = out["table1"].filter(pl.col("model") != POOLED)
    out["table1"] = _over_stated_budget(table1, "median_balancing_share", 32, "balancing_share_over_s32").with_columns(
        dropped_mass_fall=pl.when(pl.col("median_mass_share_of_map") > 0).then(1.0 / pl.col("median_mass_share_of_map"))
    )
    out["fig2_models"] = (
        out["fig2"]
        .group_by(["population", "model"])
        .agg(
            pl.col("cell_auc").first(), pl.col("n_cells").first(), pl.col("n_docs").max(), pl.col("n_degenerate").sum()
        )
    )
    kind = pl.col("corpus").replace_strict(dict(content), default=None, return_dtype=pl.Utf8)
    out["content"] = _half_widths(out["table2"].filter(pl.col("budget").is_null()), "auc", "label_share").with_columns(
        content=kind
    )
    out["content_budgets"] = out["table2"].filter(pl.col("budget").is_not_null()).with_columns(content=kind)
    out["table6"] = _half_widths(out["table6"], "auc")

    def pooled(g: pl.DataFrame) -> dict:
        return {"models": models_of(g), **profile(st, g)}

    pooled_schema = {
        "population": pl.Utf8,
        "budget": pl.Int64,
        "models": pl.Utf8,
        **{k: v for k, v in TABLE8_SCHEMA.items() if k not in ("model", "population", "budget", "group_size")},
    }
    out["pooled"] = frame_from_rows(per_group(enum, ["budget"], pooled), pooled_schema)
    out["group_vote"] = pl.DataFrame(
        per_group(headline, ["group_size"], lambda g: _vote(st, g)), infer_schema_length=None
    )

    def covered(g: pl.DataFrame) -> dict:
        kept = g.filter(pl.col("kappa_hat") <= COVERAGE[0])
        return {
            **st.counts(kept),
            "median_kappa_hat": st.value(kept, "kappa_hat"),
            "p90_kappa_hat": st.value(kept, "kappa_hat", 0.9),
        }

    out["covered"] = pl.DataFrame(per_group(enum, ["model"], covered), infer_schema_length=None)
    out["bounds"] = _bounds(st, enum)
    out["bounds_model"] = pl.DataFrame(
        per_group(enum, ["model"], lambda g: _bounds_model(st, g)), infer_schema_length=None
    )
    at_map = enum.filter(pl.col("is_map_budget"))
    out["bound_auc"] = pl.DataFrame(per_group(at_map, ["model"], lambda g: _bound_auc(st, g)), infer_schema_length=None)
    out["counts"] = pl.DataFrame(per_group(headline, [], _counts), infer_schema_length=None)
    out["content_counts"] = pl.DataFrame(per_group(families, ["model"], _counts), infer_schema_length=None)
    out["panel_counts"] = pl.DataFrame(per_group(panel, [], _counts), infer_schema_length=None)
    out["study_counts"] = pl.DataFrame(per_group(records, [], _counts), infer_schema_length=None)
    out["deep_layers"] = _deep_layers(st, at_map)
    out["pi_by_mass"] = pl.DataFrame(per_group(enum, ["model"], lambda g: _pi_by_mass(st, g)), infer_schema_length=None)
    out["family_order"] = _family_order(st, at_map, settings.map_budget)
    return out


def _vote(st: GroupStatistics, g: pl.DataFrame) -> dict:
    """The group vote's cost at the map budget, and its worst ratio to top-mass over every budget."""
    ratio = st.clean(g, "vote_over_top")["vote_over_top"].to_numpy()
    worst = float(ratio[np.argmax(np.abs(ratio - 1.0))]) if ratio.size else None
    at_map = g.filter(pl.col("is_map_budget"))
    return {
        "models": models_of(g),
        **st.counts(at_map),
        "median_vote_over_top": st.value(at_map, "vote_over_top"),
        "median_vote_over_pool": st.value(at_map, "vote_over_pool"),
        "vote_degraded_share": st.fraction(at_map, "vote_degraded"),
        "vote_improved_share": st.fraction(at_map, "vote_improved"),
        "worst_vote_over_top": worst,
    }


def _bounds(st: GroupStatistics, enum: pl.DataFrame) -> pl.DataFrame:
    rows = []
    for population, pop in populations(enum):
        for key, g in groups(pop, ["model"]):
            for bound in ("bound_2dm", "bound_var"):
                rows.append(
                    {
                        "population": population,
                        **key,
                        "bound": bound,
                        **st.counts(g),
                        "rho_es_top": st.rank_correlation(g, bound, "es_top"),
                        "rho_kappa_hat": st.rank_correlation(g, bound, "kappa_hat"),
                    }
                )
    return pl.DataFrame(rows, infer_schema_length=None)


def _bounds_model(st: GroupStatistics, g: pl.DataFrame) -> dict:
    row = {**st.counts(g)}
    for bound in ("bound_2dm", "bound_var"):
        row[f"rho_{bound}_es_top"] = st.rank_correlation(g, bound, "es_top")
        row[f"rho_{bound}_kappa_hat"] = st.rank_correlation(g, bound, "kappa_hat")
    row["rho_dropped_mass_kappa_hat"] = st.rank_correlation(g, "dropped_mass", "kappa_hat")
    row["rho_label_dropped_mass"] = st.rank_correlation(
        g.with_columns(pl.col("label").cast(pl.Float64)), "label", "dropped_mass"
    )
    return row


def _bound_auc(st: GroupStatistics, g: pl.DataFrame) -> dict:
    """Claim 98: the published bounds and the dropped mass as scores for the label, at the map budget."""
    row = {**st.counts(g)}
    for score in ("bound_2dm", "bound_var", "dropped_mass"):
        row.update(st.auc(g, score, "label", f"auc_{score}"))
    return row


def _counts(g: pl.DataFrame) -> dict:
    e = g.filter(pl.col("enumerated"))
    per_cell = e.group_by(["model", "corpus", "doc", "layer", "head"]).agg(pl.col("query_pos").n_unique().alias("r"))
    docs = g.group_by(["model", "corpus"]).agg(pl.col("doc").n_unique().alias("d"))
    return {
        "n": e.height,
        "n_docs": int(g["cluster"].n_unique()),
        "n_degenerate": int(e["degenerate"].sum()),
        "models": models_of(g),
        "n_models": g["model"].n_unique(),
        "n_records_enumerated": e.height,
        "rows_per_head_per_doc": median(per_cell["r"].to_numpy()) if per_cell.height else None,
        "docs_per_corpus": median(docs["d"].to_numpy()) if docs.height else None,
    }


def _deep_layers(st: GroupStatistics, at_map: pl.DataFrame) -> pl.DataFrame:
    """Claim 87, per model: the layer whose median D is largest, with its median D and median dropped
    mass at the map budget (the paper: one family at D ~ 500 and m_s ~ 0.07 there)."""
    rows = []
    for population, pop in populations(at_map):
        for key, g in groups(pop, ["model"]):
            per_layer = [(layer, st.value(lg, "D"), lg) for (layer,), lg in g.group_by(["layer"])]
            per_layer = [x for x in per_layer if x[1] is not None]
            if not per_layer:
                continue
            layer, d, lg = max(per_layer, key=lambda x: (x[1], -x[0]))
            rows.append(
                {
                    "population": population,
                    **key,
                    "layer": int(layer),
                    **st.counts(lg),
                    "median_D": d,
                    "median_dropped_mass": st.value(lg, "dropped_mass"),
                }
            )
    return pl.DataFrame(rows, infer_schema_length=None)


def _pi_by_mass(st: GroupStatistics, g: pl.DataFrame) -> dict:
    """Claim 85: Spearman's rho between the decile of m_s sqrt(s) and the median pi_hat in it
    (spec §8: binned medians by deciles of m_s sqrt(s)); > 0 when the median rises."""
    clean = st.clean(g, "pi_hat", "dropped_mass")
    row = {**st.counts(g), "rho_binned": None}
    if clean.height < PI_BINS:
        return row
    x = (clean["dropped_mass"] * clean["budget"].cast(pl.Float64).sqrt()).to_numpy()
    order = np.argsort(x, kind="stable")
    bins = np.empty(x.size, dtype=np.int64)
    bins[order] = np.arange(x.size) * PI_BINS // x.size
    y = clean["pi_hat"].to_numpy()
    medians = [median(y[bins == b]) for b in range(PI_BINS)]
    value = spearman(np.arange(PI_BINS, dtype=float), np.asarray(medians))
    row["rho_binned"] = None if math.isnan(value) else value
    return row


def _family_order(st: GroupStatistics, at_map: pl.DataFrame, budget: int) -> pl.DataFrame:
    """Claim 100: the families ordered by their label rate at the map budget, at every threshold of
    :data:`THRESHOLD_SWEEP`; the smallest Kendall tau-b between any threshold's order and the
    configured threshold's.  Needs two families or more (none: no row)."""
    rows = []
    for population, pop in populations(at_map):
        clean = st.clean(pop, "kappa_hat")
        models = sorted(clean["model"].unique().to_list())
        if len(models) < 2:
            continue
        rates = {
            t: [float((clean.filter(pl.col("model") == m)["kappa_hat"] > t).mean()) for m in models]
            for t in THRESHOLD_SWEEP
        }
        base = [float(clean.filter(pl.col("model") == m)["label"].mean()) for m in models]
        taus = [kendall_tau_b(base, r) for r in rates.values()]
        rows.append(
            {
                "population": population,
                "budget": budget,
                "n_families": len(models),
                "models": ",".join(models),
                "n": clean.height,
                "n_docs": int(clean["cluster"].n_unique()),
                "min_kendall_tau": float(np.nanmin(taus)),
            }
        )
    return pl.DataFrame(rows, infer_schema_length=None)


def _resolved(
    spec: HeadlineValue,
    settings: StatisticsSettings,
    budgets: Mapping[str, tuple[int, ...]],
    sources: Mapping[str, pl.DataFrame],
) -> HeadlineValue:
    """``spec`` with its symbolic ``where`` and ``at`` values made literal: ``"map"`` the map budget,
    ``"enumerated"``/``"native"`` the budgets present, ``"largest"``/``"largest_native"`` the largest of them,
    group size ``"shared"`` every group size > 1 in the frame."""
    where = {}
    for col, allowed in spec.where.items():
        if allowed == "map":
            allowed = (settings.map_budget,)
        elif allowed in ("enumerated", "native"):
            allowed = budgets[allowed]
        elif allowed == "largest":
            allowed = budgets["enumerated"][-1:]
        elif allowed == "largest_native":
            allowed = budgets["native"][-1:]
        elif allowed == "shared":
            frame = sources.get(spec.source)
            present = frame[col].unique().to_list() if frame is not None and col in frame.columns else []
            allowed = tuple(sorted(v for v in present if v is not None and v > 1))
        where[col] = allowed
    at = {dim: settings.map_budget if v == "map" else v for dim, v in spec.at.items()}
    return replace(spec, where=where, at=at)


def claim_frames(
    records: pl.DataFrame,
    settings: StatisticsSettings = StatisticsSettings(),
    population: HeadlinePopulation = HeadlinePopulation(),
    frames: Mapping[str, pl.DataFrame] | None = None,
    content: Mapping[str, str] | None = None,
) -> tuple[list[HeadlineValue], dict[str, pl.DataFrame]]:
    """Every declaration of :data:`HEADLINE`, its symbolic filters resolved for these records, and every frame
    the declarations read (:func:`_claim_frames`); arguments as :func:`headline`'s."""
    frame = prepare(records, settings)
    selected = population.select(frame)
    budgets = {
        "enumerated": tuple(sorted(selected.filter(pl.col("enumerated"))["budget"].unique().to_list())),
        "native": tuple(sorted(selected.filter(~pl.col("enumerated"))["budget"].unique().to_list())),
    }
    frames = frames if frames is not None else summarize(records, settings, population)
    sources = _claim_frames(frame, population, settings, frames, content or {})
    return [_resolved(spec, settings, budgets, sources) for spec in HEADLINE], sources


def headline(
    records: pl.DataFrame,
    settings: StatisticsSettings = StatisticsSettings(),
    population: HeadlinePopulation = HeadlinePopulation(),
    frames: Mapping[str, pl.DataFrame] | None = None,
    content: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """One row per regenerated claim value (:data:`HEADLINE`) and group, on both populations: every declaration
    read by ``declared_rows`` from the frames of :func:`claim_frames`.

    ``frames`` reuses the statistics frames of :func:`~trustmass.report.frames.ceiling.summarize`
    (same records, settings and population); ``content`` maps corpus names to their content kind
    (prose / code / french: ``corpora.<name>.content`` in the config) for claim 41's code row.
    """
    return headline_frame(declared_rows(*claim_frames(records, settings, population, frames, content)))


def statistics(inputs: Inputs, config: Mapping[str, Any]) -> Frames:
    """Rule ``ceiling_statistics``: every ceiling record of the study (``records``) -> the frames of
    Figures 1-2, Tables 1, 2, 6, 8 and ``headline_ceiling``; ``config["content"]``: the corpora's content kinds."""
    settings, population = StatisticsSettings.from_config(config), HeadlinePopulation.from_config(config)
    files = list(inputs["records"])
    records = read_parquets(files)
    frames = summarize(records, settings, population)
    frames["headline_ceiling"] = headline(records, settings, population, frames, config["content"])
    values = frames["headline_ceiling"].select("claim_id", "value_name").n_unique()
    return Frames(
        frames,
        summary={"records": records.height, "headline_values": values},
        seeds=bootstrap_seeds(settings),
        population=population.describe(),
        notes=[
            f"{records.height} records from {len(files)} files; headline population: {population.describe()}; {settings}"
        ],
    )
