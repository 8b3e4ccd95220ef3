"""The one decision rule of the claims report (issue 36, item 1) and the one aggregation (item 2).

Properties, each for every kind of band: an interval wholly outside the paper's band disagrees at any width; an
estimate outside the band never agrees; a cell that cannot decide says why and is counted, never dropped; a
point and a range of zero width are the same rule.  Then the defects the issue named, on the cells of the
reference runs of 230af07 (copied here as rows), each of which the old rule got wrong."""

from __future__ import annotations

import math

from hypothesis import assume, given
from hypothesis import strategies as st

from trustmass.report.claims.axes import (
    AGREES,
    BY_CONSTRUCTION,
    CONTRADICTED,
    NOT_COMPARABLE,
    NOT_PRODUCED,
    PARTIAL,
    UNINFORMATIVE,
    combine,
    tally,
)
from trustmass.report.claims.cells import Cell
from trustmass.report.claims.data import claim, model_roles
from trustmass.report.claims.decision import Band, decide, difference
from trustmass.report.claims.model import Value
from trustmass.report.claims.verdicts import StudyModels, judge

ROLES = model_roles()
FINITE = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
WIDTH = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False)


def _bands():
    bounded = st.tuples(FINITE, WIDTH).map(lambda t: Band(t[0], t[0] + t[1], "range"))
    above = st.tuples(FINITE, st.booleans()).map(lambda t: Band.above(t[0], t[1], "lower"))
    below = st.tuples(FINITE, st.booleans()).map(lambda t: Band.below(t[0], t[1], "upper"))
    return st.one_of(bounded, above, below)


def _cell(low: float, high: float, estimate: float | None = None) -> Cell:
    return Cell(estimate=(low + high) / 2 if estimate is None else estimate, low=low, high=high)


def _outside(band: Band, start: float, width: float) -> tuple[float, float] | None:
    """An interval of ``width`` wholly outside ``band``, beyond its finite side, ``start`` past the edge."""
    gap = abs(start) + 1.0
    if math.isfinite(band.high):
        return band.high + gap, band.high + gap + width
    return band.low - gap - width, band.low - gap


@given(_bands(), FINITE, WIDTH)
def test_an_interval_wholly_outside_the_band_disagrees_at_any_width(band, start, width):
    low, high = _outside(band, start, width)
    assert decide(_cell(low, high), band, scale=1e-9) is False


@given(_bands(), FINITE, WIDTH, WIDTH)
def test_an_estimate_outside_the_band_never_agrees(band, estimate, below, above):
    assume(not band.holds(estimate))
    cell = _cell(estimate - below, estimate + above, estimate)
    assert decide(cell, band) is not True
    assert decide(cell, band, scale=1e12) is not True


@given(_bands(), FINITE, WIDTH)
def test_an_interval_inside_the_band_agrees(band, centre, width):
    inside_low = band.low if math.isfinite(band.low) else centre - width
    inside_high = band.high if math.isfinite(band.high) else inside_low + width
    assume(inside_low <= inside_high and not band.low_open and not band.high_open)
    assert decide(_cell(inside_low, inside_high), band) is True


@given(FINITE, WIDTH, WIDTH)
def test_an_interval_across_an_edge_cannot_decide_and_says_which(edge, left, right):
    assume(edge - left < edge < edge + right)  # both ends strictly beyond the edge in floating point
    band = Band.above(edge, False, "lower")
    outcome = decide(_cell(edge - left, edge + right), band)
    assert isinstance(outcome, str) and "reaches across" in outcome


@given(st.floats(min_value=-100, max_value=100, allow_nan=False), FINITE, WIDTH)
def test_a_point_and_a_range_of_zero_width_are_one_rule(value, centre, width):
    point = Value(name="x", kind="point", unit="none", value=value)
    zero_range = Value(name="x", kind="range", unit="none", low=value, high=value)
    rows = [{"estimate": centre, "low": centre - width / 2, "high": centre + width / 2, "models": "m"}]
    assert judge(point, rows).size.status == judge(zero_range, rows).size.status


def test_a_cell_without_an_interval_is_an_interval_of_zero_width():
    band = Band.around(1.0, 1.0, 0.005, 0.005, "1.00")
    assert decide(Cell(estimate=1.004), band) is True
    assert decide(Cell(estimate=1.006), band) is False
    assert decide(Cell(estimate=1.004), band) == decide(Cell(estimate=1.004, low=1.004, high=1.004), band)


def test_an_open_ended_band_needs_an_interval_no_wider_than_the_claims_scale_to_agree():
    under = Band.below(0.12, True, "< 0.12")
    assert decide(_cell(0.0, 0.1), under, scale=0.12) is True
    wide = decide(_cell(-5.0, 0.1), under, scale=0.12)
    assert isinstance(wide, str) and "wider than the claim's scale" in wide
    assert decide(_cell(0.2, 9.0), under, scale=0.12) is False  # wholly outside: disagrees at any width


def test_a_producer_flag_cannot_decide_with_its_reason():
    flagged = Cell(estimate=0.0, low=0.0, high=0.0, uninformative="both hit rates are 0")
    assert decide(flagged, Band.above(0.0, True, "> 0")) == "overall: both hit rates are 0"  # named by its cell


