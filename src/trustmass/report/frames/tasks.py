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
``headline_tasks`` claims 42-47 (the pre-registered bounds are judged by the claims report): each claim
                   value a declaration of :data:`HEADLINE`, read from the claims frames of
                   :func:`claim_frames` (``task_contexts`` with claim 43's ratio; the map comparison per
                   model), with a flag where a comparison's two arms cannot differ (:data:`BOTH_AT_FLOOR`,
                   :data:`ONE_LABEL_EACH`).

Conventions: degenerate records are excluded as everywhere (:mod:`trustmass.report.frames.ceiling`);
"pooled c_hat" is the median over every task instance of a budget [R]; the headroom ratio divides the
90th percentiles of ``kappa_hat`` on retrieval and on background rows [R]; label agreement is the
share of cells whose flat flag is the same on both maps and order correlation Spearman's rho of the
cells' median dropped mass [R].  Every statistic here uses every task document (population ``all``).
:func:`statistics` is the rule ``task_statistics``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from trustmass.core.operator import REL_TOL
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
from trustmass.report.headline import HeadlineValue, declared_rows, headline_frame
from trustmass.report.statistics import Frames, Inputs, bootstrap_seeds

__all__ = [
    "BOTH_AT_FLOOR",
    "HEADLINE",
    "ONE_LABEL_EACH",
    "POPULATION",
    "claim_frames",
    "headline",
    "role_frame",
    "statistics",
    "summarize",
    "task_contexts",
    "task_map",
]

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
    out["headline_tasks"] = headline(claim_frames(out["task_contexts"], out["task_map"], settings))
    return out


# ------------------------------------------------------------------ the claims, declared (claims 42-47)

#: the top-mass floor of kappa_hat (kappa_hat >= 1: top-mass attains ES_pool at 1), within the operator's tolerance
KAPPA_FLOOR = 1.0 + REL_TOL
#: why the headroom ratio cannot speak: both 90th percentiles sit at the floor, so the ratio is 1 by construction
BOTH_AT_FLOOR = (
    "the 90th percentile of kappa_hat is at its floor of 1 on both retrieval and background rows (top-mass "
    "attains ES_pool on 90 % of both): the ratio is 1 by construction"
)
#: why the map label agreement cannot speak: each map gives every cell one label
ONE_LABEL_EACH = (
    "each map gives every cell the same label (all flat or all non-flat on both maps): the agreement is the "
    "class balance, 1 or 0 whatever the cells' correspondence"
)

_SHARE = (0.0, 1.0)
_PER_MODEL = {"pooled": False}
_MODEL_BUDGET = ("model", "budget")

#: claim value -> where it is read (the frames of :func:`claim_frames`; ``task_claims`` is ``task_contexts`` with
#: ``pooled``, ``at_map_budget`` and the headroom ratio)
HEADLINE: tuple[HeadlineValue, ...] = (
    *(
        HeadlineValue(
            42,
            value,
            "task_claims",
            "median_c_hat",
            ("budget",),
            {"pooled": True, "rows": "all"},
            ci=True,
            domain=_SHARE,
        )
        for value in ("pooled_c_hat", "pooled_c_hat_ceiling")
    ),
    *(
        HeadlineValue(
            43,
            value,
            "task_claims",
            "headroom_ratio",
            _MODEL_BUDGET,
            {**_PER_MODEL, "rows": "retrieval"},
            flag="headroom_flag",
            domain=(0.0, math.inf),
            note="p90 kappa_hat on retrieval rows / on background rows; both are >= 1",
        )
        for value in ("p90_headroom_ratio_retrieval_vs_background", "p90_headroom_ratio_ceiling")
    ),
    # claim 44's readings: the used one, kappa_hat_bal > threshold (balancing, the value-aware swap rule, misses
    # ES_pool), and the spec's, kappa_hat > threshold
    *(
        HeadlineValue(
            44,
            value,
            "task_claims",
            column,
            ("model", "budget", "rows"),
            {**_PER_MODEL, "rows": "retrieval", "at_map_budget": True},
            ci=True,
            domain=_SHARE,
        )
        for value, column in (
            ("value_aware_case_rate", "value_aware_bal_rate"),
            ("value_aware_case_rate_ceiling", "value_aware_bal_rate"),
            ("value_aware_case_rate_kappa_hat", "value_aware_rate"),
        )
    ),
    *(
        HeadlineValue(
            45,
            value,
            "task_claims",
            "auc_dropped_mass",
            _MODEL_BUDGET,
            {**_PER_MODEL, "rows": "all"},
            ci=True,
            domain=_SHARE,
        )
        for value in ("auc_dropped_mass", "auc_dropped_mass_floor")
    ),
    HeadlineValue(
        46,
        "retrieval_row_share",
        "task_claims",
        "retrieval_share",
        _MODEL_BUDGET,
        {**_PER_MODEL, "rows": "all"},
        domain=_SHARE,
        note="retrieval instances / instances, degenerate records left out: the planted share is "
        "task_contexts.retrieval_rows / capture.rows_per_head, refused at start-up below 20 %",
    ),
    HeadlineValue(
        47,
        "map_label_agreement",
        "task_map_claims",
        "map_label_agreement",
        ("model",),
        flag="label_flag",
        domain=_SHARE,
    ),
    HeadlineValue(
        47, "map_order_correlation", "task_map_claims", "map_order_correlation", ("model",), domain=(-1.0, 1.0)
    ),
)


