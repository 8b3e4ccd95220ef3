"""Verdicts that can fail: every kind passes the paper's own value and fails a value just outside,
checked on every value of the claims file; plus the regressions the claims report once had."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from trustmass.report.claims.data import claim, load_claims, model_roles
from trustmass.report.claims.model import Value, half_unit
from trustmass.report.claims.verdicts import StudyModels, judge

ROLES = model_roles()
#: every paper model played by a run model of the same name that *is* the paper's checkpoint
PAPER_RUN = StudyModels(
    roles={name: r.paper_model for name, r in ROLES.items()},
    paper_arms=frozenset(r.paper_model for r in ROLES.values()),
    role_definitions=ROLES,
)
#: the default study: SmolLM2 stands in for the reference family
ANALOGUE_RUN = StudyModels(roles={"reference": "smollm2-135m"}, role_definitions=ROLES)


def row(est, low=None, high=None, models="m", context=None, **group):
    out = {"estimate": est, "low": low, "high": high, "models": models, "context": context}
    if group:
        out.update(by_key=",".join(group), by_value=",".join(str(v) for v in group.values()))
    return out


# ------------------------------------------------------------------ the paper's value passes, just outside fails


def _scale(value: Value) -> float:
    return 100.0 if value.unit == "percent" else 1.0


def _just_outside(value: Value, x, side: int = 1) -> float:
    """A value beyond the verdict's slack on one side of the stated number x."""
    x = float(x)
    if value.kind in ("identity", "count", "ratio") or value.exact is not None or isinstance(x, Fraction):
        return x + side * max(1.0, abs(x)) * 1e-6 if value.kind == "identity" or value.exact is not None else x + side
    tol = half_unit(x) if not isinstance(x, float) else None
    return x + side * 3 * max(tol or 0.0, 1e-9)


def _cells(value: Value, estimates: dict, interval: bool = False) -> list[dict]:
    """Rows with these estimates (in the claim's unit) per group key, fractions for percent values."""
    s = _scale(value)
    rows = []
    where_model = value.where.get("model")
    model = (where_model[0] if isinstance(where_model, tuple) else where_model) if where_model else "Qwen2.5-1.5B"
    for key, est in estimates.items():
        group = {} if key is None else {value.by_dimension(): key}
        models = key if value.by_dimension() == "model" and key is not None else model
        if interval:
            lo, hi = est
            rows.append(row((lo + hi) / 2 / s, lo / s, hi / s, models=models, **group))
        else:
            rows.append(row(est / s, models=models, **group))
    return rows


def _stated(value: Value):
    """(group key or None, stated number or (low, high)) for the overall value and every by-group."""
    out = []
    if value.kind in ("range", "ci_within") and value.low is not None:
        out.append((None, (value.low, value.high)))
    elif value.value is not None:
        out.append((None, value.value))
    for key, entry in value.by.get(value.by_dimension(), {}).items() if value.by else []:
        out.append((key, entry))
    return out


JUDGEABLE = [
    (c.id, v)
    for c in load_claims()
    for v in c.values
    if v.role != "parameter" and v.formula is None and _stated(v)
]


@pytest.mark.parametrize("cid,value", JUDGEABLE, ids=[f"{c}-{v.name}" for c, v in JUDGEABLE])
def test_the_papers_own_value_is_consistent_and_one_just_outside_is_not(cid, value):
    stated = _stated(value)
    interval_kind = value.kind == "ci_within"

    def perfect(key, x):
        if isinstance(x, tuple):
            return (float(x[0]), float(x[1])) if interval_kind else (float(x[0]) + float(x[1])) / 2
        x_ = float(x)
        if value.kind == "upper" and value.strict:
            return x_ - max(half_unit(x), 1e-6)
        if value.kind == "lower" and value.strict:
            return x_ + max(half_unit(x), 1e-6)
        return x_

    def outside(x):
        if isinstance(x, tuple):
            h = half_unit(x[1]) if not isinstance(x[1], Fraction) else 0
            return (float(x[0]), float(x[1]) + 3 * h + 1e-6) if interval_kind else float(x[1]) + 3 * h + 1e-6
        if value.kind == "upper":
            return float(x) + (0.0 if value.strict else max(1e-6, 1e-9 * abs(float(x))))
        if value.kind == "lower":
            return float(x) - (0.0 if value.strict else max(1e-6, 1e-9 * abs(float(x))))
        if value.kind in ("count", "ratio"):
            return float(x) + 1
        if value.kind == "identity" or value.exact is not None or isinstance(x, Fraction):
            return float(x) + max(1.0, abs(float(x))) * 1e-9
        tol = max(half_unit(x), 0.2 * abs(float(x))) if value.approx else half_unit(x)
        return float(x) + 2 * tol + 1e-9

    good = _cells(value, {k: perfect(k, x) for k, x in stated}, interval=interval_kind)
    verdict = judge(value, good, PAPER_RUN)
    assert verdict.status == "consistent", (cid, value.name, verdict)
    assert verdict.analogue is None
    for bad_key, bad_x in stated:  # one group just outside: no longer consistent
        estimates = {k: (outside(x) if k == bad_key else perfect(k, x)) for k, x in stated}
        verdict = judge(value, _cells(value, estimates, interval=interval_kind), PAPER_RUN)
        assert verdict.status in ("inconsistent", "mixed"), (cid, value.name, bad_key, verdict)
        if len(stated) == 1:
            assert verdict.status == "inconsistent", (cid, value.name, verdict)


