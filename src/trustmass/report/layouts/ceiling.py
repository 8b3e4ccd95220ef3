"""The layouts of the ceiling stage's tables (Tables 1, 2, 6, 8; frames: :mod:`trustmass.report.frames.ceiling`).

How each statistics frame becomes the table the paper prints, rendered by the one renderer
(:mod:`trustmass.report.tables`):

- Table 1 (native budget): per model, the median balancing share ``1 - es_bal/es_top``, the share of
  rows where balancing beats top-mass by >= 10%, and the remaining ``2 D m_s`` cap as a share of its
  ``s = 8`` value, over every budget (the enumerated ones left of the paper's vertical rule); the
  last row pools the models.
- Table 2 (content): per (model, corpus), budgets pooled and per budget: label share, 0.9-form share,
  AUC of the dropped mass, median ``kappa_hat``.
- Table 6 (panel): per model: AUC at s = 8, edge/interior label-rate ratio, rho_depth,
  rho(Phi, ES_pool), median ``kappa_hat_bal``.
- Table 8 (per-budget profile): per (model, budget): the columns of the paper's Table 8 plus the
  coverage, swaps and group-vote columns.
"""

from __future__ import annotations

import polars as pl

from trustmass.report.engine import POOLED
from trustmass.report.tables import Column, TableLayout, check_columns, order_rows, populations_of, value_columns, write

__all__ = ["LAYOUTS", "write"]


# ============================================================================================ Table 1

TABLE1_ROWS = (
    ("median balancing share 1 − es(A_bal)/es(A*_s)", "median_balancing_share"),
    ("share of rows with es(A_bal) ≤ 0.9·es(A*_s)", "balancing_beats_10pct_share"),
    ("remaining 2·D·m̄_s as a share of its s = 8 value (median over rows)", "median_mass_share_of_map"),
)


def table1(summary: pl.DataFrame) -> pl.DataFrame:
    """Table 1 from the ``table1`` summary: rows (population, model, statistic), one column per budget."""
    check_columns(summary, ["population", "model", "budget", "enumerated"] + [c for _, c in TABLE1_ROWS], "table 1")
    budgets = sorted(summary["budget"].unique().to_list())
    rows = []
    for population in populations_of(summary):
        pop = summary.filter(pl.col("population") == population)
        models = sorted(m for m in pop["model"].unique().to_list() if m != POOLED)
        for model in [*models, POOLED]:
            part = pop.filter(pl.col("model") == model)
            if part.height == 0:
                continue
            wanted = TABLE1_ROWS[2:] if model == POOLED else TABLE1_ROWS
            for label, col in wanted:
                by_budget = dict(zip(part["budget"].to_list(), part[col].to_list()))
                rows.append(
                    {
                        "population": population,
                        "model": model,
                        "statistic": label,
                        **{f"s{b}": by_budget.get(b) for b in budgets},
                    }
                )
    schema = {"population": pl.Utf8, "model": pl.Utf8, "statistic": pl.Utf8, **{f"s{b}": pl.Float64 for b in budgets}}
    return pl.DataFrame(rows, schema=schema, strict=False) if rows else pl.DataFrame(schema=schema)


def table1_columns(summary: pl.DataFrame) -> tuple[Column, ...]:
    """One column per budget; native (deployed) budgets marked ‡."""
    native = set(summary.filter(~pl.col("enumerated"))["budget"].to_list())
    return tuple(
        Column(f"s = {b}" + (" ‡" if b in native else ""), f"s{b}", 3)
        for b in sorted(summary["budget"].unique().to_list())
    )


# ============================================================================================ Table 2

TABLE2_COLUMNS = (
    Column("n", "n", None),
    Column("docs", "n_docs", None),
    Column("share κ̂ > threshold", "label_share", 3, True),
    Column("share ES ≤ 0.9·es(A*)", "share90", 3),
    Column("AUC(m̄_s)", "auc", 3, True),
    Column("median κ̂", "median_kappa_hat", 3, True),
)


def table2(summary: pl.DataFrame) -> pl.DataFrame:
    """Table 2 from the ``table2`` summary: rows (population, model, corpus, budgets)."""
    cols = value_columns(TABLE2_COLUMNS)
    check_columns(summary, ["population", "model", "corpus", "budget", *cols], "table 2")
    out = summary.with_columns(
        budgets=pl.when(pl.col("budget").is_null()).then(pl.lit("pooled")).otherwise(pl.col("budget").cast(pl.Utf8))
    )
    return order_rows(out, ["model", "corpus"], pooled_first=True).select(
        ["population", "model", "corpus", "budgets", *cols]
    )


