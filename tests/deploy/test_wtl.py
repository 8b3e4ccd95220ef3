"""W/T/L over hand-made paired conditions with known outcomes, the alternative tie rule, the bootstrap."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from trustmass.deploy.wtl import COLUMNS, conditions, setting_of, speaking, wtl

N = 20


def rows(task, budget, variant, opponent, method="snapkv", model="m", length=1024, dense=None):
    """Long-format rows for one condition: ``variant``/``opponent`` are per-item score lists."""
    out = []
    for i, (v, o) in enumerate(zip(variant, opponent)):
        for name, s in (("contourkv", v), (method, o)):
            out.append(
                {
                    "model": model,
                    "task": task,
                    "length": length,
                    "budget": budget,
                    "item_id": f"i{i}",
                    "method": name,
                    "score": float(s),
                    "dense_valid": True if dense is None else dense[i],
                }
            )
    return out


def known_frame():
    rng = np.random.default_rng(3)
    mixed = rng.choice([0.0, 100.0], size=N)
    return pl.DataFrame(
        rows("niah_single", 32, [100.0] * N, [0.0] * 18 + [100.0] * 2)  # Δ = +90, a certain win
        + rows("niah_single", 64, mixed, mixed)  # identical: Δ = 0, a literal tie
        + rows("vt", 64, [0.0] * 15 + [100.0] * 5, [100.0] * N)  # Δ = -75, a significant loss
        + rows("vt", 128, [50.04] + [50.0] * (N - 1), [50.0] * N)  # Δ = 0.002: literal win, alt tie
    )


def test_known_outcomes():
    frame = known_frame()
    out = wtl(frame, "contourkv")
    assert out.columns == list(COLUMNS) and out.height == 1
    r = out.row(0, named=True)
    assert (r["variant"], r["opponent"], r["n_conditions"]) == ("contourkv", "snapkv", 4)
    assert (r["wins"], r["ties"], r["losses"]) == (2, 1, 1)
    assert r["ties_alt"] == 2 and r["wins_sig"] == 1 and r["losses_sig"] == 1
    assert r["mean_delta"] == pytest.approx((90 + 0 - 75 + 0.04 / N) / 4)
    assert r["delta_lo"] <= r["mean_delta"] <= r["delta_hi"] and r["delta_lo"] < r["delta_hi"]


def test_condition_intervals():
    per = conditions(known_frame(), "contourkv", "snapkv").sort("task", "budget")
    assert per["n_items"].to_list() == [N] * 4
    assert per["delta"].to_list() == pytest.approx([90.0, 0.0, -75.0, 0.002])
    assert per["outcome"].to_list() == ["W", "T", "L", "W"] and per["outcome_alt"].to_list() == ["W", "T", "L", "T"]
    assert per["significant"].to_list() == [True, False, True, False]
    assert (per["delta_lo"] <= per["delta"]).all() and (per["delta"] <= per["delta_hi"]).all()
    tie = per.row(1, named=True)
    assert tie["delta_lo"] == tie["delta_hi"] == 0.0  # every resample of identical scores differs by 0
    small = per.row(3, named=True)
    assert small["delta_lo"] == 0.0 and small["delta_hi"] > 0  # resamples without the one differing item


def test_bootstrap_reproducible_and_seeded():
    rng = np.random.default_rng(0)
    frame = pl.DataFrame(rows("niah_single", 64, rng.choice([0, 100], N), rng.choice([0, 100], N)))
    a, b = conditions(frame, "contourkv", "snapkv", seed=5), conditions(frame, "contourkv", "snapkv", seed=5)
    assert a.equals(b)
    c = conditions(frame, "contourkv", "snapkv", seed=6)
    assert (a["delta_lo"][0], a["delta_hi"][0]) != (c["delta_lo"][0], c["delta_hi"][0])
    assert a["delta"][0] == c["delta"][0]
    narrow = conditions(frame, "contourkv", "snapkv", seed=5, level=0.5)
    assert a["delta_lo"][0] <= narrow["delta_lo"][0] <= narrow["delta_hi"][0] <= a["delta_hi"][0]


def test_condition_seed_is_independent_of_other_conditions():
    frame = known_frame()
    alone = conditions(frame.filter(pl.col("task") == "vt"), "contourkv", "snapkv")
    full = conditions(frame, "contourkv", "snapkv").filter(pl.col("task") == "vt")
    assert alone.sort("budget").equals(full.sort("budget"))


def test_dense_invalid_items_excluded():
    dense = [True] * N + [False] * 5
    base = pl.DataFrame(rows("niah_single", 64, [100.0] * N, [0.0] * N))
    with_bad = pl.DataFrame(rows("niah_single", 64, [100.0] * N + [0.0] * 5, [0.0] * N + [100.0] * 5, dense=dense))
    assert conditions(with_bad, "contourkv", "snapkv").equals(conditions(base, "contourkv", "snapkv"))
    none_valid = pl.DataFrame(rows("niah_single", 64, [100.0] * 3, [0.0] * 3, dense=[False] * 3))
    assert wtl(none_valid, "contourkv")["n_conditions"].to_list() == [0]


def test_several_opponents_and_query_aware_keys():
    tova = [r for r in rows("vt", 64, [0.0] * N, [100.0] * N, method="tova") if r["method"] == "tova"]
    frame = pl.DataFrame(rows("vt", 64, [100.0] * N, [0.0] * N) + tova)  # contourkv 100, snapkv 0, tova 100
    out = wtl(frame, "contourkv").sort("opponent")
    assert out["opponent"].to_list() == ["snapkv", "tova"]
    assert out["wins"].to_list() == [1, 0] and out["ties"].to_list() == [0, 1] and out["wins_sig"].to_list() == [1, 0]
    assert wtl(frame, "contourkv", ["tova"])["opponent"].to_list() == ["tova"]
    qa = pl.concat([frame.with_columns(query_aware=pl.lit(False)), frame.with_columns(query_aware=pl.lit(True))])
    assert wtl(qa, "contourkv", ["snapkv"])["n_conditions"][0] == 2


def test_never_pools_settings():
    retrieval = rows("niah_single", 64, [100.0] * 3, [0.0] * 3)
    bench = rows("qasper", 64, [40.0] * 3, [30.0] * 3)
    assert setting_of(pl.DataFrame(retrieval)) == "retrieval" and setting_of(pl.DataFrame(bench)) == "benchmark"
    assert wtl(pl.DataFrame(bench), "contourkv")["wins"][0] == 1
    with pytest.raises(ValueError, match="never pooled"):
        wtl(pl.DataFrame(retrieval + bench), "contourkv")
    explicit = pl.DataFrame(retrieval).with_columns(setting=pl.Series(["retrieval", "benchmark"] * 3))
    with pytest.raises(ValueError, match="never pooled"):
        conditions(explicit, "contourkv", "snapkv")


def test_bad_inputs():
    good = pl.DataFrame(rows("vt", 64, [100.0] * 3, [0.0] * 3))
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['budget'\]"):
        wtl(good.drop("budget"), "contourkv")
    with pytest.raises(ValueError, match=r"points in \[0, 100\]"):
        wtl(good.with_columns(score=pl.col("score") * 2), "contourkv")
    with pytest.raises(ValueError, match="duplicate"):
        wtl(pl.concat([good, good]), "contourkv")
    with pytest.raises(ValueError, match="scored by only one"):
        wtl(good.filter(~((pl.col("item_id") == "i1") & (pl.col("method") == "snapkv"))), "contourkv")
    with pytest.raises(ValueError, match="variant 'h2o'"):
        wtl(good, "h2o")
    with pytest.raises(ValueError, match="opponent 'contourkv'"):
        wtl(good, "contourkv", ["contourkv"])


def test_every_method_declares_a_contract_and_wtl_rows_name_what_they_cross():
    from trustmass.deploy.contracts import CONTRACTS, FIELDS, contrast
    from trustmass.deploy.names import NEEDS_HUB, OFFLINE

    assert set(CONTRACTS) == set(OFFLINE + NEEDS_HUB)
    assert all(set(c) == set(FIELDS) for c in CONTRACTS.values())
    assert contrast("contourkv_enforced", "snapkv_w32") == "crosses: allocation"  # the same 32-row window score
    assert contrast("contourkv_enforced", "snapkv") == "crosses: observation_window, allocation"
    assert contrast("knorm", "keydiff") == "like_for_like"  # two key scores, uniform, no query rows
    assert contrast("snapkv", "no_such_method") == "unknown"


def test_silent_conditions_are_counted_apart():
    """Conditions where both methods sit at 0 (or both at 100) on every item are ties that cannot speak; a condition
    where only one method is at the floor, or both spread, speaks."""
    frame = pl.DataFrame(
        rows("niah_single", 32, [0.0] * 5, [0.0] * 5)  # both at the floor: silent
        + rows("niah_single", 64, [100.0] * 5, [100.0] * 5)  # both at the ceiling: silent
        + rows("niah_single", 128, [0.0] * 5, [100.0] * 5)  # one at the floor: a loss that speaks
        + rows(
            "vt", 64, [0.0, 100.0, 0.0, 100.0, 0.0], [100.0, 0.0, 100.0, 0.0, 0.0]
        )  # spread, equal: a tie that speaks
        + rows("vt", 128, [50.0] * 5, [50.0] * 5)  # equal partial credit: a tie that speaks
    )
    per = conditions(frame, "contourkv", "snapkv").sort("task", "budget")
    assert per["silent"].to_list() == [True, True, False, False, False]
    assert per["variant_points"].to_list() == [0.0, 100.0, 0.0, 40.0, 50.0]
    assert per["opponent_points"].to_list() == [0.0, 100.0, 100.0, 40.0, 50.0]
    got = speaking(wtl(frame, "contourkv")).row(0, named=True)
    assert (got["n_conditions"], got["n_silent"], got["n_items"]) == (5, 2, 25)
    assert (got["wins"], got["ties"], got["losses"]) == (0, 4, 1)  # the tables keep every condition
    assert (got["n_speaking"], got["ties_speaking"]) == (3, 2)  # the claims judge the speaking ones
    spread = pl.DataFrame(rows("vt", 64, [0.0, 100.0], [100.0, 0.0]))
    assert wtl(spread, "contourkv")["n_silent"].to_list() == [0]
