"""Statistics of the task-structured contexts (spec §2.7, claims 42-47), from their ceiling records.

The task records are ordinary ceiling records (:mod:`trustmass.ceiling.records`) of the task corpus;
each row's role -- ``retrieval`` (its query position predicts a token of the planted answer) or
``background`` -- comes from the task manifest (:mod:`trustmass.sources.task_contexts`).  Frames:

``task_contexts``  per (model, budget, rows in {all, retrieval, background}) and pooled over models
                   (``model = "(pooled)"``): instances, median ``c_hat`` with its document-cluster
                   interval, the 90th percentile of ``kappa_hat``, the share of the value-aware case
                   ``kappa_hat > kappa_threshold`` and the AUC of the dropped mass for it, the share
                   where the value-aware swap rule itself misses the ceiling,
                   ``kappa_hat_bal > kappa_threshold`` (intervals), the retrieval-row share of the
                   instances;
``task_map``       per (model, layer, head) at the map budget: the cell's median dropped mass on task
                   contexts and on the headline corpus (the prose map, Figure 2), the flat flag of each;
``headline_tasks`` claims 42-47 (the pre-registered bounds are judged by the claims report).

Conventions: degenerate records are excluded as everywhere (:mod:`trustmass.report.frames.ceiling`);
"pooled c_hat" is the median over every task instance of a budget [R]; the headroom ratio divides the
90th percentiles of ``kappa_hat`` on retrieval and on background rows [R]; label agreement is the
share of cells whose flat flag is the same on both maps and order correlation Spearman's rho of the
cells' median dropped mass [R].  Every statistic here uses every task document (population ``all``).
:func:`statistics` is the rule ``task_statistics``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from trustmass.plumbing.rule_io import read_parquets
from trustmass.report.engine import (
    COUNT_COLUMNS,
    POOLED,
    GroupStatistics,
    StatisticsSettings,
    frame_from_rows,
    groups,
    interval_columns,
    models_of,
)
from trustmass.report.frames.ceiling import fig2, prepare
from trustmass.report.headline import headline_frame, row
from trustmass.report.statistics import Frames, Inputs, bootstrap_seeds

__all__ = ["POPULATION", "headline", "role_frame", "statistics", "summarize", "task_contexts", "task_map"]

POPULATION = "all"
ROLES = ("all", "retrieval", "background")
HEADROOM_QUANTILE = 0.9

TASK_CONTEXTS_SCHEMA = {
    "population": pl.Utf8,
    "model": pl.Utf8,
    "budget": pl.Int64,
    "rows": pl.Utf8,
    "models": pl.Utf8,
    **COUNT_COLUMNS,
    **interval_columns("median_c_hat"),
    "p90_kappa_hat": pl.Float64,
    **interval_columns("value_aware_rate"),
    **interval_columns("auc_dropped_mass"),
    "auc_dropped_mass_n_pos": pl.Int64,
    "retrieval_share": pl.Float64,
    **interval_columns("value_aware_bal_rate"),
}
TASK_MAP_SCHEMA = {
    "model": pl.Utf8,
    "budget": pl.Int64,
    "layer": pl.Int64,
    "head": pl.Int64,
    "task_dropped_mass": pl.Float64,
    "prose_dropped_mass": pl.Float64,
    "task_flat": pl.Boolean,
    "prose_flat": pl.Boolean,
    "n_task": pl.Int64,
    "n_prose": pl.Int64,
}


def role_frame(manifests: Sequence[Mapping]) -> pl.DataFrame:
    """(model, doc, query_pos, task) of every retrieval row the task manifests name."""
    rows = [
        {"model": m["model"], "doc": f"{r['index']:04d}", "query_pos": int(p), "task": r["task"]}
        for m in manifests
        for r in m["documents"]
        for p in r["retrieval_positions"]
    ]
    schema = {"model": pl.Utf8, "doc": pl.Utf8, "query_pos": pl.Int64, "task": pl.Utf8}
    return pl.DataFrame(rows, schema=schema, orient="row")


def with_roles(records: pl.DataFrame, manifests: Sequence[Mapping], settings: StatisticsSettings) -> pl.DataFrame:
    """Prepared task records with ``role`` (retrieval | background), the value-aware label
    (``label``: kappa_hat > threshold) and ``label_bal`` (kappa_hat_bal > threshold: balancing, the
    value-aware swap rule, misses ES_pool by more than the threshold)."""
    frame = prepare(records, settings)
    roles = role_frame(manifests).select("model", "doc", "query_pos", pl.lit("retrieval").alias("role"))
    frame = frame.join(roles, on=["model", "doc", "query_pos"], how="left")
    return frame.with_columns(
        role=pl.col("role").fill_null("background"),
        label_bal=pl.when(pl.col("enumerated")).then(pl.col("kappa_hat_bal") > settings.kappa_threshold),
    )


def task_contexts(frame: pl.DataFrame, settings: StatisticsSettings) -> pl.DataFrame:
    """The ``task_contexts`` frame from :func:`with_roles` records (enumerated budgets)."""
    frame = frame.filter(pl.col("enumerated"))
    st = GroupStatistics(settings)
    rows = []
    for model_key, by_model in [(POOLED, frame)] + [(k["model"], g) for k, g in groups(frame, ["model"])]:
        for key, g in groups(by_model, ["budget"]):
            n_all = int((~g["degenerate"]).sum())
            n_retrieval = int((~g["degenerate"] & (g["role"] == "retrieval")).sum())
            for role in ROLES:
                part = g if role == "all" else g.filter(pl.col("role") == role)
                rows.append(
                    {
                        "population": POPULATION,
                        "model": model_key,
                        **key,
                        "rows": role,
                        "models": models_of(part),
                        **st.counts(part),
                        **st.median(part, "c_hat", "median_c_hat"),
                        "p90_kappa_hat": st.value(part, "kappa_hat", HEADROOM_QUANTILE),
                        **st.share(part, "label", "value_aware_rate"),
                        **st.auc(part, "dropped_mass", "label", "auc_dropped_mass"),
                        "retrieval_share": n_retrieval / n_all if n_all else None,
                        **st.share(part, "label_bal", "value_aware_bal_rate"),
                    }
                )
    return frame_from_rows(rows, TASK_CONTEXTS_SCHEMA)


def task_map(task_records: pl.DataFrame, prose_records: pl.DataFrame, settings: StatisticsSettings) -> pl.DataFrame:
    """The map on task contexts beside the map on the headline corpus, cell by cell (the map budget)."""
    cells = ["model", "layer", "head"]

    def cell_medians(records: pl.DataFrame, prefix: str) -> pl.DataFrame:
        m = fig2(records, settings).filter(pl.col("population") == POPULATION)
        return m.select(
            *cells,
            "budget",
            pl.col("median_dropped_mass").alias(f"{prefix}_dropped_mass"),
            pl.col("flat").alias(f"{prefix}_flat"),
            pl.col("n").alias(f"n_{prefix}"),
        )

    task, prose = cell_medians(task_records, "task"), cell_medians(prose_records, "prose")
    joined = task.join(prose.drop("budget"), on=cells, how="inner").sort(cells)
    return joined.select(list(TASK_MAP_SCHEMA)).cast(TASK_MAP_SCHEMA)


def summarize(
    task_records: pl.DataFrame, prose_records: pl.DataFrame, manifests: Sequence[Mapping], settings: StatisticsSettings
) -> dict[str, pl.DataFrame]:
    """``task_contexts``, ``task_map`` and the headline."""
    frame = with_roles(task_records, manifests, settings)
    out = {"task_contexts": task_contexts(frame, settings), "task_map": task_map(task_records, prose_records, settings)}
    out["headline_tasks"] = headline(out["task_contexts"], out["task_map"], settings)
    return out


#: claim 44's readings: value name -> (task_contexts column, what it counts)
VALUE_AWARE_READINGS = {
    "value_aware_case_rate": ("value_aware_bal_rate", "kappa_hat_bal"),
    "value_aware_case_rate_ceiling": ("value_aware_bal_rate", "kappa_hat_bal"),
    "value_aware_case_rate_kappa_hat": ("value_aware_rate", "kappa_hat"),
}


def _value_aware_rows(rec: Mapping, threshold: float, common: Mapping) -> list[dict]:
    """Claim 44 on one model's retrieval rows at the map budget, in each reading."""
    by = {"model": rec["model"], "budget": rec["budget"], "rows": "retrieval"}
    return [
        row(
            44,
            value,
            rec[col],
            POPULATION,
            by=by,
            low=rec[f"{col}_low"],
            high=rec[f"{col}_high"],
            source=f"task_contexts[retrieval rows].{col} ({ratio} > {threshold})",
            **common,
        )
        for value, (col, ratio) in VALUE_AWARE_READINGS.items()
    ]


