"""The layouts of the paper's tables (Tables 1, 2, 6, 7, 8, the cap-widening sweep and the selector
audit): how each statistics frame becomes the table the paper prints.  Rendered by the one renderer,
:mod:`trustmass.report.tables`.

- Table 1 (native budget): per model, the median balancing share ``1 - es_bal/es_top``, the share of
  rows where balancing beats top-mass by >= 10%, and the remaining ``2 D m_s`` cap as a share of its
  ``s = 8`` value, over every budget (the enumerated ones left of the paper's vertical rule); the
  last row pools the models.
- Table 2 (content): per (model, corpus), budgets pooled and per budget: label share, 0.9-form share,
  AUC of the dropped mass, median ``kappa_hat``.
- Table 6 (panel): per model: AUC at s = 8, edge/interior label-rate ratio, rho_depth,
  rho(Phi, ES_pool), median ``kappa_hat_bal``.
- Table 7 (certification substitution) and the cap-widening sweep: per budget / per extra-key setting.
- Table 8 (per-budget profile): per (model, budget): the columns of the paper's Table 8 plus the
  coverage, swaps and group-vote columns.
- The audit table: per (model, rule, budget) median excess, label share, AUC, Spearman, cache-faithful.
- The allocation panel: per (model, unit, selector, allocator) pooled es and Δes against uniform.
- The probe table: per model the chosen alpha, swap recall and the CE changes of probe and balancing.
- The loss table: per (model, configuration) held-out CE, the change against top-mass, shares and recovered gaps.
- The task-context table: per (model, budget, rows) ĉ, the 90th percentile of κ̂, the κ̂ rate and the AUC.

The deployment tables' layouts are in :mod:`trustmass.report.deploy_layouts`, the access-law table's in
:mod:`trustmass.report.access_layouts`.
"""

from __future__ import annotations

import polars as pl

from trustmass.report.access_layouts import ACCESS_LAYOUTS
from trustmass.report.deploy_layouts import DEPLOY_LAYOUTS
from trustmass.report.diagnostic_layouts import DIAGNOSTIC_LAYOUTS
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
                rows.append({"population": population, "model": model, "statistic": label,
                             **{f"s{b}": by_budget.get(b) for b in budgets}})  # fmt: skip
    schema = {"population": pl.Utf8, "model": pl.Utf8, "statistic": pl.Utf8, **{f"s{b}": pl.Float64 for b in budgets}}
    return pl.DataFrame(rows, schema=schema, strict=False) if rows else pl.DataFrame(schema=schema)


def table1_columns(summary: pl.DataFrame) -> tuple[Column, ...]:
    """One column per budget; native (deployed) budgets marked ‡."""
    native = set(summary.filter(~pl.col("enumerated"))["budget"].to_list())
    return tuple(Column(f"s = {b}" + (" ‡" if b in native else ""), f"s{b}", 3) for b in sorted(summary["budget"].unique().to_list()))


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
    out = summary.with_columns(budgets=pl.when(pl.col("budget").is_null()).then(pl.lit("pooled")).otherwise(pl.col("budget").cast(pl.Utf8)))
    return order_rows(out, ["model", "corpus"], pooled_first=True).select(["population", "model", "corpus", "budgets", *cols])


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


# ============================================================================================ Table 7 and the sweep

TABLE7_COLUMNS = (
    Column("improved", "improved", None), Column("solved", "n_solved", None), Column("unsolved", "n_unsolved", None),
    Column("undecided", "n_undecided", None), Column("confirmed", "n_confirmed", None), Column("f_hi", "f_hi", 4),
    Column("median ĉ", "median_c_hat", 4), Column("cap at f_hi", "cap_f_hi", 4), Column("cap (unsolved as improved)", "cap_unsolved", 4),
    Column("manifest ĉ before", "manifest_median_c_hat_before", 4), Column("after", "manifest_median_c_hat_after", 4),
    Column("opt beats bal >1% before", "beats_bal_before", 4), Column("after", "beats_bal_after", 4),
    Column("κ̂_bal = 1", "kappa_hat_bal_eq_1", 4), Column("κ̂_bal median cap", "median_kappa_hat_bal_cap", 4),
    Column("records", "n_records", None), Column("documents", "n_docs", None), Column("certifier", "certifier", None),
)  # fmt: skip
SWEEP_COLUMNS = (
    Column("subsets", "subsets", None), Column("instances", "n", None), Column("κ̂ > thr", "label_rate", 4),
    Column("median ĉ", "median_c_hat", 4), Column("shift", "median_gap_shift", 4), Column("shift (rel.)", "median_gap_shift_rel", 4),
    Column("ES_pool lower than e_min", "improved_over_base", 4),
)  # fmt: skip


