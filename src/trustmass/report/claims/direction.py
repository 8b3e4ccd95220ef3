"""The direction answer: is the sign, trend or order the paper states reproduced?

positive / negative: each cell on the stated side of 0 (or of ``than``); an interval reaching it leaves
the cell uninformative.  above / below: each cell against the cell of the ``than`` value in the same
group.  increasing / decreasing: the first and last cell along ``along`` in each series.  order: every
pair of groups the paper gives apart numbers (or ranges) comes out in its order.  Overlapping intervals
leave an order open.  The paper's ``exceptions`` must not show the direction (significantly).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from trustmass.report.claims.axes import BY_CONSTRUCTION, UNINFORMATIVE, Axis, Outcome, fmt, interval, span, tally
from trustmass.report.claims.cells import Cell, StudyModels, matches, matches_any
from trustmass.report.claims.model import Value
from trustmass.report.claims.size import number

__all__ = ["describe_conditions", "direction"]


def _sign_outcome(cell: Cell, threshold: float, positive: bool, strict: bool, exception: bool) -> Outcome:
    """Is the cell on the stated side of ``threshold``?  An exception must *not* be (significantly) there."""
    problem = cell.uninformative or (None if math.isfinite(cell.estimate) else f"the estimate is {cell.estimate:g}")
    if problem:
        return problem
    crosses = cell.crosses(threshold)
    side = (
        (cell.estimate > threshold or (not strict and cell.estimate == threshold))
        if positive
        else (cell.estimate < threshold or (not strict and cell.estimate == threshold))
    )
    if exception:
        return crosses or not side
    if crosses:
        return f"{cell.label()}: its 95 % interval {interval(cell)} includes {fmt(threshold)}"
    return side


def _order_outcome(a: Cell, b: Cell) -> Outcome:
    """Is a above b?  Overlapping intervals leave the order open."""
    for c in (a, b):
        if c.uninformative:
            return c.uninformative
        if not math.isfinite(c.estimate):
            return f"the estimate is {c.estimate:g}"
    if a.overlaps(b):
        return f"{a.label()}: the intervals {interval(a)} and {interval(b)} overlap"
    return a.estimate > b.estimate


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
        out = [_sign_outcome(c, threshold, stated == "positive", strict, exception(c)) for c in cells]
        side = ">" if stated == "positive" else "<"
        return tally("sign", out, f"regenerated {span(cells)}: {side} {fmt(threshold)} stated{note}")
    if stated in ("above", "below"):
        other = {tuple(sorted(c.group.items())): c for c in others.get(value.than, [])}
        out: list[Outcome] = []
        for c in cells:
            twin = other.get(tuple(sorted(c.group.items())))
            if twin is None:
                continue
            higher, lower = (c, twin) if stated == "above" else (twin, c)
            got = _order_outcome(higher, lower)
            out.append((not got) if exception(c) and isinstance(got, bool) else got)
        if not out:
            return Axis(UNINFORMATIVE, f"no cell of {value.than} in the same group to compare with", stated)
        return tally("order", out, f"{value.name} {stated} {value.than}{note}")
    if stated in ("increasing", "decreasing"):
        series: dict[tuple, list[Cell]] = {}
        for c in cells:
            if value.along in c.group:
                series.setdefault(_rest(c, value.along), []).append(c)
        runs = [sorted(s, key=lambda c: number(c.group[value.along])) for s in series.values() if len(s) >= 2]
        if not runs:
            return Axis(UNINFORMATIVE, f"no group has two {value.along} values to show a trend", "trend")
        out = [_order_outcome(s[-1], s[0]) if stated == "increasing" else _order_outcome(s[0], s[-1]) for s in runs]
        ends = "; ".join(f"{fmt(s[0].estimate)} → {fmt(s[-1].estimate)}" for s in runs[:4])
        return tally("trend", out, f"{stated} along {value.along}: {ends}")
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
    out: list[Outcome] = []
    # a pair is ordered where the paper's numbers (or ranges, end to end) are apart
    pairs = [(a, b) for a in stated for b in stated if stated[a][0] > stated[b][1]]
    for groups in series.values():
        out += [_order_outcome(groups[a], groups[b]) for a, b in pairs if a in groups and b in groups]
    if not out:
        return Axis(UNINFORMATIVE, f"no two of the paper's {dim} groups were regenerated side by side", "order")
    order = " > ".join(str(k) for k in sorted(stated, key=lambda k: -sum(stated[k])))
    return tally("order", out, f"the paper's order {order}")


def describe_conditions(conditions: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}: {'/'.join(map(str, v)) if isinstance(v, tuple) else v}" for k, v in conditions.items())
