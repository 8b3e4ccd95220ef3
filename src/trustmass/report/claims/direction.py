"""The direction answer: is the sign, trend or order the paper states reproduced?

The same decision rule as the size (:func:`~trustmass.report.claims.decision.decide`), on a half-line:
positive / negative: each cell against (than, inf) / (-inf, than), ``than`` 0 unless stated.  above /
below: the difference of the cell and the ``than`` value's cell in the same group, against (0, inf).
increasing / decreasing: the last cell minus the first along ``along`` in each series.  order: every pair of
groups the paper gives apart numbers (or ranges).  A difference's interval holds every difference of the two
intervals (:func:`~trustmass.report.claims.decision.difference`), so overlapping intervals cannot decide.
The paper's ``exceptions`` must show the opposite: an exception agrees where its cell disagrees with the
stated direction, and cannot decide where its cell cannot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trustmass.report.claims.axes import BY_CONSTRUCTION, UNINFORMATIVE, Axis, Outcome, fmt, span, tally
from trustmass.report.claims.cells import Cell, StudyModels, matches, matches_any
from trustmass.report.claims.decision import Band, decide, difference
from trustmass.report.claims.model import Value
from trustmass.report.claims.size import number

__all__ = ["describe_conditions", "direction"]

#: a stated order or trend: the difference of the two cells is positive
_UPWARD = Band.above(0.0, True, "> 0")


def _flip(outcome: Outcome, exception: bool) -> Outcome:
    """An exception the paper names must not show the direction: its decided outcome turns round."""
    return (not outcome) if exception and isinstance(outcome, bool) else outcome


def _order_outcome(higher: Cell, lower: Cell) -> tuple[Cell, Outcome]:
    """Is ``higher`` above ``lower``?  The decision rule on their difference (returned with it)."""
    diff = difference(higher, lower)
    return diff, decide(diff, _UPWARD)


def _twin(cell: Cell, candidates: Sequence[Cell]) -> Cell | None:
    """The cell of the compared value in the same group: it agrees on every dimension both carry (a rule's
    (model, rule, budget) cell meets top-mass's (model, budget) cell), and on the models where neither names
    one.  None when no candidate, or more than one equally close, matches."""

    def shared(other: Cell) -> int | None:
        common = set(cell.group) & set(other.group)
        if any(cell.group[k] != other.group[k] for k in common):
            return None
        if "model" not in common and set(cell.models) != set(other.models):
            return None
        return len(common)

    scored = [(shared(o), o) for o in candidates]
    scored = [(n, o) for n, o in scored if n is not None]
    if not scored:
        return None
    best = max(n for n, _ in scored)
    closest = [o for n, o in scored if n == best]
    return closest[0] if len(closest) == 1 else None


def _rest(cell: Cell, dim: str | None) -> tuple:
    return tuple(sorted((k, v) for k, v in cell.group.items() if k != dim))


def direction(
    value: Value, cells: Sequence[Cell], others: Mapping[str, Sequence[Cell]], models: StudyModels
) -> Axis | None:
    """The direction answer over the value's cells (None: the paper states no direction)."""
    stated = value.stated_direction
    if stated is None:
        return None
    if value.by_construction:
        return Axis(BY_CONSTRUCTION, value.by_construction, stated)

    def exception(c: Cell) -> bool:
        return bool(value.exceptions) and matches_any(c, value.exceptions, models)

    note = (
        f"; the paper's exceptions ({describe_conditions(value.exceptions)}) must not show it"
        if value.exceptions
        else ""
    )
    if stated in ("positive", "negative"):
        threshold = float(value.than) if value.than is not None else 0.0
        strict = value.strict or value.direction is not None
        side = (
            Band.above(threshold, strict, f"> {fmt(threshold)}")
            if stated == "positive"
            else Band.below(threshold, strict, f"< {fmt(threshold)}")
        )
        out = [_flip(decide(c, side), exception(c)) for c in cells]
        return tally("sign", out, f"regenerated {span(cells)}: {side.text()} stated{note}", cells)
    if stated in ("above", "below"):
        out: list[Outcome] = []
        compared: list[Cell] = []
        for c in cells:
            twin = _twin(c, others.get(value.than, []))
            if twin is None:
                compared.append(c)
                out.append(f"{c.label()}: no {value.than} cell in the same group to compare with")
                continue
            higher, lower = (c, twin) if stated == "above" else (twin, c)
            diff, got = _order_outcome(higher, lower)
            compared.append(diff)
            out.append(_flip(got, exception(c)))
        return tally("order", out, f"{value.name} {stated} {value.than}{note}", compared)
    if stated in ("increasing", "decreasing"):
        series: dict[tuple, list[Cell]] = {}
        for c in cells:
            if value.along in c.group:
                series.setdefault(_rest(c, value.along), []).append(c)
        runs = [sorted(s, key=lambda c: number(c.group[value.along])) for s in series.values() if len(s) >= 2]
        if not runs:
            return Axis(UNINFORMATIVE, f"no group has two {value.along} values to show a trend", "trend")
        decided = [_order_outcome(s[-1], s[0]) if stated == "increasing" else _order_outcome(s[0], s[-1]) for s in runs]
        ends = "; ".join(f"{fmt(s[0].estimate)} → {fmt(s[-1].estimate)}" for s in runs[:4])
        return tally("trend", [o for _, o in decided], f"{stated} along {value.along}: {ends}", [d for d, _ in decided])
    return _order(value, cells, models)


def _order(value: Value, cells: Sequence[Cell], models: StudyModels) -> Axis:
    """direction: order -- every pair of groups the paper gives different numbers comes out in its order."""
    dim = value.along
    stated = {
        k: (tuple(map(float, e)) if isinstance(e, tuple) else (float(e), float(e)))
        for k, e in value.by.get(dim, {}).items()
    }
    series: dict[tuple, dict[Any, Cell]] = {}
    for c in cells:
        for key in stated:
            if matches(c, dim, key, models):
                series.setdefault(_rest(c, dim), {})[key] = c
    decided: list[tuple[Cell, Outcome]] = []
    # a pair is ordered where the paper's numbers (or ranges, end to end) are apart
    pairs = [(a, b) for a in stated for b in stated if stated[a][0] > stated[b][1]]
    for groups in series.values():
        decided += [_order_outcome(groups[a], groups[b]) for a, b in pairs if a in groups and b in groups]
    if not decided:
        return Axis(UNINFORMATIVE, f"no two of the paper's {dim} groups were regenerated side by side", "order")
    order = " > ".join(str(k) for k in sorted(stated, key=lambda k: -sum(stated[k])))
    return tally("order", [o for _, o in decided], f"the paper's order {order}", [d for d, _ in decided])


def describe_conditions(conditions: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}: {'/'.join(map(str, v)) if isinstance(v, tuple) else v}" for k, v in conditions.items())
