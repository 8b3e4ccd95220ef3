"""Verdicts that can fail, direction and size apart.

Property tests over every value of the claims file: the paper's own number agrees in size and one 2x off
disagrees; the paper's own direction agrees and the opposite disagrees; a configuration-set count is
never judged; a condition on a dimension no row carries fails the file's load.  Then one regression test
per fault the claims report once had (issue: "claims that mean something")."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from stated_numbers import stated_numbers

from trustmass.report.claims.configured import IMPLIED, Implied
from trustmass.report.claims.data import claim, load_claims, model_roles, parse_claims
from trustmass.report.claims.model import ClaimsFileError, Value, half_unit, tolerance
from trustmass.report.claims.verdicts import (
    AGREES,
    CONTRADICTED,
    NOT_COMPARABLE,
    PARTIAL,
    UNINFORMATIVE,
    StudyModels,
    judge,
)

ROLES = model_roles()
#: every paper model played by a run model of the same name that *is* the paper's checkpoint
PAPER_RUN = StudyModels(
    roles={name: r.paper_model for name, r in ROLES.items()},
    paper_arms=frozenset(r.paper_model for r in ROLES.values()),
    role_definitions=ROLES,
)
#: the default study: SmolLM2 stands in for the reference family
ANALOGUE_RUN = StudyModels(roles={"reference": "smollm2-135m"}, role_definitions=ROLES)


def row(est, low=None, high=None, models="Qwen2.5-1.5B", context=None, uninformative=None, **group):
    out = {
        "estimate": est,
        "low": low,
        "high": high,
        "models": models,
        "context": context,
        "uninformative": uninformative,
    }
    if group:
        out.update(by_key=",".join(group), by_value=",".join(str(v) for v in group.values()))
    return out


def size_of(value, rows, models=PAPER_RUN, **kw):
    return judge(value, rows, models, **kw).size.status


def direction_of(value, rows, models=PAPER_RUN, **kw):
    return judge(value, rows, models, **kw).direction.status


# ------------------------------------------------------------------ size: the paper's value agrees, 2x off disagrees


def _scale(value: Value) -> float:
    return 100.0 if value.unit == "percent" else 1.0


def _conditions(value: Value) -> dict:
    """A group that meets every ``where`` condition (the first allowed key of each); a timing is measured on a
    CUDA device."""
    out = {"device": "cuda (test)"} if value.timing else {}
    for dim, allowed in value.where.items():
        first = allowed[0] if isinstance(allowed, tuple) else allowed
        out[dim] = first
    return out


def _rows(value: Value, estimates: dict, interval: bool = False) -> list[dict]:
    """Rows with these estimates (in the claim's unit) per group key, fractions for percent values."""
    s = _scale(value)
    out = []
    base = _conditions(value)
    model = base.pop("model", "Qwen2.5-1.5B")
    for key, est in estimates.items():
        group = dict(base)
        if key is not None:
            group[value.by_dimension()] = key
        models = key if value.by_dimension() == "model" and key is not None else model
        group.pop("model", None)
        if value.by_dimension() == "model" and key is not None:
            group["model"] = key
        if interval:
            lo, hi = est
            out.append(row((lo + hi) / 2 / s, lo / s, hi / s, models=models, **group))
        else:
            out.append(row(est / s, models=models, **group))
    return out


def _sized(v: Value) -> bool:
    return (
        v.has_size and v.role != "parameter" and v.configured is None and v.formula is None and bool(stated_numbers(v))
    )


SIZED = [(c.id, v) for c in load_claims() for v in c.values if _sized(v)]


def _perfect(value: Value, x):
    """The paper's own number as a regenerated estimate (just inside a strict bound)."""
    if isinstance(x, tuple):
        return (float(x[0]), float(x[1])) if value.kind == "ci_within" else (float(x[0]) + float(x[1])) / 2
    x_ = float(x)
    if value.kind == "upper" and value.strict:
        return x_ - max(tolerance(x), 1e-6 * max(1.0, abs(x_)))
    if value.kind == "lower" and value.strict:
        return x_ + max(tolerance(x), 1e-6 * max(1.0, abs(x_)))
    return x_


def _twice_off(value: Value, x):
    """2x the paper's number, away from what it states (the farther end of a range; a bound's wrong side); a
    stated interval (ci_within) moved wholly beyond its upper end."""
    if isinstance(x, tuple):
        end = max((float(x[0]), float(x[1])), key=abs)
        off = 2 * end if end else 1.0
        if value.kind == "ci_within":
            return (off, off + float(x[1]) - float(x[0]))
        return off
    x_ = float(x)
    if value.kind == "lower":
        return x_ / 2 if x_ > 0 else x_ - max(1.0, abs(x_))
    return 2 * x_ if x_ else 1.0


@pytest.mark.parametrize("cid,value", SIZED, ids=[f"{c}-{v.name}" for c, v in SIZED])
def test_the_papers_own_size_agrees_and_twice_it_disagrees(cid, value):
    stated = stated_numbers(value)
    interval = value.kind == "ci_within"
    good = _rows(value, {k: _perfect(value, x) for k, x in stated}, interval)
    verdict = judge(value, good, PAPER_RUN)
    assert verdict.size.status == AGREES, (cid, value.name, verdict)
    assert verdict.analogue is None
    for bad_key, bad_x in stated:  # one group 2x off: no longer agrees
        estimates = {k: (_twice_off(value, x) if k == bad_key else _perfect(value, x)) for k, x in stated}
        verdict = judge(value, _rows(value, estimates, interval), PAPER_RUN)
        assert verdict.size.status == CONTRADICTED, (cid, value.name, bad_key, verdict)
        if len(stated) == 1:
            assert verdict.size.status == CONTRADICTED, (cid, value.name, verdict)


def test_every_kind_is_covered_by_the_size_property_test():
    kinds = {("identity" if v.exact is not None else v.kind) for _, v in SIZED}
    assert {"range", "upper", "lower", "count", "ratio", "identity", "point", "ci_within"} <= kinds
    assert any(v.strict for _, v in SIZED) and any(v.extreme for _, v in SIZED) and any(v.approx for _, v in SIZED)


# ------------------------------------------------------- direction: the paper's direction agrees, the opposite not

DIRECTED = [(c.id, v) for c in load_claims() for v in c.values if v.stated_direction and not v.by_construction]


def _direction_rows(value: Value, flip: bool) -> tuple[list[dict], dict]:
    """Rows (and the compared value's rows) that show the stated direction, or its opposite."""
    d = value.stated_direction
    base = _conditions(value)
    model = base.pop("model", "Qwen2.5-1.5B")
    sign = -1.0 if flip else 1.0
    if d in ("positive", "negative"):
        t = float(value.than) if value.than is not None else 0.0
        side = (1.0 if d == "positive" else -1.0) * sign
        return [row(t + side * 0.5, models=model, **base)], {}
    if d in ("above", "below"):
        hi, lo = (2.0, 1.0) if (d == "above") != flip else (1.0, 2.0)
        return [row(hi, models=model, **base)], {value.than: [row(lo, models=model, **base)]}
    if d in ("increasing", "decreasing"):
        rising = (d == "increasing") != flip
        keys = list(value.by.get(value.along, {})) or [4, 32]
        if value.along == "model":
            keys = keys[:2]
        ests = [1.0, 2.0] if rising else [2.0, 1.0]
        return [row(e, models=model, **{**base, value.along: k}) for k, e in zip(keys[:2], ests)], {}
    # order: the paper's numbers for the groups (ranges by their middle), negated for the opposite
    entries = value.by[value.along]
    rows = []
    for key, e in entries.items():
        mid = (float(e[0]) + float(e[1])) / 2 if isinstance(e, tuple) else float(e)
        group = {**base, value.along: key}
        rows.append(
            row(
                sign * mid / _scale(value) + (0 if value.along != "model" else 0),
                models=key if value.along == "model" else model,
                **group,
            )
        )
    return rows, {}


@pytest.mark.parametrize("cid,value", DIRECTED, ids=[f"{c}-{v.name}" for c, v in DIRECTED])
def test_the_papers_own_direction_agrees_and_the_opposite_disagrees(cid, value):
    rows, others = _direction_rows(value, flip=False)
    assert direction_of(value, rows, others=others) == AGREES, (
        cid,
        value.name,
        judge(value, rows, PAPER_RUN, others=others),
    )
    rows, others = _direction_rows(value, flip=True)
    assert direction_of(value, rows, others=others) == CONTRADICTED, (
        cid,
        value.name,
        judge(value, rows, PAPER_RUN, others=others),
    )


def test_every_direction_is_covered():
    assert {v.stated_direction for _, v in DIRECTED} == {
        "positive",
        "negative",
        "above",
        "below",
        "increasing",
        "decreasing",
        "order",
    }


# ----------------------------------------------------------------- what is never judged, what never loads

CONFIGURED = [(c.id, v) for c in load_claims() for v in c.values if v.configured]


@pytest.mark.parametrize("cid,value", CONFIGURED, ids=[f"{c}-{v.name}" for c, v in CONFIGURED])
def test_a_configuration_set_number_is_never_judged_in_size(cid, value):
    for est in (0.0, 1.0, 48_816.0, 168_192.0):
        verdict = judge(value, [row(est)], PAPER_RUN, implied=Implied(None, "set by the config"))
        assert verdict.size.status == NOT_COMPARABLE, (cid, value.name, verdict)


def test_the_issues_configuration_set_values_are_configured():
    """Counts and sizes set by the run's configuration (the issue's list): instances, models, documents,
    pairs, byte shares fixed by s/N, conditions, the doc-rows design."""
    expected = {
        (1, "n_instances"),
        (1, "n_models"),
        (15, "n_instances"),
        (17, "n_models"),
        (17, "n_lineages"),
        (17, "model_size"),
        (95, "n_instances_per_budget"),
        (91, "n_improvements"),
        (55, "n_pairs"),
        (59, "uniform_methods_cache_share"),
        (61, "snapkv_compactor_cache_share"),
        (63, "kept_cache_share"),
        (113, "kvzip_bytes_over_snapkv"),
        (114, "bytes_over_enforcing_methods"),
        (114, "overkeep_over_nominal"),
        (78, "question_rows_evicted"),
    }
    configured = {(c, v.name) for c, v in CONFIGURED}
    assert expected <= configured, expected - configured
    assert {v.configured for _, v in CONFIGURED} <= set(IMPLIED)


def _document(**value) -> dict:
    """The packaged claims file with claim 3's value changed."""
    from importlib import resources

    import yaml

    data = yaml.safe_load(resources.files("trustmass").joinpath("data/claims.yaml").read_text(encoding="utf-8"))
    data["claims"][2]["values"][0].update(value)
    return data


@pytest.mark.parametrize("field", ["where", "exceptions", "exclude"])
def test_a_condition_on_a_dimension_no_row_carries_fails_the_load(field):
    with pytest.raises(ClaimsFileError, match="no headline row carries the dimension 'storage_kind'"):
        parse_claims(_document(**{field: {"storage_kind": "mask"}}))
    parse_claims(_document(at={"storage_kind": "mask"}))  # a stated condition, shown, not filtered on


def test_a_filter_that_matches_no_row_is_uninformative_not_passed():
    v = claim(3).value("held_cache_share")  # where storage: as_shipped
    verdict = judge(v, [row(1.0, method="kvzip")], ANALOGUE_RUN)  # a row without the dimension
    assert verdict.size.status == UNINFORMATIVE and "storage" in verdict.size.reason
    assert size_of(v, [row(1.0, storage="as_shipped", method="kvzip")], ANALOGUE_RUN) == AGREES
    assert size_of(v, [row(1.0, storage="ragged", method="kvzip")], ANALOGUE_RUN) == UNINFORMATIVE


def test_than_names_another_value_and_configured_a_known_quantity():
    with pytest.raises(ClaimsFileError, match="is not another value of this claim"):
        parse_claims(_document(direction="above", than="no_such_value"))
    with pytest.raises(ClaimsFileError, match="configured: 'no_such' unknown"):
        parse_claims(_document(configured="no_such", config_keys=["deploy.budgets"]))


# --------------------------------------------------------------------------------------- kinds by hand


def test_tolerance_is_half_a_unit_but_never_a_tenth_of_the_number():
    assert tolerance(0.047) == pytest.approx(0.0005) and tolerance(19) == 0.5
    assert tolerance(claim(41).value("auc_ci_half_width").low) == pytest.approx(0.001)  # "0.01": not +-50 %
    assert tolerance(500, approx=True) == 100 and tolerance(0) == 0


def test_range_slack():
    v = claim(24).value("median_c_hat")  # 0.021-0.047
    assert size_of(v, [row(0.0474, model="Qwen2.5-1.5B", budget=8)]) == AGREES  # rounds to 0.047
    assert size_of(v, [row(0.0476, model="Qwen2.5-1.5B", budget=8)]) == CONTRADICTED
    assert (
        size_of(v, [row(0.03, model="Qwen2.5-1.5B", budget=8), row(0.06, model="Qwen2.5-1.5B", budget=4)])
        == CONTRADICTED
    )


def test_strict_bounds_fail_at_the_bound():
    v = claim(18).value("median_c_hat_certified")  # < 0.12
    assert size_of(v, [row(0.1199, budget=8)]) == AGREES
    assert size_of(v, [row(0.12, budget=8)]) == CONTRADICTED
    non_strict = Value(name="x", kind="upper", unit="fraction", value=0.12)
    assert size_of(non_strict, [row(0.12)]) == AGREES


def test_identity_is_exact():
    v = claim(14).value("vote_over_top_mass")
    assert size_of(v, [row(1.0, models="OLMo-2-1B", group_size=1)]) == AGREES
    assert size_of(v, [row(1.03, models="OLMo-2-1B", group_size=1)]) == CONTRADICTED
    assert size_of(v, [row(1.0 + 1e-9, models="OLMo-2-1B", group_size=1)]) == CONTRADICTED


def test_ci_containment_is_containment_not_overlap():
    v = claim(24).value("median_c_hat_ci95")
    assert size_of(v, [row(0.03, 0.001, 0.049, budget=8)]) == UNINFORMATIVE  # reaches across 0.0165
    assert size_of(v, [row(0.07, 0.06, 0.09, budget=8)]) == CONTRADICTED  # wholly outside
    assert size_of(v, [row(0.03, 0.02, 0.045, budget=8)]) == AGREES
    assert size_of(v, [row(0.03, budget=8)]) == UNINFORMATIVE  # no interval, nothing to contain


def test_as_few_as_is_the_smallest_cell():
    v = claim(105).value("top_mass_label_rate")  # as few as 19 %
    assert size_of(v, [row(0.80)]) == CONTRADICTED
    assert size_of(v, [row(0.192), row(0.45)]) == AGREES
    assert size_of(v, [row(0.25), row(0.45)]) == CONTRADICTED


def test_formula_bounds_are_evaluated_per_instance():
    v = claim(81).value("es_nonzero_minimum")  # ES(N/2) >= 2 N^-2
    ok = [row(2 / 36 + 1e-3, context='{"N": 6}'), row(0.5, context='{"N": 12}')]
    assert size_of(v, ok) == AGREES
    assert size_of(v, [row(2 / 36 - 1e-3, context='{"N": 6}')]) == CONTRADICTED
    assert size_of(v, [row(0.5)]) == UNINFORMATIVE  # no N to evaluate it at


def test_claim_91_per_budget_counts_are_configuration_set_but_their_rise_is_judged():
    v = claim(91).value("n_improvements")  # 46 = 0/2/8/36, out of a 960-instance manifest
    rows = [row(46.0)] + [row(float(k), budget=s) for s, k in ((4, 0), (8, 2), (16, 8), (32, 36))]
    verdict = judge(
        v,
        rows,
        PAPER_RUN,
        implied=IMPLIED["manifest_size"](
            {"study": {"models": ["a"]}, "budgets": {"enumerated": [4]}, "certification": {"per_stratum": 1}}
        ),
    )
    assert verdict.size.status == NOT_COMPARABLE and "10 instances" in verdict.size.reason
    assert verdict.direction.status == AGREES  # improvements concentrate at larger budgets
    rows = [row(float(k), budget=s) for s, k in ((4, 9), (32, 3))]
    assert direction_of(v, rows) == CONTRADICTED


# ---------------------------------------------------------------------------- regressions of the old report


def test_claim_1_15_counts_show_what_the_configuration_implies():
    config = {
        "study": {"models": ["m"], "corpora": ["c"]},
        "models": {"m": {"declared": {"layers": 2, "heads": 3}}},
        "capture": {"rows_per_head": 6},
        "budgets": {"enumerated": [4, 8]},
        "documents": {"n_docs": 5},
    }
    got = IMPLIED["headline_primary_instances"](config)
    assert got.value == 2 * 3 * 6 * 2 * 3  # the primary slice: 3 of the 5 documents
    verdict = judge(claim(15).value("n_instances"), [row(216.0, models="m")], ANALOGUE_RUN, implied=got)
    assert verdict.size.status == NOT_COMPARABLE and "216" in verdict.size.reason


def test_byte_shares_fixed_by_budget_over_length_are_not_judged():
    got = IMPLIED["kept_share"]({"deploy": {"budgets": [128], "lengths": [1024]}})
    assert got.value == (12.5, 12.5)
    v = claim(63).value("kept_cache_share")
    assert judge(v, [row(0.1251)], ANALOGUE_RUN, implied=got).size.status == NOT_COMPARABLE


def test_a_wide_interval_across_the_band_cannot_decide_and_a_tight_one_inside_agrees():
    v = claim(56).value("map_share_of_all_cell_gain")  # 15 % on Qwen3-1.7B; the panel's Gemma: 130.6 [-135, 193]
    run = StudyModels(roles={"qk_norm_family": "gemma3-270m"}, role_definitions=ROLES)
    verdict = judge(v, [row(1.306, -1.35, 1.93, model="gemma3-270m")], run)
    assert verdict.size.status == UNINFORMATIVE and "reaches across" in verdict.size.reason
    # 14-16 % is not inside 15 +- 0.5: equivalence is not shown; 15.02-15.08 % is, for the one group played
    assert judge(v, [row(0.151, 0.14, 0.16, model="gemma3-270m")], run).size.status == UNINFORMATIVE
    tight = judge(v, [row(0.1505, 0.1502, 0.1508, model="gemma3-270m")], run).size
    assert tight.status == PARTIAL and "model=Qwen3-1.7B: agrees" in tight.reason  # two scales nobody plays


def test_claim_56_names_the_models_nobody_plays():
    v = claim(56).value("map_share_of_all_cell_gain")
    run = StudyModels(roles={"qk_norm_family": "gemma3-270m"}, role_definitions=ROLES)
    reason = judge(v, [row(0.151, 0.14, 0.16, model="gemma3-270m")], run).size.reason
    assert "model=Qwen3-0.6B: not produced (no study model takes the role small_scale)" in reason
    assert "model=Qwen3-4B: not produced (no study model takes the role large_scale)" in reason


def test_claim_125_map_against_random_with_the_qwen3_exception():
    map_v, random_v = claim(125).value("map_share_of_all_cell_gain"), claim(125).value("random_share_of_all_cell_gain")
    run = StudyModels(roles={"reference": "qwen", "qk_norm_family": "gemma"}, role_definitions=ROLES)
    rows = [row(1.0, 0.95, 1.1, model="qwen"), row(1.3, 1.2, 1.4, model="gemma")]
    others = {random_v.name: [row(0.35, 0.3, 0.4, model="qwen"), row(0.55, 0.5, 0.6, model="gemma")]}
    verdict = judge(map_v, rows, run, others=others)
    # the reference family: map above random (agrees); Qwen3-1.7B's stand-in: map above random, the
    # paper's exception (random 77 % vs map 15 %) -- so it disagrees there
    assert verdict.direction.status == CONTRADICTED, verdict
    others[random_v.name][1] = row(1.5, 1.45, 1.6, model="gemma")
    assert judge(map_v, rows, run, others=others).direction.status == AGREES


def test_claim_52_exceptions_are_judged_the_other_way():
    v = claim(52).value("ce_change_ci_high")  # all CIs < 0, the three Qwen3 scales the exceptions
    run = StudyModels(roles={"second_family": "smollm2", "qk_norm_family": "gemma"}, role_definitions=ROLES)
    rows = [row(-0.005, model="smollm2", budget=8), row(0.0168, model="gemma", budget=8)]
    verdict = judge(v, rows, run)
    assert verdict.size is None and verdict.direction.status == AGREES, (
        verdict
    )  # Gemma's CI reaching above 0 is what the paper says
    rows[1] = row(-0.02, model="gemma", budget=8)
    assert judge(v, rows, run).direction.status == CONTRADICTED


def test_claim_11_size_is_judged_inside_the_papers_group_sizes_and_its_rise_everywhere():
    v = claim(11).value("median_vote_cost_over_top_mass")  # 1.06-1.22 at group sizes 2-6, rising
    rows = [row(1.109, group_size=3, budget=8), row(1.130, group_size=4, budget=8), row(1.293, group_size=7, budget=8)]
    verdict = judge(v, rows, ANALOGUE_RUN)
    assert "group_size=7 lies outside the paper's group_size 2-6" in verdict.size.reason
    assert "every group: agrees" in verdict.size.reason  # 1.109 and 1.130 lie in 1.06-1.22
    assert verdict.direction.status == AGREES  # 1.109 -> 1.293 rises with group size


def test_claim_19_shows_both_readings_and_counts_the_relative_one():
    c = claim(19)
    relative, points = c.value("median_gap_change"), c.value("median_gap_change_points")
    assert not relative.alternative and points.alternative and relative.reading and points.reading
    assert size_of(relative, [row(0.152, budget=32)]) == CONTRADICTED  # 15.2 % of the gap
    assert size_of(points, [row(0.008, budget=32)]) == AGREES  # 0.8 points


def test_claims_18_and_44_have_two_readings_with_the_one_used_named():
    # the paper's "under 0.12" is Table 7's distribution-free cap; the manifest median is the other reading
    assert claim(18).value("median_c_hat_certified").alternative
    assert not claim(18).value("median_c_hat_certified_cap").alternative
    assert claim(18).value("median_c_hat_certified").reading
    assert claim(44).value("value_aware_case_rate_kappa_hat").alternative
    assert "claim 105" in claim(44).value("value_aware_case_rate").reading


def test_an_infinite_cap_is_uninformative_not_inconsistent():
    v = claim(93).value("median_c_hat_cap")
    assert size_of(v, [row(math.inf, budget=32)]) == UNINFORMATIVE
    flagged = row(math.inf, budget=32, uninformative="the Wilson cap is infinite: n = 30")
    assert judge(v, [flagged], PAPER_RUN).size.reason.startswith("32: the Wilson cap is infinite")


def test_a_producer_flag_makes_a_cell_uninformative():
    v = claim(57).value("probe_share_of_loss_reduction")  # <= 5 %: a probe at alpha = 0 is 0 by construction
    flagged = row(0.0, probe_rank=16, uninformative="the probe chose alpha = 0")
    assert size_of(v, [flagged]) == UNINFORMATIVE
    assert size_of(v, [row(0.02, probe_rank=16)]) == AGREES


def test_claim_31_direction_holds_by_construction_and_its_size_is_judged():
    v = claim(31).value("mass_cap_share_of_s8")  # 28-34 % at s = 64, 8-12 % at s = 256
    verdict = judge(v, [row(0.30, budget=64), row(0.05, budget=256)], ANALOGUE_RUN)
    assert verdict.direction.status == "by construction"
    assert verdict.size.status == CONTRADICTED  # 30 % agrees, 5 % (the panel's 2.8-6.9 %) does not


def test_claim_41_half_a_unit_of_001_is_not_half_the_number():
    v = claim(41).value("auc_ci_half_width")  # 0.01-0.035: set by the document count, so not judged
    assert size_of(v, [row(0.00516, corpus="austen", model="Qwen2.5-1.5B")]) == NOT_COMPARABLE
    judged = Value(name="x", kind="range", unit="none", low=v.low, high=v.high)  # the same band, judged
    assert size_of(judged, [row(0.00516)]) == CONTRADICTED and size_of(judged, [row(0.0096)]) == AGREES


def test_claim_20_rises_by_construction_and_its_size_is_judged():
    v = claim(20).value("label_rate")
    rows = [
        row(0.3711, pool_extra=4, budget=32),
        row(0.3843, pool_extra=5, budget=32),
        row(0.3943, pool_extra=6, budget=32),
    ]
    verdict = judge(v, rows, ANALOGUE_RUN)
    assert verdict.direction.status == "by construction" and verdict.size.status == CONTRADICTED


def test_claim_124_balancing_lowers_ce_and_the_probe_sits_above_it():
    bal, probe = claim(124).value("balancing_ce_change"), claim(124).value("probe_ce_change")
    run = StudyModels(roles={"reference": "q"}, role_definitions=ROLES)
    assert direction_of(bal, [row(-0.28, -0.3, -0.25, model="q")], run) == AGREES
    assert direction_of(bal, [row(0.21, 0.2, 0.22, model="q")], run) == CONTRADICTED
    others = {bal.name: [row(-0.28, -0.3, -0.25, model="q")]}
    assert direction_of(probe, [row(0.01, 0.0, 0.02, model="q")], run, others=others) == AGREES


def test_a_sign_across_zero_is_uninformative():
    v = claim(97).value("allocation_delta_es")  # positive
    run = StudyModels(roles={"reference": "q"}, role_definitions=ROLES)
    verdict = judge(v, [row(0.64, -0.17, 1.41, model="q", unit_budget=8, selector="balancing")], run)
    assert verdict.direction.status == UNINFORMATIVE and "reaches across 0" in verdict.direction.reason


def test_claims_naming_a_paper_model_are_judged_on_the_model_in_its_role():
    v = claim(33).value("balancing_beats_top_mass_10pct_share")  # Qwen2.5-1.5B 21-30 %, OLMo-2 47-59 %
    rows = [row(0.25, model="smollm2-135m", budget=8), row(0.5, model="other", budget=8)]
    verdict = judge(v, rows, ANALOGUE_RUN)  # OLMo-2's group: nobody plays group_size_1
    assert verdict.size.status == PARTIAL and verdict.analogue == "smollm2-135m for Qwen2.5-1.5B"
    assert "model=Qwen2.5-1.5B: agrees" in verdict.size.reason and "group_size_1" in verdict.size.reason
    assert size_of(v, [row(0.5, model="smollm2-135m", budget=8)], ANALOGUE_RUN) == CONTRADICTED


def test_a_role_nobody_plays_says_how_to_play_it():
    verdict = judge(
        claim(14).value("vote_over_top_mass"), [row(1.0, models="smollm2-135m", group_size=1)], ANALOGUE_RUN
    )
    assert verdict.size.status == "not produced"
    assert "group_size_1" in verdict.size.reason and "roles:" in verdict.size.reason


@pytest.mark.parametrize(
    "cid,name",
    [
        (56, "map_share_of_all_cell_gain"),
        (97, "allocation_delta_es"),
        (124, "swap_recall"),
        (125, "random_share_of_all_cell_gain"),
    ],
)
def test_claims_once_keyed_by_paper_model_names_are_producible(cid, name):
    v = claim(cid).value(name)
    paper_model = next(iter(v.by["model"]))
    role = next(r for r in ROLES.values() if r.paper_model == paper_model)
    run = StudyModels(roles={role.name: "my-model"}, role_definitions=ROLES)
    verdict = judge(
        v, [row(0.5, model="my-model", **{k: (x[0] if isinstance(x, tuple) else x) for k, x in v.where.items()})], run
    )
    assert verdict.size.status != "not produced", verdict
    assert verdict.analogue == f"my-model for {paper_model}"


def test_analogues_get_both_answers():
    v = claim(22).value("median_pi_hat")  # rises 1.07 -> 1.79 over s 4 -> 32, reference family
    up = [row(1.2, model="smollm2-135m", budget=4), row(1.5, model="smollm2-135m", budget=32)]
    verdict = judge(v, up, ANALOGUE_RUN)
    assert (
        verdict.direction.status == AGREES and verdict.size.status == CONTRADICTED
    )  # the digits differ, the direction holds
    down = [row(1.5, model="smollm2-135m", budget=4), row(1.2, model="smollm2-135m", budget=32)]
    assert judge(v, down, ANALOGUE_RUN).direction.status == CONTRADICTED


def test_paper_arms_come_from_hub_ids():
    config = {
        "study": {"models": ["q", "s"]},
        "models": {
            "q": {"source": "hub", "id": "Qwen/Qwen2.5-1.5B", "roles": ["reference"]},
            "s": {"source": "packaged"},
        },
    }
    models = StudyModels.from_config(config, ROLES)
    assert models.paper_arms == {"q"} and models.run_model_for("Qwen2.5-1.5B") == "q"
    v = claim(2).value("median_c_hat")
    assert judge(v, [row(0.03, model="q", budget=8)], models).analogue is None
    assert judge(v, [row(0.03, model="s", budget=8)], models).analogue == "s"


def test_half_units_follow_the_literal():
    assert (
        claim(28).value("median_r_bal_ci95").low == 1.0 and half_unit(claim(28).value("median_r_bal_ci95").low) == 0.005
    )
    assert math.isclose(half_unit(claim(25).value("median_c_hat_labelled").low), 5e-4)
    assert half_unit(19) == 0.5 and half_unit(Fraction(9, 22)) == 0.0
