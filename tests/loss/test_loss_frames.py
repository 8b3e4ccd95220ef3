"""The loss statistics: shares, recovered gaps, the random mean and the paired intervals, by hand."""

import polars as pl
import pytest
from unit.headline_dimensions import assert_dimensions, rows_of

from trustmass.report.engine import StatisticsSettings
from trustmass.report.frames.loss import claim_frames, document_ce, headline, loss_table

# per-document CE of each configuration (two tokens per document, NLL = CE +- 0.1)
CE = {
    "dense": [3.0, 3.2, 2.8],
    "keep_all": [3.0, 3.2, 2.8],
    "top_mass": [4.0, 4.4, 3.6],
    "all_cell": [3.6, 4.0, 3.2],
    "flat_switch": [3.7, 4.05, 3.35],
    "random_0": [3.9, 4.2, 3.5],
    "random_1": [3.8, 4.2, 3.5],
    "snapkv": [4.5, 4.9, 4.2],
    "snapkv+flat": [4.0, 4.5, 3.8],
}
META = {
    "dense": ("dense", None, "none"),
    "keep_all": ("keep_all", None, "none"),
    "top_mass": ("top_mass", None, "none"),
    "all_cell": ("top_mass", "balancing", "all"),
    "flat_switch": ("top_mass", "balancing", "flat"),
    "random_0": ("top_mass", "balancing", "random"),
    "random_1": ("top_mass", "balancing", "random"),
    "snapkv": ("snapkv", None, "none"),
    "snapkv+flat": ("snapkv", "balancing", "flat"),
}


def tokens() -> pl.DataFrame:
    rows = []
    for config, ces in CE.items():
        base, switch, cells = META[config]
        for d, ce in enumerate(ces):
            for k, delta in enumerate((-0.1, 0.1)):
                rows.append(
                    {
                        "model": "m",
                        "corpus": "c",
                        "doc": f"{d:04d}",
                        "config": config,
                        "base_rule": base,
                        "switch_rule": switch,
                        "cells": cells,
                        "seed": None,
                        "budget": 8,
                        "n_cells_switched": 3,
                        "accounting": "per_query",
                        "position": 10 + k,
                        "token_id": 1,
                        "nll": ce + delta,
                    }
                )
    return pl.DataFrame(rows)


def mean(xs):
    return sum(xs) / len(xs)


@pytest.fixture(scope="module")
def table():
    return loss_table(tokens(), StatisticsSettings(bootstrap=200, seed=3))


def by_config(table, name):
    return table.filter(pl.col("config") == name).row(0, named=True)


def test_ce_share_and_gap(table):
    top, all_cell = mean(CE["top_mass"]), mean(CE["all_cell"])
    flat = by_config(table, "flat_switch")
    assert flat["ce"] == pytest.approx(mean(CE["flat_switch"]))
    assert flat["delta_vs_top"] == pytest.approx(mean(CE["flat_switch"]) - top)
    assert flat["share"] == pytest.approx((top - mean(CE["flat_switch"])) / (top - all_cell))
    rule = by_config(table, "snapkv+flat")
    snap = mean(CE["snapkv"])
    assert rule["gap_recovered"] == pytest.approx((snap - mean(CE["snapkv+flat"])) / (snap - all_cell))
    assert rule["delta_vs_rule"] == pytest.approx(mean(CE["snapkv+flat"]) - snap)
    assert by_config(table, "all_cell")["share"] == pytest.approx(1.0)


def test_random_is_the_mean_over_seeds(table):
    random = by_config(table, "random")
    assert random["n_seeds"] == 2
    assert random["ce"] == pytest.approx(mean([mean(CE["random_0"]), mean(CE["random_1"])]))


def test_intervals_bracket_estimates(table):
    for rec in table.iter_rows(named=True):
        for name in ("ce", "delta_vs_top", "share"):
            if rec[f"{name}_low"] is not None and rec[name] is not None:
                assert rec[f"{name}_low"] - 1e-12 <= rec[name] <= rec[f"{name}_high"] + 1e-12, (rec["config"], name)


