"""The deployment claim values as declarations: every value declared and read, degenerate comparisons flagged (a
method at the floor, both at the ceiling, no speaking condition), W/T/L judged on the speaking conditions, and
timings carrying the device they were measured on."""

import inspect
import json
import math
import re

import polars as pl
import pytest
from deploy_rows import fixture_rows
from unit.headline_dimensions import assert_dimensions

from trustmass.report.engine import StatisticsSettings
from trustmass.report.frames import deploy as deploy_frames
from trustmass.report.frames import deploy_claims, deploy_comparison_claims
from trustmass.report.frames.deploy import bytes_rows, decomposition_table, table3, table4, timing_table
from trustmass.report.frames.deploy_claims import HEADLINE, claim_frames, headline, row_inputs, statistics, timed_on
from trustmass.report.frames.deploy_comparison_claims import floor_reason
from trustmass.report.headline import check_value

SETTINGS = StatisticsSettings(bootstrap=50)
FLOOR = "the comparison measures the floor"


def _replay(items=3, budget=128, n=1000) -> pl.DataFrame:
    """Replay rows as ``deploy.replay`` writes them: the plain prefill and three presses per item."""
    out = []
    for i in range(items):
        for method, kept, prefill in (
            ("dense", n, 1.0),
            ("snapkv", budget, 1.05),
            ("adakv", n, 1.1),
            ("kvzip", n, 9.0),
        ):
            out.append(
                {
                    "model": "m",
                    "item_id": f"i{i}",
                    "task": "niah_single",
                    "length": 1024,
                    "n_cached": n,
                    "bytes_full": 6 * n * 512,
                    "storage": "as_shipped",
                    "method": method,
                    "budget": n if method == "dense" else budget,
                    "bytes_measured": 6 * kept * 512,
                    "cache_rows": kept,
                    "kept_min_head": kept,
                    "kept_max_head": kept,
                    "prefill_s": prefill,
                    "cost_over_dense": prefill,
                }
            )
    return pl.DataFrame(out)


def _stage(rows: pl.DataFrame, replay: pl.DataFrame) -> dict:
    return {
        "table3": table3(rows, SETTINGS),
        "table4": table4(rows, SETTINGS),
        "table5": decomposition_table(rows, SETTINGS),
        "deploy_bytes": bytes_rows(rows, replay),
        "deploy_timing": timing_table(rows, replay),
        **row_inputs(rows, replay, SETTINGS),
    }


@pytest.fixture(scope="module")
def stage():
    return _stage(fixture_rows(), _replay())


# ---------------------------------------------------------------------------------------------- declarations


def test_no_hand_written_rows_in_the_deployment_producers():
    for module in (deploy_frames, deploy_claims, deploy_comparison_claims):
        source = inspect.getsource(module)
        assert not re.search(r"(?<![.\w])row\(", source), f"{module.__name__} writes a headline row by hand"
        assert not re.search(r"import[^\n]*\brow\b", source), module.__name__


def test_every_declaration_is_a_claim_value_with_a_domain_and_is_read(stage):
    frames = claim_frames(stage)
    frame = headline(stage)
    produced = set(frame.select("claim_id", "value_name").unique().iter_rows())
    for spec in HEADLINE:
        check_value(spec.claim, spec.value)  # a value of data/claims.yaml
        assert spec.domain != (-math.inf, math.inf), (spec.claim, spec.value)
        assert spec.source in frames, (spec.claim, spec.value, spec.source)
        assert (spec.claim, spec.value) in produced, (spec.claim, spec.value)
    assert produced == {(s.claim, s.value) for s in HEADLINE}
    assert_dimensions(frame)


def test_every_estimate_lies_in_its_declared_domain(stage):
    frame = headline(stage)
    for spec in HEADLINE:
        low, high = spec.domain
        got = frame.filter((pl.col("claim_id") == spec.claim) & (pl.col("value_name") == spec.value))
        assert got["estimate"].is_between(low, high).all(), (spec.claim, spec.value, got["estimate"].to_list())