def _task_claims(table: pl.DataFrame, settings: StatisticsSettings) -> pl.DataFrame:
    """``task_contexts`` with the columns the declarations filter on and claim 43's ratio: per (model, budget),
    on the retrieval row, the 90th percentile of kappa_hat on retrieval rows over that on background rows."""
    key = ["model", "budget"]
    background = table.filter(pl.col("rows") == "background").select(*key, p90_background="p90_kappa_hat")
    frame = table.join(background, on=key, how="left").with_columns(
        pooled=pl.col("model") == POOLED, at_map_budget=pl.col("budget") == settings.map_budget
    )
    retrieval = pl.col("rows") == "retrieval"
    floor = (pl.col("p90_kappa_hat") <= KAPPA_FLOOR) & (pl.col("p90_background") <= KAPPA_FLOOR)
    return frame.with_columns(
        headroom_ratio=pl.when(retrieval & (pl.col("p90_background") > 0)).then(
            pl.col("p90_kappa_hat") / pl.col("p90_background")
        ),
        headroom_flag=pl.when(retrieval & floor.fill_null(False)).then(pl.lit(BOTH_AT_FLOOR)),
    ).drop("p90_background")


def _map_claims(cells: pl.DataFrame, settings: StatisticsSettings) -> pl.DataFrame:
    """Claim 47, per model: the share of cells whose flat label is the same on both maps and Spearman's rho of
    the cells' median dropped mass, with the agreement's flag where each map has one label only."""
    st = GroupStatistics(settings)
    rows = []
    for key, g in groups(cells.drop_nulls(["task_flat", "prose_flat"]), ["model"]):
        one_label = g["task_flat"].n_unique() == 1 and g["prose_flat"].n_unique() == 1
        rows.append(
            {
                **key,
                "population": POPULATION,
                "n": g.height,
                "map_label_agreement": float((g["task_flat"] == g["prose_flat"]).mean()),
                "map_order_correlation": st.rank_correlation(
                    g.with_columns(degenerate=pl.lit(False)), "task_dropped_mass", "prose_dropped_mass"
                ),
                "label_flag": ONE_LABEL_EACH if one_label else None,
            }
        )
    schema = {"model": pl.Utf8, "population": pl.Utf8, "n": pl.Int64, "map_label_agreement": pl.Float64}
    schema |= {"map_order_correlation": pl.Float64, "label_flag": pl.Utf8}
    return frame_from_rows(rows, schema)


def claim_frames(table: pl.DataFrame, cells: pl.DataFrame, settings: StatisticsSettings) -> dict[str, pl.DataFrame]:
    """Every frame :data:`HEADLINE` reads, from ``task_contexts`` and ``task_map``."""
    return {"task_claims": _task_claims(table, settings), "task_map_claims": _map_claims(cells, settings)}


def headline(frames: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """Claims 42-47: every declaration of :data:`HEADLINE` read from :func:`claim_frames`."""
    return headline_frame(declared_rows(HEADLINE, frames))


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
