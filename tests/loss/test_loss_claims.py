"""The loss claims as declarations: every value declared, and every degenerate comparison flagged in every row.

Each flag gets a small hand-built frame where it fires and one where it does not.  The frames are the loss
stage's statistics frames (the loss table, the probe, curvature, the allocation panel) with only the columns
the claims read filled in."""

from __future__ import annotations

import ast
import inspect
import math

import polars as pl
import pytest
from unit.headline_dimensions import assert_dimensions, rows_of

from trustmass.report.engine import frame_from_rows
from trustmass.report.frames import loss, loss_claims, loss_table, tasks
from trustmass.report.frames import loss_claims as LC
from trustmass.report.frames.loss import CURVATURE_TABLE_SCHEMA, PROBE_SCHEMA
from trustmass.report.frames.loss_table import LOSS_TABLE_SCHEMA
from trustmass.report.headline import check_value

RULES = ("snapkv", "quest", "streaming_llm")

# config -> its loss-table row (CE in nats; changes against top-mass with their intervals)
CONFIGS = {
    "top_mass": dict(ce=4.0, delta_vs_top=0.0, delta_vs_top_low=0.0, delta_vs_top_high=0.0, share=0.0),
    "all_cell": dict(
        switch_rule="balancing",
        cells="all",
        n_cells_switched=10,
        ce=3.6,
        delta_vs_top=-0.4,
        delta_vs_top_low=-0.5,
        delta_vs_top_high=-0.3,
        share=1.0,
        share_low=1.0,
        share_high=1.0,
    ),
    "flat_switch": dict(
        switch_rule="balancing",
        cells="flat",
        n_cells_switched=5,
        ce=3.65,
        delta_vs_top=-0.35,
        delta_vs_top_low=-0.45,
        delta_vs_top_high=-0.25,
        share=0.875,
        share_low=0.8,
        share_high=0.95,
    ),
    "random": dict(
        switch_rule="balancing",
        cells="random",
        n_cells_switched=5,
        n_seeds=2,
        ce=3.9,
        delta_vs_top=-0.1,
        delta_vs_top_low=-0.2,
        delta_vs_top_high=0.0,
        share=0.25,
        share_low=0.0,
        share_high=0.5,
    ),
    "snapkv": dict(base_rule="snapkv", ce=4.5, delta_vs_top=0.5, delta_vs_top_low=0.4, delta_vs_top_high=0.6),
    "snapkv+flat": dict(
        base_rule="snapkv",
        switch_rule="balancing",
        cells="flat",
        n_cells_switched=5,
        ce=3.9,
        delta_vs_top=-0.1,
        delta_vs_rule=-0.6,
        delta_vs_rule_low=-0.7,
        delta_vs_rule_high=-0.5,
        gap_recovered=0.6 / 0.9,
        gap_recovered_low=0.5,
        gap_recovered_high=0.8,
    ),
    "quest": dict(base_rule="quest", ce=4.2, delta_vs_top=0.2, delta_vs_top_low=0.1, delta_vs_top_high=0.3),
    "streaming_llm": dict(base_rule="streaming_llm", ce=5.0, delta_vs_top=1.0),
    "snapkv@cache_faithful": dict(base_rule="snapkv", accounting="cache_faithful", ce=4.6, ce_low=4.5, ce_high=4.7),
}


def table(**changes: dict) -> pl.DataFrame:
    """The loss table of one model ``m`` at s = 8; ``changes`` maps a config to the columns it overrides."""
    rows = []
    for config, cols in CONFIGS.items():
        base = dict(model="m", population="all", budget=8, config=config, base_rule="top_mass", switch_rule=None)
        base |= dict(cells="none", accounting="per_query", n_docs=3, n=30, n_cells_switched=0, n_seeds=1)
        rows.append({**base, **cols, **changes.get(config, {})})
    out = frame_from_rows(rows, LOSS_TABLE_SCHEMA)
    return out.with_columns(gain=-pl.col("delta_vs_top"))


def head(frame: pl.DataFrame = None, **panels) -> pl.DataFrame:
    return loss.headline(loss.claim_frames(table() if frame is None else frame, RULES, **panels))


def reasons(frame: pl.DataFrame, claim: int, value: str) -> list:
    return rows_of(frame, claim, value)["uninformative"].to_list()


# ---------------------------------------------------------------- every value declared, nothing by hand


