"""The held-out loss statistics (paper spec §6) beyond the loss table: curvature and the probe.  The loss
table itself (per-document CE, the paired document resamples, the table's definitions) is
:mod:`trustmass.report.frames.loss_table`; the loss claims, declared as data (:data:`HEADLINE`) and read
from the claims frames :func:`claim_frames` builds, are :mod:`trustmass.report.frames.loss_claims`.  Both
are re-exported here.

:func:`statistics` is the rule ``loss_statistics``: the loss table, the allocation panel, the probe,
curvature and their claims; a panel the config switches off (no input files) is an empty frame.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from trustmass.plumbing.rule_io import read_parquets
from trustmass.report.engine import StatisticsSettings, frame_from_rows, interval_columns
from trustmass.report.frames.loss_claims import HEADLINE, PROBE_IS_TOP_MASS, claim_frames, headline
from trustmass.report.frames.loss_table import ALL_CELL, POPULATION, Replicates, document_ce, loss_table
from trustmass.report.statistics import Frames, Inputs, bootstrap_seeds

__all__ = [
    "HEADLINE",
    "PROBE_IS_TOP_MASS",
    "claim_frames",
    "curvature_table",
    "document_ce",
    "headline",
    "loss_table",
    "probe_table",
    "statistics",
]

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


def statistics(inputs: Inputs, config: Mapping[str, Any]) -> Frames:
    """Rule ``loss_statistics``: the held-out token NLLs (``tokens``), the allocation panels, the probe's
    recalls, the curvature rows and the per-cell frames (``cells``) -> the loss frames and ``headline_loss``."""
    settings = StatisticsSettings.from_config(config)
    files = list(inputs["tokens"])
    tokens = read_parquets(files)
    table = loss_table(tokens, settings)
    panels, recalls, curvature_files = (list(inputs[k]) for k in ("allocation", "probe", "curvature"))
    allocation = read_parquets(panels) if panels else pl.DataFrame()
    probe = probe_table(tokens, read_parquets(recalls), settings) if recalls else pl.DataFrame()
    curvature = (
        curvature_table(read_parquets(curvature_files), table, read_parquets(list(inputs["cells"])), settings)
        if curvature_files
        else pl.DataFrame()
    )
    claims = claim_frames(
        table, tuple(config["loss"]["rules"]), allocation=allocation, probe=probe, curvature=curvature
    )
    frames = {
        "loss_table": table,
        "allocation": allocation,
        "probe": probe,
        "curvature": curvature,
        "headline_loss": headline(claims),
    }
    return Frames(
        frames,
        seeds=bootstrap_seeds(settings),
        notes=[f"{tokens.height} token NLLs from {len(files)} held-out documents; {settings}"],
    )
