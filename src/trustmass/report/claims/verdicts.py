"""Is a regenerated value consistent with the paper's?  Two questions, answered apart:

* **direction** -- the sign, trend or order the paper states (``direction:`` in ``data/claims.yaml``,
  or the sign a bound at zero states): is it reproduced?  This is what a result on models that are not
  the paper's can show.
* **size** -- the paper's number or range, met within :func:`~trustmass.report.claims.model.tolerance`
  (half a unit of its printed digits, at most 10 % of the number; 20 % for "about X").

Each axis answers ``agrees`` (every informative cell meets it), ``disagrees`` (none does) or ``mixed``;
or it does not answer:

* ``not comparable`` (size only) -- the number is set by the run's configuration (``configured:``: an
  instance count, a byte share s/N, a count of conditions) or is a protocol setting (``role:
  parameter``); the report shows what the configuration implies instead;
* ``uninformative`` -- the cells exist but cannot speak to it: a degenerate input the producer flagged
  (hit rates all 0, an infinite Wilson cap, a probe at alpha = 0), an infinite estimate, a 95 %
  interval wider than the claim's own scale or across zero where the sign matters, two intervals that
  overlap where an order is stated, a filter that matched no cell;
* ``by construction`` (direction only) -- the stated trend cannot fail on any data (``by_construction:``);
* ``not produced`` -- no cell.

========== ======================================================================================
size kind  a cell agrees when
========== ======================================================================================
range      its estimate lies in [low, high] (± tolerance)
upper      its estimate <= value (< when ``strict``); a ``formula`` is evaluated per cell
lower      its estimate >= value (> when ``strict``)
count      its estimate equals the integer
ratio      its estimate equals k (of n)
identity   its estimate equals the value to 1e-12 relative (also a point stated as an exact fraction)
point      its 95 % interval (± tolerance) contains the value; without one, the estimate is within
           tolerance; ``extreme: max|min`` compares the largest / smallest estimate over the cells
ci_within  its 95 % interval lies inside [low, high] (± tolerance)
========== ======================================================================================

A value stated per group (``by``) is judged per group, the groups combined; ``exceptions`` (the groups
the paper names as exceptions) are left out of the size and must *not* show the direction; ``exclude``
drops groups another claim judges.  Percent values compare the regenerated fraction x 100.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from trustmass.report.claims.cells import Cell, StudyModels, matches, matches_all, matches_any, missing, paper_models
from trustmass.report.claims.configured import Implied
from trustmass.report.claims.model import Value, evaluate_formula, tolerance

__all__ = [
    "AGREES",
    "AXIS_STATUSES",
    "BY_CONSTRUCTION",
    "DISAGREES",
    "IDENTITY_RELATIVE",
    "JUDGED",
    "MIXED",
    "NOT_COMPARABLE",
    "NOT_PRODUCED",
    "UNINFORMATIVE",
    "Axis",
    "Cell",
    "StudyModels",
    "Verdict",
    "combine",
    "judge",
    "role_unplayed",
]

AGREES, DISAGREES, MIXED = "agrees", "disagrees", "mixed"
UNINFORMATIVE, NOT_COMPARABLE, BY_CONSTRUCTION, NOT_PRODUCED = "uninformative", "not comparable", "by construction", "not produced"
#: the answers that are verdicts
JUDGED = (AGREES, DISAGREES, MIXED)
#: every answer an axis can give, most telling first
AXIS_STATUSES = (AGREES, DISAGREES, MIXED, UNINFORMATIVE, NOT_COMPARABLE, BY_CONSTRUCTION, NOT_PRODUCED)
#: an identity holds to this relative precision (float64 arithmetic)
IDENTITY_RELATIVE = 1e-12

#: a cell's answer: meets it (True), misses it (False), or why it cannot tell (text)
Outcome = bool | str


@dataclass(frozen=True)
class Axis:
    """One answer (direction or size) for one value: a status of :data:`AXIS_STATUSES`, why, and how it was compared."""

    status: str
    reason: str
    kind: str = ""


@dataclass(frozen=True)
class Verdict:
    """A value's two answers (None: the paper states no direction / no size) and the models behind it."""

    direction: Axis | None
    size: Axis | None
    analogue: str | None = None  # "smollm2-135m for Qwen2.5-1.5B": judged on models that are not the paper's

    @property
    def axes(self) -> tuple[Axis, ...]:
        return tuple(a for a in (self.direction, self.size) if a is not None)


