"""Statistics of the access-law diagnostics (related-methods A.4 Stage I), from the access records.

The records (:mod:`trustmass.contracts.access`, one file per captured document) hold, per (layer,
query head, law), the law's TV distance to the last prefill row ``p_T`` and to the first decode row
``p*``, its mean key position and its mass on the planted target.  A *cell* is one (document, layer,
query head); the document is the bootstrap's resampling unit.  Frames:

``access_law``       per (population, model, corpus, K in ``access_law.tail_rows``): medians over cells,
                     with document-cluster intervals, of TV(p_T, tail_K), TV(p_T, all), TV(p*, p_T),
                     TV(p*, tail_K), TV(p*, all), TV(p*, debiased); the share of cells where Prop. 3's
                     triangle ``TV(p*, tail_K) <= TV(p*, p_T) + TV(p_T, tail_K)`` holds (to 1e-12) and
                     its median slack; the exposure bias as the median mean key position (over T - 1)
                     of ``C`` (the full mixture), of ``C_i / (T - i)`` and of ``p*``; the median mass
                     ``p*`` puts on the decoded token's own key;
``access_layers``    per (model, corpus, layer, law, K): the median and quartiles over heads and documents
                     of TV(law, p*) and TV(law, p_T) (every document; ``headline`` marks the headline
                     population), for the figure;
``access_dilution``  per task context and layer: head-sum dilution, ``m_h = sum_{q in the last
                     dilution_rows rows} A_h(q, i*)`` per query head (i*: the document's planted target,
                     :mod:`trustmass.capture.access`), the participation ratio
                     ``r_eff = (sum_h m_h)^2 / sum_h m_h^2`` (in [1, H]), H, ``sum_h m_h`` and the largest
                     head's share of it.

Conventions [R]: ``C`` normalised *is* the full prefill mixture (every row sums to one), so "TV(p*,
normalised C)" is TV(p*, all) and appears once; ``p*`` is the decode row over the T prompt keys,
renormalised (its own key is always cached); tail laws are read at the configured K only (the
dilution's K is kept in the records for ``m_h``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from trustmass.core.access_law import participation_ratio
from trustmass.plumbing.rule_io import read_parquets
from trustmass.report.engine import (
    COUNT_COLUMNS,
    GroupStatistics,
    HeadlinePopulation,
    StatisticsSettings,
    frame_from_rows,
    interval_columns,
    per_group,
    with_document_columns,
)
from trustmass.report.statistics import Frames, Inputs, bootstrap_seeds

__all__ = ["access_dilution", "access_layers", "access_law", "cells", "statistics", "summarize"]

#: Prop. 3 holds on a cell when its slack is at least -TRIANGLE_TOLERANCE (float rounding of three sums)
TRIANGLE_TOLERANCE = 1e-12
CELL = ["model", "corpus", "doc", "layer", "head"]
#: access_law columns with intervals: (frame column, cell column)
MEDIANS = (
    ("tv_last_tail", "tv_last_tail"),
    ("tv_last_all", "tv_last_all"),
    ("tv_decode_last", "tv_decode_last"),
    ("tv_decode_tail", "tv_decode_tail"),
    ("tv_decode_all", "tv_decode_all"),
    ("tv_decode_debiased", "tv_decode_debiased"),
    ("mean_position_all", "position_all"),
    ("mean_position_debiased", "position_debiased"),
    ("mean_position_decode", "position_decode"),
)
ACCESS_LAW_SCHEMA = {
    "population": pl.Utf8,
    "model": pl.Utf8,
    "corpus": pl.Utf8,
    "tail_rows": pl.Int64,
    **COUNT_COLUMNS,
    **interval_columns(*(name for name, _ in MEDIANS)),
    **interval_columns("triangle_share"),
    "triangle_slack": pl.Float64,
    "decode_self_mass": pl.Float64,
}
ACCESS_LAYERS_SCHEMA = {
    "model": pl.Utf8,
    "corpus": pl.Utf8,
    "headline": pl.Boolean,
    "layer": pl.Int64,
    "law": pl.Utf8,
    "tail_rows": pl.Int64,
    "n": pl.Int64,
    "tv_decode": pl.Float64,
    "tv_decode_q25": pl.Float64,
    "tv_decode_q75": pl.Float64,
    "tv_last": pl.Float64,
    "tv_last_q25": pl.Float64,
    "tv_last_q75": pl.Float64,
}
ACCESS_DILUTION_SCHEMA = {
    "model": pl.Utf8,
    "corpus": pl.Utf8,
    "doc": pl.Utf8,
    "task": pl.Utf8,
    "target": pl.Utf8,
    "layer": pl.Int64,
    "dilution_rows": pl.Int64,
    "n_heads": pl.Int64,
    "r_eff": pl.Float64,
    "target_mass": pl.Float64,
    "top_head_share": pl.Float64,
}


def cells(records: pl.DataFrame, tail_rows: Sequence[int]) -> pl.DataFrame:
    """One row per (cell, K): the TVs of the K-independent laws beside those of the tail-K mean."""

    def law(name: str, columns: dict[str, str]) -> pl.DataFrame:
        return records.filter(pl.col("law") == name).select(*CELL, *(pl.col(c).alias(a) for c, a in columns.items()))

    base = (
        law(
            "last",
            {"tv_decode": "tv_decode_last", "mean_position": "position_last", "decode_self_mass": "decode_self_mass"},
        )
        .join(
            law("all", {"tv_last": "tv_last_all", "tv_decode": "tv_decode_all", "mean_position": "position_all"}),
            on=CELL,
        )
        .join(law("debiased", {"tv_decode": "tv_decode_debiased", "mean_position": "position_debiased"}), on=CELL)
        .join(law("decode", {"mean_position": "position_decode"}), on=CELL, how="left")
    )
    tails = records.filter((pl.col("law") == "tail") & pl.col("tail_rows").is_in(list(tail_rows))).select(
        *CELL, "tail_rows", pl.col("tv_last").alias("tv_last_tail"), pl.col("tv_decode").alias("tv_decode_tail")
    )
    out = tails.join(base, on=CELL).with_columns(
        triangle_slack=pl.col("tv_decode_last") + pl.col("tv_last_tail") - pl.col("tv_decode_tail")
    )
    return out.with_columns(triangle=pl.col("triangle_slack") >= -TRIANGLE_TOLERANCE, degenerate=pl.lit(False))


def access_law(frame: pl.DataFrame, settings: StatisticsSettings) -> pl.DataFrame:
    """The ``access_law`` frame from :func:`cells` (with the document columns)."""
    st = GroupStatistics(settings)

    def summary(g: pl.DataFrame) -> dict:
        out = {
            **st.counts(g),
            **st.share(g, "triangle", "triangle_share"),
            "triangle_slack": st.value(g, "triangle_slack"),
            "decode_self_mass": st.value(g, "decode_self_mass"),
        }
        for name, column in MEDIANS:
            out.update(st.median(g, column, name))
        return out

    return frame_from_rows(per_group(frame, ["model", "corpus", "tail_rows"], summary), ACCESS_LAW_SCHEMA)


def access_layers(records: pl.DataFrame, tail_rows: Sequence[int], population: HeadlinePopulation) -> pl.DataFrame:
    """The ``access_layers`` frame: TV to p* and to p_T per (model, corpus, layer, law, K), over heads and documents."""
    keep = records.filter((pl.col("law") != "tail") | pl.col("tail_rows").is_in(list(tail_rows)))
    keys = ["model", "corpus", "layer", "law", "tail_rows"]
    out = keep.group_by(keys).agg(
        n=pl.len(),
        **{
            f"{c}{suffix}": pl.col(c).quantile(q, interpolation="linear")
            for c in ("tv_decode", "tv_last")
            for suffix, q in (("", 0.5), ("_q25", 0.25), ("_q75", 0.75))
        },
    )
    headline = [population.contains(m, c) for m, c in zip(out["model"].to_list(), out["corpus"].to_list())]
    out = out.with_columns(headline=pl.Series(headline, dtype=pl.Boolean))
    return out.sort(keys, nulls_last=False).select(list(ACCESS_LAYERS_SCHEMA)).cast(ACCESS_LAYERS_SCHEMA)


def access_dilution(records: pl.DataFrame, dilution_rows: int) -> pl.DataFrame:
    """The ``access_dilution`` frame: per (task context, layer), r_eff of m_h over the query heads."""
    tail = records.filter(
        (pl.col("law") == "tail") & (pl.col("tail_rows") == dilution_rows) & pl.col("target_mass").is_not_null()
    )
    rows = []
    for key, g in sorted(tail.group_by(["model", "corpus", "doc", "task", "target", "layer"]), key=lambda kg: kg[0]):
        mass = g.sort("head")["target_mass"].to_numpy() * dilution_rows  # m_h: the K rows' summed mass on i*
        total = float(mass.sum())
        rows.append(
            {
                **dict(zip(["model", "corpus", "doc", "task", "target", "layer"], key)),
                "dilution_rows": dilution_rows,
                "n_heads": int(mass.size),
                "r_eff": participation_ratio(mass),
                "target_mass": total,
                "top_head_share": float(mass.max()) / total if total > 0 else None,
            }
        )
    return frame_from_rows(rows, ACCESS_DILUTION_SCHEMA)


def summarize(
    records: pl.DataFrame,
    settings: StatisticsSettings,
    population: HeadlinePopulation,
    tail_rows: Sequence[int],
    dilution_rows: int,
) -> dict[str, pl.DataFrame]:
    """``access_law``, ``access_layers`` and ``access_dilution``."""
    frame = with_document_columns(cells(records, tail_rows), settings.primary_docs)
    return {
        "access_law": access_law(frame, settings),
        "access_layers": access_layers(records, tail_rows, population),
        "access_dilution": access_dilution(records, dilution_rows),
    }


def statistics(inputs: Inputs, config: Mapping[str, Any]) -> Frames:
    """Rule ``access_statistics``: the access records of every captured document (``access``) -> the access-law frames."""
    settings, population = StatisticsSettings.from_config(config), HeadlinePopulation.from_config(config)
    access = config["access_law"]
    files = list(inputs["access"])
    records = read_parquets(files)
    frames = summarize(records, settings, population, access["tail_rows"], access["dilution_rows"])
    return Frames(
        frames,
        summary={"access_records": records.height, "documents": len(files)},
        seeds=bootstrap_seeds(settings),
        notes=[
            f"{records.height} access records from {len(files)} documents; {settings}; headline {population.describe()}"
        ],
    )
