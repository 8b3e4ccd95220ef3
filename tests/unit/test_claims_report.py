"""The claims report: structure, populations, the two answers, every claim answered as a whole, the summary
and the key (verdicts themselves: test_verdicts.py and test_decision_rule.py)."""

import polars as pl
import pytest

from trustmass.report.claims.data import load_claims, model_roles
from trustmass.report.claims.markdown import markdown
from trustmass.report.claims.report import CLAIM_STATUSES, KEY, build
from trustmass.report.claims.verdicts import StudyModels
from trustmass.report.headline import HEADLINE_SCHEMA, headline_frame, row

ANALOGUE = StudyModels(roles={"reference": "m"}, role_definitions=model_roles())


def _entry(report, cid):
    return next(e for e in report["claims"] if e["id"] == cid)


def test_build_marks_unproduced_claims_and_counts_every_status():
    rows = [row(24, "median_c_hat", 0.03, "all", by={"model": "m", "budget": 8}, low=0.025, high=0.04, models="m")]
    report = build(
        load_claims(), headline_frame(rows), ANALOGUE, produced_stages={"INST", "STAT", "CAP"}, run_models=["m"]
    )
    assert len(report["claims"]) == 126 and set(report["counts"]) == set(CLAIM_STATUSES)
    assert sum(report["counts"].values()) == 126
    c24 = {v["name"]: v for v in _entry(report, 24)["values"]}["median_c_hat"]
    # claim 24's population is unstated: both populations are judged, and only "all" has a row
    assert c24["all"]["size"]["status"] == "agrees" and c24["primary"]["size"]["status"] == "not produced"
    assert c24["size"]["status"] == "agrees" and c24["analogue"] == "m for Qwen2.5-1.5B"
    entry = _entry(report, 24)
    assert entry["status"] == "answered" and entry["size"]["status"] == "partial"
    assert entry["size"]["answered"] == 1 and entry["size"]["values"] == 2 and entry["size"]["apart"] == 1
    assert _entry(report, 6)["status"] == "not produced"  # a deployment claim whose stage has not run
    assert "its stage (DEP) did not run" in _entry(report, 6)["values"][0]["all"]["direction"]["reason"]
    assert _entry(report, 7)["status"] == "qualitative"  # states no number
    assert 24 in report["summary"]["analogues"]["claims"] and 24 in report["summary"]["analogues"]["size"]["partial"]
    text = markdown(report)
    assert "| 24 |" in text and "0.021–0.047" in text and "m plays Qwen2.5-1.5B (reference)" in text
    assert KEY in text and "| analogues |" in text and "| the theory (no model) |" in text
    assert report["summary"]["theory"]["claims"] == []  # no theory claim was regenerated here


def test_a_claim_agrees_only_when_every_value_is_answered_and_agrees():
    """Claim 13 states two values; one answered and agreeing is partial, both agreeing agree, one
    contradicting contradicts (issue 36, item 2)."""

    def claim13(*rows):
        return _entry(build(load_claims(), headline_frame(list(rows)), ANALOGUE, {"INST"}, ["m"]), 13)

    at = {"group_size": 3, "budget": 8}
    degraded = row(13, "vote_degraded_share", 0.80, "all", by=at, models="m")
    improved = row(13, "vote_improved_share", 0.08, "all", by=at, models="m")
    far = row(13, "vote_improved_share", 0.50, "all", by=at, models="m")
    one = claim13(degraded)
    assert one["size"]["status"] == "partial" and (one["size"]["answered"], one["size"]["values"]) == (1, 2)
    assert claim13(degraded, improved)["size"]["status"] == "agrees"
    assert claim13(degraded, far)["size"]["status"] == "contradicted"
    assert claim13(degraded, far)["size"]["decisive"] == ["vote_improved_share"]


def test_one_order_of_reasons_for_values_and_claims():
    """A claim whose result is not produced reads 'not produced', not the 'not comparable' of its setting
    (the default's claim 100 read 'not comparable' though its Kendall tau was not produced)."""
    report = build(load_claims(), pl.DataFrame(schema=HEADLINE_SCHEMA), ANALOGUE, {"STAT"}, ["m"])
    assert _entry(report, 100)["status"] == "not produced"


