"""The deployment statistics on rows built by hand: W/T/L, hit rates, dense-valid gating, Table 5, bytes, claims."""

import polars as pl
import pytest

from trustmass.report.engine import StatisticsSettings
from trustmass.report.frames.deploy import (
    bytes_rows, decomposition_table, headline, main_rows, table3, table4, timing_table,
)  # fmt: skip

CELLS, ROW_BYTES, N = 6, 512, 1000  # (layer, KV head) cells, bytes per kept K+V row, cached tokens
DENSE = [100, 100, 100, 0]  # item 3: the dense model misses it, so it counts nowhere
#: (variant, budget) -> method -> per-item scores
SCORES = {
    ("unmodified", 128): {"snapkv": [0, 0, 0, 100], "snapkv_w32": [100, 0, 0, 0],
                          "contourkv_enforced": [100, 100, 0, 100], "kvzip": [100, 0, 0, 0],
                          "contourkv_recon_enforced": [0, 0, 0, 0], "contourkv_recon_unenforced": [100, 100, 0, 0],
                          "contourkv_unenforced": [100, 100, 100, 0], "compactor": [100, 100, 0, 0]},
    ("unmodified", 64): {"snapkv": [0, 0, 0, 0], "snapkv_w32": [0, 0, 0, 0],
                         "contourkv_enforced": [0, 0, 0, 100], "kvzip": [0, 0, 0, 0],
                         "contourkv_recon_enforced": [0, 0, 0, 0], "contourkv_recon_unenforced": [0, 0, 0, 0],
                         "contourkv_unenforced": [0, 0, 0, 0], "compactor": [0, 0, 0, 0]},
    ("doc_rows", 128): {"contourkv_enforced": [0, 0, 0, 0]},
    ("doc_rows", 64): {"contourkv_enforced": [0, 0, 0, 0]},
    ("doc_boundary", 128): {"contourkv_enforced": [100, 0, 0, 0]},
    ("doc_boundary", 64): {"contourkv_enforced": [0, 0, 0, 0]},
}  # fmt: skip
KIND = {"snapkv": "uniform", "snapkv_w32": "uniform", "compactor": "uniform", "kvzip": "kvzip", "dense": "dense"}
#: kept entries per cell over s: enforced ContourKV holds 0.9 of SnapKV's rows, unenforced pads to 4 s per layer
KEPT = {"contourkv_enforced": 0.9, "contourkv_recon_enforced": 0.8}


def _row(variant, budget, method, item, score):
    kept = CELLS * N if method == "dense" else int(CELLS * budget * KEPT.get(method, 1.0))
    padded = CELLS * budget * 4 if method.endswith("unenforced") else kept
    cached = N - 20 if variant == "doc_boundary" else N
    return {
        "model": "m", "task": "niah_single", "length": 1024, "budget": budget, "item_id": f"i{item}", "method": method,
        "kind": KIND.get(method, "contourkv"), "variant": variant, "query_aware": True, "score": float(score),
        "dense_valid": DENSE[item] == 100, "kept_entries": kept, "kept_min_head": kept // CELLS,
        "kept_max_head": budget * 4 if method.endswith("unenforced") else kept // CELLS,
        "bytes_ragged": kept * ROW_BYTES, "bytes_layer_padded": padded * ROW_BYTES, "bytes_full": CELLS * cached * ROW_BYTES,
        "frac_full": kept / (CELLS * cached), "n_cached": cached, "question_in_cache": 0 if variant == "doc_boundary" else 20,
        "question_kept_mean": 0.0 if variant == "doc_boundary" else (20.0 if variant == "doc_rows" else 15.0),
        "block_tokens": 21 if variant == "doc_boundary" else 1, "prefill_s": 1.0, "score_s": 0.1, "decode_s": 0.5,
    }  # fmt: skip


@pytest.fixture(scope="module")
def rows():
    out = []
    for (variant, budget), methods in SCORES.items():
        if variant == "unmodified":
            methods = {"dense": DENSE, **methods}
        for method, scores in methods.items():
            out += [_row(variant, budget, method, i, s) for i, s in enumerate(scores)]
    return pl.DataFrame(out)


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
    assert got[("128", "doc_rows")]["question_rows_evicted"] == 0 and got[("128", "unmodified")]["question_rows_evicted"] == 5
    # memory at the first answer token: kept rows per cell + the block (1 token, or the 21-token question)
    kept = 128 * 0.9
    assert got[("128", "unmodified")]["memory_vs_doc_boundary"] == pytest.approx((int(6 * kept) / 6 + 1) / (int(6 * kept) / 6 + 21))


def test_bytes_and_timing(rows):
    table = bytes_rows(rows, pl.DataFrame())
    by = {(r["method"], r["storage"], r["budget"]): r for r in table.iter_rows(named=True)}
    assert by[("contourkv_enforced", "ragged", 128)]["ratio_to_snapkv_median"] == pytest.approx(int(6 * 128 * 0.9) / (6 * 128))
    assert by[("contourkv_unenforced", "layer_padded", 128)]["ratio_to_snapkv_median"] == pytest.approx(4.0)
    assert by[("snapkv", "ragged", 64)]["kind"] == "uniform"
    timing = timing_table(rows, pl.DataFrame())
    assert set(timing["method"].to_list()) >= {"dense", "snapkv"} and timing["decode_s"].to_list()[0] == 0.5


def test_headline_values(rows):
    t3, t4, t5 = table3(rows, SETTINGS), table4(rows, SETTINGS), decomposition_table(rows, SETTINGS)
    table, timing = bytes_rows(rows, pl.DataFrame()), timing_table(rows, pl.DataFrame())
    frame = headline(rows, t3, t4, t5, table, timing, SETTINGS)
    got = {(r["claim_id"], r["value_name"], r["by_value"]): r["estimate"] for r in frame.iter_rows(named=True)}
    assert got[(67, "advantage_vs_snapkv", "128")] == pytest.approx(200 / 3)
    assert got[(73, "contourkv_hit_rate", "128")] == pytest.approx(2 / 3)
    assert got[(75, "bytes_over_snapkv", "128")] == pytest.approx(0.9, abs=0.01)
    assert got[(76, "hit_rate_change", "m,doc_rows_ranking")] == pytest.approx(-100 / 3)
    assert got[(5, "retrieval_margin_question_visible", "m")] == pytest.approx(100 / 3)
    assert got[(76, "hit_rate_change", "m,allocation_swapped")] == pytest.approx(-50 / 3)
    assert got[(60, "contourkv_bytes_over_snapkv_enforced", "m,1024,128,contourkv_enforced")] == pytest.approx(0.9, abs=0.01)
    assert got[(114, "overkeep_over_nominal", "m,1024,64,contourkv_unenforced")] == 4.0
    assert frame["models"].unique().to_list() == ["m"]
