"""Every judged claim value can fail (issue 36, item 4).

For every declaration of every stage (``trustmass.report.declared``), a statistics frame is built with the
declaration's own columns -- its group keys set to the groups the claims file states the value for, its
estimate column to a number -- and read through the declaration (:func:`rows_from_frame`) into the claims
report's judge:

* a frame on which the paper's statement holds agrees;
* a frame on which it is false -- the paper's number moved off, a stated direction reversed -- inside the values
  the statistic can take (the declaration's ``domain``) is contradicted;
* where no such frame exists (the statement covers the whole domain), the claims file marks the value
  ``by_construction`` (a direction) or ``configured`` (a size), with the config keys that set it.

A declaration whose keys cannot carry the groups its value is stated for, or whose frame rows never pass the
value's filters, fails here: it could never have answered."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import polars as pl
import pytest
from stated_numbers import stated_numbers

from trustmass.report.claims.axes import AGREES, CONTRADICTED
from trustmass.report.claims.data import claim, model_roles
from trustmass.report.claims.model import Value
from trustmass.report.claims.report import JUDGED_POPULATIONS
from trustmass.report.claims.size import band as band_of
from trustmass.report.claims.verdicts import StudyModels, judge
from trustmass.report.declared import declarations
from trustmass.report.headline import HeadlineValue, rows_from_frame

ROLES = model_roles()
#: every role played by a run model of its own, none of them the paper's checkpoint
RUN = StudyModels(roles={name: f"run-{name}" for name in ROLES}, role_definitions=ROLES)
#: a group value for a key the claim states nothing about
DEFAULTS = {"budget": 8, "unit_budget": 8, "group_size": 2, "length": 1024, "setting": "retrieval", "device": "cuda"}
SPECS = [spec for specs in declarations().values() for spec in specs]


def _id(spec: HeadlineValue) -> str:
    return f"{spec.claim}-{spec.value}-{spec.source}"


def _value(spec: HeadlineValue) -> Value:
    return claim(spec.claim).value(spec.value)


def _first(x: Any) -> Any:
    return x[0] if isinstance(x, tuple) else x


def _run_model(x: Any) -> Any:
    return RUN.run_model_for(str(x)) or x


def _group(spec: HeadlineValue, value: Value, **fixed: Any) -> dict[str, Any]:
    """Values for the declaration's keys that meet the value's filters (``fixed`` first)."""
    out = {}
    for key in spec.keys:
        if key in fixed:
            x = fixed[key]
        elif key in value.where:
            x = _first(value.where[key])
        elif value.by and key == value.by_dimension():
            x = next(iter(value.by[key]))
        elif key == "model":
            x = "Qwen2.5-1.5B"
        else:
            x = DEFAULTS.get(key, "x")
        out[key] = _run_model(x) if key == "model" else x
    return out


def _population(spec: HeadlineValue) -> str:
    return JUDGED_POPULATIONS.get(claim(spec.claim).population, ("all",))[0]


def _frame(spec: HeadlineValue, cells: list[tuple[dict, float]]) -> pl.DataFrame:
    """The declaration's frame: one row per (group, estimate); a zero-width interval where it reads one."""
    rows = []
    for group, est in cells:
        rec = {"population": _population(spec), **{k: str(v) for k, v in group.items()}, spec.column: est}
        rec[spec.n_column] = 10
        if spec.ci:
            rec[f"{spec.column}_low"] = rec[f"{spec.column}_high"] = est
        if spec.flag:
            rec[spec.flag] = None
        for name in spec.context:
            rec[name] = 8.0
        if "model" not in group:  # the study-wide row's models: those the value is stated for
            rec["models"] = _run_model(_first(_value(spec).where.get("model", "Qwen2.5-1.5B")))
        rows.append(rec)
    return pl.DataFrame(rows, infer_schema_length=None)


def _resolved(spec: HeadlineValue) -> HeadlineValue:
    """The declaration with a symbolic ``at`` (the map budget) resolved as a run does."""
    return replace(spec, at={k: (8 if v == "map" else v) for k, v in spec.at.items()})


def _judge(spec: HeadlineValue, cells: list[tuple[dict, float]], others: Mapping | None = None):
    rows = rows_from_frame(_resolved(spec), _frame(spec, cells))
    return judge(_value(spec), rows, RUN, others=others or {})


def _scale(value: Value) -> float:
    return 100.0 if value.unit == "percent" else 1.0