def test_the_modules_make_no_headline_row_by_hand():
    """No module of the loss and task claims imports ``row``/``rows_from_frame`` or spells a headline row out
    itself: every value goes through a declaration."""
    for module in (loss, loss_claims, loss_table, tasks):
        tree = ast.parse(inspect.getsource(module))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "trustmass.report.headline":
                names = {a.name for a in node.names}
                assert not names & {"row", "rows_from_frame"}, (module.__name__, names)
            if isinstance(node, ast.Dict):  # a headline row spelled out as a literal
                keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
                assert "claim_id" not in keys, module.__name__


def test_every_declaration_names_a_claim_value_and_a_domain():
    for spec in (*LC.HEADLINE, *tasks.HEADLINE):
        check_value(spec.claim, spec.value)  # KeyError when claims.yaml has no such value
        low, high = spec.domain
        assert low < high and not (math.isinf(low) and low > 0), spec
    covered = {spec.claim for spec in LC.HEADLINE}
    assert covered == {52, 53, 55, 56, 57, 58, 97, 111, 112, 124, 125, 126}
    assert {spec.claim for spec in tasks.HEADLINE} == {42, 43, 44, 45, 46, 47}


def probe_frame(**cols) -> pl.DataFrame:
    row = dict(model="m", population="all", alpha=0.5, rank=16, train_docs=4, n_calibration_docs=2, n_docs=2, n=20)
    row |= dict(probe_ce_change=-0.01, probe_ce_change_low=-0.02, probe_ce_change_high=0.0)
    row |= dict(balancing_ce_change=-0.1, balancing_ce_change_low=-0.15, balancing_ce_change_high=-0.05)
    row |= dict(probe_share=0.1, probe_share_low=0.0, probe_share_high=0.2, recall=0.3, swap_rows=40)
    row |= dict(recall_trained_scale=0.33)
    return frame_from_rows([{**row, **cols}], PROBE_SCHEMA)


def curvature_frame(flat: dict | None = None, all_cell: dict | None = None, models=("m", "n", "o")) -> pl.DataFrame:
    """Flat-switch and all-cell rows per model; the conversion constants 10, 1, 0.1 span two orders."""
    rows = []
    for i, model in enumerate(models):
        common = dict(model=model, population="all", n_docs=2, n=30)
        rows.append({**common, "cell_set": "all_cell", "n_cells": 10, "predicted": -0.4, "predicted_share": 1.0})
        rows.append(
            {
                **common,
                "cell_set": "flat_switch",
                "n_cells": 5,
                "predicted": -0.3,
                "predicted_share": 0.75,
                "predicted_share_low": 0.7,
                "predicted_share_high": 0.8,
                "measured_share": 0.875,
                "es_reduction": 0.1 * (i + 1),
                "conversion_constant": 10.0 ** (1 - i),
            }
        )
    for r in rows:
        r.update((flat if r["cell_set"] == "flat_switch" else all_cell) or {})
    return frame_from_rows(rows, CURVATURE_TABLE_SCHEMA)


def allocation_frame(**cols) -> pl.DataFrame:
    row = dict(model="m", unit=8, selector="balancing", allocator="map_proportional", n_rows=10, n_docs=2)
    row |= dict(delta_es=0.2, delta_lo=0.1, delta_hi=0.3, budget_min=1, budget_max=20)
    return pl.DataFrame([{**row, **cols}])


def test_every_declaration_reads_a_row_from_a_complete_run():
    out = head(probe=probe_frame(), curvature=curvature_frame(), allocation=allocation_frame())
    assert_dimensions(out)
    produced = set(zip(out["claim_id"], out["value_name"], strict=True))
    assert produced == {(s.claim, s.value) for s in LC.HEADLINE}
    assert out["uninformative"].null_count() == out.height  # nothing degenerate here: no flag fires
    for spec in LC.HEADLINE:  # every estimate lies in the declared domain
        for x in rows_of(out, spec.claim, spec.value)["estimate"]:
            assert spec.domain[0] <= x <= spec.domain[1], (spec.claim, spec.value, x)


# ---------------------------------------------------------------- the switches against top-mass (52, 53, 56, 125)

SWITCH_VALUES = ((52, "flat_switch_ce_reduction"), (52, "ce_change_ci_high"))
SHARE_VALUES = (
    (53, "flat_switch_share_of_all_cell_gain"),
    (56, "map_share_of_all_cell_gain"),
    (125, "map_share_of_all_cell_gain"),
)


