"""The deployment statistics on rows built by hand: W/T/L, hit rates, dense-valid gating, Table 5, bytes, claims."""

import polars as pl
import pytest
from deploy_rows import fixture_rows
from unit.headline_dimensions import assert_dimensions, rows_of

from trustmass.report.engine import StatisticsSettings
from trustmass.report.frames.deploy import bytes_rows, decomposition_table, main_rows, table3, table4, timing_table
from trustmass.report.frames.deploy_claims import claim_frames, headline, row_inputs


@pytest.fixture(scope="module")
def rows():
    return fixture_rows()


SETTINGS = StatisticsSettings(bootstrap=200)


def test_main_rows_are_the_runs_own_eviction_point(rows):
    assert set(main_rows(rows)["variant"].to_list()) == {"unmodified"}


def test_table4_counts_conditions_on_dense_valid_items(rows):
    t4 = table4(rows, SETTINGS)
    snap = {r["budget"]: r for r in t4.filter(pl.col("opponent") == "snapkv").iter_rows(named=True)}
    assert set(snap) == {"all", "64", "128"}
    assert (snap["128"]["wins"], snap["128"]["ties"], snap["128"]["losses"]) == (1, 0, 0)
    assert snap["128"]["mean_delta"] == pytest.approx(200 / 3)  # items 0-2: (100 + 100 + 0 - 0) / 3; item 3 excluded
    assert (snap["64"]["wins"], snap["64"]["ties"]) == (0, 1)  # item 3's 100 does not count
    assert (snap["all"]["n_conditions"], snap["all"]["mean_delta"]) == (2, pytest.approx(100 / 3))
    assert snap["128"]["variant_hit"] == pytest.approx(2 / 3) and snap["128"]["opponent_hit"] == 0.0
    assert snap["128"]["bytes_ratio"] == pytest.approx(0.9, abs=0.01)
    assert t4["setting"].unique().to_list() == ["retrieval"]


def test_table3_pairs_and_the_enforcement_effect(rows):
    t3 = {r["comparison"]: r for r in table3(rows, SETTINGS).iter_rows(named=True)}
    assert t3["vs KVzip, enforced"]["losses"] == 1 and t3["vs KVzip, enforced"]["mean_delta"] == pytest.approx(-50 / 3)
    assert t3["vs KVzip, unenforced (reconstruction score)"]["mean_delta"] == pytest.approx(50 / 3)
    effect = t3["enforcement effect (reconstruction score)"]  # enforced 0 everywhere vs unenforced 2 of 3 at s = 128
    assert (effect["losses"], effect["ties"]) == (1, 1) and effect["mean_delta"] == pytest.approx(-100 / 3)
    assert t3["enforcement effect (window score)"]["mean_delta"] == pytest.approx(-50 / 3)
    assert all(r["n_excluded_items"] == 1 for r in t3.values())


def test_table5_changes_against_the_unmodified_run(rows):
    t5 = decomposition_table(rows, SETTINGS)
    got = {(r["budget"], r["variant"]): r for r in t5.iter_rows(named=True)}
    assert got[("128", "unmodified")]["hit_rate"] == pytest.approx(2 / 3)
    assert got[("128", "doc_rows")]["hit_change_points"] == pytest.approx(-200 / 3)
    assert got[("128", "doc_boundary")]["hit_change_points"] == pytest.approx(-100 / 3)
    assert got[("all", "doc_rows")]["hit_change_points"] == pytest.approx(-100 / 3)  # the mean of 0 and -66.7
    assert got[("128", "allocation_swapped")]["hit_change_points"] == pytest.approx(-100 / 3)  # 1 of 3 vs 2 of 3
    assert got[("all", "allocation_swapped")]["n_conditions"] == 2
    assert (
        got[("128", "doc_rows")]["question_rows_evicted"] == 0
        and got[("128", "unmodified")]["question_rows_evicted"] == 5
    )
    # memory at the first answer token: kept rows per cell + the block (1 token, or the 21-token question)
    kept = 128 * 0.9
    assert got[("128", "unmodified")]["memory_vs_doc_boundary"] == pytest.approx(
        (int(6 * kept) / 6 + 1) / (int(6 * kept) / 6 + 21)
    )


