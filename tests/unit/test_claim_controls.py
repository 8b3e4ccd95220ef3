"""Sanity checks (issue 37): every claim read on the control arms (randomised weights, shuffled text), each arm a
claims report built by the same builder; the verdicts specific / structural / contradicted / none, per axis and
per claim, the counts by claim id, the Markdown section.  Every verdict is reached from built reports whose rows
decide it, and each test moves a row to show the verdict changes with it."""

import copy
import json
from pathlib import Path

import polars as pl
import pytest

from trustmass.report.claims.controls import (
    CONTROL_ARMS,
    CONTROLS_NOT_RUN,
    NOT_RUN,
    REGIME_COLUMNS,
    SPECIFIC,
    STRUCTURAL,
    attach_controls,
    claim_answer,
)
from trustmass.report.claims.data import load_claims, model_roles
from trustmass.report.claims.markdown import markdown
from trustmass.report.claims.report import build
from trustmass.report.claims.verdicts import StudyModels
from trustmass.report.headline import headline_frame, row

ANALOGUE = StudyModels(roles={"reference": "m"}, role_definitions=model_roles())
RAND, SHUF = CONTROL_ARMS
REPO = Path(__file__).resolve().parents[2]
AT13 = {"group_size": 3, "budget": 8}


def _report(*rows) -> dict:
    return build(load_claims(), headline_frame(list(rows)), ANALOGUE, {"INST", "STAT", "CERT"}, ["m"])


def c2(estimate, low=None, high=None):
    """Claim 2 (a size only: the median c_hat in 2-5 %)."""
    return row(2, "median_c_hat", estimate, "all", by={"model": "m", "budget": 8}, low=low, high=high, models="m")


def c13(degraded, improved=None):
    """Claim 13 (degraded share in 76-90 %, above the improved share in 7-10 %: a direction and a size)."""
    rows = [row(13, "vote_degraded_share", degraded, "all", by=AT13, models="m")]
    return rows + (
        [row(13, "vote_improved_share", improved, "all", by=AT13, models="m")] if improved is not None else []
    )


def c20(*rates):
    """Claim 20 (a rising label rate: the direction by construction, the size 35.6/37.8/38.7 %)."""
    return [
        row(20, "label_rate", r, "primary", by={"budget": 32, "pool_extra": e}, models="m")
        for e, r in zip((4, 5, 6), rates)
    ]


AGREE2, FAR2, WIDE2 = c2(0.03), c2(0.09), c2(0.03, 0.01, 0.09)  # agrees, contradicted, cannot decide


def _controls(report, cid):
    return next(e for e in report["claims"] if e["id"] == cid)["controls"]


def _checked(trained_rows, rand_rows=None, shuf_rows=None, regime=None):
    arms = {}
    if rand_rows is not None:
        arms[RAND] = _report(*rand_rows)
    if shuf_rows is not None:
        arms[SHUF] = _report(*shuf_rows)
    return attach_controls(_report(*trained_rows), arms, regime)


def test_agreeing_on_no_control_is_specific_and_agreeing_on_one_is_structural():
    specific = _checked([AGREE2], [FAR2], [WIDE2])
    c = _controls(specific, 2)
    assert c["verdict"] == SPECIFIC and c["size"]["verdict"] == SPECIFIC and c["direction"] is None
    # the readings are kept: one control contradicts it, the other cannot decide
    assert c["arms"][RAND]["size"]["status"] == "contradicted" and c["arms"][SHUF]["size"]["status"] == "uninformative"
    assert specific["controls"]["counts"]["claims"]["specific, contradicted on"] == {RAND: [2], SHUF: []}
    # the same trained report; one control now agrees
    c = _controls(_checked([AGREE2], [AGREE2], [WIDE2]), 2)
    assert c["verdict"] == STRUCTURAL and c["agrees_on"] == [RAND]


