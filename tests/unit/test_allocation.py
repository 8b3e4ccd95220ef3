"""The allocation panel (App B.6, claim 97): allocators at a matched total, the panel's es against
the operator computed directly, and the paired cell-cluster bootstrap."""

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trustmass.core.enumeration import PoolRule, candidate_pool
from trustmass.core.operator import es, least_dropped_mass, top_mass
from trustmass.core.selectors.balancing import balancing
from trustmass.core.selectors.selector_input import SelectorInput
from trustmass.core.stats import paired_bootstrap_difference
from trustmass.loss import allocation as al

FAST = settings(max_examples=80, deadline=None)
MAP = 8  # the map budget (statistics.map_budget of the shipped configs)


def _row(p, rng, d=4):
    p = np.asarray(p, dtype=np.float64)
    return SelectorInput(p=p / p.sum(), values=rng.normal(size=(p.shape[0], d)))


def _peaked(n, rng, sharp):
    """A row whose top masses hold more the sharper it is (sharp = 0: uniform)."""
    return np.exp(sharp * rng.normal(size=n))


def _synthetic(n_layers=3, n_heads=4, n_rows=3, n_keys=60, seed=0):
    """rows_by_cell with one sharpness per cell (cell order: flat to peaked)."""
    rng = np.random.default_rng(seed)
    cells = [(ly, hd) for ly in range(n_layers) for hd in range(n_heads)]
    sharp = np.linspace(0.0, 4.0, len(cells))
    return {c: [_row(_peaked(n_keys, rng, sharp[k]), rng) for _ in range(n_rows)] for k, c in enumerate(cells)}


# ---------------------------------------------------------------------------- apportion


def test_apportion_hand_values():
    np.testing.assert_array_equal(al.apportion([1, 1, 1], 4), [2, 1, 1])  # tie: the earlier cell
    np.testing.assert_array_equal(al.apportion([1, 3], 8), [2, 6])
    # a weight too small for one unit is floored at 1 and the rest re-shared proportionally
    np.testing.assert_array_equal(al.apportion([0.0, 1.0, 1.0], 9), [1, 4, 4])
    np.testing.assert_array_equal(al.apportion([0, 0, 0], 6), [2, 2, 2])
    with pytest.raises(ValueError):
        al.apportion([1, 1], 1)


@FAST
@given(
    st.lists(st.floats(min_value=0, max_value=100, allow_nan=False), min_size=1, max_size=40),
    st.integers(min_value=1, max_value=16),
)
def test_apportion_matches_total_and_floor(weights, unit):
    total = unit * len(weights)
    b = al.apportion(weights, total)
    assert b.sum() == total and b.min() >= 1
    np.testing.assert_array_equal(b, al.apportion(weights, total))  # deterministic
    w = np.asarray(weights)
    # proportional where not floored: a larger weight never gets a smaller budget
    order = np.argsort(w, kind="stable")
    assert np.all(np.diff(b[order]) >= -1)  # largest remainder moves at most one unit


# ---------------------------------------------------------------------------- allocators


@pytest.fixture(scope="module")
def synthetic():
    return _synthetic()


def test_allocators_match_total_and_are_deterministic(synthetic):
    data = al.panel_data(synthetic, unit=(3, 8), selector="top_mass", map_budget=MAP)
    again = al.panel_data(synthetic, unit=(3, 8), selector="top_mass", map_budget=MAP)
    for unit, grids in data.budgets.items():
        assert list(grids) == list(al.ALLOCATORS)
        for name, grid in grids.items():
            assert grid.shape == (3, 4) and grid.dtype == np.int64
            assert grid.sum() == unit * 12, name
            assert grid.min() >= 1, name
            np.testing.assert_array_equal(grid, again.budgets[unit][name])
        assert (grids["uniform"] == unit).all()


def test_map_proportional_gives_flatter_cells_more(synthetic):
    data = al.panel_data(synthetic, unit=8, selector="top_mass", map_budget=MAP)
    m8 = data.table.cell_m8()
    want = np.array(
        [
            [np.median([least_dropped_mass(x.instance, 8) for x in synthetic[(ly, hd)]]) for hd in range(4)]
            for ly in range(3)
        ]
    )
    np.testing.assert_allclose(m8, want, rtol=1e-12)
    b = data.budgets[8]["map_proportional"].reshape(-1)
    flat = m8.reshape(-1)
    assert flat[0] > flat[-1]  # the first cell is uniform, the last the most peaked
    assert b[0] > 8 > b[-1]
    assert np.all(np.diff(b[np.argsort(flat)]) >= -1)
    # proportional up to rounding (no cell floored here)
    np.testing.assert_allclose(b, 96 * flat / flat.sum(), atol=1.0)


