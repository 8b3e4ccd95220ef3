"""The size answer: is a regenerated number within the paper's value or range?

A number is met within :func:`~trustmass.report.claims.model.tolerance` (half a unit of its printed
digits, at most 10 % of the number; 20 % for "about X").  A cell cannot answer (:func:`cell_problem`)
when the producer flagged it, its estimate is infinite, its 95 % interval is wider than the claim's own
scale, or crosses zero where the stated number's sign is definite.  The kinds are listed in
:mod:`trustmass.report.claims.verdicts`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from fractions import Fraction
from typing import Any

from trustmass.report.claims.axes import (
    AGREES,
    DISAGREES,
    UNINFORMATIVE,
    Axis,
    Outcome,
    combine,
    fmt,
    interval,
    span,
    tally,
)
from trustmass.report.claims.cells import Cell, StudyModels, matches
from trustmass.report.claims.model import Value, evaluate_formula, tolerance

__all__ = ["IDENTITY_RELATIVE", "cell_problem", "number", "range_over_groups", "size", "size_function"]

#: an identity holds to this relative precision (float64 arithmetic)
IDENTITY_RELATIVE = 1e-12


def number(x: str) -> float | str:
    """A group key as a number where it is one (budgets, group sizes), else the text."""
    try:
        return float(x)
    except ValueError:
        return x


def _scale(value: Value, target: Any = None) -> float | None:
    """The claim's own scale: the magnitude of the stated number (or range end); an interval wider than
    it cannot place the regenerated number against the paper's.  None where no interval is compared."""
    if target is not None:
        numbers = [float(t) for t in target] if isinstance(target, tuple) else [float(target)]
    elif value.kind in ("range", "ci_within") and value.low is not None:
        numbers = [float(value.low), float(value.high)]
    elif value.value is not None and value.kind in ("point", "upper", "lower"):
        numbers = [float(value.value)]
    else:
        return None
    scale = max(abs(n) for n in numbers)
    return scale or None


def _signed(low: float, high: float) -> bool:
    """A stated number (or range) whose sign is definite: an interval across zero leaves its size open."""
    return low > 0 or high < 0


def cell_problem(cell: Cell, scale: float | None = None, sign: bool = False) -> str | None:
    """Why a cell cannot answer a size question, or None: the producer's reason, an infinite estimate,
    an interval wider than ``scale``, or across zero where the sign is definite (``sign``)."""
    if cell.uninformative:
        return cell.uninformative
    if not math.isfinite(cell.estimate):
        return f"the estimate is {cell.estimate:g}"
    if cell.has_interval and scale is not None and cell.width > scale:
        return f"{cell.label()}: its 95 % interval {interval(cell)} is wider than the claim's scale ({fmt(scale)})"
    if sign and cell.crosses(0.0):
        return f"{cell.label()}: its 95 % interval {interval(cell)} crosses 0"
    return None


def _outcomes(cells: Sequence[Cell], meets: Callable[[Cell], bool], scale: float | None, sign: bool) -> list[Outcome]:
    return [cell_problem(c, scale, sign) or meets(c) for c in cells]


def size_range(value: Value, cells: Sequence[Cell]) -> Axis:
    lo, hi = float(value.low), float(value.high)
    lo_tol, hi_tol = lo - tolerance(value.low), hi + tolerance(value.high)
    out = _outcomes(cells, lambda c: lo_tol <= c.estimate <= hi_tol, _scale(value), _signed(lo, hi))
    return tally("range", out, f"regenerated {span(cells)} vs [{fmt(lo)}, {fmt(hi)}]")


def size_ci_within(value: Value, cells: Sequence[Cell]) -> Axis:
    lo_tol, hi_tol = float(value.low) - tolerance(value.low), float(value.high) + tolerance(value.high)

    def outcome(c: Cell) -> Outcome:
        if not c.has_interval:
            return f"{c.label()}: no 95 % interval was regenerated (statistics.bootstrap = 0?)"
        return cell_problem(c) or (lo_tol <= c.low and c.high <= hi_tol)

    with_ci = [c for c in cells if c.has_interval]
    widest = f"[{fmt(min(c.low for c in with_ci))}, {fmt(max(c.high for c in with_ci))}]" if with_ci else "none"
    return tally(
        "ci_within",
        [outcome(c) for c in cells],
        f"intervals span {widest} vs inside [{fmt(float(value.low))}, {fmt(float(value.high))}]",
    )


def _targets(value: Value, cells: Sequence[Cell]) -> list[float] | None:
    """The bound per cell: the stated number, or the formula at each cell's instance."""
    if value.formula is None:
        return [float(value.value)] * len(cells)
    if any(c.context is None for c in cells):
        return None
    return [evaluate_formula(value.formula, **c.context) for c in cells]


