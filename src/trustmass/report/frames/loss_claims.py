"""The held-out loss claims (52, 53, 55-58, 97, 111, 112, 124-126) as declarations read from claims frames.

:func:`claim_frames` turns the loss stage's statistics frames (the loss table, the allocation panel, the probe,
curvature) into one frame per kind of claim row: each claim statistic a column, with its interval
(``<column>_low``/``_high``), its group columns, ``population``, ``n`` and a flag column naming why the row
cannot speak to the claim (null where it can).  :data:`HEADLINE` says where each claim value is read;
:func:`headline` is ``declared_rows`` over them.

Degenerate comparisons never decide.  Every claim here compares two arms -- a switch against top-mass, a rule
with the flat switch against the rule, the map's cells against random ones, the probe against balancing, the
map-proportional allocation against the uniform one, one accounting against the other -- and a row is flagged
where the arms cannot differ by construction (a switched cell set that is empty, a probe that chose alpha = 0,
an allocation that gives every cell the unit budget), where they came out identical on every document (a change
exactly 0 with a [0, 0] interval), or where a share has no gain to share (its denominator, the all-cell gain,
balancing's loss reduction, the rule's gap, the predicted all-cell gain, is not positive: the ratio's sign
turns round and a "share" of 0.9 could mean both arms made CE worse).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import polars as pl

from trustmass.report.frames.loss_table import ALL_CELL, POPULATION, RANDOM
from trustmass.report.headline import HeadlineValue, declared_rows, headline_frame

__all__ = [
    "BALANCING_IS_TOP_MASS",
    "EMPTY_CELL_SET",
    "HEADLINE",
    "NO_ALL_CELL_GAIN",
    "NO_BALANCING_GAIN",
    "NO_PREDICTED_GAIN",
    "NO_RULE_GAP",
    "PROBE_IS_TOP_MASS",
    "RANK_TIE",
    "SAME_ACCOUNTING",
    "SAME_AS_RULE",
    "SAME_AS_TOP_MASS",
    "SAME_ES",
    "UNIFORM_ALLOCATION",
    "claim_frames",
    "headline",
]

FLAT = "flat_switch"
MAP_PROPORTIONAL = "map_proportional"

# ------------------------------------------------------------------ why a row cannot speak (the flag columns)

#: a switch whose cell set is empty is the configuration it switches from
EMPTY_CELL_SET = (
    "the switched cell set is empty (n_cells_switched = 0): the configuration is the one it switches from, "
    "so its CE change is 0 by construction"
)
#: both arms of the switch came out identical on every document
SAME_AS_TOP_MASS = (
    "the switch gives exactly top-mass's CE (change 0, interval [0, 0]): balancing picked top-mass's keys on "
    "every switched cell, the comparison is empty"
)
SAME_AS_RULE = (
    "the rule with the flat switch gives exactly the rule's CE (change 0, interval [0, 0]): the comparison is empty"
)
NO_ALL_CELL_GAIN = (
    "all-cell balancing does not lower CE against top-mass (its gain is <= 0): there is no gain to take a share "
    "of, and the ratio's sign turns round"
)
NO_RULE_GAP = (
    "all-cell balancing does not lower CE below the rule's (the rule's gap is <= 0): there is no gap to recover"
)
#: why the probe's CE change and share say nothing when the calibration chose alpha = 0
PROBE_IS_TOP_MASS = (
    "the probe chose alpha = 0: it is top-mass, so its CE change against top-mass and its share of "
    "the loss reduction are 0 by construction"
)
NO_BALANCING_GAIN = (
    "balancing does not lower CE against top-mass on the check documents (its change is >= 0): there is no loss "
    "reduction to take a share of"
)
BALANCING_IS_TOP_MASS = (
    "balancing gives exactly top-mass's CE on the check documents (change 0, interval [0, 0]): the comparison is empty"
)
NO_PREDICTED_GAIN = (
    "the second-order prediction for all cells is not a CE reduction (its mean is >= 0): there is no predicted "
    "gain to take a share of"
)
UNIFORM_ALLOCATION = (
    "the map-proportional allocation gives every cell the unit budget (budget_min = budget_max = unit): it is "
    "the uniform allocation, so its Δes is 0 by construction"
)
SAME_ES = (
    "the map-proportional and the uniform allocation give the same pooled es on every resample (Δes 0, interval "
    "[0, 0]): the comparison is empty"
)
RANK_TIE = "the rule's CE increase ties another rule's exactly: its rank is not defined"
SAME_ACCOUNTING = (
    "per-query and cache-faithful accounting give the rule exactly the same CE: the rule's selection does not "
    "depend on the accounting, the comparison is empty"
)

_ANY = (-math.inf, math.inf)
_SHARE = (0.0, 1.0)
_COUNT = (0.0, math.inf)
_MODEL_BUDGET = ("model", "budget")
_PAIR = ("selector", "model")

#: claim value -> where it is read (the frames of :func:`claim_frames`)
_ALLOCATION_DELTA = HeadlineValue(
    97,
    "allocation_delta_es",
    "map_allocation",
    "delta_es",
    ("model", "unit_budget", "selector"),
    ci=True,
    flag="allocation_flag",
    domain=_ANY,
)
HEADLINE: tuple[HeadlineValue, ...] = (
    # the flat switch against top-mass: nats of CE, either sign
    HeadlineValue(
        52,
        "flat_switch_ce_reduction",
        "flat_switch",
        "gain",
        _MODEL_BUDGET,
        ci=True,
        flag="switch_flag",
        domain=_ANY,
    ),
    HeadlineValue(
        52, "ce_change_ci_high", "flat_switch", "ce_change_ci_high", _MODEL_BUDGET, flag="switch_flag", domain=_ANY
    ),
    HeadlineValue(
        52,
        "families_with_reduction",
        "family_count",
        "families_with_reduction",
        (),
        domain=_COUNT,
        note="families whose flat switch can speak and whose CI of the CE change is < 0",
    ),
    # shares of the all-cell gain: a switch can beat all-cell balancing (> 1) or make CE worse (< 0); 112 reads
    # claim 55's pairs on the model playing Qwen3-1.7B
    *(
        HeadlineValue(claim, value, source, column, keys, ci=True, flag=flag, domain=_ANY)
        for claim, value, source, column, keys, flag in (
            (53, "flat_switch_share_of_all_cell_gain", "flat_switch", "share", ("model",), "share_flag"),
            (56, "map_share_of_all_cell_gain", "flat_switch", "share", ("model",), "share_flag"),
            (125, "map_share_of_all_cell_gain", "flat_switch", "share", ("model",), "share_flag"),
            (125, "random_share_of_all_cell_gain", "random_cells", "share", ("model",), "share_flag"),
            (55, "rule_flat_switch_gap_recovered", "rule_pairs", "gap_recovered", _PAIR, "gap_flag"),
            (112, "rule_flat_switch_gap_recovered", "rule_pairs", "gap_recovered", _PAIR, "gap_flag"),
        )
    ),
    HeadlineValue(55, "paired_ci_high", "rule_pairs", "paired_ci_high", _PAIR, flag="pair_flag", domain=_ANY),
    HeadlineValue(
        55,
        "n_pairs",
        "pair_count",
        "n_pairs",
        (),
        domain=_COUNT,
        note="(selector, family) pairs that can speak and whose paired CI is < 0",
    ),
    # the rules alone: ranks among the audited rules (1 .. their number), the accounting difference in nats
    HeadlineValue(
        111,
        "quest_rank_by_ce_increase",
        "rule_ranks",
        "quest_rank",
        _MODEL_BUDGET,
        flag="quest_rank_flag",
        domain=(1.0, math.inf),
    ),
    HeadlineValue(
        111,
        "streaming_llm_rank_from_most_ce_increase",
        "rule_ranks",
        "streaming_llm_rank",
        _MODEL_BUDGET,
        flag="streaming_llm_rank_flag",
        domain=(1.0, math.inf),
    ),
    HeadlineValue(
        111,
        "per_query_minus_cache_faithful_ce",
        "accounting",
        "per_query_minus_cache_faithful_ce",
        _PAIR,
        flag="accounting_flag",
        domain=_ANY,
    ),
    # the allocation panel: pooled es of the map-proportional allocation minus the uniform one's, and the same
    # rows, every unit budget and selector, as the sign the paper says holds at 16 and under top-mass
    _ALLOCATION_DELTA,
    replace(_ALLOCATION_DELTA, value="allocation_delta_es_sign"),
    # the probe against top-mass and balancing
    HeadlineValue(
        57,
        "probe_share_of_loss_reduction",
        "probe",
        "probe_share",
        ("model", "probe_rank"),
        ci=True,
        flag="share_flag",
        domain=_ANY,
    ),
    HeadlineValue(124, "n_training_docs", "probe", "train_docs", ("model",), domain=_COUNT),
    HeadlineValue(
        124,
        "swap_recall",
        "probe",
        "recall_trained_scale",
        ("model",),
        n_column="swap_rows",
        domain=_SHARE,
        note="alpha = 1, the scale it was trained at; other corpora's capture documents",
    ),
    HeadlineValue(
        124, "probe_ce_change", "probe", "probe_ce_change", ("model",), ci=True, flag="probe_flag", domain=_ANY
    ),
    HeadlineValue(
        124,
        "balancing_ce_change",
        "probe",
        "balancing_ce_change",
        ("model",),
        ci=True,
        flag="balancing_flag",
        domain=_ANY,
    ),
    # curvature: the flat switch's predicted and measured shares; the conversion constant over the families
    HeadlineValue(
        126,
        "predicted_share",
        "flat_curvature",
        "predicted_share",
        ("model",),
        ci=True,
        flag="predicted_flag",
        domain=_ANY,
    ),
    HeadlineValue(
        126,
        "measured_share",
        "flat_curvature",
        "measured_share",
        ("model",),
        ci=True,
        flag="measured_flag",
        domain=_ANY,
    ),
    HeadlineValue(
        58,
        "conversion_constant_orders_of_magnitude",
        "constant_span",
        "orders_of_magnitude",
        (),
        n_column="n_families",
        domain=(0.0, math.inf),
    ),
    HeadlineValue(
        58,
        "constant_vs_reconstruction_gain_spearman",
        "constant_span",
        "spearman_constant_es_reduction",
        (),
        n_column="n_families",
        domain=(-1.0, 1.0),
    ),
)


def _reasons(*parts: pl.Expr) -> pl.Expr:
    """Every reason that holds (each part a string or null), joined by '; '; null where none holds."""
    joined = pl.concat_str(list(parts), separator="; ", ignore_nulls=True)
    return pl.when(joined != "").then(joined)


def _when(condition: pl.Expr, reason: str) -> pl.Expr:
    return pl.when(condition.fill_null(False)).then(pl.lit(reason))


def _unchanged(column: str) -> pl.Expr:
    """A change exactly 0 whose interval (where there is one) is [0, 0]: both arms identical on every resample."""
    low, high = pl.col(f"{column}_low"), pl.col(f"{column}_high")
    return (pl.col(column) == 0) & (low.is_null() | ((low == 0) & (high == 0)))


def _require_budget(frame: pl.DataFrame, what: str) -> None:
    if frame.height and frame["budget"].null_count():
        raise ValueError(
            f"loss_table: {what} rows have no budget (models {sorted(frame.filter(pl.col('budget').is_null())['model'])})"
            ": the held-out token frames must carry the budget they were decoded at (trustmass.loss.document writes "
            "it); re-run the loss stage"
        )


def _switch_rows(table: pl.DataFrame, config: str) -> pl.DataFrame:
    """Claims 52, 53, 56, 125: one top-mass switch (the flat cells, or the random ones) per model, with its gain
    against top-mass, its share of the all-cell gain and why either cannot speak."""
    all_cell = table.filter(pl.col("config") == ALL_CELL).select("model", all_cell_gain="gain")
    rows = table.filter(pl.col("config") == config).join(all_cell, on="model", how="left")
    _require_budget(rows, config)
    switch_flag = (
        pl.when(pl.col("n_cells_switched") == 0)
        .then(pl.lit(EMPTY_CELL_SET))
        .when(_unchanged("delta_vs_top").fill_null(False))
        .then(pl.lit(SAME_AS_TOP_MASS))
    )
    return rows.select(
        "model",
        "population",
        "budget",
        "n",
        "n_docs",
        "n_cells_switched",
        "gain",
        gain_low=-pl.col("delta_vs_top_high"),
        gain_high=-pl.col("delta_vs_top_low"),
        ce_change_ci_high=pl.col("delta_vs_top_high"),
        share=pl.col("share"),
        share_low=pl.col("share_low"),
        share_high=pl.col("share_high"),
        all_cell_gain=pl.col("all_cell_gain"),
        switch_flag=switch_flag,
    ).with_columns(share_flag=_reasons(pl.col("switch_flag"), _when(~(pl.col("all_cell_gain") > 0), NO_ALL_CELL_GAIN)))


def _rule_pairs(table: pl.DataFrame, rules: tuple[str, ...]) -> pl.DataFrame:
    """Claims 55, 112: each audited rule with the flat switch against the rule alone (per-query accounting)."""
    per_query = pl.col("accounting") == "per_query"
    alone = table.filter(pl.col("base_rule").is_in(list(rules)), pl.col("switch_rule").is_null(), per_query)
    all_cell = table.filter(pl.col("config") == ALL_CELL).select("model", all_cell_ce="ce")
    pairs = (
        table.filter(pl.col("base_rule").is_in(list(rules)), pl.col("switch_rule").is_not_null(), per_query)
        .join(alone.select("model", "base_rule", rule_ce="ce"), on=["model", "base_rule"], how="left")
        .join(all_cell, on="model", how="left")
    )
    pair_flag = (
        pl.when(pl.col("n_cells_switched") == 0)
        .then(pl.lit(EMPTY_CELL_SET))
        .when(_unchanged("delta_vs_rule").fill_null(False))
        .then(pl.lit(SAME_AS_RULE))
    )
    return pairs.select(
        pl.col("base_rule").alias("selector"),
        "model",
        "population",
        "budget",
        "n",
        "n_docs",
        "gap_recovered",
        "gap_recovered_low",
        "gap_recovered_high",
        paired_ci_high=pl.col("delta_vs_rule_high"),
        pair_flag=pair_flag,
        rule_gap=pl.col("rule_ce") - pl.col("all_cell_ce"),
    ).with_columns(gap_flag=_reasons(pl.col("pair_flag"), _when(~(pl.col("rule_gap") > 0), NO_RULE_GAP)))


def _count(rows: pl.DataFrame, flag: str, decided: pl.Expr, name: str, models: str) -> pl.DataFrame:
    """One study-wide count: the conditions that can speak (``flag`` null) and meet ``decided``; ``n`` the
    conditions that can speak, ``n_degenerate`` those that cannot."""
    speaking = rows.filter(pl.col(flag).is_null())
    return pl.DataFrame(
        {
            "population": [POPULATION],
            "models": [models],
            name: [float(speaking.filter(decided.fill_null(False)).height)],
            "n": [speaking.height],
            "n_degenerate": [rows.height - speaking.height],
        }
    )


def _rank_rows(table: pl.DataFrame, rules: tuple[str, ...]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Claim 111, per model: the ranks of Quest (from the least) and StreamingLLM (from the most) by the CE
    increase over top-mass of the rules run alone; per (rule, model), per-query minus cache-faithful CE of every
    rule run both ways (needs loss.accounting to include cache_faithful)."""
    ranks, accounting = [], []
    for (model,), g in table.group_by(["model"], maintain_order=True):
        alone = g.filter(pl.col("base_rule").is_in(list(rules)), pl.col("switch_rule").is_null())
        per_query = alone.filter(pl.col("accounting") == "per_query", pl.col("delta_vs_top").is_not_null())
        increase = dict(zip(per_query["base_rule"], per_query["delta_vs_top"], strict=True))
        common = {"model": model, "population": POPULATION, "models": model, "n_docs": int(g["n_docs"].max())}
        if len(increase) >= 2:
            _require_budget(per_query, "the audited rules'")
            rec = {**common, "budget": per_query["budget"][0], "n": len(increase)}  # n: the rules ranked
            for rule, name, below in (("quest", "quest_rank", True), ("streaming_llm", "streaming_llm_rank", False)):
                mine = increase.get(rule)
                others = [v for r, v in increase.items() if r != rule]
                rank = None if mine is None else 1 + sum((v < mine) if below else (v > mine) for v in others)
                rec[name] = None if rank is None else float(rank)
                rec[f"{name}_flag"] = RANK_TIE if mine is not None and mine in others else None
            ranks.append(rec)
        ce = dict(zip(per_query["base_rule"], zip(per_query["ce"], per_query["ce_low"], per_query["ce_high"])))
        for rec in alone.filter(pl.col("accounting") == "cache_faithful").iter_rows(named=True):
            if rec["base_rule"] in ce:
                pq = ce[rec["base_rule"]]
                same = pq == (rec["ce"], rec["ce_low"], rec["ce_high"])
                accounting.append(
                    {
                        **common,
                        "selector": rec["base_rule"],
                        "n": rec["n"],
                        "per_query_minus_cache_faithful_ce": float(pq[0] - rec["ce"]),
                        "accounting_flag": SAME_ACCOUNTING if same else None,
                    }
                )
    rank_schema = {
        "model": pl.Utf8,
        "population": pl.Utf8,
        "models": pl.Utf8,
        "n_docs": pl.Int64,
        "budget": pl.Int64,
        "n": pl.Int64,
        **{c: t for n in ("quest_rank", "streaming_llm_rank") for c, t in ((n, pl.Float64), (f"{n}_flag", pl.Utf8))},
    }
    accounting_schema = {
        **{k: rank_schema[k] for k in ("model", "population", "models", "n_docs")},
        "selector": pl.Utf8,
        "n": pl.Int64,
        "per_query_minus_cache_faithful_ce": pl.Float64,
        "accounting_flag": pl.Utf8,
    }
    return pl.DataFrame(ranks, schema=rank_schema), pl.DataFrame(accounting, schema=accounting_schema)