# ============================================================================================ Table 6

TABLE6_COLUMNS = (
    Column("group size", "group_size", None),
    Column("layers", "n_layers", None),
    Column("n (s = 8)", "n", None),
    Column("AUC(m̄_s) at s = 8", "auc", 3, True),
    Column("edge/int", "edge_int_ratio", 2, True),
    Column("ρ_depth", "rho_depth", 2),
    Column("ρ(Φ, ES_pool) pooled", "rho_phi_es_pool", 2),
    Column("median κ̂_bal (pooled)", "median_kappa_hat_bal", 2, True),
)


def table6(summary: pl.DataFrame) -> pl.DataFrame:
    """Table 6 from the ``table6`` summary: one row per (population, model)."""
    cols = value_columns(TABLE6_COLUMNS)
    check_columns(summary, ["population", "model", "budget", *cols], "table 6")
    return order_rows(summary, ["model"]).select(["population", "model", "budget", *cols])


# ============================================================================================ Table 8

TABLE8_COLUMNS = (
    Column("n", "n", None),
    Column("median κ̂", "median_kappa_hat", 3),
    Column("share", "share90", 3),
    Column("median π̂", "median_pi_hat", 2),
    Column("p99 π̂", "p99_pi_hat", 1),
    Column("ρ(Φ, ES_pool)", "rho_phi_es_pool", 2),
    Column("geo / top", "median_geo_ratio", 2),
    Column("lev / top", "median_lev_ratio", 1),
    Column("geo / top in C_s", "median_geo_pool_ratio", 2),
    Column("lev / top in C_s", "median_lev_pool_ratio", 1),
    Column("top attains ES_pool", "top_attains_share", 3),
    Column("κ̂ ≤ 1.5", "coverage_1_5", 3),
    Column("κ̂ ≤ 2", "coverage_2", 3),
    Column("median swaps", "median_n_swaps", 1),
    Column("vote / top", "median_vote_over_top", 3),
    Column("vote / ES_pool", "median_vote_over_pool", 3),
    Column("vote degrades", "vote_degraded_share", 3),
    Column("vote improves", "vote_improved_share", 3),
)


def table8(summary: pl.DataFrame) -> pl.DataFrame:
    """Table 8 from the ``table8`` summary: one row per (population, model, budget)."""
    cols = value_columns(TABLE8_COLUMNS)
    check_columns(summary, ["population", "model", "budget", "group_size", *cols], "table 8")
    return order_rows(summary, ["model", "budget"]).select(["population", "model", "budget", "group_size", *cols])


LAYOUTS: dict[str, TableLayout] = {
    "table1": TableLayout(
        "Table 1 — native budget: balancing's share of the gap through s = 256",
        table1,
        ("model", "statistic"),
        notes=(
            "Balancing's share is a lower bound on the closable share c at every budget (one convention throughout).",
            "‡ native (deployed) budgets: no enumeration; right of the paper's vertical rule.",
        ),
        columns_of=table1_columns,
    ),
    "table2": TableLayout(
        "Table 2 — content diversity: prose, code, French",
        table2,
        ("model", "corpus", "budgets"),
        TABLE2_COLUMNS,
        (
            "Label: κ̂ > labels.kappa_threshold. Intervals: 95% document-cluster bootstrap.",
            '"pooled" pools the enumerated budgets (the paper does not say whether Table 2 pools them).',
        ),
    ),
    "table6": TableLayout(
        "Table 6 — the panel",
        table6,
        ("model",),
        TABLE6_COLUMNS,
        (
            "AUC, edge/int and ρ_depth at the map budget (s = 8); ρ(Φ, ES_pool) and κ̂_bal pooled over the enumerated budgets.",
            (
                "Edges: the first and last statistics.edge_layers layers; edge/int intervals resample cells (layer, head), "
                "the others documents."
            ),
        ),
    ),
    "table8": TableLayout(
        "Table 8 — per-budget profile",
        table8,
        ("model", "budget"),
        TABLE8_COLUMNS,
        (
            (
                "share: ES_pool ≤ 0.9·es(A*_s). geo/lev: median es(A^geo)/es(A*), es(A^lev)/es(A*) over all keys and "
                "restricted to the candidate set C_s. vote: the group vote at this budget (median es_vote/es(A*), "
                "es_vote/ES_pool; fractions degraded and improved)."
            ),
        ),
    ),
}
