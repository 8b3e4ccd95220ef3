"""The layouts of the fixed-contract diagnostics' tables (boundary swaps, swap-improving boundaries, the
margin split and its cells)."""

from __future__ import annotations

import polars as pl

from trustmass.report.tables import Column, TableLayout, check_columns, value_columns, write

__all__ = ["LAYOUTS", "write"]

SWAP_COLUMNS = (
    Column("units", "n", None),
    Column("docs", "n_docs", None),
    Column("seeds", "n_seeds", None),
    Column("err(X)", "err_x", 4),
    Column("err(Y)", "err_y", 4),
    Column("err after the swap", "err", 4),
    Column("err / err(X)", "err_ratio", 3, True),
    Column("gap recovered", "gap_recovered", 3, True),
)
BOUNDARY_COLUMNS = (
    Column("units", "n", None),
    Column("docs", "n_docs", None),
    Column("err(X)", "err_x", 4),
    Column("err(Y)", "err_y", 4),
    Column("share: the full swap lowers err", "improving_full", 3, True),
    Column("share: the smallest swap lowers err", "improving_first", 3, True),
    Column("contracts", "contracts", None),
)
PROJECTION_COLUMNS = (
    Column("block", "block", None),
    Column("units", "n", None),
    Column("docs", "n_docs", None),
    Column("slack, strict", "slack_strict", 2),
    Column("slack, token-filled", "slack_fill", 2),
    Column("err, strict", "err_strict", 4),
    Column("err, token-filled", "err_fill", 4),
    Column("err, fit then fill", "err_fit", 4),
    Column("err(fill) / err(strict)", "fill_ratio", 3, True),
    Column("r(slack, es reduction)", "slack_gain_r", 3),
)
MARGIN_COLUMNS = (
    Column("cells", "n_cells", None),
    Column("m > 0 cells", "n_positive_bucket", None),
    Column("m ≤ 0 cells", "n_nonpositive_bucket", None),
    Column("positive-shift rate, m > 0", "rate_positive_bucket", 3),
    Column("ties, m > 0", "ties_positive_bucket", None),
    Column("mean Δ, m > 0", "mean_delta_positive_bucket", 4),
    Column("positive-shift rate, m ≤ 0", "rate_nonpositive_bucket", 3),
    Column("ties, m ≤ 0", "ties_nonpositive_bucket", None),
    Column("mean Δ, m ≤ 0", "mean_delta_nonpositive_bucket", 4),
    Column("rate gap", "rate_gap", 3),
    Column("null gap (mean)", "null_gap_mean", 3),
    Column("p (gap)", "p_gap", 4),
    Column("direction match", "direction_match", 3),
    Column("p (match)", "p_match", 4),
    Column("r(m, Δ)", "pearson_r", 3),
    Column("gap, leave one content out: min", "loo_gap_min", 3),
    Column("max", "loo_gap_max", 3),
    Column("contracts", "contracts", None),
    Column("degenerate", "degenerate", None),
)
MARGIN_CELL_COLUMNS = (
    Column("docs", "n_docs", None),
    Column("CE dense", "ce_dense", 4),
    Column("CE host", "ce_host", 4),
    Column("CE rule", "ce_rule", 4),
    Column("m = CE(host) − CE(dense)", "margin", 4),
    Column("Δ = CE(host) − CE(rule)", "delta", 4),
    Column("bucket", "bucket", None),
    Column("shift", "shift", None),
)


def _shaped(keys, columns, what):
    def shape(summary: pl.DataFrame) -> pl.DataFrame:
        frame = summary.with_columns(population=pl.lit("all"))
        check_columns(frame, ["population", *keys, *value_columns(columns)], what)
        return frame.sort(list(keys)).select(["population", *keys, *value_columns(columns)])

    return shape


_SWAPS = (
    "Units: captured rows of the headline documents whose kept sets differ (es), or held-out target tokens (ce: "
    "NLL; kl: KL(dense ‖ configuration) of the next-token distribution). X's kept set with a fraction of each "
    "row's disagreement with Y's swapped: boundary = the least-mass keys of X only out, the most-mass keys of Y "
    "only in (rank to rank); random = as many kept keys of X for as many evicted keys with mass, drawn; "
    "random_restricted = drawn inside the disagreement (averaged over seeds per unit).",
    "gap recovered = (mean err(X) − mean err) / (mean err(X) − mean err(Y)), large and unstable where Y errs "
    "about as X does; err / err(X) = mean err / mean err(X); 95% document-cluster intervals.",
)
LAYOUTS: dict[str, TableLayout] = {
    "swap_table": TableLayout(
        "Boundary swaps against random swaps: the share of X's gap to Y recovered",
        _shaped(("model", "outcome", "pair", "budget", "kind", "fraction"), SWAP_COLUMNS, "the swap table"),
        ("model", "outcome", "pair", "budget", "kind", "fraction"),
        SWAP_COLUMNS,
        _SWAPS,
    ),
    "boundary_table": TableLayout(
        "Swap-improving boundaries: where Y's kept set beats X's",
        _shaped(("model", "outcome", "pair", "budget"), BOUNDARY_COLUMNS, "the boundary table"),
        ("model", "outcome", "pair", "budget"),
        BOUNDARY_COLUMNS,
        (
            _SWAPS[0],
            "contracts: like_for_like when X and Y differ in the ranking scalar alone (a Stage II comparison); "
            "otherwise the run-contract fields the pair crosses (a transfer check).",
        ),
    ),
    "projection_table": TableLayout(
        "Block projection: strict block TopK against its token-fill",
        _shaped(("model", "outcome", "rule", "budget"), PROJECTION_COLUMNS, "the projection table"),
        ("model", "outcome", "rule", "budget"),
        PROJECTION_COLUMNS,
        (
            "Strict block TopK keeps the floor(s / b) best blocks (the row's short last block among them when it ranks) "
            "and leaves the lattice slack unspent; token-fill spends it on single keys by the rule's own token score, "
            "blocks unchanged; fit then fill (the registry's default) takes whole blocks while they fit. One block size "
            "b for every rule (diagnostics.projection.block). es: every captured row of the headline documents; ce / kl: "
            "held-out target tokens through the restricted forward. Ratio: pooled means, 95% document-cluster interval.",
        ),
    ),
    "margin_table": TableLayout(
        "The signed reference margin split with held-out CE as the outcome",
        _shaped(("host", "rule"), MARGIN_COLUMNS, "the margin table"),
        ("host", "rule"),
        MARGIN_COLUMNS,
        (
            "Cells: (model, corpus, budget). m = CE(host) − CE(dense) (positive: room to help), Δ = CE(host) − CE(rule) "
            "(positive: the rule helps); |Δ| ≤ tie_nats is a tie, counted apart. Rate: positive shifts over the bucket's "
            "cells; direction match over the cells that are not ties. Null: bucket labels shuffled, sizes kept; p one-sided.",
            "With es as the outcome this split degenerates: the dense es is 0, so every margin is ≥ 0.",
        ),
    ),
    "margin_cells_table": TableLayout(
        "The margin split's cells",
        _shaped(("rule", "model", "content", "budget"), MARGIN_CELL_COLUMNS, "the margin cells"),
        ("rule", "model", "content", "budget"),
        MARGIN_CELL_COLUMNS,
        (
            "Held-out CE (nats per token) of the continuation under the restricted operator, means over the corpus's "
            "held-out documents.",
        ),
    ),
}