def _fmt(x: float) -> str:
    """Four significant digits; counts of a thousand or more in full (48,816, not 4.882e+04)."""
    if math.isfinite(x) and x == int(x) and abs(x) >= 1000:
        return f"{int(x):,}"
    return f"{x:.4g}"


def _span(cells: Sequence[Cell]) -> str:
    ests = [c.estimate for c in cells]
    return _fmt(ests[0]) if len(ests) == 1 else f"{_fmt(min(ests))}..{_fmt(max(ests))}"


def _interval(c: Cell) -> str:
    return f"[{_fmt(c.low)}, {_fmt(c.high)}]"


def tally(kind: str, outcomes: Sequence[Outcome], detail: str) -> Axis:
    """Every informative cell meeting it: agrees; none: disagrees; some: mixed; no informative cell:
    uninformative (with the cells' reasons)."""
    known = [o for o in outcomes if isinstance(o, bool)]
    unknown = sorted({o for o in outcomes if isinstance(o, str)})
    if not known:
        return Axis(UNINFORMATIVE, "; ".join(unknown) or "no cell to judge", kind)
    n, k = len(known), sum(known)
    status = AGREES if k == n else DISAGREES if k == 0 else MIXED
    cells = f"{k} of {n} cells agree; " if n > 1 else ""
    skipped = f"; {len(outcomes) - n} uninformative ({'; '.join(unknown)})" if unknown else ""
    return Axis(status, f"{cells}{detail}{skipped}", kind)


def combine(statuses: Sequence[str]) -> str:
    """The answer of several answers: the verdicts all agree / all disagree, else mixed; without a
    verdict, the most telling non-verdict (uninformative before not comparable before not produced)."""
    verdicts = [s for s in statuses if s in JUDGED]
    if verdicts:
        if all(s == AGREES for s in verdicts):
            return AGREES
        if all(s == DISAGREES for s in verdicts):
            return DISAGREES
        return MIXED
    for status in (UNINFORMATIVE, NOT_COMPARABLE, BY_CONSTRUCTION):
        if status in statuses:
            return status
    return NOT_PRODUCED


# ------------------------------------------------------------------------------------- size


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
        return f"{cell.label()}: its 95 % interval {_interval(cell)} is wider than the claim's scale ({_fmt(scale)})"
    if sign and cell.crosses(0.0):
        return f"{cell.label()}: its 95 % interval {_interval(cell)} crosses 0"
    return None


def _outcomes(cells: Sequence[Cell], meets: Callable[[Cell], bool], scale: float | None, sign: bool) -> list[Outcome]:
    return [cell_problem(c, scale, sign) or meets(c) for c in cells]


def size_range(value: Value, cells: Sequence[Cell]) -> Axis:
    lo, hi = float(value.low), float(value.high)
    lo_tol, hi_tol = lo - tolerance(value.low), hi + tolerance(value.high)
    out = _outcomes(cells, lambda c: lo_tol <= c.estimate <= hi_tol, _scale(value), _signed(lo, hi))
    return tally("range", out, f"regenerated {_span(cells)} vs [{_fmt(lo)}, {_fmt(hi)}]")