def test_bytes_and_timing(rows):
    table = bytes_rows(rows, pl.DataFrame())
    by = {(r["method"], r["storage"], r["budget"]): r for r in table.iter_rows(named=True)}
    assert by[("contourkv_enforced", "ragged", 128)]["ratio_to_snapkv_median"] == pytest.approx(
        int(6 * 128 * 0.9) / (6 * 128)
    )
    assert by[("contourkv_unenforced", "layer_padded", 128)]["ratio_to_snapkv_median"] == pytest.approx(4.0)
    assert by[("snapkv", "ragged", 64)]["kind"] == "uniform"
    timing = timing_table(rows, pl.DataFrame())
    assert set(timing["method"].to_list()) >= {"dense", "snapkv"} and timing["decode_s"].to_list()[0] == 0.5


def _stage(rows, table=None) -> dict:
    """The stage's frames from the rows (no replay), as ``deploy_claims.statistics`` makes them."""
    return {
        "table3": table3(rows, SETTINGS),
        "table4": table4(rows, SETTINGS),
        "table5": decomposition_table(rows, SETTINGS),
        "deploy_bytes": bytes_rows(rows, pl.DataFrame()) if table is None else table,
        "deploy_timing": timing_table(rows, pl.DataFrame()),
        **row_inputs(rows, None, SETTINGS),
    }


def test_headline_values(rows):
    frame = headline(_stage(rows))
    got = {(r["claim_id"], r["value_name"], r["by_value"]): r["estimate"] for r in frame.iter_rows(named=True)}
    assert got[(67, "advantage_vs_snapkv", "retrieval,128")] == pytest.approx(200 / 3)
    assert got[(73, "contourkv_hit_rate", "retrieval,128")] == pytest.approx(2 / 3)
    assert got[(75, "bytes_over_snapkv", "retrieval,128")] == pytest.approx(0.9, abs=0.01)
    assert got[(76, "hit_rate_change", "m,doc_rows_ranking")] == pytest.approx(-100 / 3)
    # the doc-boundary change, negated: -100/3 at s = 128 and 0 at s = 64, pooled
    assert got[(5, "retrieval_margin_question_visible", "m")] == pytest.approx(50 / 3)
    assert got[(76, "allocation_hit_rate_change", "m,allocation_swapped")] == pytest.approx(-50 / 3)
    assert got[(60, "contourkv_bytes_over_snapkv_enforced", "m,1024,128,contourkv_enforced")] == pytest.approx(
        0.9, abs=0.01
    )
    assert got[(114, "overkeep_over_nominal", "m,1024,64,contourkv_unenforced")] == 4.0
    assert frame["models"].unique().to_list() == ["m"]


# ---------------------------------------------------------------------------------------------- claims on hand-built tables

EMPTY = pl.DataFrame()


def _frames(rows=EMPTY, t3=EMPTY, t4=EMPTY, t5=EMPTY, table=EMPTY, replay=None, timing=EMPTY) -> dict:
    """The stage's frames: the tables given (the others empty) and the row inputs of ``rows`` and ``replay``."""
    tables = {"table3": t3, "table4": t4, "table5": t5, "deploy_bytes": table, "deploy_timing": timing}
    return {**tables, **row_inputs(rows, replay, SETTINGS)}


def _claims(**given) -> dict:
    """(claim, value, by_value) -> the headline row, from the tables given (the others empty)."""
    frame = headline(_frames(**given))
    got = {(r["claim_id"], r["value_name"], r["by_value"]): r for r in frame.iter_rows(named=True)}
    assert len(got) == frame.height, "two rows of one value share a group"
    return got


def _wtl_row(
    comparison,
    variant,
    opponent,
    wtl,
    *,
    setting="retrieval",
    losses_sig=0,
    hits=(0.5, 0.25),
    delta=1.0,
    budget=None,
    silent=0,
) -> dict:
    """A Table 3 row (Table 4's with ``budget``): ``silent`` of its ties are conditions at the floor or ceiling."""
    w, t, l = wtl  # noqa: E741
    out = {
        "setting": setting,
        "comparison": comparison,
        "variant": variant,
        "opponent": opponent,
        "n_conditions": w + t + l,
        "n_silent": silent,
        "n_items": 3 * (w + t + l),
        "wins": w,
        "ties": t,
        "losses": l,
        "wins_sig": 0,
        "losses_sig": losses_sig,
        "mean_delta": delta,
        "delta_lo": delta - 1,
        "delta_hi": delta + 1,
        "variant_hit": hits[0],
        "opponent_hit": hits[1],
    }
    if budget is not None:
        out = {"budget": budget, **{k: v for k, v in out.items() if k != "comparison"}, "bytes_ratio": 0.8}
    return out