def _allocation_rows(panel: pl.DataFrame) -> pl.DataFrame:
    """Claim 97: Δes of the map-proportional allocation against the uniform one, per (model, unit, selector)."""
    if "n_docs" not in panel.columns:
        panel = panel.with_columns(n_docs=pl.lit(None, dtype=pl.Int64))
    uniform = (pl.col("budget_min") == pl.col("unit")) & (pl.col("budget_max") == pl.col("unit"))
    rows = panel.filter(pl.col("allocator") == MAP_PROPORTIONAL).select(
        "model",
        "selector",
        "delta_es",
        pl.lit("primary").alias("population"),
        pl.col("unit").alias("unit_budget"),
        pl.col("delta_lo").alias("delta_es_low"),
        pl.col("delta_hi").alias("delta_es_high"),
        pl.col("n_rows").alias("n"),
        pl.col("n_docs").cast(pl.Int64),
        uniform=uniform.fill_null(False) if "budget_min" in panel.columns else pl.lit(False),
    )
    flag = pl.when(pl.col("uniform")).then(pl.lit(UNIFORM_ALLOCATION)).when(_unchanged("delta_es").fill_null(False))
    return rows.with_columns(allocation_flag=flag.then(pl.lit(SAME_ES))).drop("uniform")


def _probe_rows(probe: pl.DataFrame) -> pl.DataFrame:
    """Claims 57, 124: the probe table with why each comparison cannot speak."""
    probe_flag = _when(pl.col("alpha") == 0, PROBE_IS_TOP_MASS)
    return probe.with_columns(
        probe_rank=pl.col("rank"),
        probe_flag=probe_flag,
        balancing_flag=_when(_unchanged("balancing_ce_change"), BALANCING_IS_TOP_MASS),
        share_flag=_reasons(probe_flag, _when(~(pl.col("balancing_ce_change") < 0), NO_BALANCING_GAIN)),
    )