def size_bound(value: Value, cells: Sequence[Cell]) -> Axis:
    upper = value.kind == "upper"
    targets = _targets(value, cells)
    if targets is None:
        return Axis(UNINFORMATIVE, f"the bound {value.formula} needs each instance's quantities (context)", value.kind)

    def meets(c: Cell, t: float) -> bool:
        if upper:
            return c.estimate < t if value.strict else c.estimate <= t
        return c.estimate > t if value.strict else c.estimate >= t

    out = [cell_problem(c) or meets(c, t) for c, t in zip(cells, targets)]
    sign = ("<" if value.strict else "≤") if upper else (">" if value.strict else "≥")
    bound = value.formula or fmt(float(value.value))
    return tally(value.kind, out, f"regenerated {span(cells)}, needs {sign} {bound}")


def size_exact(value: Value, cells: Sequence[Cell]) -> Axis:
    """count, ratio, identity: equal to the stated number (identities to 1e-12 relative)."""
    target = float(value.exact) if value.exact is not None else float(value.value)
    tol = IDENTITY_RELATIVE * max(1.0, abs(target)) if value.kind == "identity" or value.exact is not None else 0.0
    out = [cell_problem(c) or abs(c.estimate - target) <= tol for c in cells]
    stated = str(value.exact) if value.exact is not None else fmt(target)
    of = f" of {value.of}" if value.of else ""
    return tally(value.kind, out, f"regenerated {sorted({fmt(c.estimate) for c in cells})} vs {stated}{of}")


def size_point(value: Value, cells: Sequence[Cell]) -> Axis:
    target = float(value.value)
    tol = tolerance(value.value, value.approx)
    scale, sign = _scale(value), _signed(target, target)
    if value.extreme is not None:
        pick = max if value.extreme == "max" else min
        usable = [c for c in cells if cell_problem(c) is None]
        if not usable:
            return tally("point", [cell_problem(c) for c in cells], "")
        cell = pick(usable, key=lambda c: c.estimate)
        what = "largest" if value.extreme == "max" else "smallest"
        ok = abs(cell.estimate - target) <= tol
        return Axis(
            AGREES if ok else DISAGREES,
            f"{what} of {len(usable)} regenerated is {fmt(cell.estimate)} vs {fmt(target)} ± {tol:g}",
            "point",
        )

    def meets(c: Cell) -> bool:
        if c.has_interval and c.low != c.high:
            return c.low - tol <= target <= c.high + tol
        return abs(c.estimate - target) <= tol

    how = "interval contains" if all(c.has_interval for c in cells) else "within"
    return tally(
        "point", _outcomes(cells, meets, scale, sign), f"regenerated {span(cells)}; {how} {fmt(target)} ± {tol:g}"
    )


_BY_KIND = {
    "range": size_range,
    "ci_within": size_ci_within,
    "upper": size_bound,
    "lower": size_bound,
    "count": size_exact,
    "ratio": size_exact,
    "identity": size_exact,
    "point": size_point,
}


def size_function(value: Value) -> Callable[[Value, Sequence[Cell]], Axis]:
    """The size comparison for a value's kind (a point stated as an exact fraction is an identity)."""
    if value.kind == "point" and value.exact is not None:
        return size_exact
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
    """The size answer over the value's cells (per group of ``by``, and the overall number if stated)."""
    if not value.by:
        return size_function(value)(value, cells)
    dim = value.by_dimension()
    parts: list[tuple[str, Axis]] = []
    plain = replace(value, by={})
    notes = _unplayed_groups(value, models) if dim == "model" else []
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
    if not parts:
        why = f"no regenerated cell for any {dim} the paper states ({', '.join(map(str, value.by[dim]))})"
        return Axis(UNINFORMATIVE, "; ".join([why, *notes]))
    status = combine([a.status for _, a in parts])
    reason = "; ".join([*(f"{name}: {a.status} ({a.reason})" for name, a in parts), *notes])
    return Axis(status, reason, "/".join(sorted({a.kind for _, a in parts})))


def _unplayed_groups(value: Value, models: StudyModels) -> list[str]:
    """The paper models of ``by: {model: ...}`` no study model plays: named, never dropped silently."""
    out = []
    for paper_model in value.by.get("model", {}):
        if models.run_model_for(str(paper_model)) is None:
            role = models.role_of(str(paper_model))
            out.append(
                f"{paper_model}{f' (role {role.name})' if role else ''}: no study model takes the role, not judged"
            )
    return out


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
