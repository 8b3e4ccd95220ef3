"""The layouts of the task contexts' table.

How each statistics frame becomes the table the paper prints, rendered by the one renderer
(:mod:`trustmass.report.tables`):

- The task-context table: per (model, budget, rows) ĉ, the 90th percentile of κ̂, the κ̂ rate and the AUC.
"""

from __future__ import annotations

import polars as pl

from trustmass.report.engine import POOLED
from trustmass.report.tables import Column, TableLayout, check_columns, value_columns, write

__all__ = ["LAYOUTS", "write"]


# ============================================================================================ task contexts

TASK_COLUMNS = (
    Column("n", "n", None),
    Column("docs", "n_docs", None),
    Column("median ĉ", "median_c_hat", 4, True),
    Column("p90 κ̂", "p90_kappa_hat", 3),
    Column("share κ̂ > threshold", "value_aware_rate", 3, True),
    Column("share κ̂_bal > threshold", "value_aware_bal_rate", 3, True),
    Column("AUC(m̄_s)", "auc_dropped_mass", 3, True),
    Column("retrieval share", "retrieval_share", 3),
)


def task_table(summary: pl.DataFrame) -> pl.DataFrame:
    """The task-context table: per (model, budget, rows), the pooled model last."""
    cols = value_columns(TASK_COLUMNS)
    check_columns(summary, ["population", "model", "budget", "rows", *cols], "the task-context table")
    order = {"all": 0, "retrieval": 1, "background": 2}
    return (
        summary.with_columns(_pooled=pl.col("model") == POOLED, _rows=pl.col("rows").replace_strict(order, default=3))
        .sort(["_pooled", "model", "budget", "_rows"])
        .select(["population", "model", "budget", "rows", *cols])
    )


LAYOUTS: dict[str, TableLayout] = {
    "task_table": TableLayout(
        "Task-structured contexts: retrieval rows against background rows",
        task_table,
        ("model", "budget", "rows"),
        TASK_COLUMNS,
        (
            "Planted needles, variable chains and quote QA (trustmass.sources.task_contexts); retrieval rows predict the "
            "planted answer's tokens, background rows are the other sampled rows. ĉ = 1 − ES_pool/es(A*_s); p90 κ̂: the "
            "90th percentile of κ̂ = es(A*_s)/ES_pool; AUC of the dropped mass for κ̂ > threshold; intervals: "
            "document-cluster bootstrap. Registered bounds (claims 42-46): pooled ĉ ≤ 0.09, p90 ratio ≤ 2, the κ̂ rate on "
            "retrieval rows at s = 8 ≤ 5 %, AUC ≥ 0.70, retrieval share ≥ 20 %.",
        ),
    ),
}