def test_keep_all_difference_and_headline(table):
    assert by_config(table, "keep_all")["max_abs_vs_dense"] == pytest.approx(0.0, abs=1e-12)
    assert by_config(table, "keep_all")["max_ce_vs_dense"] == pytest.approx(0.0, abs=1e-12)
    frame = headline(claim_frames(table, ("snapkv",)))
    got = {(r["claim_id"], r["value_name"]): r["estimate"] for r in frame.iter_rows(named=True)}
    assert got[(53, "flat_switch_share_of_all_cell_gain")] == pytest.approx(by_config(table, "flat_switch")["share"])
    assert got[(52, "flat_switch_ce_reduction")] == pytest.approx(-by_config(table, "flat_switch")["delta_vs_top"])
    assert got[(125, "random_share_of_all_cell_gain")] == pytest.approx(by_config(table, "random")["share"])
    assert got[(55, "rule_flat_switch_gap_recovered")] == pytest.approx(
        by_config(table, "snapkv+flat")["gap_recovered"]
    )


def test_document_ce_counts_tokens():
    per_doc = document_ce(tokens())
    assert per_doc.filter(pl.col("config") == "top_mass")["n"].to_list() == [2, 2, 2]


# ---- curvature: predicted vs measured shares, the conversion constant (claims 58, 126) ----------

# per-document second-order predictions (nats) of each switch; the all-cell set is the denominator
PREDICTED = {"all_cell": [-0.4, -0.5, -0.3], "flat_switch": [-0.3, -0.4, -0.2], "random_0": [-0.1, -0.2, -0.1]}


def curvature_frame(model="m", scale=1.0) -> pl.DataFrame:
    rows = []
    for cell_set, values in PREDICTED.items():
        for d, v in enumerate(values):
            rows.append(
                {
                    "model": model,
                    "corpus": "c",
                    "doc": f"{d:04d}",
                    "cell_set": cell_set,
                    "n_cells": 3,
                    "first_order": scale * v * 0.9,
                    "second_order": scale * v * 0.1,
                    "predicted": scale * v,
                    "replayed": scale * v * 1.05,
                }
            )
    return pl.DataFrame(rows)


def cells_frame(model="m", es_cut=0.2) -> pl.DataFrame:
    """Two cells per document; flat_switch switches cell (0, 0) and cuts its es by `es_cut`."""
    rows = []
    for d in range(3):
        for config, switched_cell, es in (("top_mass", None, 1.0), ("flat_switch", (0, 0), 1.0 - es_cut)):
            for head in (0, 1):
                switched = switched_cell == (0, head)
                rows.append(
                    {
                        "model": model,
                        "corpus": "c",
                        "doc": f"{d:04d}",
                        "config": config,
                        "layer": 0,
                        "head": head,
                        "switched": switched,
                        "mean_dropped_mass": 0.3,
                        "mean_es": es if switched else 1.0,
                        "mean_swaps": 0.0,
                    }
                )
    return pl.DataFrame(rows)


def test_curvature_shares_and_conversion_constant(table):
    from trustmass.report.frames.loss import curvature_table

    curv = curvature_table(curvature_frame(), table, cells_frame(), StatisticsSettings(bootstrap=200, seed=3))
    flat = curv.filter(pl.col("cell_set") == "flat_switch").row(0, named=True)
    assert flat["predicted_share"] == pytest.approx(mean(PREDICTED["flat_switch"]) / mean(PREDICTED["all_cell"]))
    assert flat["replayed_share"] == pytest.approx(flat["predicted_share"])  # replay = 1.05 x prediction everywhere
    assert flat["predicted_share_low"] <= flat["predicted_share"] <= flat["predicted_share_high"]
    measured = by_config(table, "flat_switch")
    assert flat["measured_share"] == pytest.approx(measured["share"])
    assert flat["es_reduction"] == pytest.approx(0.2) and flat["mean_dropped_mass"] == pytest.approx(0.3)
    assert flat["conversion_constant"] == pytest.approx(measured["gain"] / 0.2)
    assert curv.filter(pl.col("cell_set") == "all_cell")["predicted_share"][0] == pytest.approx(1.0)


def test_curvature_claims_span_the_models_constants(table):
    from trustmass.report.frames.loss import curvature_table

    two = pl.concat([table, table.with_columns(model=pl.lit("n"))])
    curv = curvature_table(
        pl.concat([curvature_frame(), curvature_frame("n")]),
        two,
        pl.concat([cells_frame(), cells_frame("n", es_cut=0.002)]),
        StatisticsSettings(bootstrap=0),
    )
    head = headline(claim_frames(pl.DataFrame(), (), curvature=curv))
    assert_dimensions(head)
    rows = {(r["claim_id"], r["value_name"], r["by_value"]): r["estimate"] for r in head.iter_rows(named=True)}
    assert rows[(58, "conversion_constant_orders_of_magnitude", None)] == pytest.approx(2.0)  # 0.2 / 0.002
    assert rows[(126, "predicted_share", "m")] == pytest.approx(
        mean(PREDICTED["flat_switch"]) / mean(PREDICTED["all_cell"])
    )
    assert (58, "constant_vs_reconstruction_gain_spearman", None) not in rows  # needs three models