def test_pyramid_decreases_over_layers():
    for shape, unit in (((30, 9), 8), ((30, 9), 16), ((5, 3), 4), ((2, 4), 8)):
        b = al.pyramid(shape, unit)
        assert b.sum() == unit * shape[0] * shape[1] and b.min() >= 1
        per_layer = b.sum(axis=1)
        assert np.all(np.diff(per_layer) <= 0)
        assert per_layer[0] > per_layer[-1]
        assert (b.max(axis=1) - b.min(axis=1) <= 1).all()  # heads of one layer share the weight
    np.testing.assert_array_equal(al.pyramid((1, 3), 5), [[5, 5, 5]])


def test_map_budget_is_the_callers(synthetic):
    """m̄ is read at the map budget given (statistics.map_budget), not at a constant of the module."""
    assert not hasattr(al, "MAP_BUDGET")
    m4 = al.panel_data(synthetic, unit=8, selector="top_mass", map_budget=4).table.cell_m8()
    want = np.array(
        [
            [np.median([least_dropped_mass(x.instance, 4) for x in synthetic[(ly, hd)]]) for hd in range(4)]
            for ly in range(3)
        ]
    )
    np.testing.assert_allclose(m4, want, rtol=1e-12)
    assert not np.allclose(m4, al.panel_data(synthetic, unit=8, selector="top_mass", map_budget=MAP).table.cell_m8())


def test_mass_greedy_hand_example():
    """Two cells, one slice, unit 2 (total 4): masses (0.5, 0.3, 0.2) and (0.4, 0.35, 0.25); the
    global top 4 are 0.5, 0.4, 0.35, 0.3 -> counts 2 and 2; a peaked cell against a flat one."""
    table = al.MassTable(shape=(1, 2), map_budget=2)
    table.add(0, 0, SelectorInput(p=np.array([0.2, 0.5, 0.3])), keep=4)
    table.add(1, 0, SelectorInput(p=np.array([0.4, 0.25, 0.35])), keep=4)
    np.testing.assert_array_equal(al.mass_greedy(table.freeze(), 2), [[2, 2]])
    table = al.MassTable(shape=(1, 2), map_budget=2)
    table.add(0, 0, SelectorInput(p=np.array([0.9, 0.05, 0.05])), keep=4)
    table.add(1, 0, SelectorInput(p=np.array([0.3, 0.3, 0.4])), keep=4)
    np.testing.assert_array_equal(al.mass_greedy(table.freeze(), 2), [[1, 3]])
    # two slices: counts (1, 3) and (3, 1) average to (2, 2)
    table = al.MassTable(shape=(1, 2), map_budget=2)
    table.add(0, 0, SelectorInput(p=np.array([0.9, 0.05, 0.05])), keep=4)
    table.add(1, 0, SelectorInput(p=np.array([0.3, 0.3, 0.4])), keep=4)
    table.add(0, 1, SelectorInput(p=np.array([0.3, 0.3, 0.4])), keep=4)
    table.add(1, 1, SelectorInput(p=np.array([0.9, 0.05, 0.05])), keep=4)
    np.testing.assert_array_equal(al.mass_greedy(table.freeze(), 2), [[2, 2]])


def test_table_needs_one_row_per_slice():
    table = al.MassTable(shape=(1, 2), map_budget=2)
    table.add(0, 0, SelectorInput(p=np.array([0.5, 0.5])), keep=2)
    table.add(0, 1, SelectorInput(p=np.array([0.5, 0.5])), keep=2)
    with pytest.raises(ValueError, match="one row per slice"):
        table.freeze()


# ---------------------------------------------------------------------------- the panel


def test_uniform_against_uniform_is_exactly_zero(synthetic):
    frame = al.panel(synthetic, unit=(4, 8), selector=al.SELECTORS, B=200, seed=1, map_budget=MAP)
    assert frame.columns == al.COLUMNS
    assert frame.height == 2 * 2 * len(al.ALLOCATORS)
    uni = frame.filter(pl.col("allocator") == "uniform")
    assert (uni["delta_es"] == 0.0).all() and (uni["delta_lo"] == 0.0).all() and (uni["delta_hi"] == 0.0).all()
    assert (uni["pooled_es"] == uni["pooled_es_uniform"]).all()
    # identical cells: every allocator but the pyramid is uniform, so its Delta is exactly 0 too
    rng = np.random.default_rng(5)
    same = {
        (ly, hd): [_row(_peaked(40, np.random.default_rng(k), 2.0), rng) for k in range(2)]
        for ly in range(2)
        for hd in range(3)
    }
    f = al.panel(same, unit=4, selector="top_mass", B=50, map_budget=MAP)
    for name in ("map_proportional", "mass_greedy"):
        row = f.filter(pl.col("allocator") == name)
        assert row["budget_min"][0] == row["budget_max"][0] == 4
        assert row["delta_es"][0] == 0.0