def _sorted_by(*keys: str):
    return lambda frame: frame.sort(list(keys))


# ============================================================================================ the audit table

AUDIT_COLUMNS = (
    Column("n", "n", None), Column("docs", "n_docs", None), Column("median excess", "median_excess", 3, True),
    Column("share > threshold·ES_pool", "label_share", 3, True), Column("AUC(m̄_s)", "auc", 3, True),
    Column("ρ(m̄_s, excess)", "spearman_dm_excess", 2), Column("ρ(m̄_s, es − ES_pool)", "spearman_dm_abs_excess", 2),
    Column("median cache-faithful excess", "median_excess_cf", 3), Column("es_rule / es(A*)", "median_over_top", 3),
    Column("contract vs top-mass", "contracts", None),
)  # fmt: skip


def audit_table(summary: pl.DataFrame) -> pl.DataFrame:
    """The audit table from the ``audit_table`` frame: one row per (population, model, rule, budget)."""
    cols = value_columns(AUDIT_COLUMNS)
    check_columns(summary, ["population", "model", "rule", "budget", *cols], "the audit table")
    return order_rows(summary, ["model", "rule"], pooled_first=True).select(["population", "model", "rule", "budget", *cols])


# ============================================================================================ the loss table

LOSS_COLUMNS = (
    Column("docs", "n_docs", None), Column("tokens", "n", None), Column("cells switched", "n_cells_switched", None),
    Column("CE (nats)", "ce", 4, True), Column("CE − CE(top-mass)", "delta_vs_top", 4, True),
    Column("share of the all-cell gain", "share", 3, True), Column("CE − CE(rule)", "delta_vs_rule", 4, True),
    Column("rule's gap recovered", "gap_recovered", 3, True), Column("max |ΔNLL| vs dense", "max_abs_vs_dense", 9),
    Column("max |ΔCE| vs dense", "max_ce_vs_dense", 9),
)  # fmt: skip


def loss_table(summary: pl.DataFrame) -> pl.DataFrame:
    """The loss table from the ``loss_table`` frame: one row per (model, configuration)."""
    cols = value_columns(LOSS_COLUMNS)
    check_columns(summary, ["population", "model", "config", *cols], "the loss table")
    return summary.sort(["model", "accounting", "config"]).select(["population", "model", "config", *cols])


# ============================================================================================ the allocation panel

ALLOCATION_COLUMNS = (
    Column("cells", "n_cells", None), Column("rows", "n_rows", None), Column("pooled es", "pooled_es", 4),
    Column("pooled es, uniform", "pooled_es_uniform", 4), Column("Δes vs uniform", "delta_es", 4, True),
    Column("smallest cell budget", "budget_min", None), Column("largest cell budget", "budget_max", None),
)  # fmt: skip


def allocation_table(summary: pl.DataFrame) -> pl.DataFrame:
    """The allocation panel (App B.6): one row per (model, unit budget, selector, allocator)."""
    frame = summary.rename({"delta_lo": "delta_es_low", "delta_hi": "delta_es_high"}).with_columns(population=pl.lit("primary"))
    cols = value_columns(ALLOCATION_COLUMNS)
    check_columns(frame, ["model", "unit", "selector", "allocator", *cols], "the allocation panel")
    return frame.sort(["model", "unit", "selector", "allocator"]).select(["population", "model", "unit", "selector", "allocator", *cols])


# ============================================================================================ the probe

PROBE_COLUMNS = (
    Column("rank", "rank", None), Column("training docs", "train_docs", None), Column("alpha", "alpha", 2),
    Column("docs (check half)", "n_docs", None), Column("swap recall", "recall", 3),
    Column("swap recall at alpha 1", "recall_trained_scale", 3), Column("precision", "precision", 3),
    Column("CE change, probe", "probe_ce_change", 4, True), Column("CE change, balancing", "balancing_ce_change", 4, True),
    Column("probe's share", "probe_share", 3, True),
)  # fmt: skip


def probe_table(summary: pl.DataFrame) -> pl.DataFrame:
    """The probe table: one row per model."""
    cols = value_columns(PROBE_COLUMNS)
    check_columns(summary, ["population", "model", *cols], "the probe table")
    return summary.sort("model").select(["population", "model", *cols])


# ============================================================================================ task contexts

