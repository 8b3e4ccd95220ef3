"""Boundary swaps on captured rows (trustmass.audit.swaps): every record is the core swap of the rules'
own kept sets, the full boundary swap is Y's error, X's and Y's errors are the audit's, and the
statistics (trustmass.report.frames.diagnostics) read the records as units with a gap recovered."""

import numpy as np
import polars as pl
import pytest

from trustmass.audit.swaps import SwapSettings, row_swaps, shard_swaps
from trustmass.core.selectors.selector_input import SelectorInput
from trustmass.report.engine import StatisticsSettings
from trustmass.report.frames.diagnostics import gap_recovered, pair_contracts, swap_boundaries, swap_curves, swap_units


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    from capture.tiny_models import tiny_shard

    path = tiny_shard(tmp_path_factory.mktemp("swaps"), n_tokens=120, rows_per_head=3, seed=2)
    settings = SwapSettings(
        pairs=(("h2o", "snapkv"), ("top_mass", "balancing")), budgets=(4, 8), fractions=(0.5, 1.0), seeds=2
    )
    return shard_swaps(path, "tiny", "words", "0000", settings)


def test_the_full_boundary_swap_is_y_and_every_row_has_each_kind(records):
    full = records.filter(pl.col("kind") == "boundary", pl.col("fraction") == 1.0)
    np.testing.assert_allclose(full["es"].to_numpy(), full["es_y"].to_numpy(), rtol=1e-12)
    per_row = records.group_by(["layer", "head", "query_pos", "budget", "pair"]).len()
    assert per_row["len"].unique().to_list() == [2 + 2 * 2 + 2 * 1]  # boundary x2, random x2 x2 seeds, restricted x1 x2
    assert (records["es"] >= 0).all()
    balancing = full.filter(pl.col("pair") == "top_mass>balancing")
    assert (balancing["es_y"] <= balancing["es_x"] * (1 + 1e-12)).all(), "balancing never loses to top-mass"


def test_a_rule_keeping_no_key_with_mass_gives_its_pair_no_records():
    """A sliding-window row: StreamingLLM's sinks and recent keys all lie where p = 0, so its es is undefined."""
    p = np.zeros(20)
    p[8:11] = [0.5, 0.3, 0.2]
    x = SelectorInput(p=p, values=np.random.default_rng(0).normal(size=(20, 4)))
    settings = SwapSettings(
        pairs=(("streaming_llm", "top_mass"), ("top_mass", "balancing")), budgets=(2,), fractions=(1.0,), seeds=1
    )
    records = row_swaps(x, settings, (0, 0, 19))
    assert {r["pair"] for r in records} == {"top_mass>balancing"}


def test_the_statistics_recover_the_whole_gap_at_fraction_one(records):
    settings = StatisticsSettings(bootstrap=50)
    units = swap_units(records, pl.DataFrame())
    curves = swap_curves(units, settings)
    full = curves.filter(pl.col("kind") == "boundary", pl.col("fraction") == 1.0, pl.col("gap_recovered").is_not_null())
    assert full.height and np.allclose(full["gap_recovered"].to_numpy(), 1.0)
    bounds = swap_boundaries(units, settings)
    assert set(bounds["contracts"].to_list()) == {
        pair_contracts("h2o>snapkv", 8),
        pair_contracts("top_mass>balancing", 8),
    }
    assert bounds["improving_full"].is_between(0, 1).all()


def test_gap_recovered_is_the_ratio_of_pooled_means_and_null_without_a_gap():
    x, y = np.array([2.0, 4.0, 6.0]), np.array([1.0, 1.0, 1.0])
    out = gap_recovered(x, (x + y) / 2, y, np.array(["a", "b", "c"]), StatisticsSettings(bootstrap=0))
    assert out["gap_recovered"] == pytest.approx(0.5) and out["err_ratio"] == pytest.approx((6.0 + 1.5) / 12.0)
    same = gap_recovered(x, x, x, np.array(["a", "b", "c"]), StatisticsSettings(bootstrap=0))
    assert same["gap_recovered"] is None and same["err_ratio"] == 1.0


def test_contracts_say_which_pairs_compare_like_for_like():
    assert pair_contracts("value_aware_mass>value_aware_mii", 8) == "like_for_like"
    assert pair_contracts("h2o>snapkv", 8).startswith("crosses: ")