#: Table 3 in both settings: the claims read the benchmark rows (the paper's Table 3 is its benchmark grid)
T3 = pl.DataFrame(
    [
        _wtl_row(
            "vs KVzip, enforced", "contourkv_recon_enforced", "kvzip", (9, 4, 3), setting="benchmark", losses_sig=2
        ),
        _wtl_row(
            "vs KVzip, unenforced (reconstruction score)",
            "contourkv_recon_unenforced",
            "kvzip",
            (14, 1, 1),
            setting="benchmark",
        ),
        _wtl_row(
            "enforcement effect (reconstruction score)",
            "contourkv_recon_enforced",
            "contourkv_recon_unenforced",
            (1, 3, 12),
            setting="benchmark",
            losses_sig=9,
        ),
        _wtl_row("vs Compactor", "contourkv_enforced", "compactor", (2, 10, 4), setting="benchmark", losses_sig=1),
        _wtl_row(
            "window-score reallocation vs SnapKV (the same 32-row window score)",
            "contourkv_enforced",
            "snapkv_w32",
            (1, 13, 2),
            setting="benchmark",
        ),
        _wtl_row(
            "vs KVzip, enforced", "contourkv_recon_enforced", "kvzip", (1, 0, 0), setting="retrieval", losses_sig=5
        ),
    ]
)


def test_table3_wtl_counts_are_read_in_the_benchmark_setting():
    got = _claims(t3=T3)
    counts = {
        (c, v, b): r["estimate"] for (c, v, b), r in got.items() if c in (6, 64, 65, 66, 70, 71) and "margin" not in v
    }
    assert counts == {
        (6, "wins_vs_kvzip_enforced", "benchmark"): 9,
        (6, "losses_vs_kvzip_enforced", "benchmark"): 3,
        (66, "wins", "benchmark"): 9,
        (66, "losses", "benchmark"): 3,
        (64, "wins", "benchmark"): 14,
        (64, "losses", "benchmark"): 1,
        (65, "conditions_lowered", "benchmark"): 12,
        (65, "conditions_raised", "benchmark"): 1,
        (70, "wtl_vs_compactor", "benchmark,win"): 2,
        (70, "wtl_vs_compactor", "benchmark,tie"): 10,
        (70, "wtl_vs_compactor", "benchmark,loss"): 4,
        (71, "wtl_vs_snapkv", "benchmark,win"): 1,
        (71, "wtl_vs_snapkv", "benchmark,tie"): 13,
        (71, "wtl_vs_snapkv", "benchmark,loss"): 2,
        (71, "n_conditions", "benchmark"): 16,
    }
    assert got[(6, "wins_vs_kvzip_enforced", "benchmark")]["n_instances"] == 16
    assert got[(70, "wtl_vs_compactor", "benchmark,loss")]["by_key"] == "setting,outcome"
    assert got[(65, "conditions_lowered", "benchmark")]["source"] == "table3_counts.losses"


def test_table3_falls_back_on_retrieval():
    got = _claims(t3=T3.filter(pl.col("setting") == "retrieval"))
    assert got[(6, "wins_vs_kvzip_enforced", "retrieval")]["estimate"] == 1
    assert got[(117, "n_significant_losses", "retrieval")]["estimate"] == 5


T4 = pl.DataFrame(
    [
        _wtl_row(None, "contourkv_enforced", "snapkv", (9, 6, 1), budget="all", losses_sig=1),
        _wtl_row(None, "contourkv_enforced", "snapkv", (7, 1, 0), budget="64", hits=(0.5, 0.125)),
        _wtl_row(None, "contourkv_enforced", "snapkv", (2, 5, 1), budget="128", losses_sig=1, hits=(0.0, 0.0)),
        _wtl_row(None, "contourkv_enforced", "tova", (3, 0, 0), budget="all", losses_sig=4),
        _wtl_row(None, "contourkv_enforced", "compactor", (0, 0, 3), budget="all", losses_sig=3),
        _wtl_row(None, "contourkv_enforced", "contourkv_unenforced", (0, 0, 3), budget="all", losses_sig=3),
    ]
)


