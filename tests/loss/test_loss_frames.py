"""The loss statistics: shares, recovered gaps, the random mean and the paired intervals, by hand."""

import polars as pl
import pytest

from trustmass.report.engine import StatisticsSettings
from trustmass.report.frames.loss import document_ce, headline, loss_table

# per-document CE of each configuration (two tokens per document, NLL = CE +- 0.1)
CE = {
    "dense": [3.0, 3.2, 2.8], "keep_all": [3.0, 3.2, 2.8], "top_mass": [4.0, 4.4, 3.6], "all_cell": [3.6, 4.0, 3.2],
    "flat_switch": [3.7, 4.05, 3.35], "random_0": [3.9, 4.2, 3.5], "random_1": [3.8, 4.2, 3.5],
    "snapkv": [4.5, 4.9, 4.2], "snapkv+flat": [4.0, 4.5, 3.8],
}  # fmt: skip
META = {
    "dense": ("dense", None, "none"), "keep_all": ("keep_all", None, "none"), "top_mass": ("top_mass", None, "none"),
    "all_cell": ("top_mass", "balancing", "all"), "flat_switch": ("top_mass", "balancing", "flat"),
    "random_0": ("top_mass", "balancing", "random"), "random_1": ("top_mass", "balancing", "random"),
    "snapkv": ("snapkv", None, "none"), "snapkv+flat": ("snapkv", "balancing", "flat"),
}  # fmt: skip


def tokens() -> pl.DataFrame:
    rows = []
    for config, ces in CE.items():
        base, switch, cells = META[config]
        for d, ce in enumerate(ces):
            for k, delta in enumerate((-0.1, 0.1)):
                rows.append({"model": "m", "corpus": "c", "doc": f"{d:04d}", "config": config, "base_rule": base,
                             "switch_rule": switch, "cells": cells, "seed": None, "budget": 8, "n_cells_switched": 3,
                             "accounting": "per_query", "position": 10 + k, "token_id": 1, "nll": ce + delta})  # fmt: skip
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
    frame = headline(table, ("snapkv",))
    got = {(r["claim_id"], r["value_name"]): r["estimate"] for r in frame.iter_rows(named=True)}
    assert got[(53, "flat_switch_share_of_all_cell_gain")] == pytest.approx(by_config(table, "flat_switch")["share"])
    assert got[(52, "flat_switch_ce_reduction")] == pytest.approx(-by_config(table, "flat_switch")["delta_vs_top"])
    assert got[(125, "random_share_of_all_cell_gain")] == pytest.approx(by_config(table, "random")["share"])
    assert got[(55, "rule_flat_switch_gap_recovered")] == pytest.approx(by_config(table, "snapkv+flat")["gap_recovered"])


def test_document_ce_counts_tokens():
    per_doc = document_ce(tokens())
    assert per_doc.filter(pl.col("config") == "top_mass")["n"].to_list() == [2, 2, 2]