def _curvature_rows(curvature: pl.DataFrame, flat: pl.DataFrame | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Claim 126 (the flat switch's predicted and measured shares, per model, the measured one flagged as the
    loss table's share is) and 58 (how many orders of magnitude the conversion constant spans over the models
    with a positive one; with three or more, the rank correlation of the constant with the es reduction, the
    paper's 'smallest where the reconstruction gain is largest')."""
    all_cell = curvature.filter(pl.col("cell_set") == ALL_CELL).select("model", all_cell_predicted="predicted")
    if flat is None:
        flat = pl.DataFrame(schema={"model": pl.Utf8, "share_flag": pl.Utf8})
    rows = (
        curvature.filter(pl.col("cell_set") == FLAT)
        .join(all_cell, on="model", how="left")
        .join(flat.select("model", measured_flag="share_flag"), on="model", how="left")
        .with_columns(
            predicted_flag=pl.when(pl.col("n_cells") == 0)
            .then(pl.lit(EMPTY_CELL_SET))
            .when((pl.col("all_cell_predicted") >= 0).fill_null(False))
            .then(pl.lit(NO_PREDICTED_GAIN))
        )
    )
    constants = rows.filter(pl.col("conversion_constant") > 0)
    span = pl.DataFrame(
        schema={
            "population": pl.Utf8,
            "models": pl.Utf8,
            "n_docs": pl.Int64,
            "n_families": pl.Int64,
            "n_degenerate": pl.Int64,
            "orders_of_magnitude": pl.Float64,
            "spearman_constant_es_reduction": pl.Float64,
        }
    )
    if constants.height >= 2:
        c = constants["conversion_constant"].to_numpy()
        rho = None
        if constants.height >= 3:
            from scipy.stats import spearmanr

            rho = float(spearmanr(c, constants["es_reduction"].to_numpy()).statistic)
        span = pl.DataFrame(
            {
                "population": [POPULATION],
                "models": [",".join(sorted(constants["model"].to_list()))],
                "n_docs": [int(constants["n_docs"].min())],
                "n_families": [constants.height],
                "n_degenerate": [rows.height - constants.height],
                "orders_of_magnitude": [float(np.log10(c.max() / c.min()))],
                "spearman_constant_es_reduction": [rho],
            },
            schema=span.schema,
        )
    return rows, span


def claim_frames(
    table: pl.DataFrame,
    rules: tuple[str, ...],
    *,
    allocation: pl.DataFrame | None = None,
    probe: pl.DataFrame | None = None,
    curvature: pl.DataFrame | None = None,
) -> dict[str, pl.DataFrame]:
    """Every frame :data:`HEADLINE` reads, from the loss table (``rules``: the config's ``loss.rules``) and the
    panels the run made (an absent or empty table or panel gives no frame, so its claims give no rows)."""
    out: dict[str, pl.DataFrame] = {}
    if table.height:
        flat = _switch_rows(table, FLAT)
        pairs = _rule_pairs(table, rules)
        models = ",".join(sorted(set(table["model"])))
        out["flat_switch"], out["random_cells"], out["rule_pairs"] = flat, _switch_rows(table, RANDOM), pairs
        out["family_count"] = _count(
            flat, "switch_flag", pl.col("ce_change_ci_high") < 0, "families_with_reduction", models
        )
        out["pair_count"] = _count(pairs, "pair_flag", pl.col("paired_ci_high") < 0, "n_pairs", models)
        out["rule_ranks"], out["accounting"] = _rank_rows(table, rules)
    if allocation is not None and allocation.height:
        out["map_allocation"] = _allocation_rows(allocation)
    if probe is not None and probe.height:
        out["probe"] = _probe_rows(probe)
    if curvature is not None and curvature.height:
        out["flat_curvature"], out["constant_span"] = _curvature_rows(curvature, out.get("flat_switch"))
    return out


def headline(frames: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """The loss claims' headline rows: every declaration of :data:`HEADLINE` read from :func:`claim_frames`."""
    return headline_frame(declared_rows(HEADLINE, frames))