def _inside(value: Value, stated: Any) -> float:
    """A number inside the band of a stated number or range (in the claim's unit)."""
    b = band_of(_as_value(value, stated))
    if math.isfinite(b.low) and math.isfinite(b.high):
        return (b.low + b.high) / 2
    edge = b.low if math.isfinite(b.low) else b.high
    step = max(abs(edge) * 0.01, 1e-6)
    return edge + step if math.isfinite(b.low) else edge - step


def _as_value(value: Value, stated: Any) -> Value:
    plain = replace(value, by={}, extreme=None)
    if isinstance(stated, tuple):
        return replace(plain, kind="range", low=stated[0], high=stated[1], value=None)
    kind = "point" if value.kind in ("range", "ci_within") else value.kind
    return replace(plain, kind=kind, value=stated, low=None, high=None)


def _outside(value: Value, stated: Any, domain: tuple[float, float]) -> float | None:
    """A number outside the stated band that the statistic can take (its domain, in the claim's unit); None
    when the band covers the whole domain."""
    b = band_of(_as_value(value, stated))
    lo, hi = domain[0] * _scale(value), domain[1] * _scale(value)
    candidates = []
    if math.isfinite(b.high) and hi > b.high:
        candidates.append(min(hi, b.high + max(abs(b.high), 1.0)))
    if math.isfinite(b.low) and lo < b.low:
        candidates.append(max(lo, b.low - max(abs(b.low), 1.0)))
    candidates = [c for c in candidates if not b.holds(c) and lo <= c <= hi]
    return candidates[0] if candidates else None


def _cells(spec: HeadlineValue, value: Value, estimates: list[tuple[Any, float]]) -> list[tuple[dict, float]]:
    dim = value.by_dimension()
    cells = []
    for key, est in estimates:
        fixed = {dim: key} if key is not None and dim else {}
        cells.append((_group(spec, value, **fixed), est / _scale(value)))
    return cells


SIZED = [
    s
    for s in SPECS
    if _value(s).has_size
    and _value(s).role != "parameter"
    and _value(s).configured is None
    and _value(s).formula is None
    and stated_numbers(_value(s))
]


@pytest.mark.parametrize("spec", SIZED, ids=[_id(s) for s in SIZED])
def test_a_frame_that_meets_the_paper_agrees_and_one_that_misses_it_is_contradicted(spec):
    value = _value(spec)
    stated = stated_numbers(value)
    if value.by and (value.by_dimension() in spec.keys or value.by_dimension() == "model"):
        stated = [(k, x) for k, x in stated if k is not None] or stated  # the groups carry the overall number
    else:
        stated = [(k, x) for k, x in stated if k is None]  # the declaration reads the overall number only
    if value.kind == "ci_within":
        pytest.skip("a stated interval: judged on the interval itself (test_verdicts covers it)")
    good = [(k, _inside(value, x)) for k, x in stated]
    verdict = _judge(spec, _cells(spec, value, good))
    carried = not value.by or value.by_dimension() in (*spec.keys, *spec.at, "model")
    expected = (AGREES,) if carried else (AGREES, "partial")  # groups of a dimension the frame lacks: unanswered
    assert verdict.size is not None and verdict.size.status in expected, (_id(spec), verdict.size)
    key, x = stated[0]
    off = _outside(value, x, spec.domain)
    if off is None:
        assert value.configured or value.by_construction, (
            f"{_id(spec)}: the paper's {x} covers the statistic's whole domain {spec.domain}: it cannot fail; "
            "mark it configured or by_construction with its config_keys"
        )
        return
    bad = [(k, off if k == key else est) for k, est in good]
    verdict = _judge(spec, _cells(spec, value, bad))
    assert verdict.size.status == CONTRADICTED, (_id(spec), off, verdict.size)


SIGNED = [s for s in SPECS if _value(s).stated_direction in ("positive", "negative") and not _value(s).by_construction]


@pytest.mark.parametrize("spec", SIGNED, ids=[_id(s) for s in SIGNED])
def test_a_stated_sign_agrees_and_the_opposite_sign_is_contradicted(spec):
    value = _value(spec)
    t = float(value.than) if value.than is not None else 0.0
    side = 1.0 if value.stated_direction == "positive" else -1.0
    lo, hi = (d * _scale(value) for d in spec.domain)
    step = max(abs(t), 1.0) * 0.5
    right, wrong = t + side * step, t - side * step
    group = _group(spec, value)
    assert _judge(spec, [(group, right / _scale(value))]).direction.status == AGREES, _id(spec)
    if not lo <= wrong <= hi:
        wrong = lo if side > 0 else hi
    if (side > 0 and wrong > t) or (side < 0 and wrong < t) or not math.isfinite(wrong):
        assert value.by_construction, f"{_id(spec)}: no value in the domain {spec.domain} reverses the sign"
        return
    assert _judge(spec, [(group, wrong / _scale(value))]).direction.status == CONTRADICTED, _id(spec)