def test_an_order_is_the_rule_on_the_difference():
    up = Band.above(0.0, True, "> 0")
    assert decide(difference(_cell(2, 3), _cell(0, 1)), up) is True
    assert decide(difference(_cell(0, 1), _cell(2, 3)), up) is False
    assert isinstance(decide(difference(_cell(0, 2), _cell(1, 3)), up), str)  # overlapping intervals
    tie = difference(Cell(estimate=0.5), Cell(estimate=0.5))
    assert decide(tie, up) is False  # an exact tie is not "above"


# ------------------------------------------------------------------------- the one aggregation


def test_every_cell_is_counted_and_one_that_cannot_decide_keeps_a_value_partial():
    axis = tally("range", [True, "c2: its 95 % interval reaches across 5"], "detail")
    assert axis.status == PARTIAL and axis.answered == 1 and axis.cells == 2 and "reaches across 5" in axis.reason
    assert tally("range", [True, True], "d").status == AGREES
    assert tally("range", [True, False, "x"], "d").status == CONTRADICTED
    assert tally("range", ["x", "y"], "d").status == UNINFORMATIVE


def test_combine_agrees_only_when_every_answerable_item_agrees():
    assert combine([AGREES, AGREES]) == AGREES
    assert combine([AGREES, NOT_PRODUCED]) == PARTIAL  # a value without an answer: never a full agreement
    assert combine([AGREES, UNINFORMATIVE]) == PARTIAL
    assert combine([AGREES, PARTIAL]) == PARTIAL
    assert combine([AGREES, CONTRADICTED, NOT_PRODUCED]) == CONTRADICTED
    assert combine([AGREES, NOT_COMPARABLE, BY_CONSTRUCTION]) == AGREES  # set apart, not counted
    assert combine([NOT_COMPARABLE, NOT_PRODUCED]) == NOT_PRODUCED  # one order of reasons everywhere
    assert combine([NOT_COMPARABLE, UNINFORMATIVE, NOT_PRODUCED]) == UNINFORMATIVE
    assert combine([NOT_COMPARABLE, BY_CONSTRUCTION]) == BY_CONSTRUCTION


# ----------------------------------- the named defects, on the reference cells of 230af07


def _row(est, low=None, high=None, model="m", **group):
    group = {"model": model, **group}
    return {
        "estimate": est,
        "low": low,
        "high": high,
        "models": model,
        "by_key": ",".join(group),
        "by_value": ",".join(map(str, group.values())),
    }


PANEL = StudyModels(
    roles={"reference": "qwen2.5-coder-0.5b", "second_family": "smollm2-135m", "qk_norm_family": "gemma3-270m"},
    role_definitions=ROLES,
)


def test_claim_97_a_decisive_cell_is_not_thrown_away():
    """The panel's SmolLM2 cell 0.346 [0.260, 0.448] against the paper's 0.044 (8x) was dropped as wider than
    the number, and the size read 'agrees' on the rest."""
    v = claim(97).value("allocation_delta_es")
    rows = [
        _row(0.3461798, 0.2599174, 0.4479760, "smollm2-135m", unit_budget=8, selector="balancing"),
        _row(0.6400779, -0.1692089, 1.4095128, "gemma3-270m", unit_budget=8, selector="balancing"),
    ]
    size = judge(v, rows, PANEL).size
    assert size.status == CONTRADICTED, size
    assert any(d.startswith("smollm2-135m") for d in size.decisive)


def test_claim_44_an_interval_wholly_above_the_paper_contradicts():
    v = claim(44).value("value_aware_case_rate")  # 1.87 % of retrieval rows at s = 8
    rows = [_row(0.0604938, 0.0481481, 0.0722222, "smollm2-135m", budget=8, rows="retrieval")]
    assert judge(v, rows, PANEL).size.status == CONTRADICTED


def test_claim_116_minus_66_7_in_minus_100_to_0_contradicts_a_positive_margin():
    v = claim(116).value("margin_vs_kvzip")
    row = _row(-66.666667, -100.0, 0.0, "smollm2-135m", setting="retrieval", task="niah_single", length=1024)
    row.update(by_key="setting,model,task,length,budget", by_value="retrieval,smollm2-135m,niah_single,1024,128")
    assert judge(v, [row], PANEL).size.status == CONTRADICTED


def test_claim_125_a_wide_interval_around_the_number_no_longer_agrees():
    """Default 125 agreed at 97.2 [80.9, 116.5] against 94: the interval +- tolerance contained it."""
    v = claim(125).value("map_share_of_all_cell_gain")
    default = StudyModels(roles={"reference": "smollm2-135m"}, role_definitions=ROLES)
    size = judge(v, [_row(0.9722793, 0.8085255, 1.1649885, "smollm2-135m")], default).size
    assert size.status != AGREES


def test_claim_109_about_3_is_not_met_by_an_interval_reaching_past_its_20_percent():
    """The panel's Gemma 3.7 [3.53, 3.96] agreed with 'about 3.0' because the 20 % was added to the interval."""
    v = claim(109).value("cache_faithful_median_excess")
    cell = _row(3.6999369, 3.5246817, 3.9630967, "gemma3-270m", rule="sequential", budget=8)
    size = judge(v, [cell], PANEL).size
    assert size.status != AGREES, size