def size_ci_within(value: Value, cells: Sequence[Cell]) -> Axis:
    lo_tol, hi_tol = float(value.low) - tolerance(value.low), float(value.high) + tolerance(value.high)

    def outcome(c: Cell) -> Outcome:
        if not c.has_interval:
            return f"{c.label()}: no 95 % interval was regenerated (statistics.bootstrap = 0?)"
        return cell_problem(c) or (lo_tol <= c.low and c.high <= hi_tol)

    with_ci = [c for c in cells if c.has_interval]
    widest = f"[{_fmt(min(c.low for c in with_ci))}, {_fmt(max(c.high for c in with_ci))}]" if with_ci else "none"
    return tally("ci_within", [outcome(c) for c in cells],
                 f"intervals span {widest} vs inside [{_fmt(float(value.low))}, {_fmt(float(value.high))}]")  # fmt: skip


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
    bound = value.formula or _fmt(float(value.value))
    return tally(value.kind, out, f"regenerated {_span(cells)}, needs {sign} {bound}")


def size_exact(value: Value, cells: Sequence[Cell]) -> Axis:
    """count, ratio, identity: equal to the stated number (identities to 1e-12 relative)."""
    target = float(value.exact) if value.exact is not None else float(value.value)
    tol = IDENTITY_RELATIVE * max(1.0, abs(target)) if value.kind == "identity" or value.exact is not None else 0.0
    out = [cell_problem(c) or abs(c.estimate - target) <= tol for c in cells]
    stated = str(value.exact) if value.exact is not None else _fmt(target)
    of = f" of {value.of}" if value.of else ""
    return tally(value.kind, out, f"regenerated {sorted({_fmt(c.estimate) for c in cells})} vs {stated}{of}")


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
        return Axis(AGREES if ok else DISAGREES, f"{what} of {len(usable)} regenerated is {_fmt(cell.estimate)} vs {_fmt(target)} ± {tol:g}", "point")

    def meets(c: Cell) -> bool:
        if c.has_interval and c.low != c.high:
            return c.low - tol <= target <= c.high + tol
        return abs(c.estimate - target) <= tol

    how = "interval contains" if all(c.has_interval for c in cells) else "within"
    return tally("point", _outcomes(cells, meets, scale, sign), f"regenerated {_span(cells)}; {how} {_fmt(target)} ± {tol:g}")


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


def _range_over_groups(value: Value) -> bool:
    """An overall range stated beside per-group numbers spans every group ("1.06-1.22: 1.06/1.12/...
    at group sizes 2/4/5/6"); an overall number is a total over them ("46 = 0/2/8/36")."""
    return value.kind in ("range", "ci_within") and value.low is not None and value.high is not None


def _group_value(value: Value, entry: Any) -> Value:
    """The value stated for one group of ``by``: a [low, high] pair is a range, a fraction an identity,
    a number the group's point (or count, bound, ...) value."""
    plain = replace(value, by={})
    if isinstance(entry, tuple):
        return replace(plain, kind="range" if value.kind != "ci_within" else "ci_within", value=None, low=entry[0], high=entry[1])
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
    if _range_over_groups(value):  # a range spans every group inside the paper's span of groups
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
            out.append(f"{paper_model}{f' (role {role.name})' if role else ''}: no study model takes the role, not judged")
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
        key = _number(c.group.get(dim, "")) if dim in c.group else None
        (outside if isinstance(key, float) and not min(keys) <= key <= max(keys) else inside).append(c)
    return inside, outside


def _span_text(value: Value) -> str:
    keys = _numeric_keys(value) or []
    return f"{value.by_dimension()} {_fmt(min(keys))}-{_fmt(max(keys))}" if keys else value.by_dimension()


# ---------------------------------------------------------------------------------------- direction


def _sign_outcome(cell: Cell, threshold: float, positive: bool, strict: bool, exception: bool) -> Outcome:
    """Is the cell on the stated side of ``threshold``?  An exception must *not* be (significantly) there."""
    problem = cell.uninformative or (None if math.isfinite(cell.estimate) else f"the estimate is {cell.estimate:g}")
    if problem:
        return problem
    crosses = cell.crosses(threshold)
    side = (cell.estimate > threshold or (not strict and cell.estimate == threshold)) if positive else \
        (cell.estimate < threshold or (not strict and cell.estimate == threshold))  # fmt: skip
    if exception:
        return crosses or not side
    if crosses:
        return f"{cell.label()}: its 95 % interval {_interval(cell)} includes {_fmt(threshold)}"
    return side