TASK_COLUMNS = (
    Column("n", "n", None), Column("docs", "n_docs", None), Column("median ĉ", "median_c_hat", 4, True),
    Column("p90 κ̂", "p90_kappa_hat", 3), Column("share κ̂ > threshold", "value_aware_rate", 3, True),
    Column("share κ̂_bal > threshold", "value_aware_bal_rate", 3, True), Column("AUC(m̄_s)", "auc_dropped_mass", 3, True),
    Column("retrieval share", "retrieval_share", 3),
)  # fmt: skip


def task_table(summary: pl.DataFrame) -> pl.DataFrame:
    """The task-context table: per (model, budget, rows), the pooled model last."""
    cols = value_columns(TASK_COLUMNS)
    check_columns(summary, ["population", "model", "budget", "rows", *cols], "the task-context table")
    order = {"all": 0, "retrieval": 1, "background": 2}
    return (summary.with_columns(_pooled=pl.col("model") == POOLED, _rows=pl.col("rows").replace_strict(order, default=3))
            .sort(["_pooled", "model", "budget", "_rows"]).select(["population", "model", "budget", "rows", *cols]))  # fmt: skip


# ============================================================================================ curvature

CURVATURE_COLUMNS = (
    Column("cells", "n_cells", None), Column("docs", "n_docs", None),
    Column("predicted share", "predicted_share", 3, True), Column("frozen-set replay share", "replayed_share", 3, True),
    Column("measured share", "measured_share", 3, True), Column("g·δ", "first_order", 5), Column("δ·Hδ/2", "second_order", 5),
    Column("measured gain, nats", "measured_gain", 4), Column("es reduction", "es_reduction", 4),
    Column("conversion constant, nats per unit es", "conversion_constant", 4), Column("dropped mass", "mean_dropped_mass", 3),
)  # fmt: skip


def curvature_table(summary: pl.DataFrame) -> pl.DataFrame:
    """The curvature table: one row per (model, cell set)."""
    cols = value_columns(CURVATURE_COLUMNS)
    check_columns(summary, ["population", "model", "cell_set", *cols], "the curvature table")
    return summary.sort(["model", "cell_set"]).select(["population", "model", "cell_set", *cols])


# ============================================================================================ every layout

