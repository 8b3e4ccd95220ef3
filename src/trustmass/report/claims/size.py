"""The size answer: is a regenerated number within the paper's value or range?

Each kind of statement becomes a :class:`~trustmass.report.claims.decision.Band` and every cell is judged by
the one decision rule (:func:`~trustmass.report.claims.decision.decide`): its whole 95 % interval inside the
band agrees, wholly outside disagrees, across an edge cannot decide.  A printed number is widened by
:func:`~trustmass.report.claims.model.tolerance` (half a unit of its printed digits, at most 10 % of the
number; 20 % for "about X"); a bound is a half-line; a count, a ratio and an identity are exact.  The kinds
are listed in :mod:`trustmass.report.claims.verdicts`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from fractions import Fraction
from typing import Any

from trustmass.report.claims.axes import (
    ANSWERED,
    NOT_PRODUCED,
    UNINFORMATIVE,
    Axis,
    Outcome,
    combine,
    decisive_of,
    fmt,
    span,
    tally,
)
from trustmass.report.claims.cells import Cell, StudyModels, matches
from trustmass.report.claims.decision import Band, decide
from trustmass.report.claims.model import Value, evaluate_formula, tolerance

__all__ = ["IDENTITY_RELATIVE", "band", "number", "range_over_groups", "size", "size_function"]

#: an identity holds to this relative precision (float64 arithmetic)
IDENTITY_RELATIVE = 1e-12


def number(x: str) -> float | str:
    """A group key as a number where it is one (budgets, group sizes), else the text."""
    try:
        return float(x)
    except ValueError:
        return x


def _scale(value: Value) -> float | None:
    """The claim's own scale: the magnitude of the stated number (or range end).  An interval wider than it
    cannot establish a bound (:func:`~trustmass.report.claims.decision.decide`)."""
    if value.kind in ("range", "ci_within") and value.low is not None:
        numbers = [float(value.low), float(value.high)]
    elif value.value is not None:
        numbers = [float(value.value)]
    else:
        return None
    return max(abs(n) for n in numbers) or None


def _exact_target(value: Value) -> float:
    return float(value.exact) if value.exact is not None else float(value.value)


def band(value: Value, bound: float | None = None) -> Band:
    """The paper's statement of ``value`` as a band (``bound``: a formula bound evaluated at one cell)."""
    kind = value.kind
    if kind in ("range", "ci_within"):
        lo, hi = float(value.low), float(value.high)
        return Band.around(lo, hi, tolerance(value.low), tolerance(value.high), f"{fmt(lo)}–{fmt(hi)}")
    if kind in ("upper", "lower"):
        limit = float(value.value) if bound is None else bound
        stated = value.formula or fmt(limit)
        if kind == "upper":
            return Band.below(limit, value.strict, f"{'<' if value.strict else '≤'} {stated}")
        return Band.above(limit, value.strict, f"{'>' if value.strict else '≥'} {stated}")
    if kind in ("count", "ratio", "identity") or value.exact is not None:
        target = _exact_target(value)
        slack = IDENTITY_RELATIVE * max(1.0, abs(target)) if kind == "identity" or value.exact is not None else 0.0
        stated = str(value.exact) if value.exact is not None else fmt(target)
        return Band.around(target, target, slack, slack, stated + (f" of {value.of}" if value.of else ""))
    target, slack = float(value.value), tolerance(value.value, value.approx)
    return Band.around(target, target, slack, slack, f"{'≈ ' if value.approx else ''}{fmt(target)} ± {slack:g}")


def _judged(kind: str, cells: Sequence[Cell], outcomes: list[Outcome], against: str) -> Axis:
    return tally(kind, outcomes, f"regenerated {span(cells)} vs {against}", cells)


def size_band(value: Value, cells: Sequence[Cell]) -> Axis:
    """range, point, count, ratio, identity: every cell against the one band."""
    b = band(value)
    return _judged(value.kind, cells, [decide(c, b, _scale(value)) for c in cells], f"{b.stated}: {b.text()}")


def size_ci_within(value: Value, cells: Sequence[Cell]) -> Axis:
    """The paper bounds an interval: a cell without one cannot decide."""
    b = band(value)

    def outcome(c: Cell) -> Outcome:
        if not c.has_interval:
            return f"{c.label()}: no 95 % interval was regenerated (statistics.bootstrap = 0?)"
        return decide(c, b)

    return _judged("ci_within", cells, [outcome(c) for c in cells], f"intervals inside {b.text()}")


def size_bound(value: Value, cells: Sequence[Cell]) -> Axis:
    """upper / lower: a half-line, at the stated number or the formula evaluated at each cell's instance."""
    if value.formula is not None:
        if any(c.context is None for c in cells):
            return Axis(
                UNINFORMATIVE, f"the bound {value.formula} needs each instance's quantities (context)", value.kind
            )
        bands = [band(value, evaluate_formula(value.formula, **c.context)) for c in cells]
    else:
        bands = [band(value)] * len(cells)
    outcomes = [decide(c, b, _scale(value)) for c, b in zip(cells, bands)]
    return _judged(value.kind, cells, outcomes, bands[0].stated if bands else "")