def test_every_kind_is_covered_by_the_property_test():
    kinds = {("identity" if v.exact is not None else v.kind) for _, v in JUDGEABLE}
    assert {"range", "upper", "lower", "count", "ratio", "identity", "point", "ci_within"} <= kinds
    assert any(v.strict for _, v in JUDGEABLE) and any(v.extreme for _, v in JUDGEABLE) and any(v.approx for _, v in JUDGEABLE)


# --------------------------------------------------------------------------------------- kinds by hand


def test_range_rounding_slack_is_half_a_unit_of_the_printed_digits():
    v = claim(24).value("median_c_hat")  # 0.021-0.047
    assert judge(v, [row(0.0474)], PAPER_RUN).status == "consistent"  # rounds to 0.047
    assert judge(v, [row(0.0476)], PAPER_RUN).status == "inconsistent"
    assert judge(v, [row(0.03), row(0.06)], PAPER_RUN).status == "mixed"


def test_strict_bounds_fail_at_the_bound():
    v = claim(18).value("median_c_hat_certified")  # < 0.12
    assert v.strict
    assert judge(v, [row(0.1199)], PAPER_RUN).status == "consistent"
    assert judge(v, [row(0.12)], PAPER_RUN).status == "inconsistent"
    non_strict = Value(name="x", kind="upper", unit="fraction", value=0.12)
    assert judge(non_strict, [row(0.12)], PAPER_RUN).status == "consistent"


def test_identity_is_exact():
    v = claim(14).value("vote_over_top_mass")
    assert v.kind == "identity"
    ok = [row(1.0, models="OLMo-2-1B", group_size=1)]
    assert judge(v, ok, PAPER_RUN).status == "consistent"
    assert judge(v, [row(1.03, models="OLMo-2-1B", group_size=1)], PAPER_RUN).status == "inconsistent"  # not "within 5 %"
    assert judge(v, [row(1.0 + 1e-9, models="OLMo-2-1B", group_size=1)], PAPER_RUN).status == "inconsistent"


def test_ci_containment_is_containment_not_overlap():
    v = claim(24).value("median_c_hat_ci95")
    assert v.kind == "ci_within"
    assert judge(v, [row(0.03, 0.001, 0.5)], PAPER_RUN).status == "inconsistent"
    assert judge(v, [row(0.03, 0.02, 0.045)], PAPER_RUN).status == "consistent"
    assert judge(v, [row(0.03)], PAPER_RUN).status == "not produced yet"  # no interval, nothing to contain
    r = claim(28).value("median_r_bal_ci95")  # [1.00, 1.00]
    assert judge(r, [row(1.0, 1.0, 1.0)], PAPER_RUN).status == "consistent"
    assert judge(r, [row(1.0, 0.96, 1.0)], PAPER_RUN).status == "inconsistent"


def test_as_few_as_is_the_smallest_cell():
    v = claim(105).value("top_mass_label_rate")  # as few as 19 %
    assert judge(v, [row(0.80)], PAPER_RUN).status == "inconsistent"  # once encoded as >= 19 %
    assert judge(v, [row(0.192), row(0.45)], PAPER_RUN).status == "consistent"
    assert judge(v, [row(0.25), row(0.45)], PAPER_RUN).status == "inconsistent"


def test_approximate_points_get_twenty_percent():
    v = claim(87).value("D")  # D ~ 500
    assert judge(v, [row(560.0)], PAPER_RUN).status == "consistent"
    assert judge(v, [row(700.0)], PAPER_RUN).status == "inconsistent"


def test_formula_bounds_are_evaluated_per_instance():
    v = claim(81).value("es_nonzero_minimum")  # ES(N/2) >= 2 N^-2
    ok = [row(2 / 36 + 1e-3, context='{"N": 6}'), row(0.5, context='{"N": 12}')]
    assert judge(v, ok, PAPER_RUN).status == "consistent"
    assert judge(v, [row(2 / 36 - 1e-3, context='{"N": 6}')], PAPER_RUN).status == "inconsistent"
    assert judge(v, [row(0.5)], PAPER_RUN).status == "not produced yet"  # no N to evaluate it at


# ---------------------------------------------------------------------------- regressions of the old report


def test_claim_91_per_budget_rows_are_judged_per_budget_and_the_total_on_its_own():
    v = claim(91).value("n_improvements")  # 46 = 0/2/8/36
    rows = [row(46.0)] + [row(float(k), budget=s) for s, k in ((4, 0), (8, 2), (16, 8), (32, 36))]
    verdict = judge(v, rows, PAPER_RUN)
    assert verdict.status == "consistent", verdict
    rows[2] = row(3.0, budget=8)
    assert judge(v, rows, PAPER_RUN).status == "mixed"