def _order_outcome(a: Cell, b: Cell) -> Outcome:
    """Is a above b?  Overlapping intervals leave the order open."""
    for c in (a, b):
        if c.uninformative:
            return c.uninformative
        if not math.isfinite(c.estimate):
            return f"the estimate is {c.estimate:g}"
    if a.overlaps(b):
        return f"{a.label()}: the intervals {_interval(a)} and {_interval(b)} overlap"
    return a.estimate > b.estimate


def _rest(cell: Cell, dim: str | None) -> tuple:
    return tuple(sorted((k, v) for k, v in cell.group.items() if k != dim))


def _number(x: str) -> float | str:
    try:
        return float(x)
    except ValueError:
        return x


def direction(value: Value, cells: Sequence[Cell], others: Mapping[str, Sequence[Cell]], models: StudyModels) -> Axis | None:
    """The direction answer over the value's cells (None: the paper states no direction)."""
    stated = value.stated_direction
    if stated is None:
        return None
    if value.by_construction:
        return Axis(BY_CONSTRUCTION, value.by_construction, stated)

    def exception(c: Cell) -> bool:
        return bool(value.exceptions) and matches_any(c, value.exceptions, models)

    note = f"; the paper's exceptions ({_conditions(value.exceptions)}) must not show it" if value.exceptions else ""
    if stated in ("positive", "negative"):
        threshold = float(value.than) if value.than is not None else 0.0
        strict = value.strict or value.direction is not None
        out = [_sign_outcome(c, threshold, stated == "positive", strict, exception(c)) for c in cells]
        side = ">" if stated == "positive" else "<"
        return tally("sign", out, f"regenerated {_span(cells)}: {side} {_fmt(threshold)} stated{note}")
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
        runs = [sorted(s, key=lambda c: _number(c.group[value.along])) for s in series.values() if len(s) >= 2]
        if not runs:
            return Axis(UNINFORMATIVE, f"no group has two {value.along} values to show a trend", "trend")
        out = [_order_outcome(s[-1], s[0]) if stated == "increasing" else _order_outcome(s[0], s[-1]) for s in runs]
        ends = "; ".join(f"{_fmt(s[0].estimate)} → {_fmt(s[-1].estimate)}" for s in runs[:4])
        return tally("trend", out, f"{stated} along {value.along}: {ends}")
    return _order(value, cells, models)


def _order(value: Value, cells: Sequence[Cell], models: StudyModels) -> Axis:
    """direction: order -- every pair of groups the paper gives different numbers comes out in its order."""
    dim = value.along
    stated = {k: (tuple(map(float, e)) if isinstance(e, tuple) else (float(e), float(e))) for k, e in value.by.get(dim, {}).items()}
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


def _conditions(conditions: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}: {'/'.join(map(str, v)) if isinstance(v, tuple) else v}" for k, v in conditions.items())


# ------------------------------------------------------------------------------------------ judging


def role_unplayed(value: Value, models: StudyModels) -> bool:
    """The value is stated for paper models and no study model plays any of their roles."""
    named = paper_models(value)
    return bool(named) and not any(models.run_model_for(m) for m in named)


def _no_model_in_role(value: Value, models: StudyModels) -> str:
    wanted = []
    for m in paper_models(value):
        role = models.role_of(m)
        wanted.append(f"{m} (role {role.name})" if role else m)
    return f"stated for {', '.join(wanted)}; no study model takes that role: add `roles: [<role>]` to a model entry"


def _not_produced(value: Value, reason: str) -> Verdict:
    axis = Axis(NOT_PRODUCED, reason)
    return Verdict(axis if value.stated_direction else None, axis if value.has_size or not value.stated_direction else None)