def test_table4_wtl_counts_per_budget_and_at_s64():
    got = _claims(t4=T4)
    wtl = {(c, b): r["estimate"] for (c, v, b), r in got.items() if v == "wtl_vs_snapkv"}
    assert wtl == {
        (75, "retrieval,64,win"): 7,
        (75, "retrieval,64,tie"): 1,
        (75, "retrieval,64,loss"): 0,
        (75, "retrieval,128,win"): 2,
        (75, "retrieval,128,tie"): 5,
        (75, "retrieval,128,loss"): 1,
        (120, "retrieval,64,win"): 7,
        (120, "retrieval,64,tie"): 1,
        (120, "retrieval,64,loss"): 0,
    }
    assert got[(75, "n_conditions", "retrieval,64")]["estimate"] == 8
    assert got[(120, "wtl_vs_snapkv", "retrieval,64,win")]["by_key"] == "setting,budget,outcome"
    assert not any(b and b.startswith("retrieval,all") for (_, _, b) in got)  # the pooled row is no budget


def test_significant_losses_count_every_baseline_once():
    # Table 3 (retrieval): KVzip 5; Table 4 adds TOVA's 4 and SnapKV's 1, not Compactor's (Table 3 has the pair) nor
    # ContourKV's own unenforced form
    t3 = pl.concat(
        [
            T3.filter(pl.col("setting") == "retrieval"),
            pl.DataFrame([_wtl_row("vs Compactor", "contourkv_enforced", "compactor", (0, 1, 2), losses_sig=2)]),
        ]
    )
    got = _claims(t3=t3, t4=T4)[(117, "n_significant_losses", "retrieval")]
    assert got["estimate"] == 5 + 2 + 4 + 1
    counted = claim_frames(_frames(t3=t3, t4=T4))["significant_losses"]["counted"].to_list()
    assert counted == [
        "contourkv_recon_enforced vs kvzip; contourkv_enforced vs compactor; contourkv_enforced vs snapkv; "
        "contourkv_enforced vs tova"
    ]
    assert (117, "n_significant_losses", "benchmark") in _claims(t3=T3, t4=T4)  # Table 3's setting: Table 4 is not read


def test_method_and_condition_counts(rows):
    # the fixture runs snapkv, snapkv_w32, compactor (uniform), kvzip, dense and ContourKV; add four more
    snap = rows.filter(pl.col("method") == "snapkv")
    roster = pl.concat(
        [
            rows,
            *(
                snap.with_columns(method=pl.lit(m), kind=pl.lit(k))
                for m, k in (("pyramidkv", "pyramid"), ("h2o", "uniform"), ("tova", "uniform"), ("adakv", "headwise"))
            ),
        ]
    )
    replay = pl.DataFrame(
        {
            "model": ["a"] * 7 + ["b"] * 3,
            "task": ["t1"] * 4 + ["t2"] * 3 + ["t1"] * 3,
            "length": [1024] * 10,
            "budget": [64, 64, 128, 2000, 64, 64, 2000, 64, 128, 2000],
            "method": ["snapkv", "kvzip", "snapkv", "dense", "snapkv", "kvzip", "dense", "snapkv", "snapkv", "dense"],
        }
    )
    got = _claims(rows=roster, replay=replay)
    assert {
        v: got[(c, v, None)]["estimate"]
        for c, v in [
            (59, "n_uniform_methods"),
            (59, "n_per_head_methods"),
            (62, "n_uniform"),
            (62, "n_per_head"),
            (62, "n_library_baselines"),
        ]
    } == {"n_uniform_methods": 6, "n_per_head_methods": 2, "n_uniform": 4, "n_per_head": 2, "n_library_baselines": 6}
    assert claim_frames(_frames(rows=roster))["roster"]["library"].to_list() == ["compactor, pyramidkv, snapkv, tova"]
    # the replay: a press's rows per model (the plain prefill is not one); conditions (model, task, length, budget)
    assert got[(61, "replay_measurements_per_model", "a")]["estimate"] == 5
    assert got[(61, "replay_measurements_per_model", "b")]["estimate"] == 2
    assert got[(61, "n_conditions", None)]["estimate"] == 5  # a: t1/64, t1/128, t2/64; b: t1/64, t1/128
    # claim 116's cells: (model, length) pairs behind the margins over KVzip, per budget
    pair = rows.filter(pl.col("method").is_in(["dense", "kvzip", "contourkv_recon_enforced"]))
    more = pl.concat(
        [pair, pair.with_columns(length=pl.lit(2048, dtype=pl.Int64)), pair.with_columns(model=pl.lit("m2"))]
    )
    cells = {b: r["estimate"] for (c, v, b), r in _claims(rows=more).items() if v == "n_cells"}
    assert cells == {"retrieval,64": 3, "retrieval,128": 3}


