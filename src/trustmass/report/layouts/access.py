"""The layout of the access-law table (related-methods A.4 Stage I).  Its frame is ``access_law``
(:mod:`trustmass.report.frames.access`)."""

from __future__ import annotations

import polars as pl

from trustmass.report.tables import Column, TableLayout, check_columns, order_rows, value_columns, write

__all__ = ["LAYOUTS", "write"]

ACCESS_COLUMNS = (
    Column("cells", "n", None),
    Column("docs", "n_docs", None),
    Column("TV(p_T, tail_K)", "tv_last_tail", 3, True),
    Column("TV(p_T, all)", "tv_last_all", 3, True),
    Column("TV(p*, p_T)", "tv_decode_last", 3, True),
    Column("TV(p*, tail_K)", "tv_decode_tail", 3, True),
    Column("TV(p*, all)", "tv_decode_all", 3, True),
    Column("TV(p*, C/(T−i))", "tv_decode_debiased", 3, True),
    Column("Prop. 3 holds", "triangle_share", 3),
    Column("median slack", "triangle_slack", 3),
    Column("mean position: C", "mean_position_all", 3, True),
    Column("C/(T−i)", "mean_position_debiased", 3, True),
    Column("p*", "mean_position_decode", 3, True),
    Column("p* on its own key", "decode_self_mass", 3),
)


def access_table(summary: pl.DataFrame) -> pl.DataFrame:
    """The access-law table: one row per (population, model, corpus, K)."""
    cols = value_columns(ACCESS_COLUMNS)
    check_columns(summary, ["population", "model", "corpus", "tail_rows", *cols], "the access-law table")
    return order_rows(summary, ["model", "corpus", "tail_rows"]).select(
        ["population", "model", "corpus", "tail_rows", *cols]
    )


LAYOUTS: dict[str, TableLayout] = {
    "access_table": TableLayout(
        "Access laws: the prefill's estimates of the first decode step's law p*",
        access_table,
        ("model", "corpus", "tail_rows"),
        ACCESS_COLUMNS,
        (
            "Per (document, layer, query head) cell, total variation between laws over the T prompt keys: p_T the last prefill "
            "row, tail_K the mean of the last K prefill rows, all the full prefill mixture (= cumulative attention C "
            "normalised), C/(T−i) count-debiased cumulative attention, p* the first greedy decode step's row (renormalised over "
            "the prompt keys; 'p* on its own key' is the mass it puts on the decoded token). Medians over cells; intervals: "
            "document-cluster bootstrap.",
            "Prop. 3: TV(p*, tail_K) ≤ TV(p*, p_T) + TV(p_T, tail_K) (share of cells, to 1e-12; slack = right − left). "
            "Exposure bias: the median mean key position / (T − 1) of each law; C sits earlier than p* when early keys win "
            "by exposure, C/(T−i) later when debiasing over-corrects.",
        ),
        key_headers=(("tail_rows", "K"),),
    ),
}