def test_selector_order_and_accounting_rows():
    extra = {"quest": [4.1, 4.5, 3.7], "streaming_llm": [5.0, 5.5, 4.8], "snapkv@cache_faithful": [4.6, 5.0, 4.3]}
    meta = {
        "quest": ("quest", None, "none", "per_query"),
        "streaming_llm": ("streaming_llm", None, "none", "per_query"),
        "snapkv@cache_faithful": ("snapkv", None, "none", "cache_faithful"),
    }
    rows = []
    for config, ces in extra.items():
        base, switch, cells, acc = meta[config]
        for d, ce in enumerate(ces):
            rows.append(
                {
                    "model": "m",
                    "corpus": "c",
                    "doc": f"{d:04d}",
                    "config": config,
                    "base_rule": base,
                    "switch_rule": switch,
                    "cells": cells,
                    "seed": None,
                    "budget": 8,
                    "n_cells_switched": 0,
                    "accounting": acc,
                    "position": 10,
                    "token_id": 1,
                    "nll": ce,
                }
            )
    table = loss_table(
        pl.concat([tokens(), pl.DataFrame(rows)], how="diagonal_relaxed"), StatisticsSettings(bootstrap=0)
    )
    head = headline(claim_frames(table, ("snapkv", "quest", "streaming_llm")))
    assert_dimensions(head)
    got = {(r["claim_id"], r["value_name"], r["by_value"]): r["estimate"] for r in head.iter_rows(named=True)}
    # at the loss budget (claim 111 filters on s = 8): quest 4.1 < snapkv 4.53 < streaming 5.1
    assert got[(111, "quest_rank_by_ce_increase", "m,8")] == 1.0
    assert got[(111, "streaming_llm_rank_from_most_ce_increase", "m,8")] == 1.0
    assert got[(111, "per_query_minus_cache_faithful_ce", "snapkv,m")] == pytest.approx(
        mean(CE["snapkv"]) - mean(extra["snapkv@cache_faithful"])
    )


def probe_headline(probe: pl.DataFrame) -> pl.DataFrame:
    """The probe's claim rows alone (claims 57, 124)."""
    return headline(claim_frames(pl.DataFrame(), (), probe=probe))


# ---- the probe: alpha calibrated on the first half of the documents, checked on the other -------


def probe_tokens(probe_ce: dict) -> pl.DataFrame:
    rows = []
    for alpha, ces in probe_ce.items():
        for d, ce in enumerate(ces):
            rows.append(
                {
                    "model": "m",
                    "corpus": "c",
                    "doc": f"{d:04d}",
                    "config": f"probe@{alpha:g}",
                    "base_rule": "probe",
                    "switch_rule": None,
                    "cells": "none",
                    "seed": None,
                    "alpha": alpha,
                    "budget": 8,
                    "n_cells_switched": 0,
                    "accounting": "per_query",
                    "position": 10,
                    "token_id": 1,
                    "nll": ce,
                }
            )
    return pl.concat(
        [tokens().with_columns(alpha=pl.lit(None, dtype=pl.Float64)), pl.DataFrame(rows)], how="diagonal_relaxed"
    )


RECALL = pl.DataFrame(
    {
        "model": ["m"] * 3,
        "alpha": [0.0, 0.5, 1.0],
        "recall": [0.0, 0.2, 0.3],
        "precision": [None, 0.1, 0.2],
        "stay": [1.0, 0.5, 0.4],
        "swap_rows": [40] * 3,
        "rank": [16] * 3,
        "train_docs": [1] * 3,
    }
)


def test_the_probe_alpha_is_chosen_on_the_first_half_and_judged_on_the_rest():
    from trustmass.report.frames.loss import probe_table

    # docs 0000, 0001 calibrate (probe@0.5 beats top-mass there), 0002 checks
    table = probe_table(
        probe_tokens({0.5: [3.9, 4.3, 3.5], 1.0: [4.2, 4.6, 3.9]}), RECALL, StatisticsSettings(bootstrap=50)
    )
    rec = table.row(0, named=True)
    assert rec["alpha"] == 0.5 and rec["n_calibration_docs"] == 2 and rec["n_docs"] == 1
    top, bal = CE["top_mass"][2], CE["all_cell"][2]
    assert rec["probe_ce_change"] == pytest.approx(3.5 - top)
    assert rec["probe_share"] == pytest.approx((top - 3.5) / (top - bal))
    assert rec["recall"] == 0.2 and rec["recall_trained_scale"] == 0.3
    head = probe_headline(table)
    rows = {(r["claim_id"], r["value_name"]): r["estimate"] for r in head.iter_rows(named=True)}
    assert rows[(57, "probe_share_of_loss_reduction")] == pytest.approx(rec["probe_share"])
    assert rows[(124, "swap_recall")] == 0.3  # at the scale the probe was trained at, whatever alpha won


