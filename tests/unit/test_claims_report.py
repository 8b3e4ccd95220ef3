"""The claims report: structure, populations, statuses and the analogue notes (verdicts themselves:
test_verdicts.py)."""

import polars as pl
import pytest

from trustmass.report.claims.data import load_claims, model_roles
from trustmass.report.claims.report import build, markdown
from trustmass.report.claims.verdicts import STATUSES, StudyModels
from trustmass.report.headline import HEADLINE_SCHEMA, headline_frame, row

ANALOGUE = StudyModels(roles={"reference": "m"}, role_definitions=model_roles())


def test_build_marks_unproduced_claims_and_counts_every_status():
    rows = [row(24, "median_c_hat", 0.03, "all", by={"model": "m", "budget": 8}, low=0.02, high=0.04, models="m")]
    report = build(load_claims(), headline_frame(rows), ANALOGUE, produced_stages={"INST", "STAT", "CAP"}, run_models=["m"])
    entries = {e["id"]: e for e in report["claims"]}
    assert len(entries) == 126 and set(report["counts"]) == set(STATUSES)
    assert sum(report["counts"].values()) == 126
    c24 = {v["name"]: v for v in entries[24]["values"]}["median_c_hat"]
    # claim 24's population is unstated: both populations are judged, and only "all" has a row
    assert c24["all"]["status"] == "consistent" and c24["primary"]["status"] == "not produced yet"
    assert c24["status"] == "consistent" and c24["analogue"] == "m for Qwen2.5-1.5B"
    assert entries[6]["status"] == "not produced yet"  # a deployment claim
    assert "its stage has not run" in entries[6]["values"][0]["all"]["reason"]
    assert entries[7]["status"] == "qualitative"  # states no number
    text = markdown(report)
    assert "| 24 |" in text and "0.021–0.047" in text and "analogue (m for Qwen2.5-1.5B)" in text
    for status in STATUSES:  # the legend lists every verdict
        assert f"| {status} |" in text


def test_a_claim_stated_on_the_primary_slice_is_judged_there_only():
    # claim 105 is stated on the primary slice: an inconsistent "all" row does not change its verdict
    rows = [
        row(105, "top_mass_label_rate", 0.19, "primary", by={"model": "m", "budget": 8}, models="m"),
        row(105, "top_mass_label_rate", 0.60, "all", by={"model": "m", "budget": 8}, models="m"),
    ]
    report = build(load_claims(), headline_frame(rows), ANALOGUE, {"AUD"}, ["m"])
    value = next(e for e in report["claims"] if e["id"] == 105)["values"][0]
    assert value["primary"]["judged"] and not value["all"]["judged"]
    assert value["all"]["status"] == "inconsistent" and value["status"] == "consistent"


def test_populations_that_disagree_make_a_value_mixed():
    rows = [
        row(2, "median_c_hat", 0.03, "primary", by={"model": "m", "budget": 8}, models="m"),
        row(2, "median_c_hat", 0.09, "all", by={"model": "m", "budget": 8}, models="m"),
    ]
    report = build(load_claims(), headline_frame(rows), ANALOGUE, {"STAT"}, ["m"])
    assert next(e for e in report["claims"] if e["id"] == 2)["status"] == "mixed"


def test_the_note_says_whether_the_models_are_the_papers():
    empty = pl.DataFrame(schema=HEADLINE_SCHEMA)
    assert "not the paper's" in build(load_claims(), empty, ANALOGUE, set(), ["m"])["note"]
    arms = StudyModels(roles={"reference": "q"}, paper_arms=frozenset({"q"}), role_definitions=model_roles())
    assert "paper's own checkpoints" in build(load_claims(), empty, arms, set(), ["q"])["note"]


def test_missing_headline_columns_are_named():
    with pytest.raises(ValueError, match="lacks columns"):
        build(load_claims(), pl.DataFrame({"claim_id": [1]}), ANALOGUE, set())


def test_headline_rows_name_an_existing_claim_value():
    with pytest.raises(KeyError, match="has no value"):
        row(24, "no_such_value", 0.1, "all")
