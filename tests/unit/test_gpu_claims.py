"""The hardware claims (40, 102, 103, 115) from a committed GPU check: rows only for a measurement on a GPU,
named by the GPU, judged as analogues; none from a CPU or dry-run file."""

import polars as pl
import pytest
from unit.declared_frames import assert_columns_exist, assert_in_domain

from trustmass.plumbing.errors import CleanError
from trustmass.report.claims.axes import AGREES, CONTRADICTED
from trustmass.report.claims.data import load_claims, model_roles
from trustmass.report.claims.report import build
from trustmass.report.claims.verdicts import StudyModels
from trustmass.report.frames.gpu import HEADLINE, claim_frames, headline

CHECK = {
    "mode": "gpu",
    "device": {"name": "NVIDIA H200"},
    "claims": {
        "40": {
            "status": "ok",
            "n_keys": [2048, 16384],
            "dropped_mass_cost_over_dense_layer": [0.004, 0.02],
            "dropped_mass_time_per_layer_ms": 0.11,
            "dropped_mass_time_per_layer_n_keys": 16384,
        },
        "102": {"status": "ok", "n_keys": 4096, "swap_round_cost_share_percent": 2.1},
        "103": {
            "status": "ok",
            "shapes": [{"n_keys": 4096}],
            "prefill_mask_cost_over_dense": [50.0],
            "mu_cost_over_dense": [0.4],
        },
        "115": {"status": "error", "error": "out of memory"},
    },
}


def test_a_measured_check_gives_one_row_per_timing_named_by_its_gpu():
    frame = headline(CHECK)
    got = {(r["claim_id"], r["value_name"], r["by_value"]): r["estimate"] for r in frame.iter_rows(named=True)}
    gpu = "cuda (NVIDIA H200)"  # the device a timing claim is judged on
    assert got == {
        (40, "dropped_mass_cost_over_dense_layer", f"2048,{gpu}"): 0.004,
        (40, "dropped_mass_cost_over_dense_layer", f"16384,{gpu}"): 0.02,
        (40, "dropped_mass_time_per_layer", f"16384,{gpu}"): 0.11,
        (102, "swap_round_cost_share", f"4096,{gpu}"): pytest.approx(0.021),
        (103, "prefill_mask_cost_over_dense", f"4096,{gpu}"): 50.0,
        (103, "mu_cost_over_dense", f"4096,{gpu}"): 0.4,
    }
    assert set(frame["models"]) == {"NVIDIA H200"}  # claim 115's section failed: no row, the value stays unproduced


@pytest.mark.parametrize("mode", ["cpu", "dry-run", None])
def test_a_check_not_run_on_a_gpu_gives_no_row(mode):
    assert headline({**CHECK, "mode": mode}).height == 0


def test_the_claims_report_judges_them_as_analogues_on_the_gpu():
    """A timing is judged on both populations (population not_applicable): one row per population, so neither
    reads 'not produced' beside the other's answer."""
    report = build(load_claims(), headline(CHECK), StudyModels(role_definitions=model_roles()), {"TIME"}, ["m"])
    c40 = {v["name"]: v for v in next(c for c in report["claims"] if c["id"] == 40)["values"]}
    assert c40["dropped_mass_cost_over_dense_layer"]["size"]["status"] == AGREES  # 0.004-0.02 inside 0.002-0.03
    assert c40["dropped_mass_cost_over_dense_layer"]["analogue"] == "NVIDIA H200"
    assert c40["dropped_mass_time_per_layer"]["size"]["status"] == CONTRADICTED  # 0.11 vs 0.12 +- 0.005
    c102 = next(c for c in report["claims"] if c["id"] == 102)["values"][1]
    assert c102["size"]["status"] == AGREES and c102["analogue"] == "NVIDIA H200"  # 2.1 % is "about 2 %"


def test_a_timing_sits_on_both_populations():
    frame = headline(CHECK)
    for population in ("primary", "all"):
        assert frame.filter(pl.col("population") == population).height == 6, population


def test_a_timing_without_its_key_count_is_an_error_naming_the_fix():
    broken = {**CHECK, "claims": {**CHECK["claims"], "103": {**CHECK["claims"]["103"], "shapes": []}}}
    with pytest.raises(CleanError, match=r"claims\.103\.prefill_mask_cost_over_dense .*fix: rerun make gpu-check"):
        headline(broken)


def test_the_declarations_read_columns_of_the_timings_frame_and_stay_in_their_domains():
    measured = [spec for spec in HEADLINE if spec.claim != 115]  # claim 115's section failed in CHECK
    frames = claim_frames(CHECK)
    assert_columns_exist(measured, frames)
    assert assert_in_domain(HEADLINE, frames) == 12