LAYOUTS: dict[str, TableLayout] = {
    "table1": TableLayout(
        "Table 1 — native budget: balancing's share of the gap through s = 256", table1, ("model", "statistic"),
        notes=("Balancing's share is a lower bound on the closable share c at every budget (one convention throughout).",
               "‡ native (deployed) budgets: no enumeration; right of the paper's vertical rule."),
        columns_of=table1_columns,
    ),
    "table2": TableLayout(
        "Table 2 — content diversity: prose, code, French", table2, ("model", "corpus", "budgets"), TABLE2_COLUMNS,
        ("Label: κ̂ > labels.kappa_threshold. Intervals: 95% document-cluster bootstrap.",
         "\"pooled\" pools the enumerated budgets (the paper does not say whether Table 2 pools them)."),
    ),
    "table6": TableLayout(
        "Table 6 — the panel", table6, ("model",), TABLE6_COLUMNS,
        ("AUC, edge/int and ρ_depth at the map budget (s = 8); ρ(Φ, ES_pool) and κ̂_bal pooled over the enumerated budgets.",
         ("Edges: the first and last statistics.edge_layers layers; edge/int intervals resample cells (layer, head), "
          "the others documents.")),
    ),
    "table7": TableLayout(
        "Table 7 — certification substitution", _sorted_by("budget"), ("budget",), TABLE7_COLUMNS,
        ("improved: the solver found a set more than 1% below ES_pool. f_hi: Wilson-95 upper bound on the improvement rate. "
         "Caps: the median ĉ after raising at most a fraction f_hi of the values (distribution-free). "
         "certifier: SCIP bisection (paper) is the paper's MISOCP protocol; branch-and-bound is "
         "trustmass.certification.bnb (certification.certifier).",),
    ),
    "table8": TableLayout(
        "Table 8 — per-budget profile", table8, ("model", "budget"), TABLE8_COLUMNS,
        (("share: ES_pool ≤ 0.9·es(A*_s). geo/lev: median es(A^geo)/es(A*), es(A^lev)/es(A*) over all keys and "
          "restricted to the candidate set C_s. vote: the group vote at this budget (median es_vote/es(A*), "
          "es_vote/ES_pool; fractions degraded and improved)."),),
    ),
    "sweep": TableLayout(
        "Cap-widening sweep at s = 32", _sorted_by("extra"), ("extra",), SWEEP_COLUMNS,
        ("e: candidate keys beyond A*_s; subsets: C(s + e, s). shift: the median ĉ's change from the smallest e.",),
        key_headers=(("extra", "e"),),
    ),
    "loss_table": TableLayout(
        "The held-out loss under the restricted operator", loss_table, ("model", "config"), LOSS_COLUMNS,
        ("CE: mean token NLL of the restricted continuation, averaged over held-out documents; intervals: paired "
         "document-cluster bootstrap (the same resamples for every configuration).",
         "share = (CE(top-mass) − CE(X)) / (CE(top-mass) − CE(all_cell)); rule's gap recovered = "
         "(CE(rule) − CE(rule+flat)) / (CE(rule) − CE(all_cell)); random = the mean over the random-cell seeds.",
         "keep_all keeps every key: its NLL must equal the dense model's (the operator's unit test)."),
    ),
    "probe_table": TableLayout(
        "The rank-16 probe against balancing (held-out)", probe_table, ("model",), PROBE_COLUMNS,
        ("alpha: chosen on the first half of the held-out documents (lowest CE; 0 is top-mass); CE changes against "
         "top-mass on the other half, paired document-cluster intervals; share = probe's reduction / balancing's.",
         "swap recall: of the keys balancing swaps in, the share the probe keeps, on the capture documents of the "
         "corpora it did not train on."),
    ),
    "curvature_table": TableLayout(
        "Curvature: the second-order prediction of each switch against its measured share", curvature_table,
        ("model", "cell_set"), CURVATURE_COLUMNS,
        ("Top-mass at s everywhere, kept sets frozen; δ = m_bal − m_top on the cell set's heads at every o_proj input; "
         "predicted ΔL = g·δ + δ·Hδ/2 (gradient and Hessian-vector product of the mean continuation NLL), its share = "
         "mean over documents / the all-cell mean; replay: L(δ) − L(0) along the same frozen path; measured: the loss "
         "table's share of the real switch. Intervals: the loss table's document resamples.",
         "conversion constant = measured gain / es reduction (mean over documents and switched cells of es(top-mass) − "
         "es(switch)); dropped mass: the switched cells' mean under top-mass."),
    ),
    "task_table": TableLayout(
        "Task-structured contexts: retrieval rows against background rows", task_table, ("model", "budget", "rows"),
        TASK_COLUMNS,
        ("Planted needles, variable chains and quote QA (trustmass.deploy.task_contexts); retrieval rows predict the "
         "planted answer's tokens, background rows are the other sampled rows. ĉ = 1 − ES_pool/es(A*_s); p90 κ̂: the "
         "90th percentile of κ̂ = es(A*_s)/ES_pool; AUC of the dropped mass for κ̂ > threshold; intervals: "
         "document-cluster bootstrap. Registered bounds (claims 42-46): pooled ĉ ≤ 0.09, p90 ratio ≤ 2, the κ̂ rate on "
         "retrieval rows at s = 8 ≤ 5 %, AUC ≥ 0.70, retrieval share ≥ 20 %.",),
    ),
    "allocation_table": TableLayout(
        "The allocation panel: re-allocating the budget by the map, at matched total", allocation_table,
        ("model", "unit", "selector", "allocator"), ALLOCATION_COLUMNS,
        ("Budgets per (layer, query head) cell sum to unit x cells. map_proportional: proportional to the cell's median "
         "m̄_8; mass_greedy: Ada-KV-style global top masses; pyramid: PyramidKV's linear decrease over layers.",
         "Δes = pooled es(allocation) − pooled es(uniform); intervals: paired cell-cluster bootstrap."),
    ),
    "audit_table": TableLayout(
        "The selector audit: deployed rules against ES_pool", audit_table, ("model", "rule", "budget"), AUDIT_COLUMNS,
        ("budget –: pooled over the enumerated budgets. At the native budgets (no ES_pool) the label is es_rule > threshold·es(A_bal).",
         "certificate: top-mass's own label κ̂ > threshold scored by dropped mass (Figure 3's reference row).",
         "contract vs top-mass: like_for_like where the rule and top-mass differ in the ranking scalar alone "
         "(trustmass.core.selectors.run_contract); otherwise the fields the comparison crosses (a transfer check)."),
    ),
}  # fmt: skip
LAYOUTS.update(DEPLOY_LAYOUTS)
LAYOUTS.update(DIAGNOSTIC_LAYOUTS)
LAYOUTS.update(ACCESS_LAYOUTS)