def test_an_empty_flat_cell_set_flags_every_row_of_the_flat_switch():
    empty = head(table(flat_switch=dict(n_cells_switched=0)))
    for claim, value in SWITCH_VALUES + SHARE_VALUES:
        assert reasons(empty, claim, value) == [LC.EMPTY_CELL_SET], (claim, value)
    assert rows_of(empty, 52, "families_with_reduction")["estimate"].to_list() == [0.0]  # it cannot count
    assert rows_of(empty, 52, "families_with_reduction")["n_excluded"].to_list() == [1]
    speaks = head()
    for claim, value in SWITCH_VALUES + SHARE_VALUES:
        assert reasons(speaks, claim, value) == [None], (claim, value)
    assert rows_of(speaks, 52, "families_with_reduction")["estimate"].to_list() == [1.0]


def test_a_switch_identical_to_top_mass_is_flagged_only_with_a_zero_width_interval():
    zero = dict(delta_vs_top=0.0, delta_vs_top_low=0.0, delta_vs_top_high=0.0, share=0.0)
    same = head(table(flat_switch=zero))
    assert reasons(same, 52, "flat_switch_ce_reduction") == [LC.SAME_AS_TOP_MASS]
    assert reasons(same, 53, "flat_switch_share_of_all_cell_gain") == [LC.SAME_AS_TOP_MASS]
    near = head(table(flat_switch={**zero, "delta_vs_top_low": -0.1, "delta_vs_top_high": 0.1}))
    assert reasons(near, 52, "flat_switch_ce_reduction") == [None]  # 0 on average, not on every document


def test_a_share_of_no_all_cell_gain_is_flagged_but_the_switch_still_speaks():
    worse = head(table(all_cell=dict(delta_vs_top=0.05, delta_vs_top_low=-0.05, delta_vs_top_high=0.15)))
    for claim, value in SHARE_VALUES + ((125, "random_share_of_all_cell_gain"),):
        assert reasons(worse, claim, value) == [LC.NO_ALL_CELL_GAIN], (claim, value)
    assert reasons(worse, 52, "flat_switch_ce_reduction") == [None]  # the CE change needs no all-cell gain


def test_map_against_random_cells_flags_both_arms_when_neither_switched_a_cell():
    none = dict(n_cells_switched=0, delta_vs_top=0.0, delta_vs_top_low=0.0, delta_vs_top_high=0.0, share=0.0)
    both = head(table(flat_switch=none, random=none))
    assert reasons(both, 125, "map_share_of_all_cell_gain") == [LC.EMPTY_CELL_SET]
    assert reasons(both, 125, "random_share_of_all_cell_gain") == [LC.EMPTY_CELL_SET]
    assert reasons(head(), 125, "random_share_of_all_cell_gain") == [None]


# ---------------------------------------------------------------- a rule with the flat switch (55, 112)

PAIR_VALUES = ((55, "rule_flat_switch_gap_recovered"), (112, "rule_flat_switch_gap_recovered"), (55, "paired_ci_high"))


def test_a_rule_pair_without_switched_cells_or_without_a_change_is_flagged_and_not_counted():
    empty = head(table(**{"snapkv+flat": dict(n_cells_switched=0)}))
    for claim, value in PAIR_VALUES:
        assert reasons(empty, claim, value) == [LC.EMPTY_CELL_SET], (claim, value)
    count = rows_of(empty, 55, "n_pairs")
    assert (count["estimate"].to_list(), count["n_instances"].to_list(), count["n_excluded"].to_list()) == (
        [0.0],
        [0],
        [1],
    )
    same = head(table(**{"snapkv+flat": dict(delta_vs_rule=0.0, delta_vs_rule_low=0.0, delta_vs_rule_high=0.0)}))
    assert reasons(same, 55, "paired_ci_high") == [LC.SAME_AS_RULE]
    speaks = head()
    for claim, value in PAIR_VALUES:
        assert reasons(speaks, claim, value) == [None], (claim, value)
    assert rows_of(speaks, 55, "n_pairs")["estimate"].to_list() == [1.0]


def test_a_rule_no_worse_than_all_cell_balancing_has_no_gap_to_recover():
    better = head(table(snapkv=dict(ce=3.5, delta_vs_top=-0.5)))  # all-cell balancing: 3.6
    assert reasons(better, 55, "rule_flat_switch_gap_recovered") == [LC.NO_RULE_GAP]
    assert reasons(better, 112, "rule_flat_switch_gap_recovered") == [LC.NO_RULE_GAP]
    assert reasons(better, 55, "paired_ci_high") == [None]  # rule + flat vs the rule needs no gap


# ---------------------------------------------------------------- the rules alone (111)