def size_point(value: Value, cells: Sequence[Cell]) -> Axis:
    """A point; ``extreme: max|min`` ("up to X", "as few as X") judges the largest / smallest cell."""
    if value.extreme is None:
        return size_band(value, cells)
    b = band(value)
    finite = [c for c in cells if not c.uninformative]
    if not finite:
        return tally("point", [c.uninformative for c in cells], "")
    pick = max if value.extreme == "max" else min
    cell = pick(finite, key=lambda c: c.estimate)
    what = "largest" if value.extreme == "max" else "smallest"
    return _judged("point", [cell], [decide(cell, b)], f"{b.stated} ({what} of {len(finite)} cells)")


_BY_KIND = {
    "range": size_band,
    "ci_within": size_ci_within,
    "upper": size_bound,
    "lower": size_bound,
    "count": size_band,
    "ratio": size_band,
    "identity": size_band,
    "point": size_point,
}


def size_function(value: Value) -> Callable[[Value, Sequence[Cell]], Axis]:
    """The size comparison for a value's kind (a point stated as an exact fraction is an identity)."""
    if value.kind == "point" and value.exact is not None:
        return size_band
    return _BY_KIND[value.kind]


def range_over_groups(value: Value) -> bool:
    """An overall range stated beside per-group numbers spans every group ("1.06-1.22: 1.06/1.12/...
    at group sizes 2/4/5/6"); an overall number is a total over them ("46 = 0/2/8/36")."""
    return value.kind in ("range", "ci_within") and value.low is not None and value.high is not None


def _group_value(value: Value, entry: Any) -> Value:
    """The value stated for one group of ``by``: a [low, high] pair is a range, a fraction an identity,
    a number the group's point (or count, bound, ...) value."""
    plain = replace(value, by={})
    if isinstance(entry, tuple):
        return replace(
            plain, kind="range" if value.kind != "ci_within" else "ci_within", value=None, low=entry[0], high=entry[1]
        )
    if isinstance(entry, Fraction):
        return replace(plain, kind="identity", value=float(entry), exact=entry, low=None, high=None)
    kind = "point" if value.kind in ("range", "ci_within") else value.kind
    return replace(plain, kind=kind, value=entry, low=None, high=None, extreme=None)


def size(value: Value, cells: Sequence[Cell], models: StudyModels) -> Axis:
    """The size answer over the value's cells (per group of ``by``, and the overall number if stated).  A
    group the paper states and the run did not regenerate is an item without an answer, never dropped."""
    if not value.by:
        return size_function(value)(value, cells)
    dim = value.by_dimension()
    parts: list[tuple[str, Axis]] = []
    plain = replace(value, by={})
    notes = []
    if range_over_groups(value):  # a range spans every group inside the paper's span of groups
        inside, outside = _within_span(value, cells)
        notes += [f"{dim}={c.group[dim]} lies outside the paper's {_span_text(value)}: not judged" for c in outside]
        if inside:
            parts.append(("every group", size_function(plain)(plain, inside)))
    elif value.value is not None or value.formula is not None:  # a total: the rows without the group
        total = [c for c in cells if dim not in c.group]
        if total:
            parts.append(("overall", size_function(plain)(plain, total)))
    for key, entry in value.by.get(dim, {}).items():
        group = [c for c in cells if dim in c.group or dim == "model"]
        group = [c for c in group if matches(c, dim, key, models)]
        if group:
            sub = _group_value(value, entry)
            parts.append((f"{dim}={key}", size_function(sub)(sub, group)))
        else:
            parts.append((f"{dim}={key}", Axis(NOT_PRODUCED, _missing_group(dim, key, models))))
    status = combine([a.status for _, a in parts])
    reason = "; ".join([*(f"{name}: {a.status} ({a.reason})" for name, a in parts), *notes])
    return Axis(
        status,
        reason,
        "/".join(sorted({a.kind for _, a in parts if a.kind})),
        sum(a.status in ANSWERED for _, a in parts),
        len(parts),
        decisive_of([a for _, a in parts], status),
    )


def _missing_group(dim: str, key: Any, models: StudyModels) -> str:
    """Why a group the paper states has no regenerated cell."""
    if dim == "model" and models.run_model_for(str(key)) is None:
        role = models.role_of(str(key))
        return f"no study model takes the role{f' {role.name}' if role else ''}"
    return "no regenerated cell"


def _numeric_keys(value: Value) -> list[float] | None:
    try:
        return [float(k) for k in value.by.get(value.by_dimension(), {})]
    except (TypeError, ValueError):
        return None


def _within_span(value: Value, cells: Sequence[Cell]) -> tuple[list[Cell], list[Cell]]:
    """Cells inside the span of the paper's numeric groups (group sizes 2-6), and those outside it
    (group size 7): a range stated over groups 2-6 says nothing of 7."""
    dim, keys = value.by_dimension(), _numeric_keys(value)
    if keys is None:
        return list(cells), []
    inside, outside = [], []
    for c in cells:
        key = number(c.group.get(dim, "")) if dim in c.group else None
        (outside if isinstance(key, float) and not min(keys) <= key <= max(keys) else inside).append(c)
    return inside, outside


def _span_text(value: Value) -> str:
    keys = _numeric_keys(value) or []
    return f"{value.by_dimension()} {fmt(min(keys))}-{fmt(max(keys))}" if keys else value.by_dimension()