def test_bootstrap_contains_estimate_and_matches_core(synthetic):
    data = al.panel_data(synthetic, unit=8, selector="balancing", map_budget=MAP)
    frame = al.summarize(data, B=300, seed=7)
    assert ((frame["delta_lo"] <= frame["delta_es"]) & (frame["delta_es"] <= frame["delta_hi"])).all()
    moved = frame.filter(pl.col("allocator") != "uniform")
    assert (moved["delta_hi"] > moved["delta_lo"]).all()
    # the same resamples as core.stats' paired difference on one allocator
    cols = {
        "cell": data.table.cell,
        "a": data.row_es("balancing", 8, "map_proportional"),
        "u": data.row_es("balancing", 8, "uniform"),
    }
    ref = paired_bootstrap_difference(
        cols,
        lambda d: d["a"].mean(),
        lambda d: d["u"].mean(),
        cluster="cell",
        B=300,
        seed=7,
        columns=["cell", "a", "u"],
    )
    row = frame.filter(pl.col("allocator") == "map_proportional")
    assert row["delta_es"][0] == pytest.approx(ref.estimate, rel=1e-12)
    assert (row["delta_lo"][0], row["delta_hi"][0]) == pytest.approx((ref.low, ref.high), rel=1e-12)
    assert frame.equals(al.summarize(data, B=300, seed=7))


def test_pool_rule_changes_balancing_only(synthetic):
    a = al.panel(synthetic, unit=8, B=20, pool="subset_cap", map_budget=MAP)
    b = al.panel(synthetic, unit=8, B=20, pool="registry", map_budget=MAP)
    top = pl.col("selector") == "top_mass"
    assert a.filter(top)["pooled_es"].to_list() == b.filter(top)["pooled_es"].to_list()
    assert al.pool_extra("subset_cap")(9) == PoolRule().extra(9) == 11
    assert al.pool_extra("registry")(9) == 4 and al.pool_extra("registry")(8) == 12
    with pytest.raises(ValueError):
        al.panel(synthetic, unit=8, B=20, pool="nope", map_budget=MAP)


# ---------------------------------------------------------------------------- a captured shard


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Two tiny captured documents (2 layers x 4 query heads, 3 rows per KV head) and their panel."""
    from capture.tiny_models import tiny_shard

    paths = [
        tiny_shard(tmp_path_factory.mktemp(f"alloc{k}"), n_tokens=100, rows_per_head=3, min_position=40, seed=k)
        for k in (1, 2)
    ]
    frame, data = al.shard_panel(paths, units=(4, 8), B=200, seed=0, model="tiny", map_budget=MAP)
    return paths, frame, data


def _direct(x, budget, selector):
    inst = x.instance
    s = min(budget, inst.n_keys)
    if selector == "top_mass":
        return es(inst, top_mass(inst, s))
    return balancing(inst, s, candidate_pool(inst, s, PoolRule().extra(s))).es


def test_shard_panel_es_equals_core(tiny):
    from trustmass.contracts.shards import read_layer

    paths, frame, data = tiny
    assert frame["n_cells"].unique().to_list() == [8] and frame["n_rows"].unique().to_list() == [2 * 2 * 4 * 3]
    rows = al.panel_rows(data)
    for unit in (4, 8):
        for sel in al.SELECTORS:
            for name in al.ALLOCATORS:
                got = rows.filter(unit=unit, selector=sel, allocator=name).sort(["layer", "head", "slice"])
                grid = data.budgets[unit][name]
                direct = []
                for rec in got.iter_rows(named=True):
                    doc, r = divmod(rec["slice"], 3)
                    t = read_layer(paths[doc], rec["layer"])
                    x = SelectorInput.from_layer(t, rec["head"], r)
                    assert rec["budget"] == grid[rec["layer"], rec["head"]]
                    direct.append(_direct(x, rec["budget"], sel))
                np.testing.assert_allclose(got["es"].to_numpy(), direct, rtol=1e-12, atol=1e-15)
                pooled = frame.filter(unit=unit, selector=sel, allocator=name)["pooled_es"][0]
                assert pooled == pytest.approx(np.mean(direct), rel=1e-12)


def test_shard_panel_equals_panel_in_memory(tiny):
    from trustmass.contracts.shards import read_layer

    paths, frame, _ = tiny
    rows_by_cell = {}
    for path in paths:
        for layer in (0, 1):
            t = read_layer(path, layer)
            for h in range(4):
                rows_by_cell.setdefault((layer, h), []).extend(SelectorInput.from_layer(t, h, r) for r in range(3))
    mem = al.panel(rows_by_cell, unit=(4, 8), B=200, seed=0, model="tiny", map_budget=MAP)
    # the same rows in another order (cell-major here, document-major from shards): equal to rounding
    floats = ["pooled_es", "pooled_es_uniform", "delta_es", "delta_lo", "delta_hi"]
    assert mem.drop(floats).equals(frame.drop(floats))
    for name in floats:
        np.testing.assert_allclose(mem[name].to_numpy(), frame[name].to_numpy(), rtol=1e-9, atol=1e-15)
    assert ((frame["delta_lo"] <= frame["delta_es"]) & (frame["delta_es"] <= frame["delta_hi"])).all()
