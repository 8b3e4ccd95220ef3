"""Is a regenerated value consistent with the paper's?  Two questions, answered apart:

* **direction** -- the sign, trend or order the paper states (``direction:`` in ``data/claims.yaml``,
  or the sign a bound at zero states): is it reproduced?  This is what a result on models that are not
  the paper's can show.
* **size** -- the paper's number or range, widened by
  :func:`~trustmass.report.claims.model.tolerance` (half a unit of its printed digits, at most 10 % of the
  number; 20 % for "about X").

Both are one decision rule (:mod:`trustmass.report.claims.decision`): a cell agrees when its whole 95 %
interval lies inside the paper's band, disagrees when it lies wholly outside, and otherwise cannot decide
(the reason is kept and the cell counted).  A value's cells combine into one answer
(:mod:`trustmass.report.claims.axes`): ``agrees`` only when every cell agrees, ``contradicted`` when any
disagrees, ``partial`` when some agree and the rest cannot decide; or no answer:

* ``uninformative`` -- cells exist but none can decide: a degenerate input the producer flagged (both arms
  of a comparison at the floor, a method at the floor on every item, an infinite Wilson cap, a probe at
  alpha = 0), an infinite estimate, an interval across the band's edge, a filter that matched no cell;
* ``not produced`` -- no cell;
* ``by construction`` (direction only) -- the stated trend cannot fail on any data (``by_construction:``);
* ``not comparable`` (size only) -- the number is set by the run's configuration (``configured:``) or is a
  protocol setting (``role: parameter``); the report shows what the configuration implies instead.

========== ======================================================================================
size kind  the band a cell's interval must lie inside
========== ======================================================================================
range      [low, high], each end widened by its tolerance
point      value ± tolerance; ``extreme: max|min`` judges the largest / smallest cell
upper      (-inf, value] (< when ``strict``); a ``formula`` is evaluated per cell
lower      [value, inf) (> when ``strict``)
count      the integer, exactly
ratio      k (of n), exactly
identity   the value to 1e-12 relative (also a point stated as an exact fraction)
ci_within  [low, high] widened as a range; a cell without an interval cannot decide
========== ======================================================================================

A value stated per group (``by``) is judged per group, the groups combined, and a stated group the run did
not regenerate is an item without an answer; ``exceptions`` (the groups the paper names as exceptions) are
left out of the size and must show the opposite direction; ``exclude`` drops groups another claim judges.
Percent values compare the regenerated fraction x 100.

The answers and how they combine: :mod:`~trustmass.report.claims.axes`; the size bands:
:mod:`~trustmass.report.claims.size`; the direction: :mod:`~trustmass.report.claims.direction`; here, which
cells a value is judged on (:func:`select`) and the two answers together (:func:`judge`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from trustmass.report.claims.axes import (
    AGREES,
    ANSWERED,
    AXIS_STATUSES,
    BY_CONSTRUCTION,
    CONTRADICTED,
    NOT_COMPARABLE,
    NOT_PRODUCED,
    PARTIAL,
    UNINFORMATIVE,
    Axis,
    combine,
    span,
)
from trustmass.report.claims.cells import Cell, StudyModels, matches, matches_all, matches_any, missing, paper_models
from trustmass.report.claims.configured import Implied
from trustmass.report.claims.direction import describe_conditions, direction
from trustmass.report.claims.model import Value
from trustmass.report.claims.size import IDENTITY_RELATIVE, range_over_groups, size

__all__ = [
    "AGREES",
    "ANSWERED",
    "AXIS_STATUSES",
    "BY_CONSTRUCTION",
    "CONTRADICTED",
    "IDENTITY_RELATIVE",
    "NOT_COMPARABLE",
    "PARTIAL",
    "NOT_PRODUCED",
    "UNINFORMATIVE",
    "Axis",
    "Cell",
    "StudyModels",
    "Verdict",
    "combine",
    "is_selected",
    "judge",
    "role_unplayed",
]


@dataclass(frozen=True)
class Verdict:
    """A value's two answers (None: the paper states no direction / no size) and the models behind it."""

    direction: Axis | None
    size: Axis | None
    analogue: str | None = None  # "smollm2-135m for Qwen2.5-1.5B": judged on models that are not the paper's

    @property
    def axes(self) -> tuple[Axis, ...]:
        return tuple(a for a in (self.direction, self.size) if a is not None)


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
    return Verdict(
        axis if value.stated_direction else None, axis if value.has_size or not value.stated_direction else None
    )


def _size_not_comparable(value: Value, cells: Sequence[Cell], implied: Implied | None) -> Axis | None:
    """The size answer of a configuration-set or protocol value (None: the value is a result)."""
    run = f"; this run: {span(cells)}" if cells else ""
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
    if value.timing:
        timed_on = sorted({c.group.get("device", "an unrecorded device") for c in cells})
        cells = [c for c in cells if c.group.get("device", "").startswith("cuda")]
        if not cells:
            return _not_produced(
                value,
                f"a timing: the paper's are an H100's, and this run timed on {', '.join(timed_on)}; "
                f"needs {value.needs or 'a run on a CUDA device'}",
            )
    if not cells:
        empty = Axis(UNINFORMATIVE, f"no regenerated cell matches {_describe_filters(value)}")
        return Verdict(empty if value.stated_direction else None, fixed or (empty if value.has_size else None))
    other_cells = {
        name: _compared(value, [Cell.from_row(r, scale) for r in rs if not missing(r.get("estimate"))], models)
        for name, rs in (others or {}).items()
    }
    sized = [c for c in cells if not _unsized_exception(value, c, models)]
    size_axis = fixed
    if size_axis is None and value.has_size:
        size_axis = (
            size(value, sized, models) if sized else Axis(UNINFORMATIVE, "every cell is one of the paper's exceptions")
        )
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
    if value.by and not range_over_groups(value):
        dim, keys = value.by_dimension(), list(value.by[value.by_dimension()])
        out = [
            c for c in out if (dim not in c.group and dim != "model") or any(matches(c, dim, k, models) for k in keys)
        ]
    return out


def _compared(value: Value, cells: Sequence[Cell], models: StudyModels) -> list[Cell]:
    """The cells of the value a comparison is stated against (``than``), under this value's conditions on the
    dimensions they carry: top-mass's (model, budget) cells meet the rules' ``where: {budget: 8, rule: ...}`` at
    the budget alone."""
    return [
        c
        for c in cells
        if all(
            matches(c, dim, allowed, models) for dim, allowed in value.where.items() if dim in c.group or dim == "model"
        )
    ]


def is_selected(value: Value, row: Mapping[str, Any], models: StudyModels) -> bool:
    """Whether a regenerated row is one of the cells the value is judged on (:func:`select`)."""
    if missing(row.get("estimate")):
        return False
    return bool(select(value, [Cell.from_row(row)], models))


def _describe_filters(value: Value) -> str:
    parts = [f"where {describe_conditions(value.where)}"] if value.where else []
    if value.exclude:
        parts.append(f"outside {describe_conditions(value.exclude)}")
    if value.by:
        parts.append(f"the stated {value.by_dimension()} groups")
    return " and ".join(parts) or "the value"
