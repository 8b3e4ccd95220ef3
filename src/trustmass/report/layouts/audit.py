"""The layouts of the selector audit's table.

How each statistics frame becomes the table the paper prints, rendered by the one renderer
(:mod:`trustmass.report.tables`):

- The audit table: per (model, rule, budget) median excess, label share, AUC, Spearman, cache-faithful.
"""

from __future__ import annotations

import polars as pl

from trustmass.report.tables import Column, TableLayout, check_columns, order_rows, value_columns, write

__all__ = ["LAYOUTS", "write"]


# ============================================================================================ the audit table

AUDIT_COLUMNS = (
    Column("n", "n", None),
    Column("docs", "n_docs", None),
    Column("median excess", "median_excess", 3, True),
    Column("share > threshold·ES_pool", "label_share", 3, True),
    Column("AUC(m̄_s)", "auc", 3, True),
    Column("ρ(m̄_s, excess)", "spearman_dm_excess", 2),
    Column("ρ(m̄_s, es − ES_pool)", "spearman_dm_abs_excess", 2),
    Column("median cache-faithful excess", "median_excess_cf", 3),
    Column("es_rule / es(A*)", "median_over_top", 3),
    Column("contract vs top-mass", "contracts", None),
)


def audit_table(summary: pl.DataFrame) -> pl.DataFrame:
    """The audit table from the ``audit_table`` frame: one row per (population, model, rule, budget)."""
    cols = value_columns(AUDIT_COLUMNS)
    check_columns(summary, ["population", "model", "rule", "budget", *cols], "the audit table")
    return order_rows(summary, ["model", "rule"], pooled_first=True).select(
        ["population", "model", "rule", "budget", *cols]
    )


LAYOUTS: dict[str, TableLayout] = {
    "audit_table": TableLayout(
        "The selector audit: deployed rules against ES_pool",
        audit_table,
        ("model", "rule", "budget"),
        AUDIT_COLUMNS,
        (
            "budget –: pooled over the enumerated budgets. At the native budgets (no ES_pool) the label is es_rule > threshold·es(A_bal).",
            "certificate: top-mass's own label κ̂ > threshold scored by dropped mass (Figure 3's reference row).",
            "contract vs top-mass: like_for_like where the rule and top-mass differ in the ranking scalar alone "
            "(trustmass.core.selectors.run_contract); otherwise the fields the comparison crosses (a transfer check).",
        ),
    ),
}