# ---------------------------------------------------------------------------------------------- flags


def _one(claim: int, value: str, got: pl.DataFrame, **by) -> dict:
    rows = got.filter((pl.col("claim_id") == claim) & (pl.col("value_name") == value))
    for k, v in by.items():
        rows = rows.filter(pl.col("by_value").str.contains(f"(^|,){v}(,|$)"))
    assert rows.height == 1, (claim, value, by, rows)
    return rows.row(0, named=True)


def _scored(per_condition: dict) -> pl.DataFrame:
    """Main rows of enforced ContourKV, SnapKV, Compactor, KVzip and enforced reconstruction-scored ContourKV: per
    budget, each method's per-item scores (a dense run that finds every item)."""
    out, base = [], fixture_rows().row(0, named=True)
    for budget, methods in per_condition.items():
        n = len(next(iter(methods.values())))
        for method, scores in {"dense": [100] * n, **methods}.items():
            for i, score in enumerate(scores):
                out.append({**base, "budget": budget, "method": method, "item_id": f"i{i}", "score": float(score)})
    return pl.DataFrame(out).with_columns(dense_valid=pl.lit(True), variant=pl.lit("unmodified"))


def _headline_of(rows: pl.DataFrame) -> pl.DataFrame:
    return headline(
        {"table3": table3(rows, SETTINGS), "table4": table4(rows, SETTINGS), **row_inputs(rows, None, SETTINGS)}
    )


FLOORED = {  # enforced ContourKV at 0 on every item; its opponents spread; both ContourKV forms at 0 at s = 64
    64: {
        "contourkv_enforced": [0, 0, 0],
        "snapkv": [0, 0, 0],
        "compactor": [100, 0, 0],
        "kvzip": [0, 0, 0],
        "contourkv_recon_enforced": [0, 0, 0],
    },
    128: {
        "contourkv_enforced": [0, 0, 0],
        "snapkv": [100, 100, 0],
        "compactor": [100, 100, 100],
        "kvzip": [100, 0, 0],
        "contourkv_recon_enforced": [0, 0, 0],
    },
}
SPREAD = {  # every method finds some items and misses others; s = 64 has both methods at 0 for KVzip's pair
    64: {
        "contourkv_enforced": [100, 0, 0],
        "snapkv": [0, 0, 0],
        "compactor": [0, 100, 0],
        "kvzip": [0, 0, 0],
        "contourkv_recon_enforced": [0, 0, 0],
    },
    128: {
        "contourkv_enforced": [100, 100, 0],
        "snapkv": [100, 0, 0],
        "compactor": [100, 0, 0],
        "kvzip": [100, 0, 0],
        "contourkv_recon_enforced": [100, 100, 100],
    },
}


def test_a_method_at_the_floor_on_every_item_makes_its_comparisons_uninformative():
    got = _headline_of(_scored(FLOORED))
    reason = "contourkv_enforced scores 0 on every item (0 of 6 items in 2 conditions): " + FLOOR
    for outcome in ("win", "tie", "loss"):
        assert _one(70, "wtl_vs_compactor", got, outcome=outcome)["uninformative"] == reason
    assert _one(67, "advantage_vs_snapkv", got, budget=128)["uninformative"] == (
        "contourkv_enforced scores 0 on every item (0 of 3 items): " + FLOOR
    )
    assert _one(73, "snapkv_hit_rate", got, budget=64)["uninformative"] == (
        "contourkv_enforced and snapkv score 0 on every item (0 of 3 items): " + FLOOR
    )
    # claim 116 per condition: both at 0 at s = 64; enforced reconstruction-scored ContourKV alone at s = 128
    assert _one(116, "margin_vs_kvzip", got, budget=64)["uninformative"] == (
        "contourkv_recon_enforced and kvzip score 0 on every item (0 of 3 items): " + FLOOR
    )
    assert _one(116, "ci_low", got, budget=128)["uninformative"] == (
        "contourkv_recon_enforced scores 0 on every item (0 of 3 items): " + FLOOR
    )
    assert _one(116, "n_cells", got, budget=64)["uninformative"] is None  # a count of cells stands
    assert _one(75, "n_conditions", got, budget=128)["uninformative"] is None
    assert _one(75, "bytes_over_snapkv", got, budget=128)["uninformative"] is None