@pytest.mark.parametrize("arm", CONTROL_ARMS)
def test_either_control_makes_a_claim_structural(arm):
    rows = {RAND: [FAR2], SHUF: [FAR2]} | {arm: [AGREE2]}
    report = _checked([AGREE2], rows[RAND], rows[SHUF])
    counts = report["controls"]["counts"]
    assert _controls(report, 2)["verdict"] == STRUCTURAL
    assert 2 in counts["claims"]["structural"] and 2 in counts["size"]["structural"]
    assert {a: 2 in ids for a, ids in counts["claims"]["structural via"].items()} == {
        RAND: arm == RAND,
        SHUF: arm == SHUF,
        "by construction": False,
    }


def test_contradicted_on_the_trained_models_whatever_the_controls():
    c = _controls(_checked([FAR2], [AGREE2], [AGREE2]), 2)
    assert c["verdict"] == "contradicted" and c["size"]["verdict"] == "contradicted" and c["agrees_on"] == []
    assert c["arms"][RAND]["answer"] == "agrees"  # read, and recorded
    assert _controls(_checked([AGREE2], [AGREE2], [AGREE2]), 2)["verdict"] == STRUCTURAL


def test_axes_are_judged_apart_and_the_claim_is_structural_when_an_agreeing_axis_is():
    """Claim 13: the direction agrees on randomised weights (0.50 above 0.30), the size does not."""
    report = _checked(c13(0.80, 0.08), c13(0.50, 0.30), c13(0.05, 0.50))
    c = _controls(report, 13)
    assert (c["direction"]["verdict"], c["size"]["verdict"], c["verdict"]) == (STRUCTURAL, SPECIFIC, STRUCTURAL)
    assert c["arms"][SHUF]["direction"]["status"] == "contradicted"
    counts = report["controls"]["counts"]
    assert 13 in counts["direction"]["structural via"][RAND] and 13 in counts["size"]["specific, contradicted on"][RAND]
    # no control reproduces either axis: specific on both, and as a claim
    c = _controls(_checked(c13(0.80, 0.08), c13(0.05, 0.50), c13(0.05, 0.50)), 13)
    assert (c["direction"]["verdict"], c["size"]["verdict"], c["verdict"]) == (SPECIFIC, SPECIFIC, SPECIFIC)
    # a size contradicted on the trained models makes the claim contradicted; its direction keeps its own verdict
    c = _controls(_checked(c13(0.50, 0.30), c13(0.50, 0.30), []), 13)
    assert (c["direction"]["verdict"], c["size"]["verdict"], c["verdict"]) == (
        STRUCTURAL,
        "contradicted",
        "contradicted",
    )


def test_a_control_that_is_only_partial_makes_nothing_structural():
    """Claim 13 on a control with the degraded share alone: its size is partial (1 of 2 values), not agrees."""
    trained = c13(0.80, 0.08)
    report = _checked(trained, c13(0.80), c13(0.50, 0.30))
    c = _controls(report, 13)
    assert c["arms"][RAND]["size"]["status"] == "partial" and c["size"]["verdict"] == SPECIFIC
    assert _controls(_checked(trained, c13(0.80, 0.08), []), 13)["size"]["verdict"] == STRUCTURAL


def test_partial_on_the_trained_models_has_no_verdict():
    """Claim 13 trained with the degraded share alone is partial: no verdict, whatever the controls."""
    report = _checked(c13(0.80), c13(0.80, 0.08), c13(0.80, 0.08))
    c = _controls(report, 13)
    assert c["trained"] == "partial" and c["verdict"] is None and c["reason"] == "partial"
    assert c["size"]["verdict"] is None and c["size"]["reason"] == "partial"
    assert c["arms"][RAND]["answer"] == "agrees"  # recorded
    assert 13 in report["controls"]["counts"]["claims"]["no verdict"]["partial"]


