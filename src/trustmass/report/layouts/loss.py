"""The layouts of the loss stage's tables (the loss table, the allocation panel, the probe, curvature).

How each statistics frame becomes the table the paper prints, rendered by the one renderer
(:mod:`trustmass.report.tables`):

- The loss table: per (model, configuration) held-out CE, the change against top-mass, shares and recovered gaps.
- The allocation panel: per (model, unit, selector, allocator) pooled es and Δes against uniform.
- The probe table: per model the chosen alpha, swap recall and the CE changes of probe and balancing.
"""

from __future__ import annotations

import polars as pl

from trustmass.report.tables import Column, TableLayout, check_columns, value_columns, write

__all__ = ["LAYOUTS", "write"]


# ============================================================================================ the loss table

LOSS_COLUMNS = (
    Column("docs", "n_docs", None),
    Column("tokens", "n", None),
    Column("cells switched", "n_cells_switched", None),
    Column("CE (nats)", "ce", 4, True),
    Column("CE − CE(top-mass)", "delta_vs_top", 4, True),
    Column("share of the all-cell gain", "share", 3, True),
    Column("CE − CE(rule)", "delta_vs_rule", 4, True),
    Column("rule's gap recovered", "gap_recovered", 3, True),
    Column("max |ΔNLL| vs dense", "max_abs_vs_dense", 9),
    Column("max |ΔCE| vs dense", "max_ce_vs_dense", 9),
)


def loss_table(summary: pl.DataFrame) -> pl.DataFrame:
    """The loss table from the ``loss_table`` frame: one row per (model, configuration)."""
    cols = value_columns(LOSS_COLUMNS)
    check_columns(summary, ["population", "model", "config", *cols], "the loss table")
    return summary.sort(["model", "accounting", "config"]).select(["population", "model", "config", *cols])


# ============================================================================================ the allocation panel

ALLOCATION_COLUMNS = (
    Column("cells", "n_cells", None),
    Column("rows", "n_rows", None),
    Column("pooled es", "pooled_es", 4),
    Column("pooled es, uniform", "pooled_es_uniform", 4),
    Column("Δes vs uniform", "delta_es", 4, True),
    Column("smallest cell budget", "budget_min", None),
    Column("largest cell budget", "budget_max", None),
)


def allocation_table(summary: pl.DataFrame) -> pl.DataFrame:
    """The allocation panel (App B.6): one row per (model, unit budget, selector, allocator)."""
    frame = summary.rename({"delta_lo": "delta_es_low", "delta_hi": "delta_es_high"}).with_columns(
        population=pl.lit("primary")
    )
    cols = value_columns(ALLOCATION_COLUMNS)
    check_columns(frame, ["model", "unit", "selector", "allocator", *cols], "the allocation panel")
    return frame.sort(["model", "unit", "selector", "allocator"]).select(
        ["population", "model", "unit", "selector", "allocator", *cols]
    )


# ============================================================================================ the probe

PROBE_COLUMNS = (
    Column("rank", "rank", None),
    Column("training docs", "train_docs", None),
    Column("alpha", "alpha", 2),
    Column("docs (check half)", "n_docs", None),
    Column("swap recall", "recall", 3),
    Column("swap recall at alpha 1", "recall_trained_scale", 3),
    Column("precision", "precision", 3),
    Column("CE change, probe", "probe_ce_change", 4, True),
    Column("CE change, balancing", "balancing_ce_change", 4, True),
    Column("probe's share", "probe_share", 3, True),
)


def probe_table(summary: pl.DataFrame) -> pl.DataFrame:
    """The probe table: one row per model."""
    cols = value_columns(PROBE_COLUMNS)
    check_columns(summary, ["population", "model", *cols], "the probe table")
    return summary.sort("model").select(["population", "model", *cols])


# ============================================================================================ curvature

CURVATURE_COLUMNS = (
    Column("cells", "n_cells", None),
    Column("docs", "n_docs", None),
    Column("predicted share", "predicted_share", 3, True),
    Column("frozen-set replay share", "replayed_share", 3, True),
    Column("measured share", "measured_share", 3, True),
    Column("g·δ", "first_order", 5),
    Column("δ·Hδ/2", "second_order", 5),
    Column("measured gain, nats", "measured_gain", 4),
    Column("es reduction", "es_reduction", 4),
    Column("conversion constant, nats per unit es", "conversion_constant", 4),
    Column("dropped mass", "mean_dropped_mass", 3),
)


def curvature_table(summary: pl.DataFrame) -> pl.DataFrame:
    """The curvature table: one row per (model, cell set)."""
    cols = value_columns(CURVATURE_COLUMNS)
    check_columns(summary, ["population", "model", "cell_set", *cols], "the curvature table")
    return summary.sort(["model", "cell_set"]).select(["population", "model", "cell_set", *cols])


LAYOUTS: dict[str, TableLayout] = {
    "loss_table": TableLayout(
        "The held-out loss under the restricted operator",
        loss_table,
        ("model", "config"),
        LOSS_COLUMNS,
        (
            "CE: mean token NLL of the restricted continuation, averaged over held-out documents; intervals: paired "
            "document-cluster bootstrap (the same resamples for every configuration).",
            "share = (CE(top-mass) − CE(X)) / (CE(top-mass) − CE(all_cell)); rule's gap recovered = "
            "(CE(rule) − CE(rule+flat)) / (CE(rule) − CE(all_cell)); random = the mean over the random-cell seeds.",
            "keep_all keeps every key: its NLL must equal the dense model's (the operator's unit test).",
        ),
    ),
    "allocation_table": TableLayout(
        "The allocation panel: re-allocating the budget by the map, at matched total",
        allocation_table,
        ("model", "unit", "selector", "allocator"),
        ALLOCATION_COLUMNS,
        (
            "Budgets per (layer, query head) cell sum to unit x cells. map_proportional: proportional to the cell's median "
            "m̄_8; mass_greedy: Ada-KV-style global top masses; pyramid: PyramidKV's linear decrease over layers.",
            "Δes = pooled es(allocation) − pooled es(uniform); intervals: paired cell-cluster bootstrap.",
        ),
    ),
    "probe_table": TableLayout(
        "The rank-16 probe against balancing (held-out)",
        probe_table,
        ("model",),
        PROBE_COLUMNS,
        (
            "alpha: chosen on the first half of the held-out documents (lowest CE; 0 is top-mass); CE changes against "
            "top-mass on the other half, paired document-cluster intervals; share = probe's reduction / balancing's.",
            "swap recall: of the keys balancing swaps in, the share the probe keeps, on the capture documents of the "
            "corpora it did not train on.",
        ),
    ),
    "curvature_table": TableLayout(
        "Curvature: the second-order prediction of each switch against its measured share",
        curvature_table,
        ("model", "cell_set"),
        CURVATURE_COLUMNS,
        (
            "Top-mass at s everywhere, kept sets frozen; δ = m_bal − m_top on the cell set's heads at every o_proj input; "
            "predicted ΔL = g·δ + δ·Hδ/2 (gradient and Hessian-vector product of the mean continuation NLL), its share = "
            "mean over documents / the all-cell mean; replay: L(δ) − L(0) along the same frozen path; measured: the loss "
            "table's share of the real switch. Intervals: the loss table's document resamples.",
            "conversion constant = measured gain / es reduction (mean over documents and switched cells of es(top-mass) − "
            "es(switch)); dropped mass: the switched cells' mean under top-mass.",
        ),
    ),
}