def test_a_probe_worse_than_top_mass_everywhere_calibrates_to_alpha_zero():
    from trustmass.report.frames.loss import probe_table

    table = probe_table(
        probe_tokens({0.5: [4.5, 4.9, 4.1], 1.0: [5.0, 5.4, 4.6]}), RECALL, StatisticsSettings(bootstrap=0)
    )
    rec = table.row(0, named=True)
    assert rec["alpha"] == 0.0 and rec["probe_ce_change"] == 0.0 and rec["probe_share"] == 0.0
    assert rec["recall"] == 0.0 and rec["recall_trained_scale"] == 0.3


# ---- dimensions and uninformative rows -----------------------------------------------------------


def test_loss_rows_carry_the_loss_budget_and_claim_112_repeats_55(table):
    assert table["budget"].unique().to_list() == [8]  # the budget the tokens were decoded at
    head = headline(claim_frames(table, ("snapkv",)))
    assert_dimensions(head)
    for value in ("flat_switch_ce_reduction", "ce_change_ci_high"):
        assert rows_of(head, 52, value)["by_value"].to_list() == ["m,8"], value
    c55, c112 = (
        rows_of(head, 55, "rule_flat_switch_gap_recovered"),
        rows_of(head, 112, "rule_flat_switch_gap_recovered"),
    )
    assert c112["by_value"].to_list() == c55["by_value"].to_list() == ["snapkv,m"]
    assert (
        c112["estimate"].to_list()
        == c55["estimate"].to_list()
        == [pytest.approx(by_config(table, "snapkv+flat")["gap_recovered"])]
    )
    assert (c112["low"].to_list(), c112["high"].to_list()) == (c55["low"].to_list(), c55["high"].to_list())
    untold = loss_table(tokens().drop("budget"), StatisticsSettings(bootstrap=0))
    with pytest.raises(ValueError, match="budget"):  # the loss stage always writes it: a frame without it is stale
        claim_frames(untold, ("snapkv",))


def test_a_probe_at_alpha_zero_is_uninformative_on_claims_57_and_124():
    from trustmass.report.frames.loss import PROBE_IS_TOP_MASS, probe_table

    worse = probe_table(
        probe_tokens({0.5: [4.5, 4.9, 4.1], 1.0: [5.0, 5.4, 4.6]}), RECALL, StatisticsSettings(bootstrap=0)
    )
    head = probe_headline(worse)
    assert_dimensions(head)
    reasons = {r["value_name"]: r["uninformative"] for r in head.iter_rows(named=True)}
    assert reasons == {
        "probe_share_of_loss_reduction": PROBE_IS_TOP_MASS,
        "probe_ce_change": PROBE_IS_TOP_MASS,
        "n_training_docs": None,
        "swap_recall": None,
        "balancing_ce_change": None,
    }
    assert rows_of(head, 124, "probe_ce_change")["estimate"].to_list() == [0.0]  # kept and shown
    better = probe_table(
        probe_tokens({0.5: [3.9, 4.3, 3.5], 1.0: [4.2, 4.6, 3.9]}), RECALL, StatisticsSettings(bootstrap=0)
    )
    assert probe_headline(better)["uninformative"].null_count() == 5  # alpha = 0.5: the probe speaks


def test_allocation_rows_name_known_dimensions():
    panel = pl.DataFrame(
        {
            "model": ["m", "m"],
            "unit": [8, 8],
            "selector": ["snapkv"] * 2,
            "allocator": ["map_proportional", "uniform"],
            "delta_es": [-0.1, 0.0],
            "delta_lo": [-0.2, 0.0],
            "delta_hi": [-0.05, 0.0],
            "n_rows": [10, 10],
            "n_docs": [2, 2],
        }
    )
    head = headline(claim_frames(pl.DataFrame(), (), allocation=panel))
    assert_dimensions(head)
    for name in ("allocation_delta_es", "allocation_delta_es_sign"):  # the value and its stated sign: one row each
        rows = head.filter(pl.col("value_name") == name)
        assert rows["by_value"].to_list() == ["m,8,snapkv"] and rows["estimate"].to_list() == [-0.1]  # map-proportional