def headline(table: pl.DataFrame, cells: pl.DataFrame, settings: StatisticsSettings) -> pl.DataFrame:
    """Claims 42-47 from the two frames."""
    rows = []
    for rec in table.iter_rows(named=True):
        common = dict(n_instances=rec["n"], n_docs=rec["n_docs"], models=rec["models"], n_excluded=rec["n_degenerate"])
        budget, model = rec["budget"], rec["model"]
        if model == POOLED and rec["rows"] == "all":
            for value in ("pooled_c_hat", "pooled_c_hat_ceiling"):
                rows.append(
                    row(
                        42,
                        value,
                        rec["median_c_hat"],
                        POPULATION,
                        by={"budget": budget},
                        low=rec["median_c_hat_low"],
                        high=rec["median_c_hat_high"],
                        source="task_contexts[(pooled), all rows].median_c_hat",
                        **common,
                    )
                )
        if model == POOLED:
            continue
        by = {"model": model, "budget": budget}
        if rec["rows"] == "all":
            for value in ("auc_dropped_mass", "auc_dropped_mass_floor"):
                rows.append(
                    row(
                        45,
                        value,
                        rec["auc_dropped_mass"],
                        POPULATION,
                        by=by,
                        low=rec["auc_dropped_mass_low"],
                        high=rec["auc_dropped_mass_high"],
                        source="task_contexts[all rows].auc_dropped_mass",
                        **common,
                    )
                )
            rows.append(
                row(
                    46,
                    "retrieval_row_share",
                    rec["retrieval_share"],
                    POPULATION,
                    by=by,
                    source="task_contexts[all rows]: retrieval instances / instances",
                    **common,
                )
            )
        if rec["rows"] == "retrieval":
            background = table.filter(
                (pl.col("model") == model) & (pl.col("budget") == budget) & (pl.col("rows") == "background")
            )
            p90_bg = background["p90_kappa_hat"][0] if background.height else None
            ratio = rec["p90_kappa_hat"] / p90_bg if rec["p90_kappa_hat"] is not None and p90_bg else None
            for value in ("p90_headroom_ratio_retrieval_vs_background", "p90_headroom_ratio_ceiling"):
                rows.append(
                    row(
                        43,
                        value,
                        ratio,
                        POPULATION,
                        by=by,
                        source="task_contexts: p90_kappa_hat[retrieval] / p90_kappa_hat[background]",
                        **common,
                    )
                )
            if budget == settings.map_budget:
                rows += _value_aware_rows(rec, settings.kappa_threshold, common)
    for key, g in groups(cells.drop_nulls(["task_flat", "prose_flat"]), ["model"]):
        st = GroupStatistics(settings)
        common = dict(n_instances=g.height, models=key["model"], source="task_map: cells at the map budget")
        agreement = float((g["task_flat"] == g["prose_flat"]).mean()) if g.height else None
        rows.append(row(47, "map_label_agreement", agreement, POPULATION, by=key, **common))
        g = g.with_columns(degenerate=pl.lit(False))
        rows.append(
            row(
                47,
                "map_order_correlation",
                st.rank_correlation(g, "task_dropped_mass", "prose_dropped_mass"),
                POPULATION,
                by=key,
                **common,
            )
        )
    return headline_frame(rows)


def statistics(inputs: Inputs, config: Mapping[str, Any]) -> Frames:
    """Rule ``task_statistics``: the task contexts' ceiling records (``records``), their manifests and the headline
    corpus's records (``prose``, for the map comparison) -> the frames of claims 42-47."""
    settings = StatisticsSettings.from_config(config)
    task_files, prose_files = list(inputs["records"]), list(inputs["prose"])
    manifests = [json.loads(Path(p).read_text(encoding="utf-8")) for p in inputs["manifests"]]
    records, prose = read_parquets(task_files), read_parquets(prose_files)
    frames = summarize(records, prose, manifests, settings)
    values = frames["headline_tasks"].select("claim_id", "value_name").n_unique()
    return Frames(
        frames,
        summary={"task_records": records.height, "headline_values": values},
        seeds=bootstrap_seeds(settings),
        notes=[
            f"{records.height} task records from {len(task_files)} files, {prose.height} headline-corpus records; {settings}"
        ],
    )
