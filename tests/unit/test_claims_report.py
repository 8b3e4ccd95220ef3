"""Claims report: verdicts against the paper's values, and the report structure."""

import polars as pl
import pytest

from trustmass.report.claims_data import Value, claim, load_claims
from trustmass.report.claims_report import HEADLINE_COLUMNS, build, judge, markdown


def row(est, low=None, high=None):
    return {"estimate": est, "low": low, "high": high}


def test_range_verdicts():
    v = Value(name="median_c_hat", kind="range", unit="fraction", low=0.021, high=0.047)
    assert judge(v, [row(0.03, 0.02, 0.04), row(0.05, 0.045, 0.06)]).status == "consistent"
    assert judge(v, [row(0.03), row(0.08, 0.07, 0.09)]).status == "inconsistent"
    assert judge(v, []).status == "not produced yet"


def test_bounds_counts_points_and_percent():
    assert judge(Value(name="x", kind="upper", unit="fraction", value=0.12), [row(0.05, 0.04, 0.06)]).status == "consistent"
    assert judge(Value(name="x", kind="upper", unit="fraction", value=0.12), [row(0.2, 0.15, 0.25)]).status == "inconsistent"
    assert judge(Value(name="x", kind="lower", unit="fraction", value=0.9), [row(0.95)]).status == "consistent"
    assert judge(Value(name="n", kind="count", unit="count", value=111744), [row(111744.0)]).status == "consistent"
    assert judge(Value(name="n", kind="count", unit="count", value=111744), [row(24192.0)]).status == "inconsistent"
    pct = Value(name="share", kind="point", unit="percent", value=35.6)
    assert judge(pct, [row(0.356)]).status == "consistent"  # fractions are compared x 100
    assert judge(pct, [row(0.30, 0.25, 0.34)]).status == "inconsistent"


def test_build_marks_unproduced_claims_and_counts():
    headline = pl.DataFrame(
        [{"claim_id": 24, "value_name": "median_c_hat", "by_key": "model,budget", "by_value": "m,8", "population": "all",
          "estimate": 0.03, "low": 0.02, "high": 0.04, "n_instances": 10, "n_docs": 3, "models": "m"}],
    )  # fmt: skip
    assert headline.columns == HEADLINE_COLUMNS
    report = build(load_claims(), headline, ["m"], produced_stages={"INST", "STAT", "CAP"})
    entries = {e["id"]: e for e in report["claims"]}
    assert len(entries) == 126
    c24 = {v["name"]: v for v in entries[24]["values"]}["median_c_hat"]
    assert c24["all"]["status"] == "consistent" and c24["primary"]["status"] == "not produced yet"
    assert entries[6]["status"] == "not produced yet"  # a deployment claim
    assert "its stage has not run" in entries[6]["values"][0]["all"]["reason"]
    text = markdown(report)
    assert "| 24 |" in text and "0.021–0.047" in text
    assert claim(24).values[0].name == "median_c_hat"


def test_missing_headline_columns_are_named():
    with pytest.raises(ValueError, match="lacks columns"):
        build(load_claims(), pl.DataFrame({"claim_id": [1]}), [], set())


def test_values_stated_per_budget_are_judged_per_budget():
    v = Value(name="top_mass_attains_pool_share", kind="point", unit="percent", by={"budget": {4: 39, 8: 21}})
    rows = [
        {"estimate": 0.385, "low": None, "high": None, "by_key": "model,budget", "by_value": "m,4"},
        {"estimate": 0.238, "low": None, "high": None, "by_key": "model,budget", "by_value": "m,8"},
    ]
    verdict = judge(v, rows)
    assert verdict.status == "inconsistent" and "budget=4: consistent" in verdict.reason  # 23.8 vs 21 misses 5 %
    rows[1]["estimate"] = 0.212
    assert judge(v, rows).status == "consistent"
    assert judge(v, rows[:0] + [dict(rows[0], by_value="m,16")]).status == "not produced yet"