def test_a_claim_stated_on_the_primary_slice_is_judged_there_only():
    # claim 105 is stated on the primary slice: a disagreeing "all" row does not change its answer
    rows = [
        row(105, "top_mass_label_rate", 0.19, "primary", by={"model": "m", "budget": 8}, models="m"),
        row(105, "top_mass_label_rate", 0.60, "all", by={"model": "m", "budget": 8}, models="m"),
    ]
    report = build(load_claims(), headline_frame(rows), ANALOGUE, {"AUD"}, ["m"])
    value = _entry(report, 105)["values"][0]
    assert value["primary"]["judged"] and not value["all"]["judged"]
    assert value["all"]["size"]["status"] == "contradicted" and value["size"]["status"] == "agrees"


def test_populations_that_disagree_make_a_value_contradicted():
    rows = [
        row(2, "median_c_hat", 0.03, "primary", by={"model": "m", "budget": 8}, models="m"),
        row(2, "median_c_hat", 0.09, "all", by={"model": "m", "budget": 8}, models="m"),
    ]
    report = build(load_claims(), headline_frame(rows), ANALOGUE, {"STAT"}, ["m"])
    assert _entry(report, 2)["size"]["status"] == "contradicted"


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
    assert _entry(report, 19)["size"]["status"] == "contradicted"  # the reading used for the verdict
    assert "an alternative reading: shown, not counted" in markdown(report)


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


def test_the_report_shows_judged_cells_and_folds_the_rest():
    rows = [
        row(2, "median_c_hat", 0.03, "all", by={"model": "m", "budget": s}, low=0.02, high=0.04 + s / 1000, models="m")
        for s in (4, 8)
    ]
    text = markdown(build(load_claims(), headline_frame(rows), ANALOGUE, {"STAT"}, ["m"]))
    assert "| all | model=m, budget=4 | 3% [2, 4.4] |" in text
    # claim 105 is judged on the primary slice: its "all" row sits behind the fold
    rows = [
        row(105, "top_mass_label_rate", 0.19, "primary", by={"model": "m", "budget": 8}, models="m"),
        row(105, "top_mass_label_rate", 0.60, "all", by={"model": "m", "budget": 8}, models="m"),
    ]
    text = markdown(build(load_claims(), headline_frame(rows), ANALOGUE, {"AUD"}, ["m"]))
    section = text[text.index("### 105.") :]
    section = section[: section.index("### 106.")]
    judged, folded = section.split("<details>")
    assert "| primary | model=m, budget=8 | 19% |" in judged and "60%" not in judged
    assert "| all | model=m, budget=8 | 60% |" in folded


def test_reasons_are_printed_whole():
    reason = "x" * 400
    rows = [
        row(
            76,
            "hit_rate_change",
            0.0,
            "all",
            by={"model": "m", "variant": "doc_rows_ranking"},
            models="m",
            uninformative=reason,
        )
    ]
    text = markdown(build(load_claims(), headline_frame(rows), ANALOGUE, {"RETR"}, ["m"]))
    assert reason in text


def test_a_value_read_on_a_kind_of_text_the_run_does_not_read_says_so():
    """Claim 41's median kappa is read on code: a run (or a control arm, controls.corpora: headline) whose corpora
    hold no code says that, not that its stage emitted nothing."""
    corpora = {"austen": {"content": "prose"}, "stdlib": {"content": "code"}}

    def reason(study_corpora):
        config = {"corpora": corpora, "study": {"corpora": study_corpora}}
        report = build(load_claims(), headline_frame([]), ANALOGUE, {"CAP", "INST", "STAT"}, ["m"], config)
        value = {v["name"]: v for v in _entry(report, 41)["values"]}["median_kappa_hat_code"]
        return value["primary"]["size"]["reason"]

    assert reason(["austen"]) == "this run reads no code corpus (study.corpora; in a control arm, controls.corpora)"
    assert reason(["austen", "stdlib"]) == "CAP/INST/STAT ran but emitted no row for it"
