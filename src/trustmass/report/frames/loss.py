"""The held-out loss statistics (paper spec §6) beyond the loss table: curvature, the probe and the
loss claims.  The loss table itself (per-document CE, the paired document resamples, the table's
definitions) is :mod:`trustmass.report.frames.loss_table`, re-exported here.

:func:`statistics` is the rule ``loss_statistics``: the loss table, the allocation panel, the probe,
curvature and their claims; a panel the config switches off (no input files) is an empty frame.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import polars as pl

from trustmass.plumbing.rule_io import read_parquets
from trustmass.report.engine import StatisticsSettings, frame_from_rows, interval_columns
from trustmass.report.frames.loss_table import ALL_CELL, POPULATION, RANDOM, Replicates, document_ce, loss_table
from trustmass.report.headline import headline_frame, row
from trustmass.report.statistics import Frames, Inputs, bootstrap_seeds

# ------------------------------------------------------------------------------------ curvature

CURVATURE_TABLE_SCHEMA = {
    "model": pl.Utf8,
    "population": pl.Utf8,
    "cell_set": pl.Utf8,
    "n_cells": pl.Int64,
    "n_docs": pl.Int64,
    "n": pl.Int64,
    **interval_columns("predicted_share", "replayed_share", "measured_share"),
    "first_order": pl.Float64,
    "second_order": pl.Float64,
    "predicted": pl.Float64,
    "replayed": pl.Float64,
    "measured_gain": pl.Float64,
    "es_reduction": pl.Float64,
    "conversion_constant": pl.Float64,
    "mean_dropped_mass": pl.Float64,
}


def curvature_table(
    curvature: pl.DataFrame,
    table: pl.DataFrame,
    cells: pl.DataFrame,
    settings: StatisticsSettings = StatisticsSettings(),
) -> pl.DataFrame:
    """Per (model, cell set): the second-order prediction's share of the all-cell change (mean over
    documents of ``g'd + d'Hd/2``, divided by the all-cell mean, on the loss table's document
    resamples) beside the measured share of the same switch (the loss table's); and the
    conversion constant ``gain / es_reduction``: nats of CE per unit of mean es removed on the
    switched cells (``es_reduction`` = mean over documents and switched cells of
    es(top-mass) - es(switch), from the per-cell frames), with the switched cells' mean dropped mass
    under top-mass.  `curvature` holds the rule loss_curvature's frames, `table` the loss table."""
    rows = []
    frame = curvature.with_columns(cluster=pl.concat_str("corpus", "doc", separator="/"))
    for (model,), g in frame.group_by(["model"], maintain_order=True):
        predicted = Replicates(g, settings, on="cell_set", values="predicted")
        replayed = Replicates(
            g.with_columns(pl.col("replayed").fill_null(float("nan"))), settings, on="cell_set", values="replayed"
        )
        measured = {r["config"]: r for r in table.filter(pl.col("model") == model).iter_rows(named=True)}
        reduction = _es_reduction(cells.filter(pl.col("model") == model))
        for (cell_set,), c in g.group_by(["cell_set"], maintain_order=True):
            loss = measured.get(cell_set, {})
            es_cut, dropped = reduction.get(cell_set, (None, None))
            gain = loss.get("gain")
            rows.append(
                {
                    "model": model,
                    "population": POPULATION,
                    "cell_set": cell_set,
                    "n_cells": int(c["n_cells"][0]),
                    "n_docs": c.height,
                    "n": loss.get("n"),
                    **predicted.interval(
                        "predicted_share", lambda s=cell_set: predicted.of(s) / predicted.of(ALL_CELL)
                    ),
                    **replayed.interval("replayed_share", lambda s=cell_set: replayed.of(s) / replayed.of(ALL_CELL)),
                    "measured_share": loss.get("share"),
                    "measured_share_low": loss.get("share_low"),
                    "measured_share_high": loss.get("share_high"),
                    **{k: float(c[k].mean()) for k in ("first_order", "second_order", "predicted")},
                    "replayed": float(c["replayed"].mean()) if c["replayed"].null_count() == 0 else None,
                    "measured_gain": gain,
                    "es_reduction": es_cut,
                    "mean_dropped_mass": dropped,
                    "conversion_constant": gain / es_cut if gain is not None and es_cut else None,
                }
            )
    return frame_from_rows(rows, CURVATURE_TABLE_SCHEMA)


def _es_reduction(cells: pl.DataFrame) -> dict[str, tuple[float, float]]:
    """config -> (mean es(top-mass) - es(config), mean dropped mass under top-mass) over the config's
    switched cells of every document."""
    key = ["corpus", "doc", "layer", "head"]
    top = cells.filter(pl.col("config") == "top_mass").select(*key, es_top="mean_es", dropped_top="mean_dropped_mass")
    switched = cells.filter(pl.col("switched")).join(top, on=key, how="inner")
    out = {}
    for (config,), g in switched.group_by(["config"]):
        out[config] = (float((g["es_top"] - g["mean_es"]).mean()), float(g["dropped_top"].mean()))
    return out


def curvature_headline(table: pl.DataFrame) -> pl.DataFrame:
    """Claims 126 (the flat switch's predicted and measured shares, per model) and 58 (how many
    orders of magnitude the conversion constant spans over the models; with three or more, the rank
    correlation of the constant with the reconstruction gain, the paper's 'smallest where the gain
    is largest')."""
    flat = table.filter(pl.col("cell_set") == "flat_switch")
    rows = []
    for rec in flat.iter_rows(named=True):
        by, common = {"model": rec["model"]}, dict(n_docs=rec["n_docs"], models=rec["model"], n_instances=rec["n"])
        for value, col in (("predicted_share", "predicted_share"), ("measured_share", "measured_share")):
            rows.append(
                row(
                    126,
                    value,
                    rec[col],
                    POPULATION,
                    by=by,
                    low=rec[f"{col}_low"],
                    high=rec[f"{col}_high"],
                    source=f"curvature[flat_switch].{col}",
                    **common,
                )
            )
    constants = flat.filter(pl.col("conversion_constant") > 0)
    if constants.height >= 2:
        c = constants["conversion_constant"].to_numpy()
        models = ",".join(sorted(constants["model"].to_list()))
        rows.append(
            row(
                58,
                "conversion_constant_orders_of_magnitude",
                float(np.log10(c.max() / c.min())),
                POPULATION,
                models=models,
                n_docs=int(constants["n_docs"].min()),
                source="curvature[flat_switch].conversion_constant",
            )
        )
        if constants.height >= 3:
            from scipy.stats import spearmanr

            rho = spearmanr(c, constants["es_reduction"].to_numpy()).statistic
            rows.append(
                row(
                    58,
                    "constant_vs_reconstruction_gain_spearman",
                    float(rho),
                    POPULATION,
                    models=models,
                    source="curvature[flat_switch]: conversion_constant vs es_reduction",
                )
            )
    return headline_frame(rows)


# ---------------------------------------------------------------------------------------- the probe

PROBE_SCHEMA = {
    "model": pl.Utf8,
    "population": pl.Utf8,
    "alpha": pl.Float64,
    "rank": pl.Int64,
    "train_docs": pl.Int64,
    "n_calibration_docs": pl.Int64,
    "n_docs": pl.Int64,
    "n": pl.Int64,
    **interval_columns("probe_ce_change", "balancing_ce_change", "probe_share"),
    "recall": pl.Float64,
    "precision": pl.Float64,
    "stay": pl.Float64,
    "swap_rows": pl.Int64,
    "recall_trained_scale": pl.Float64,
}


def probe_table(
    tokens: pl.DataFrame, recall: pl.DataFrame, settings: StatisticsSettings = StatisticsSettings()
) -> pl.DataFrame:
    """The probe (App E), per model: alpha chosen on the first half of the held-out documents (lowest
    CE, alpha = 0 being top-mass), then on the other half the CE changes against top-mass of the
    probe and of all-cell balancing and the probe's share of balancing's reduction (paired
    intervals), with the held-out swap recall at the chosen alpha and at alpha = 1, the scale the
    probe was trained at (the chosen alpha may be 0, where the probe is top-mass and recalls nothing).  One held-out document serves
    both halves (flagged by ``n_calibration_docs == n_docs``)."""
    per_doc = document_ce(tokens.filter(pl.col("accounting") == "per_query"))
    rows = []
    for (model,), g in per_doc.group_by(["model"], maintain_order=True):
        probes = g.filter(pl.col("base_rule") == "probe")
        if probes.height == 0 or recall.filter(pl.col("model") == model).height == 0:
            continue
        clusters = sorted(g["cluster"].unique().to_list())
        half = max(1, (len(clusters) + 1) // 2)
        calibration, check = clusters[:half], clusters[half:] or clusters[:half]
        alphas = {0.0: "top_mass", **{float(a): c for a, c in probes.select("alpha", "config").unique().iter_rows()}}
        cal = g.filter(pl.col("cluster").is_in(calibration)).group_by("config").agg(pl.col("ce").mean())
        cal_ce = dict(cal.iter_rows())
        alpha = min(alphas, key=lambda a: (cal_ce.get(alphas[a], float("inf")), a))
        chosen = alphas[alpha]
        part = g.filter(pl.col("cluster").is_in(check))
        reps = Replicates(part, settings)
        top, bal, probe = reps.of("top_mass"), reps.of("all_cell"), reps.of(chosen)
        mine = recall.filter(pl.col("model") == model)
        at = mine.filter((pl.col("alpha") - alpha).abs() < 1e-12).row(0, named=True)
        trained = mine.filter((pl.col("alpha") - 1.0).abs() < 1e-12)
        rows.append(
            {
                "model": model,
                "population": POPULATION,
                "alpha": alpha,
                "rank": at["rank"],
                "train_docs": at["train_docs"],
                "n_calibration_docs": len(calibration),
                "n_docs": len(check),
                "n": int(part.filter(pl.col("config") == chosen)["n"].sum()),
                **reps.interval("probe_ce_change", lambda: probe - top),
                **reps.interval("balancing_ce_change", lambda: bal - top),
                **reps.interval("probe_share", lambda: (top - probe) / (top - bal)),
                "recall": at["recall"],
                "precision": at["precision"],
                "stay": at["stay"],
                "swap_rows": at["swap_rows"],
                "recall_trained_scale": trained["recall"][0] if trained.height else None,
            }
        )
    return frame_from_rows(rows, PROBE_SCHEMA)


#: why the probe's CE change and share say nothing when the calibration chose alpha = 0
PROBE_IS_TOP_MASS = (
    "the probe chose alpha = 0: it is top-mass, so its CE change against top-mass and its share of "
    "the loss reduction are 0 by construction"
)


def probe_headline(table: pl.DataFrame) -> pl.DataFrame:
    """Claims 57 and 124 from the probe table."""
    rows = []
    for rec in table.iter_rows(named=True):
        by, common = {"model": rec["model"]}, dict(n_docs=rec["n_docs"], models=rec["model"], n_instances=rec["n"])
        top_mass = PROBE_IS_TOP_MASS if rec["alpha"] == 0 else None
        rows.append(
            row(
                57,
                "probe_share_of_loss_reduction",
                rec["probe_share"],
                POPULATION,
                by={**by, "probe_rank": rec["rank"]},
                low=rec["probe_share_low"],
                high=rec["probe_share_high"],
                source="probe.probe_share",
                uninformative=top_mass,
                **common,
            )
        )
        rows.append(
            row(124, "n_training_docs", rec["train_docs"], POPULATION, by=by, source="probe.train_docs", **common)
        )
        rows.append(
            row(
                124,
                "swap_recall",
                rec["recall_trained_scale"],
                POPULATION,
                by=by,
                source="probe.recall_trained_scale (alpha = 1, the scale it was trained at; other corpora's capture documents)",
                **{**common, "n_instances": rec["swap_rows"]},
            )
        )
        for col, uninformative in (("probe_ce_change", top_mass), ("balancing_ce_change", None)):
            rows.append(
                row(
                    124,
                    col,
                    rec[col],
                    POPULATION,
                    by=by,
                    low=rec[f"{col}_low"],
                    high=rec[f"{col}_high"],
                    source=f"probe.{col}",
                    uninformative=uninformative,
                    **common,
                )
            )
    return headline_frame(rows)


# ---------------------------------------------------------------------------------------- claims


def _at_budget(model: str, budget: int | None) -> dict:
    """A model's group at the budget its tokens were decoded at (no budget dimension where they do not say)."""
    return {"model": model} if budget is None else {"model": model, "budget": budget}


def headline(table: pl.DataFrame, rules: tuple[str, ...]) -> pl.DataFrame:
    """Claims 52, 53, 55, 56, 112, 125 from the loss table (per model; per (selector, model) for 55 and 112)."""
    rows = []
    for rec in table.iter_rows(named=True):
        model, cfg = rec["model"], rec["config"]
        common = dict(n_instances=rec["n"], n_docs=rec["n_docs"], models=model, source=f"loss_table[{cfg}]")
        by = {"model": model}
        if cfg == "flat_switch":
            at = _at_budget(model, rec["budget"])
            rows.append(
                row(
                    52,
                    "flat_switch_ce_reduction",
                    rec["gain"],
                    POPULATION,
                    by=at,
                    low=_neg(rec["delta_vs_top_high"]),
                    high=_neg(rec["delta_vs_top_low"]),
                    **common,
                )
            )
            rows.append(row(52, "ce_change_ci_high", rec["delta_vs_top_high"], POPULATION, by=at, **common))
            for claim, value in (
                (53, "flat_switch_share_of_all_cell_gain"),
                (56, "map_share_of_all_cell_gain"),
                (125, "map_share_of_all_cell_gain"),
            ):
                rows.append(
                    row(
                        claim,
                        value,
                        rec["share"],
                        POPULATION,
                        by=by,
                        low=rec["share_low"],
                        high=rec["share_high"],
                        **common,
                    )
                )
        elif cfg == RANDOM:
            rows.append(
                row(
                    125,
                    "random_share_of_all_cell_gain",
                    rec["share"],
                    POPULATION,
                    by=by,
                    low=rec["share_low"],
                    high=rec["share_high"],
                    **common,
                )
            )
        elif rec["base_rule"] in rules and rec["switch_rule"] is not None and rec["accounting"] == "per_query":
            by = {"selector": rec["base_rule"], "model": model}
            for claim in (55, 112):  # 112: the same pairs, on the model playing Qwen3-1.7B
                rows.append(
                    row(
                        claim,
                        "rule_flat_switch_gap_recovered",
                        rec["gap_recovered"],
                        POPULATION,
                        by=by,
                        low=rec["gap_recovered_low"],
                        high=rec["gap_recovered_high"],
                        **common,
                    )
                )
            rows.append(row(55, "paired_ci_high", rec["delta_vs_rule_high"], POPULATION, by=by, **common))
    pairs = table.filter(
        pl.col("base_rule").is_in(list(rules))
        & pl.col("switch_rule").is_not_null()
        & (pl.col("accounting") == "per_query")
        & (pl.col("delta_vs_rule_high") < 0)
    )
    if table.height:
        rows.append(
            row(
                55,
                "n_pairs",
                float(pairs.height),
                POPULATION,
                models=",".join(sorted(set(table["model"]))),
                source="loss_table: (selector, model) pairs with paired CI < 0",
            )
        )
        flat = table.filter((pl.col("config") == "flat_switch") & (pl.col("delta_vs_top_high") < 0))
        rows.append(
            row(
                52,
                "families_with_reduction",
                float(flat.height),
                POPULATION,
                models=",".join(sorted(set(table["model"]))),
                source="loss_table: families with CI < 0",
            )
        )
    rows += _selector_order_rows(table, rules)
    return headline_frame(rows)


def _selector_order_rows(table: pl.DataFrame, rules: tuple[str, ...]) -> list[dict]:
    """Claim 111, per model: the ranks of Quest (from the least) and StreamingLLM (from the most) by
    the CE increase over top-mass of the rules run alone, and per-query minus cache-faithful CE of
    every rule run both ways (needs loss.accounting to include cache_faithful)."""
    out = []
    for (model,), g in table.group_by(["model"], maintain_order=True):
        alone = g.filter(pl.col("base_rule").is_in(list(rules)), pl.col("switch_rule").is_null())
        per_query = alone.filter(pl.col("accounting") == "per_query", pl.col("delta_vs_top").is_not_null())
        increase = dict(zip(per_query["base_rule"], per_query["delta_vs_top"], strict=True))
        common = dict(models=model, n_docs=int(g["n_docs"].max()), source="loss_table[<rule>].delta_vs_top")
        at = _at_budget(model, per_query["budget"][0] if per_query.height else None)
        if len(increase) >= 2:
            if "quest" in increase:
                rank = 1 + sum(v < increase["quest"] for v in increase.values())
                out.append(row(111, "quest_rank_by_ce_increase", float(rank), POPULATION, by=at, **common))
            if "streaming_llm" in increase:
                rank = 1 + sum(v > increase["streaming_llm"] for v in increase.values())
                out.append(
                    row(111, "streaming_llm_rank_from_most_ce_increase", float(rank), POPULATION, by=at, **common)
                )
        faithful = alone.filter(pl.col("accounting") == "cache_faithful")
        for rec in faithful.iter_rows(named=True):
            if rec["base_rule"] in increase:
                diff = float(per_query.filter(pl.col("base_rule") == rec["base_rule"])["ce"][0] - rec["ce"])
                out.append(
                    row(
                        111,
                        "per_query_minus_cache_faithful_ce",
                        diff,
                        POPULATION,
                        by={"selector": rec["base_rule"], "model": model},
                        **{**common, "source": "loss_table: ce[<rule>] - ce[<rule>@cache_faithful]"},
                    )
                )
    return out


def allocation_headline(panel: pl.DataFrame) -> pl.DataFrame:
    """Claim 97: Δes of the map-proportional allocation against uniform, per (model, unit, selector)."""
    rows = [
        row(
            97,
            "allocation_delta_es",
            rec["delta_es"],
            "primary",
            by={"model": rec["model"], "unit_budget": rec["unit"], "selector": rec["selector"]},
            low=rec["delta_lo"],
            high=rec["delta_hi"],
            n_instances=rec["n_rows"],
            n_docs=rec.get("n_docs"),
            models=rec["model"],
            source="allocation[map_proportional].delta_es",
        )
        for rec in panel.filter(pl.col("allocator") == "map_proportional").iter_rows(named=True)
    ]
    return headline_frame(rows)


def _neg(x: float | None) -> float | None:
    return None if x is None else -x


def statistics(inputs: Inputs, config: Mapping[str, Any]) -> Frames:
    """Rule ``loss_statistics``: the held-out token NLLs (``tokens``), the allocation panels, the probe's
    recalls, the curvature rows and the per-cell frames (``cells``) -> the loss frames and ``headline_loss``."""
    settings = StatisticsSettings.from_config(config)
    files = list(inputs["tokens"])
    tokens = read_parquets(files)
    table = loss_table(tokens, settings)
    panels = list(inputs["allocation"])
    allocation = read_parquets(panels) if panels else pl.DataFrame()
    claims = [headline(table, tuple(config["loss"]["rules"]))] + ([allocation_headline(allocation)] if panels else [])
    recalls = list(inputs["probe"])
    probe = probe_table(tokens, read_parquets(recalls), settings) if recalls else pl.DataFrame()
    if recalls:
        claims.append(probe_headline(probe))
    curvature_files = list(inputs["curvature"])
    curvature = (
        curvature_table(read_parquets(curvature_files), table, read_parquets(list(inputs["cells"])), settings)
        if curvature_files
        else pl.DataFrame()
    )
    if curvature_files:
        claims.append(curvature_headline(curvature))
    frames = {
        "loss_table": table,
        "allocation": allocation,
        "probe": probe,
        "curvature": curvature,
        "headline_loss": pl.concat(claims),
    }
    return Frames(
        frames,
        seeds=bootstrap_seeds(settings),
        notes=[f"{tokens.height} token NLLs from {len(files)} held-out documents; {settings}"],
    )