def test_methods_that_spread_are_judged():
    got = _headline_of(_scored(SPREAD))
    for outcome in ("win", "tie", "loss"):
        assert _one(70, "wtl_vs_compactor", got, outcome=outcome)["uninformative"] is None
    assert _one(67, "advantage_vs_snapkv", got, budget=128)["uninformative"] is None
    assert _one(116, "margin_vs_kvzip", got, budget=128)["uninformative"] is None
    assert _one(66, "wins", got)["uninformative"] is None
    # a single condition at the floor for both still cannot speak, on its own row
    assert _one(116, "margin_vs_kvzip", got, budget=64)["uninformative"].startswith(
        "contourkv_recon_enforced and kvzip"
    )


def test_wtl_is_judged_on_the_speaking_conditions():
    """Claim 66 over two conditions: one where both methods score 0 on every item (silent), one win.  The count is
    read on the one that speaks; the silent one is counted apart (n_excluded)."""
    got = _headline_of(_scored(SPREAD))  # vs KVzip enforced: s = 64 both at 0, s = 128 a win (3 of 3 vs 1 of 3)
    wins, losses = _one(66, "wins", got), _one(66, "losses", got)
    assert (wins["estimate"], losses["estimate"]) == (1, 0)
    assert (wins["n_instances"], wins["n_excluded"]) == (1, 1)
    t3 = table3(_scored(SPREAD), SETTINGS).filter(pl.col("opponent") == "kvzip").row(0, named=True)
    assert (t3["n_conditions"], t3["ties"], t3["n_silent"]) == (2, 1, 1)  # the table keeps every condition


def test_no_speaking_condition_is_flagged():
    """Every condition silent, half at the floor and half at the ceiling: neither method is at the floor overall,
    yet no condition can speak."""
    rows = _scored({64: {"contourkv_enforced": [0, 0], "compactor": [0, 0]}, 128: {"contourkv_enforced": [100, 100],
                   "compactor": [100, 100]}})  # fmt: skip
    got = _headline_of(rows)
    assert _one(70, "wtl_vs_compactor", got, outcome="tie")["uninformative"] == (
        "no condition can speak: in every one (2 of 2) both methods score 0 on every item or both 100"
    )
    assert _one(70, "wtl_vs_compactor", got, outcome="tie")["estimate"] == 0  # both ties are silent


def test_both_at_the_ceiling_and_one_at_the_floor_by_hand():
    both = [("a", 1.0), ("b", 1.0)]
    assert floor_reason(both, 4, 2) == "a and b score 100 on every item (4 of 4 items in 2 conditions): " + (
        "the comparison measures the ceiling"
    )
    assert floor_reason([("a", 0.0), ("b", 0.5)], 4, 1) == "a scores 0 on every item (0 of 4 items): " + FLOOR
    assert floor_reason([("a", 1.0), ("b", 0.5)], 4, 1) is None  # one method at the ceiling can still lose a tie
    # the opponent alone at the floor beside a method under test that scores: the comparison's result (claim 73)
    assert floor_reason([("contourkv_enforced", 0.6), ("snapkv", 0.0)], 4, 1) is None
    assert floor_reason([("a", 0.25), ("b", 0.5)], 4, 1) is None


def test_significant_losses_from_a_floor_are_flagged():
    floored = _headline_of(_scored(FLOORED))
    assert _one(117, "n_significant_losses", floored)["uninformative"].startswith(
        "a significant loss is counted from a comparison at the floor (contourkv_enforced vs compactor: "
        "contourkv_enforced scores 0 on every item"
    )
    assert _one(117, "n_significant_losses", _headline_of(_scored(SPREAD)))["uninformative"] is None