def test_by_construction_is_structural():
    """Claim 20's direction cannot fail (a wider pool only raises the label rate): structural on that axis
    whatever the controls; the claim follows its size, the direction set apart."""
    trained = c20(0.356, 0.378, 0.387)
    report = _checked(trained, c20(0.156, 0.178, 0.187), c20(0.156, 0.178, 0.187))
    c = _controls(report, 20)
    assert c["direction"]["trained"] == "by construction" and c["direction"]["verdict"] == STRUCTURAL
    assert (c["size"]["verdict"], c["verdict"]) == (SPECIFIC, SPECIFIC)
    assert 20 in report["controls"]["counts"]["direction"]["structural via"]["by construction"]
    assert _controls(_checked(trained, trained, []), 20)["verdict"] == STRUCTURAL
    # a claim whose every axis is by construction or set by the configuration is by construction: structural
    edited = copy.deepcopy(_report(*trained))
    entry = next(e for e in edited["claims"] if e["id"] == 20)
    entry["size"] = {**entry["size"], "status": "not comparable"}
    assert claim_answer(entry) == "by construction"
    out = attach_controls(edited, {RAND: _report(*c20(0.156, 0.178, 0.187))}, None)
    assert _controls(out, 20)["verdict"] == STRUCTURAL
    assert 20 in out["controls"]["counts"]["claims"]["structural via"]["by construction"]
    entry["direction"] = {**entry["direction"], "status": "not comparable"}  # neither: no verdict
    assert _controls(attach_controls(edited, {RAND: _report()}, None), 20)["verdict"] is None


def test_a_missing_arm_reads_not_run_and_makes_nothing_specific():
    one = _checked([AGREE2], [FAR2])
    c = _controls(one, 2)
    assert c["arms"][SHUF]["answer"] == NOT_RUN and c["arms"][SHUF]["size"] is None
    # specific says the claim fails on every control: one that gave no reading leaves it open
    assert (c["verdict"], c["reason"], c["size"]["reason"]) == (None, CONTROLS_NOT_RUN, CONTROLS_NOT_RUN)
    assert 2 in one["controls"]["counts"]["claims"]["no verdict"][CONTROLS_NOT_RUN]
    assert _controls(_checked([AGREE2], [FAR2], [WIDE2]), 2)["verdict"] == SPECIFIC
    assert one["controls"]["arms"][SHUF] == {"run": False, "models": None}
    assert one["controls"]["arms"][RAND] == {"run": True, "models": ["m"]}
    # an arm that is not run reads as an arm that answers nothing
    both = _checked([AGREE2], [FAR2], [])
    assert one["controls"]["counts"] == both["controls"]["counts"]
    assert _controls(_checked([AGREE2], [AGREE2]), 2)["verdict"] == STRUCTURAL


def test_no_arms_leave_the_report_as_it_was():
    trained = _report(AGREE2, *c13(0.80, 0.08))
    before = copy.deepcopy(trained)
    out = attach_controls(trained, {}, None)
    assert out == {**before, "controls": None} and trained == before
    assert markdown(out) == markdown(before) and "Sanity checks" not in markdown(out)
    for ref in ("default", "cpu-panel"):  # the built references render exactly as saved
        results = REPO / "reference" / ref / "results"
        report = json.loads((results / "claims.json").read_text(encoding="utf-8"))
        saved = (results / "claims.md").read_text(encoding="utf-8")
        if report.get("controls"):  # saved with the controls: their section is in it, and only there
            assert markdown(report) == saved and "Sanity checks" in saved
            assert "Sanity checks" not in markdown({**report, "controls": None})
        else:  # saved before the controls: no arms leave it as it was
            assert markdown(attach_controls(report, {}, None)) == saved