def _bytes_rec(method, storage, kind, ratio, budget=128) -> dict:
    return {
        "model": "m",
        "length": 1024,
        "budget": budget,
        "method": method,
        "storage": storage,
        "n_items": 3,
        "bytes_median": 1000.0 * ratio,
        "frac_full_median": 0.1 * ratio,
        "frac_full_min": 0.1 * ratio,
        "frac_full_max": 0.1 * ratio,
        "ratio_to_snapkv_median": ratio,
        "ratio_to_snapkv_min": ratio,
        "ratio_to_snapkv_max": ratio,
        "kept_min_head": 32,
        "kept_max_head": 512,
        "kind": kind,
        "kv_rows_share_median": 1.0 if storage == "as_shipped" else None,
    }


BYTES = pl.DataFrame(
    [
        _bytes_rec("snapkv", "layer_padded", "uniform", 1.0),
        _bytes_rec("pyramidkv", "layer_padded", "pyramid", 0.8),
        _bytes_rec("adakv", "layer_padded", "headwise", 1.5),
        _bytes_rec("contourkv_unenforced", "layer_padded", "contourkv", 40.0),
        _bytes_rec("contourkv_unenforced", "ragged", "contourkv", 1.0),
        _bytes_rec("snapkv", "ragged", "uniform", 1.0),
        _bytes_rec("adakv", "as_shipped", "headwise", 8.0),
        _bytes_rec("snapkv", "as_shipped", "uniform", 1.0),
        _bytes_rec("snapkv", "layer_padded", "uniform", 1.0, budget=64),
    ]
)


def test_unenforced_bytes_over_each_enforcing_method():
    got = {b: r["estimate"] for (c, v, b), r in _claims(table=BYTES).items() if v == "bytes_over_enforcing_methods"}
    # held as the shared pipeline holds it (layer-padded), over each uniform-allocation method's at the same s
    assert got == {
        "m,1024,128,contourkv_unenforced,pyramidkv,layer_padded": pytest.approx(50.0),
        "m,1024,128,contourkv_unenforced,snapkv,layer_padded": pytest.approx(40.0),
    }


def test_held_cache_share_carries_its_storage():
    got = _claims(table=BYTES)[(3, "held_cache_share", "m,1024,128,adakv,as_shipped")]
    assert (got["by_key"], got["estimate"]) == ("model,length,budget,method,storage", 1.0)


def _t5_rows(model, hits, changes, n=4, swapped=None) -> list[dict]:
    """Table 5's pooled rows of one model: hit rates of unmodified / doc_rows / doc_boundary, their changes (points)."""
    out = []
    for variant, hit, change in zip(("unmodified", "doc_rows", "doc_boundary"), hits, (0.0, *changes)):
        out.append(
            {
                "model": model,
                "method": "contourkv_enforced",
                "budget": "all",
                "variant": variant,
                "n_items": n,
                "hit_rate": hit,
                "hit_change_points": change,
                "hit_change_lo": None if variant == "unmodified" else change - 10,
                "hit_change_hi": None if variant == "unmodified" else change + 10,
                "n_conditions": None if variant == "unmodified" else 2,
                "memory_vs_doc_boundary": 1.0,
                "question_rows": 0.0 if variant == "doc_boundary" else 39.0,
                "question_rows_evicted": 5.0 if variant == "unmodified" else 0.0,
            }
        )
    if swapped is not None:
        out.append(
            {
                **out[0],
                "variant": "allocation_swapped",
                "hit_rate": swapped,
                "hit_change_points": 100 * (swapped - hits[0]),
                "hit_change_lo": -1.0,
                "hit_change_hi": 1.0,
            }
        )
    return out