def _t5(unmodified, doc_rows, doc_boundary, swapped) -> pl.DataFrame:
    """Table 5's pooled rows of enforced ContourKV (hit rates as fractions of 4 items)."""
    out = []
    for variant, hit in (
        ("unmodified", unmodified),
        ("doc_rows", doc_rows),
        ("doc_boundary", doc_boundary),
        ("allocation_swapped", swapped),
    ):
        change = 100 * (hit - unmodified)
        out.append(
            {
                "model": "m",
                "method": "contourkv_enforced",
                "budget": "all",
                "variant": variant,
                "n_items": 4,
                "hit_rate": hit,
                "hit_change_points": change,
                "hit_change_lo": change - 5,
                "hit_change_hi": change + 5,
                "n_conditions": 1,
                "n_silent": 0,
                "question_rows": 39.0,
                "question_rows_evicted": 5.0,
            }
        )
    return pl.DataFrame(out)


def test_the_decomposition_flags_its_own_floors():
    def changes(t5):
        got = headline({"table5": t5}).filter(
            (pl.col("claim_id") == 76) & pl.col("value_name").is_in(["hit_rate_change", "allocation_hit_rate_change"])
        )
        return {r["by_value"].split(",")[1]: r["uninformative"] for r in got.iter_rows(named=True)}

    # the unmodified run finds nothing: no hit can be lost, whatever the variants do
    lost = changes(_t5(0.0, 0.25, 0.5, 0.5))
    assert lost["doc_rows_ranking"] == "the unmodified hit rate is 0 (unmodified 0 of 4): nothing to decompose"
    assert lost["allocation_swapped"] == "contourkv_enforced scores 0 on every item (0 of 4 items): " + FLOOR
    # a variant that loses every hit beside a spread unmodified run is the loss claim 76 measures
    measured = changes(_t5(0.75, 0.0, 0.0, 0.5))
    assert measured == {"doc_rows_ranking": None, "doc_boundary_eviction": None, "allocation_swapped": None}
    # the uniform twin alone at the floor beside a method that scores is the allocation's effect, not a floor
    assert changes(_t5(0.75, 0.25, 0.25, 0.0))["allocation_swapped"] is None


# ---------------------------------------------------------------------------------------------- timing device


def test_timings_carry_the_device_from_the_provenance(tmp_path):
    rows, replay = fixture_rows(), _replay()
    paths = {"rows": tmp_path / "rows.parquet", "replay": tmp_path / "replay.parquet"}
    rows.write_parquet(paths["rows"])
    replay.write_parquet(paths["replay"])
    device = {"device": {"cuda_device": "NVIDIA H100 80GB HBM3"}, "extra": {"device": "cuda"}}
    (tmp_path / "replay.parquet.prov.json").write_text(json.dumps(device))
    (tmp_path / "rows.parquet.prov.json").write_text(
        json.dumps({"device": {"cuda_device": None}, "extra": {"device": "cpu"}})
    )
    assert timed_on(str(paths["replay"])) == "cuda (NVIDIA H100 80GB HBM3)"
    assert timed_on(str(tmp_path / "none.parquet")) == "unrecorded"
    frames = statistics(
        {"rows": [str(paths["rows"])], "replay": [str(paths["replay"])]}, {"statistics": {"bootstrap": 20}}
    )
    timing = frames["headline_deploy"].filter(pl.col("claim_id").is_in([69, 115]))
    assert timing.height == 3 and set(timing["by_key"].to_list()) == {"model,length,device"}
    assert set(timing["by_value"].to_list()) == {"m,1024,cuda (NVIDIA H100 80GB HBM3)"}
    assert timing["n_instances"].to_list() == [3, 3, 3]  # the replay's items behind each median
    # the main rows ran on the CPU: their seconds are another row of the timing table than the replay's
    table = frames["deploy_timing"].filter(pl.col("method") == "kvzip")
    assert sorted(table["device"].to_list()) == ["cpu", "cuda (NVIDIA H100 80GB HBM3)"]