def test_a_tied_rank_is_flagged():
    tied = head(table(quest=dict(delta_vs_top=0.5)))  # quest ties snapkv's increase
    assert reasons(tied, 111, "quest_rank_by_ce_increase") == [LC.RANK_TIE]
    assert reasons(tied, 111, "streaming_llm_rank_from_most_ce_increase") == [None]
    ranks = head()
    assert rows_of(ranks, 111, "quest_rank_by_ce_increase")["estimate"].to_list() == [1.0]
    assert reasons(ranks, 111, "quest_rank_by_ce_increase") == [None]


def test_identical_accountings_are_flagged():
    same = head(table(**{"snapkv@cache_faithful": dict(ce=4.5, ce_low=None, ce_high=None)}))
    assert reasons(same, 111, "per_query_minus_cache_faithful_ce") == [LC.SAME_ACCOUNTING]
    differ = head()
    assert rows_of(differ, 111, "per_query_minus_cache_faithful_ce")["estimate"].to_list() == [pytest.approx(-0.1)]
    assert reasons(differ, 111, "per_query_minus_cache_faithful_ce") == [None]


# ---------------------------------------------------------------- the allocation panel (97)


def test_a_map_allocation_that_is_the_uniform_one_is_flagged():
    uniform = head(allocation=allocation_frame(budget_min=8, budget_max=8, delta_es=0.0, delta_lo=0.0, delta_hi=0.0))
    assert reasons(uniform, 97, "allocation_delta_es") == [LC.UNIFORM_ALLOCATION]
    same = head(allocation=allocation_frame(delta_es=0.0, delta_lo=0.0, delta_hi=0.0))
    assert reasons(same, 97, "allocation_delta_es") == [LC.SAME_ES]
    assert reasons(head(allocation=allocation_frame()), 97, "allocation_delta_es") == [None]


# ---------------------------------------------------------------- the probe (57, 124)


def test_the_probe_flags():
    top_mass = head(probe=probe_frame(alpha=0.0, probe_ce_change=0.0, probe_share=0.0))
    assert reasons(top_mass, 57, "probe_share_of_loss_reduction") == [LC.PROBE_IS_TOP_MASS]
    assert reasons(top_mass, 124, "probe_ce_change") == [LC.PROBE_IS_TOP_MASS]
    assert reasons(top_mass, 124, "balancing_ce_change") == [None]
    worse = head(probe=probe_frame(balancing_ce_change=0.2, balancing_ce_change_low=0.1, balancing_ce_change_high=0.3))
    assert reasons(worse, 57, "probe_share_of_loss_reduction") == [LC.NO_BALANCING_GAIN]
    assert reasons(worse, 124, "balancing_ce_change") == [None]  # a CE increase is an answer to "negative"
    same = head(probe=probe_frame(balancing_ce_change=0.0, balancing_ce_change_low=0.0, balancing_ce_change_high=0.0))
    assert reasons(same, 124, "balancing_ce_change") == [LC.BALANCING_IS_TOP_MASS]
    speaks = head(probe=probe_frame())
    assert speaks.filter(pl.col("claim_id").is_in([57, 124]))["uninformative"].null_count() == 5


# ---------------------------------------------------------------- curvature (126, 58)


def test_curvature_flags_and_the_measured_share_inherits_the_loss_tables():
    increase = head(curvature=curvature_frame(all_cell=dict(predicted=0.05)))
    assert set(reasons(increase, 126, "predicted_share")) == {LC.NO_PREDICTED_GAIN}
    empty = head(curvature=curvature_frame(flat=dict(n_cells=0)))
    assert set(reasons(empty, 126, "predicted_share")) == {LC.EMPTY_CELL_SET}
    no_gain = head(
        table(all_cell=dict(delta_vs_top=0.05, delta_vs_top_low=-0.05, delta_vs_top_high=0.15)),
        curvature=curvature_frame(models=("m",)),
    )
    assert reasons(no_gain, 126, "measured_share") == [LC.NO_ALL_CELL_GAIN]
    speaks = head(curvature=curvature_frame())
    assert set(reasons(speaks, 126, "predicted_share")) == set(reasons(speaks, 126, "measured_share")) == {None}
    span = rows_of(speaks, 58, "conversion_constant_orders_of_magnitude")
    assert span["estimate"].to_list() == [pytest.approx(2.0)] and span["n_instances"].to_list() == [3]
    # the constant falls as the es reduction rises: rho = -1
    assert rows_of(speaks, 58, "constant_vs_reconstruction_gain_spearman")["estimate"].to_list() == [-1.0]