def _size_not_comparable(value: Value, cells: Sequence[Cell], implied: Implied | None) -> Axis | None:
    """The size answer of a configuration-set or protocol value (None: the value is a result)."""
    run = f"; this run: {_span(cells)}" if cells else ""
    if value.role == "parameter":
        return Axis(NOT_COMPARABLE, f"a setting of the protocol, not a result{run}", "parameter")
    if value.configured is not None:
        how = implied.how if implied is not None else "see trustmass.report.claims.configured"
        return Axis(NOT_COMPARABLE, f"set by the run's configuration: {how}{run}", "configured")
    return None


def judge(
    value: Value,
    rows: Sequence[Mapping[str, Any]],
    models: StudyModels = StudyModels(),
    others: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    implied: Implied | None = None,
    missing_reason: str = "no regenerated estimate",
) -> Verdict:
    """The direction and size answers for one paper value against its regenerated rows (one population).

    ``others``: the rows of the claim's other values (``than:`` compares with one of them);
    ``implied``: what the run's configuration implies for a ``configured`` value; ``missing_reason``:
    why there is no row, when there is none.
    """
    scale = 100.0 if value.unit == "percent" else 1.0
    cells = select(value, [Cell.from_row(r, scale) for r in rows if not missing(r.get("estimate"))], models)
    fixed = _size_not_comparable(value, cells, implied)
    if fixed is not None and not value.stated_direction:
        return Verdict(None, fixed)  # a setting compares no models
    if role_unplayed(value, models):
        return _not_produced(value, _no_model_in_role(value, models))
    if not rows or not any(not missing(r.get("estimate")) for r in rows):
        verdict = _not_produced(value, missing_reason)
        return replace(verdict, size=fixed or verdict.size)
    if not cells:
        empty = Axis(UNINFORMATIVE, f"no regenerated cell matches {_describe_filters(value)}")
        return Verdict(empty if value.stated_direction else None, fixed or (empty if value.has_size else None))
    other_cells = {name: select(value, [Cell.from_row(r, scale) for r in rs if not missing(r.get("estimate"))], models)
                   for name, rs in (others or {}).items()}  # fmt: skip
    sized = [c for c in cells if not _unsized_exception(value, c, models)]
    size_axis = fixed
    if size_axis is None and value.has_size:
        size_axis = size(value, sized, models) if sized else Axis(UNINFORMATIVE, "every cell is one of the paper's exceptions")
    return Verdict(direction(value, cells, other_cells, models), size_axis, models.analogue(cells))


def _unsized_exception(value: Value, cell: Cell, models: StudyModels) -> bool:
    """An exception the paper states no number for: out of the size (the stated range is the others')."""
    if not (value.exceptions and matches_any(cell, value.exceptions, models)):
        return False
    dim = value.by_dimension()
    return not (dim and any(matches(cell, dim, key, models) for key in value.by[dim]))


def select(value: Value, cells: Sequence[Cell], models: StudyModels) -> list[Cell]:
    """The cells the value is stated for: those meeting every ``where`` condition, outside ``exclude``,
    and (for a value stated per group of ``by``) in a stated group or study-wide."""
    out = [c for c in cells if matches_all(c, value.where, models)]
    if value.exclude:
        out = [c for c in out if not matches_any(c, value.exclude, models)]
    if value.by and not _range_over_groups(value):
        dim, keys = value.by_dimension(), list(value.by[value.by_dimension()])
        out = [c for c in out if (dim not in c.group and dim != "model") or any(matches(c, dim, k, models) for k in keys)]
    return out


def _describe_filters(value: Value) -> str:
    parts = [f"where {_conditions(value.where)}"] if value.where else []
    if value.exclude:
        parts.append(f"outside {_conditions(value.exclude)}")
    if value.by:
        parts.append(f"the stated {value.by_dimension()} groups")
    return " and ".join(parts) or "the value"