#: a trend, per value: the declaration whose keys carry the dimension it runs along (a value may also have a
#: study-wide total, which the trend does not read)
TRENDS = {
    (s.claim, s.value): [t for t in SPECS if (t.claim, t.value) == (s.claim, s.value)]
    for s in SPECS
    if _value(s).stated_direction in ("increasing", "decreasing") and not _value(s).by_construction
}


@pytest.mark.parametrize("key", TRENDS, ids=[f"{c}-{v}" for c, v in TRENDS])
def test_a_stated_trend_agrees_and_the_reversed_trend_is_contradicted(key):
    value = claim(key[0]).value(key[1])
    along = value.along
    carrying = [s for s in TRENDS[key] if along in s.keys]
    assert carrying, f"{key}: the trend runs along {along}, which no declaration's keys carry"
    spec = carrying[0]
    keys = list(value.by.get(along, {})) or [4, 32]
    rising = value.stated_direction == "increasing"
    lo, hi = spec.domain
    a, b = (0.25, 0.75) if (lo >= 0 and hi <= 1) else (1.0, 2.0)
    first, last = (a, b) if rising else (b, a)
    cells = [(_group(spec, value, **{along: keys[0]}), first), (_group(spec, value, **{along: keys[1]}), last)]
    assert _judge(spec, cells).direction.status == AGREES, _id(spec)
    reversed_cells = [(cells[0][0], last), (cells[1][0], first)]
    assert _judge(spec, reversed_cells).direction.status == CONTRADICTED, _id(spec)


COMPARED = [s for s in SPECS if _value(s).stated_direction in ("above", "below") and not _value(s).by_construction]


def _twin(spec: HeadlineValue) -> HeadlineValue:
    """The declaration of the value a comparison is stated against (``than``), from the same stage."""
    than = _value(spec).than
    found = [t for t in SPECS if t.claim == spec.claim and t.value == than]
    assert found, f"{_id(spec)}: compared with {than}, which no declaration produces"
    return next((t for t in found if t.source == spec.source), found[0])


@pytest.mark.parametrize("spec", COMPARED, ids=[_id(s) for s in COMPARED])
def test_a_stated_comparison_agrees_and_the_reversed_one_is_contradicted(spec):
    value, twin = _value(spec), _twin(spec)
    lo, hi = spec.domain
    small, large = (0.25, 0.75) if (lo >= 0 and hi <= 1) else (1.0, 2.0)
    group = _group(spec, value)
    twin_group = _group(twin, _value(twin), **{k: v for k, v in group.items() if k in twin.keys})
    above = value.stated_direction == "above"

    def verdict(mine: float, theirs: float):
        others = {value.than: rows_from_frame(_resolved(twin), _frame(twin, [(twin_group, theirs)]))}
        return _judge(spec, [(group, mine)], others).direction.status

    assert verdict(large, small) == (AGREES if above else CONTRADICTED), _id(spec)
    assert verdict(small, large) == (CONTRADICTED if above else AGREES), _id(spec)


ORDERED = [s for s in SPECS if _value(s).stated_direction == "order" and not _value(s).by_construction]


@pytest.mark.parametrize("spec", ORDERED, ids=[_id(s) for s in ORDERED])
def test_a_stated_order_agrees_and_the_reversed_order_is_contradicted(spec):
    value = _value(spec)
    along = value.along
    assert along in spec.keys or along == "model", f"{_id(spec)}: the order is along {along}, not a key"
    mids = {k: (sum(map(float, e)) / 2 if isinstance(e, tuple) else float(e)) for k, e in value.by[along].items()}
    cells = [(_group(spec, value, **{along: k}), m / _scale(value)) for k, m in mids.items()]
    assert _judge(spec, cells).direction.status == AGREES, _id(spec)
    flipped = [(g, -m) for g, m in cells]
    assert _judge(spec, flipped).direction.status == CONTRADICTED, _id(spec)


def test_every_declaration_reads_an_existing_claim_value_once():
    seen = set()
    for spec in SPECS:
        _value(spec)  # KeyError naming the claim's values
        key = (
            spec.claim,
            spec.value,
            spec.source,
            spec.keys,
            tuple(sorted((k, str(v)) for k, v in spec.where.items())),
        )
        assert key not in seen, key
        seen.add(key)