T5 = pl.DataFrame(
    [
        *_t5_rows("a", (0.9, 0.1, 0.05), (-80.0, -85.0), swapped=0.9),  # a real decomposition
        *_t5_rows("b", (0.0, 0.0, 0.25), (0.0, 25.0)),  # the unmodified run finds nothing
        *_t5_rows("c", (1.0, 1.0, 1.0), (0.0, 0.0), swapped=1.0),  # every run finds everything
        *_t5_rows("d", (0.5, 0.5, 0.5), (0.0, 0.0)),  # nothing moves
    ]
)


def test_retrieval_margin_is_the_doc_boundary_change():
    got = _claims(t5=T5)
    margin = got[(5, "retrieval_margin_question_visible", "a")]
    assert (margin["estimate"], margin["low"], margin["high"], margin["uninformative"]) == (85.0, 75.0, 95.0, None)
    assert got[(5, "retrieval_margin_question_visible", "b")]["uninformative"] == (
        "the unmodified hit rate is 0 (unmodified 0 of 4): nothing to decompose"
    )
    assert got[(5, "retrieval_margin_question_visible", "c")]["uninformative"] == (
        "every hit rate is 100 (unmodified 4 of 4, doc_rows 4 of 4, doc_boundary 4 of 4): nothing to decompose"
    )
    assert got[(5, "retrieval_margin_question_visible", "d")]["uninformative"] is None


def test_question_rows_in_the_doc_rows_cache():
    got = _claims(t5=T5)
    assert got[(78, "question_rows", "a")]["estimate"] == 39.0
    assert got[(78, "question_rows", "a")]["by_key"] == "model"
    assert got[(78, "question_rows_evicted", "a")]["estimate"] == 0.0


def test_degenerate_hit_rates_make_rows_uninformative():
    got = _claims(t3=T3.with_columns(variant_hit=pl.lit(0.0), opponent_hit=pl.lit(0.0)), t4=T4, t5=T5)
    neither = (
        "contourkv_enforced and snapkv score 0 on every item (0 of 24 items in 8 conditions): the comparison "
        "measures the floor"
    )
    for value in ("advantage_vs_snapkv", "contourkv_hit_rate", "snapkv_hit_rate"):
        assert got[(73 if "hit" in value else 67, value, "retrieval,128")]["uninformative"] == neither
        assert got[(73 if "hit" in value else 67, value, "retrieval,64")]["uninformative"] is None
    assert got[(75, "wtl_vs_snapkv", "retrieval,128,tie")]["uninformative"] == neither
    assert got[(75, "n_conditions", "retrieval,128")]["uninformative"] is None  # a count of conditions stands
    assert got[(75, "bytes_over_snapkv", "retrieval,128")]["uninformative"] is None
    cost = got[(4, "enforcement_cost", "benchmark,contourkv_recon_enforced")]
    assert cost["estimate"] == -1.0 and cost["uninformative"].startswith(
        "contourkv_recon_enforced and contourkv_recon_unenforced score 0 on every item (0 of 48 items in 16 conditions)"
    )
    assert got[(6, "wins_vs_kvzip_enforced", "benchmark")]["uninformative"].startswith(
        "contourkv_recon_enforced and kvzip score 0 on every item"
    )
    # Table 5: the rows stay, flagged
    assert got[(76, "hit_rate_change", "c,doc_rows_ranking")]["uninformative"] == (
        "both hit rates are 100 (unmodified 4 of 4, doc_rows 4 of 4): no change can show"
    )
    assert got[(76, "allocation_hit_rate_change", "a,allocation_swapped")]["uninformative"] is None
    assert got[(76, "main_costs_difference", "a")]["estimate"] == 5.0
    assert got[(76, "main_costs_difference", "a")]["uninformative"] is None
    assert got[(76, "main_costs_difference", "d")]["uninformative"] == (
        "both hit-rate changes are 0 (doc_rows, doc_boundary): their difference is 0 by construction"
    )
    assert got[(78, "question_rows_evicted", "c")]["uninformative"].startswith("every hit rate is 100")
    assert got[(78, "question_rows_evicted", "d")]["uninformative"] is None


def test_every_row_carries_the_dimensions_its_value_filters_on(rows):
    table = pl.concat([bytes_rows(rows, pl.DataFrame()), BYTES], how="diagonal_relaxed")  # BYTES: an as_shipped row
    frame = headline(_stage(rows, table))
    assert rows_of(frame, 3, "held_cache_share").height and rows_of(frame, 120, "wtl_vs_snapkv").height
    assert_dimensions(frame)