def test_claim_19_parameters_are_settings_not_results():
    from trustmass.report.claims.report import build
    import polars as pl

    from trustmass.report.headline import headline_frame, row as hrow

    rows = [
        hrow(19, "enumeration_cap_widened", 2_760_681, "primary", models="m"),
        hrow(19, "extra_keys", 6, "primary", models="m"),
        hrow(19, "median_gap_change", 0.004, "primary", by={"budget": 32}, models="m"),
    ]
    report = build(load_claims(), headline_frame(rows), PAPER_RUN, {"CERT"}, ["m"])
    c19 = next(e for e in report["claims"] if e["id"] == 19)
    statuses = {v["name"]: v["status"] for v in c19["values"]}
    assert statuses["enumeration_cap_widened"] == statuses["extra_keys"] == "not compared"
    assert statuses["median_gap_change"] == "consistent" and c19["status"] == "consistent"
    assert isinstance(pl.DataFrame(), pl.DataFrame)


# ------------------------------------------------------------------------------------------ roles


def test_claims_naming_a_paper_model_are_judged_on_the_model_in_its_role():
    v = claim(33).value("balancing_beats_top_mass_10pct_share")  # Qwen2.5-1.5B 21-30 %, OLMo-2 47-59 %
    rows = [row(0.25, model="smollm2-135m", budget=8), row(0.5, model="other", budget=8)]
    verdict = judge(v, rows, ANALOGUE_RUN)
    assert verdict.status == "consistent"  # the reference group only: OLMo-2's role is not played
    assert verdict.analogue == "smollm2-135m for Qwen2.5-1.5B"
    verdict = judge(v, [row(0.5, model="smollm2-135m", budget=8)], ANALOGUE_RUN)
    assert verdict.status == "inconsistent"


def test_a_role_nobody_plays_says_how_to_play_it():
    v = claim(14).value("vote_over_top_mass")
    verdict = judge(v, [row(1.0, models="smollm2-135m", group_size=1)], ANALOGUE_RUN)
    assert verdict.status == "not produced yet"
    assert "group_size_1" in verdict.reason and "roles:" in verdict.reason


@pytest.mark.parametrize("cid,name", [(56, "map_share_of_all_cell_gain"), (97, "allocation_delta_es"),
                                      (124, "swap_recall"), (125, "random_share_of_all_cell_gain")])  # fmt: skip
def test_claims_once_keyed_by_paper_model_names_are_producible(cid, name):
    v = claim(cid).value(name)
    paper_model = next(iter(v.by["model"]))
    role = next(r for r in ROLES.values() if r.paper_model == paper_model)
    run = StudyModels(roles={role.name: "my-model"}, role_definitions=ROLES)
    verdict = judge(v, [row(0.5, model="my-model")], run)
    assert verdict.status != "not produced yet", verdict
    assert verdict.analogue == f"my-model for {paper_model}"


def test_directions_judge_analogues():
    v = claim(22).value("median_pi_hat")  # rises 1.07 -> 1.79 over s 4 -> 32, reference family
    up = [row(1.2, model="smollm2-135m", budget=4), row(1.5, model="smollm2-135m", budget=32)]
    assert judge(v, up, ANALOGUE_RUN).status == "consistent"  # the digits differ, the direction holds
    assert judge(v, up, ANALOGUE_RUN).kind == "direction"
    down = [row(1.5, model="smollm2-135m", budget=4), row(1.2, model="smollm2-135m", budget=32)]
    assert judge(v, down, ANALOGUE_RUN).status == "inconsistent"
    paper = [row(1.07, model="Qwen2.5-1.5B", budget=4), row(1.79, model="Qwen2.5-1.5B", budget=32)]
    assert judge(v, paper, PAPER_RUN).kind == "point"  # the paper's own model is judged by the numbers


def test_paper_arms_come_from_hub_ids():
    config = {
        "study": {"models": ["q", "s"]},
        "models": {"q": {"source": "hub", "id": "Qwen/Qwen2.5-1.5B", "roles": ["reference"]}, "s": {"source": "packaged"}},
    }
    models = StudyModels.from_config(config, ROLES)
    assert models.paper_arms == {"q"} and models.run_model_for("Qwen2.5-1.5B") == "q"
    v = claim(2).value("median_c_hat")
    assert judge(v, [row(0.03, model="q", budget=8)], models).analogue is None
    assert judge(v, [row(0.03, model="s", budget=8)], models).analogue == "s"


def test_half_units_follow_the_literal():
    assert claim(28).value("median_r_bal_ci95").low == 1.0 and half_unit(claim(28).value("median_r_bal_ci95").low) == 0.005
    assert math.isclose(half_unit(claim(25).value("median_c_hat_labelled").low), 5e-4)
    assert half_unit(19) == 0.5 and half_unit(Fraction(9, 22)) == 0.0