def test_counts_list_claim_ids_under_each_verdict():
    trained = [AGREE2, *c13(0.80, 0.08), *c20(0.356, 0.378, 0.387)]
    rand = [FAR2, *c13(0.50, 0.30), *c20(0.356, 0.378, 0.387)]
    report = _checked(trained, rand, [WIDE2, *c13(0.50, 0.30)])
    counts = report["controls"]["counts"]
    verdicts = {e["id"]: e["controls"]["verdict"] for e in report["claims"]}
    for verdict in (SPECIFIC, STRUCTURAL, "contradicted"):
        assert counts["claims"][verdict] == [i for i, v in verdicts.items() if v == verdict]
    assert counts["claims"][SPECIFIC] == [2] and counts["claims"][STRUCTURAL] == [13, 20]
    assert counts["claims"]["structural via"][RAND] == [13, 20]
    assert counts["size"][SPECIFIC] == [2, 13] and counts["size"][STRUCTURAL] == [20]
    none = counts["claims"]["no verdict"]
    assert sorted(i for ids in none.values() for i in ids) == sorted(i for i, v in verdicts.items() if v is None)
    assert none["qualitative"] == [7, 39, 68, 74] and 1 in none["not comparable"]
    assert sum(len(counts["claims"][v]) for v in (SPECIFIC, STRUCTURAL, "contradicted")) + sum(
        map(len, none.values())
    ) == len(report["claims"])
    json.dumps(report)  # serialisable as it is written


def test_the_markdown_shows_the_section_the_regime_and_every_claims_readings():
    regime = pl.DataFrame(
        {
            "arm": [RAND, "trained", SHUF],
            "model": ["m-rand", "m", "m"],
            "corpus": ["c", "c", "c"],
            "n_rows": [768, 768, 768],
            "entropy": [0.66, 0.43, 0.51],
            "max_weight": [0.19, 0.42, 0.34],
            "token0_weight": [0.003, 0.29, float("nan")],
        }
    )
    report = _checked([AGREE2, *c13(0.80, 0.08)], [FAR2, *c13(0.50, 0.30)], [WIDE2, *c13(0.50, 0.30)], regime)
    assert [r["arm"] for r in report["controls"]["regime"]] == ["trained", RAND, SHUF]
    assert report["controls"]["regime"][2]["token0_weight"] is None
    text = markdown(report)
    assert text.index("## What reproduced") < text.index("## Sanity checks") < text.index("## The key")
    section = text[text.index("## Sanity checks") : text.index("## The key")]
    assert "| specific | 1: 2 | 0: none | 2: 2, 13 |" in section
    assert f"| — via {RAND} | 1: 13 | 1: 13 | 0: none |" in section
    assert f"| — contradicted on {SHUF} | 0: none | 0: none | 1: 13 |" in section
    assert "| randomised_weights | m-rand | c | 768 | 0.66 | 0.19 | 0.003 |" in section
    assert "| shuffled_text | m | c | 768 | 0.51 | 0.34 | — |" in section and "*Structural* means" in section
    assert "| sanity check |" in text and "| 2 | best subset closes 2-5 % of the gap | — |" in text
    assert (
        "Sanity check: **specific** -- agrees on the trained models and on no control (size specific). Controls: "
        f"{RAND}: size contradicted (1 of 1 values answered); {SHUF}: size uninformative (1 values)." in text
    )


def test_inputs_that_cannot_be_read_as_controls_are_refused():
    trained = _report(AGREE2)
    other = {**_report(FAR2), "key": "another rule"}
    with pytest.raises(ValueError, match="another decision rule"):
        attach_controls(trained, {RAND: other}, None)
    with pytest.raises(ValueError, match="token0_weight"):
        attach_controls(trained, {RAND: _report(FAR2)}, pl.DataFrame({c: [] for c in REGIME_COLUMNS[:-1]}))


def test_the_readme_block_counts_the_verdicts_by_claim_id():
    from trustmass.report.claims.markdown import readme_lines

    report = _checked([AGREE2, *c13(0.80, 0.08)], [FAR2, *c13(0.50, 0.30)], [WIDE2, *c13(0.50, 0.30)])
    [line] = [x for x in readme_lines(report) if x.startswith("- **Sanity checks**")]
    assert "specific (1) 2; structural (1) 13; contradicted (0) none; no verdict: " in line
    assert not [x for x in readme_lines(_report(AGREE2)) if "Sanity checks" in x]  # no controls: no line
