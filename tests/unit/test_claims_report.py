"""The claims report: structure, populations, the two answers, the summary and the key (verdicts
themselves: test_verdicts.py)."""

import polars as pl
import pytest

from trustmass.report.claims.data import load_claims, model_roles
from trustmass.report.claims.report import CLAIM_STATUSES, KEY, build, markdown
from trustmass.report.claims.verdicts import StudyModels
from trustmass.report.headline import HEADLINE_SCHEMA, headline_frame, row

ANALOGUE = StudyModels(roles={"reference": "m"}, role_definitions=model_roles())


def _entry(report, cid):
    return next(e for e in report["claims"] if e["id"] == cid)


def test_build_marks_unproduced_claims_and_counts_every_status():
    rows = [row(24, "median_c_hat", 0.03, "all", by={"model": "m", "budget": 8}, low=0.02, high=0.04, models="m")]
    report = build(
        load_claims(), headline_frame(rows), ANALOGUE, produced_stages={"INST", "STAT", "CAP"}, run_models=["m"]
    )
    assert len(report["claims"]) == 126 and set(report["counts"]) == set(CLAIM_STATUSES)
    assert sum(report["counts"].values()) == 126
    c24 = {v["name"]: v for v in _entry(report, 24)["values"]}["median_c_hat"]
    # claim 24's population is unstated: both populations are judged, and only "all" has a row
    assert c24["all"]["size"]["status"] == "agrees" and c24["primary"]["size"]["status"] == "not produced"
    assert c24["size"]["status"] == "agrees" and c24["analogue"] == "m for Qwen2.5-1.5B"
    assert _entry(report, 24)["status"] == "judged" and _entry(report, 24)["size"] == "agrees"
    assert _entry(report, 6)["status"] == "not produced"  # a deployment claim whose stage has not run
    assert "its stage (DEP) did not run" in _entry(report, 6)["values"][0]["all"]["direction"]["reason"]
    assert _entry(report, 7)["status"] == "qualitative"  # states no number
    assert report["summary"]["analogues"]["claims"] >= 1 and report["summary"]["analogues"]["size"]["agrees"] >= 1
    text = markdown(report)
    assert "| 24 |" in text and "0.021–0.047" in text and "analogue (m for Qwen2.5-1.5B)" in text
    assert (
        KEY in text and "| on analogues |" in text and "| on paper models |" in text and "| theory (no model) |" in text
    )
    assert report["summary"]["theory"]["claims"] == 0  # no theory claim was regenerated here


def test_a_claim_stated_on_the_primary_slice_is_judged_there_only():
    # claim 105 is stated on the primary slice: a disagreeing "all" row does not change its answer
    rows = [
        row(105, "top_mass_label_rate", 0.19, "primary", by={"model": "m", "budget": 8}, models="m"),
        row(105, "top_mass_label_rate", 0.60, "all", by={"model": "m", "budget": 8}, models="m"),
    ]
    report = build(load_claims(), headline_frame(rows), ANALOGUE, {"AUD"}, ["m"])
    value = _entry(report, 105)["values"][0]
    assert value["primary"]["judged"] and not value["all"]["judged"]
    assert value["all"]["size"]["status"] == "disagrees" and value["size"]["status"] == "agrees"


def test_populations_that_disagree_make_a_value_mixed():
    rows = [
        row(2, "median_c_hat", 0.03, "primary", by={"model": "m", "budget": 8}, models="m"),
        row(2, "median_c_hat", 0.09, "all", by={"model": "m", "budget": 8}, models="m"),
    ]
    report = build(load_claims(), headline_frame(rows), ANALOGUE, {"STAT"}, ["m"])
    assert _entry(report, 2)["size"] == "mixed"


def test_alternative_readings_are_shown_and_not_counted():
    rows = [
        row(19, "median_gap_change", 0.152, "primary", by={"budget": 32}, models="m"),  # relative: 15.2 %
        row(19, "median_gap_change_points", 0.008, "primary", by={"budget": 32}, models="m"),  # 0.8 points
    ]
    report = build(load_claims(), headline_frame(rows), ANALOGUE, {"CERT"}, ["m"])
    values = {v["name"]: v for v in _entry(report, 19)["values"]}
    assert (
        values["median_gap_change_points"]["size"]["status"] == "agrees"
        and values["median_gap_change_points"]["alternative"]
    )
    assert _entry(report, 19)["size"] == "disagrees"  # the reading used for the verdict
    assert "alternative reading, not counted" in markdown(report)


def test_configuration_set_values_show_what_the_configuration_implies():
    config = {
        "study": {"models": ["m"], "corpora": ["c"]},
        "models": {"m": {"declared": {"layers": 2, "heads": 3}, "roles": ["reference"]}},
        "capture": {"rows_per_head": 6},
        "budgets": {"enumerated": [4, 8]},
        "documents": {"n_docs": 3},
    }
    rows = [row(15, "n_instances", 216, "primary", models="m")]
    report = build(load_claims(), headline_frame(rows), ANALOGUE, {"CAP"}, ["m"], config)
    value = _entry(report, 15)["values"][0]
    assert value["status"] == "not comparable" and "set by the run's configuration" in value["size"]["reason"]
    assert "216" in value["size"]["reason"]
    assert _entry(report, 15)["status"] == "not comparable"


def test_the_note_says_whether_the_models_are_the_papers():
    empty = pl.DataFrame(schema=HEADLINE_SCHEMA)
    assert "not the paper's" in build(load_claims(), empty, ANALOGUE, set(), ["m"])["note"]
    arms = StudyModels(roles={"reference": "q"}, paper_arms=frozenset({"q"}), role_definitions=model_roles())
    assert "paper's own checkpoints" in build(load_claims(), empty, arms, set(), ["q"])["note"]


def test_missing_headline_columns_are_named():
    with pytest.raises(ValueError, match="lacks columns"):
        build(load_claims(), pl.DataFrame({"claim_id": [1]}), ANALOGUE, set(), ["m"])


def test_headline_rows_name_an_existing_claim_value():
    with pytest.raises(KeyError, match="no value"):
        row(24, "no_such_value", 0.1, "all")


def test_several_cells_show_their_interval_span():
    rows = [
        row(2, "median_c_hat", 0.03, "all", by={"model": "m", "budget": s}, low=0.02, high=0.04 + s / 1000, models="m")
        for s in (4, 8)
    ]
    text = markdown(build(load_claims(), headline_frame(rows), ANALOGUE, {"STAT"}, ["m"]))
    assert "(2 cells; intervals within [2%, 4.8%])" in text or "(2 cells; intervals within [2, 4.8]" in text
