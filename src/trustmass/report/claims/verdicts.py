"""One verdict per kind of claim: is a regenerated value consistent with the paper's?

The paper's number stands for every value that rounds to it, so points and range endpoints are met
within half a unit of the last digit they were written with (:func:`~trustmass.report.claims.model.half_unit`:
0.005 for "1.07"); bounds are bounds (no slack); identities are exact (relative 1e-12); counts equal.

========== =====================================================================================
kind       consistent when
========== =====================================================================================
range      every cell's estimate lies in [low, high] (± half units)
upper      every estimate <= value (< when ``strict``); a ``formula`` is evaluated per cell
lower      every estimate >= value (> when ``strict``)
count      every estimate equals the integer
ratio      every estimate equals k (of n)
identity   every estimate equals the value to 1e-12 relative (also a point stated as an exact fraction)
point      its 95 % interval (± half unit) contains the value; without one, the estimate is within
           half a unit (20 % relative when ``approx``); ``extreme: max|min`` compares the largest /
           smallest estimate over the cells
ci_within  every cell's 95 % interval lies inside [low, high] (± half units); no interval: not produced
direction  (analogue results only, values with ``direction``) every estimate > 0 / < 0, or the
           estimate at the largest ``along`` exceeds / falls below the one at the smallest
========== =====================================================================================

Several cells (groups of ``over``): all meeting it -> consistent, none -> inconsistent, some ->
mixed.  A value stated per group (``by``) is judged per group, its overall number (if any) on the
rows without that group, and the group verdicts combined the same way.  Parameters (``role:
parameter``: cap sizes, document counts) are settings, never judged.  Percent values compare the
regenerated fraction x 100.  A value judged on models that are not the paper's own arms carries an
``analogue`` note naming them (:class:`StudyModels`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from trustmass.report.claims.model import ModelRole, Value, evaluate_formula, half_unit

__all__ = [
    "APPROX_RELATIVE",
    "IDENTITY_RELATIVE",
    "STATUSES",
    "Cell",
    "StudyModels",
    "Verdict",
    "combine",
    "judge",
    "role_unplayed",
]

CONSISTENT, INCONSISTENT, MIXED = "consistent", "inconsistent", "mixed"
NOT_PRODUCED, NOT_COMPARED, QUALITATIVE = "not produced yet", "not compared", "qualitative"
#: every verdict a claim or value can get
STATUSES = (CONSISTENT, INCONSISTENT, MIXED, NOT_PRODUCED, NOT_COMPARED, QUALITATIVE)
#: "about X", "≈ X": within 20 % of X
APPROX_RELATIVE = 0.2
#: an identity holds to this relative precision (float64 arithmetic)
IDENTITY_RELATIVE = 1e-12


@dataclass(frozen=True)
class Verdict:
    status: str
    reason: str
    kind: str = ""  # the verdict function that judged it
    analogue: str | None = None  # "smollm2-135m for Qwen2.5-1.5B": judged on models that are not the paper's


@dataclass(frozen=True)
class Cell:
    """One regenerated estimate (a headline row), in the claim's unit."""

    estimate: float
    low: float | None = None
    high: float | None = None
    group: Mapping[str, str] = field(default_factory=dict)
    models: tuple[str, ...] = ()
    context: Mapping[str, float] | None = None

    @classmethod
    def from_row(cls, row: Mapping[str, Any], scale: float = 1.0) -> Cell:
        keys, values = row.get("by_key"), row.get("by_value")
        group = dict(zip(str(keys).split(","), str(values).split(","))) if keys and values is not None else {}
        low, high = row.get("low"), row.get("high")
        context = row.get("context")
        models = (group["model"],) if "model" in group else tuple(m for m in str(row.get("models") or "").split(",") if m)
        return cls(
            estimate=float(row["estimate"]) * scale,
            low=None if _missing(low) else float(low) * scale,
            high=None if _missing(high) else float(high) * scale,
            group=group,
            models=models,
            context=json.loads(context) if context else None,
        )

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


@dataclass(frozen=True)
class StudyModels:
    """The run's models as the claims see them: which role each plays, which are the paper's arms."""

    roles: Mapping[str, str] = field(default_factory=dict)  # role name -> run model
    paper_arms: frozenset[str] = frozenset()  # run models that are the paper's own checkpoints
    role_definitions: Mapping[str, ModelRole] = field(default_factory=dict)

    @classmethod
    def from_config(cls, config: Mapping[str, Any], role_definitions: Mapping[str, ModelRole]) -> StudyModels:
        """From the resolved config: ``models.<name>.roles`` of the study models, and hub ids."""
        study = list((config.get("study") or {}).get("models") or [])
        models = config.get("models") or {}
        roles, arms = {}, set()
        hub_ids = {h for r in role_definitions.values() for h in r.hub_ids}
        for name in study:
            entry = models.get(name) or {}
            for role in entry.get("roles") or []:
                roles[role] = name
            if entry.get("source") == "hub" and entry.get("id") in hub_ids:
                arms.add(name)
        return cls(roles=roles, paper_arms=frozenset(arms), role_definitions=dict(role_definitions))

    def run_model_for(self, paper_model: str) -> str | None:
        role = self.role_of(paper_model)
        return self.roles.get(role.name) if role else None

    def role_of(self, paper_model: str) -> ModelRole | None:
        return next((r for r in self.role_definitions.values() if r.paper_model == paper_model), None)

    def paper_model_of(self, run_model: str) -> str | None:
        for role, model in self.roles.items():
            if model == run_model and role in self.role_definitions:
                return self.role_definitions[role].paper_model
        return None

    def analogue(self, cells: Iterable[Cell]) -> str | None:
        """Who stands in for the paper here (None: every model behind the cells is a paper arm)."""
        models = sorted({m for c in cells for m in c.models})
        others = [m for m in models if m not in self.paper_arms]
        if not others:
            return None
        named = [f"{m} for {self.paper_model_of(m)}" if self.paper_model_of(m) else m for m in others]
        return ", ".join(named)


# ----------------------------------------------------------------------------- verdict functions


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def _tally(kind: str, ok: Sequence[bool], detail: str) -> Verdict:
    """All cells meeting it: consistent; none: inconsistent; some: mixed."""
    n, k = len(ok), sum(ok)
    status = CONSISTENT if k == n else INCONSISTENT if k == 0 else MIXED
    cells = f"{k} of {n} cells meet it; " if n > 1 else ""
    return Verdict(status, f"{cells}{detail}", kind)


def _span(cells: Sequence[Cell]) -> str:
    ests = [c.estimate for c in cells]
    return _fmt(ests[0]) if len(ests) == 1 else f"{_fmt(min(ests))}..{_fmt(max(ests))}"


def judge_range(value: Value, cells: Sequence[Cell]) -> Verdict:
    lo, hi = float(value.low), float(value.high)
    lo_tol, hi_tol = lo - half_unit(value.low), hi + half_unit(value.high)
    ok = [lo_tol <= c.estimate <= hi_tol for c in cells]
    return _tally("range", ok, f"regenerated {_span(cells)} vs [{_fmt(lo)}, {_fmt(hi)}]")


def judge_ci_within(value: Value, cells: Sequence[Cell]) -> Verdict:
    with_ci = [c for c in cells if c.has_interval]
    if not with_ci:
        return Verdict(NOT_PRODUCED, "no 95% interval was regenerated (statistics.bootstrap = 0?)", "ci_within")
    lo_tol, hi_tol = float(value.low) - half_unit(value.low), float(value.high) + half_unit(value.high)
    ok = [lo_tol <= c.low and c.high <= hi_tol for c in with_ci]
    widest = f"[{_fmt(min(c.low for c in with_ci))}, {_fmt(max(c.high for c in with_ci))}]"
    return _tally("ci_within", ok, f"intervals span {widest} vs inside [{_fmt(float(value.low))}, {_fmt(float(value.high))}]")


def _targets(value: Value, cells: Sequence[Cell]) -> list[float] | None:
    """The bound per cell: the stated number, or the formula at each cell's instance."""
    if value.formula is None:
        return [float(value.value)] * len(cells)
    if any(c.context is None for c in cells):
        return None
    return [evaluate_formula(value.formula, **c.context) for c in cells]


def judge_bound(value: Value, cells: Sequence[Cell]) -> Verdict:
    upper = value.kind == "upper"
    targets = _targets(value, cells)
    if targets is None:
        return Verdict(NOT_PRODUCED, f"the bound {value.formula} needs each instance's quantities (context)", value.kind)
    if upper:
        ok = [c.estimate < t if value.strict else c.estimate <= t for c, t in zip(cells, targets)]
    else:
        ok = [c.estimate > t if value.strict else c.estimate >= t for c, t in zip(cells, targets)]
    sign = ("<" if value.strict else "≤") if upper else (">" if value.strict else "≥")
    bound = value.formula or _fmt(float(value.value))
    return _tally(value.kind, ok, f"regenerated {_span(cells)}, needs {sign} {bound}")


def judge_count(value: Value, cells: Sequence[Cell]) -> Verdict:
    ok = [c.estimate == float(value.value) for c in cells]
    return _tally("count", ok, f"regenerated {sorted({_fmt(c.estimate) for c in cells})} vs {value.value}")


def judge_ratio(value: Value, cells: Sequence[Cell]) -> Verdict:
    ok = [c.estimate == float(value.value) for c in cells]
    return _tally("ratio", ok, f"regenerated {sorted({_fmt(c.estimate) for c in cells})} vs {value.value} of {value.of}")


def judge_identity(value: Value, cells: Sequence[Cell]) -> Verdict:
    target = float(value.exact) if value.exact is not None else float(value.value)
    tol = IDENTITY_RELATIVE * max(1.0, abs(target))
    ok = [abs(c.estimate - target) <= tol for c in cells]
    worst = max(cells, key=lambda c: abs(c.estimate - target))
    stated = str(value.exact) if value.exact is not None else _fmt(target)
    return _tally("identity", ok, f"regenerated {worst.estimate!r} (farthest) vs exactly {stated}")


def judge_point(value: Value, cells: Sequence[Cell]) -> Verdict:
    target = float(value.value)
    tol = max(half_unit(value.value), APPROX_RELATIVE * abs(target)) if value.approx else half_unit(value.value)
    if value.extreme is not None:
        pick = max if value.extreme == "max" else min
        cell = pick(cells, key=lambda c: c.estimate)
        ok = abs(cell.estimate - target) <= tol
        what = "largest" if value.extreme == "max" else "smallest"
        return Verdict(CONSISTENT if ok else INCONSISTENT,
                       f"{what} of {len(cells)} regenerated is {_fmt(cell.estimate)} vs {_fmt(target)} ± {tol:g}", "point")  # fmt: skip

    def meets(c: Cell) -> bool:
        if c.has_interval and c.low != c.high:
            return c.low - tol <= target <= c.high + tol
        return abs(c.estimate - target) <= tol

    how = "interval contains" if all(c.has_interval for c in cells) else "within"
    return _tally("point", [meets(c) for c in cells], f"regenerated {_span(cells)}; {how} {_fmt(target)} ± {tol:g}")


def judge_direction(value: Value, cells: Sequence[Cell]) -> Verdict:
    if value.direction in ("positive", "negative"):
        sign = 1.0 if value.direction == "positive" else -1.0
        return _tally("direction", [sign * c.estimate > 0 for c in cells], f"regenerated {_span(cells)}: {value.direction} needed")
    along, rising = value.along, value.direction == "increasing"
    series: dict[tuple, list[tuple[float, float]]] = {}
    for c in cells:
        if along not in c.group:
            continue
        rest = tuple(sorted((k, v) for k, v in c.group.items() if k != along))
        series.setdefault(rest, []).append((float(c.group[along]), c.estimate))
    pairs = [sorted(s) for s in series.values() if len(s) >= 2]
    if not pairs:
        return Verdict(NOT_PRODUCED, f"no group has two {along} values to show a trend", "direction")
    ok = [(s[-1][1] > s[0][1]) if rising else (s[-1][1] < s[0][1]) for s in pairs]
    ends = "; ".join(f"{_fmt(s[0][1])} → {_fmt(s[-1][1])}" for s in pairs[:4])
    return _tally("direction", ok, f"{value.direction} along {along}: {ends}")


_BY_KIND = {
    "range": judge_range,
    "ci_within": judge_ci_within,
    "upper": judge_bound,
    "lower": judge_bound,
    "count": judge_count,
    "ratio": judge_ratio,
    "identity": judge_identity,
    "point": judge_point,
}


def verdict_function(value: Value):
    """The verdict function for a value's kind (a point stated as an exact fraction is an identity)."""
    if value.kind == "point" and value.exact is not None:
        return judge_identity
    return _BY_KIND[value.kind]


# ------------------------------------------------------------------------------------ judging


def combine(verdicts: Sequence[Verdict]) -> str:
    """The status of several verdicts: produced ones all consistent / all inconsistent, else mixed."""
    produced = [v.status for v in verdicts if v.status not in (NOT_PRODUCED, NOT_COMPARED, QUALITATIVE)]
    if not produced:
        return NOT_PRODUCED
    if all(s == CONSISTENT for s in produced):
        return CONSISTENT
    if all(s == INCONSISTENT for s in produced):
        return INCONSISTENT
    return MIXED


def _matches(cell: Cell, dim: str, allowed: Any, models: StudyModels, missing_ok: bool) -> bool:
    """Does the cell belong to ``dim = allowed``?  A paper model matches the run model in its role.
    A cell without the dimension matches a ``where`` condition (``missing_ok``: the row was made
    for that sub-population already) but never a ``by`` group (it is the overall value)."""
    allowed = allowed if isinstance(allowed, tuple) else (allowed,)
    if dim == "model":
        run = {models.run_model_for(str(a)) for a in allowed} - {None}
        if "model" not in cell.group and not missing_ok:
            return False
        have = [cell.group["model"]] if "model" in cell.group else list(cell.models)
        return bool(have) and all(m in run for m in have)
    if dim not in cell.group:
        return missing_ok
    return cell.group[dim] in {str(a) for a in allowed}


def _paper_models(value: Value) -> list[str]:
    named = list(value.by.get("model", {})) if "model" in value.by else []
    where = value.where.get("model")
    if where is not None:
        named += list(where) if isinstance(where, tuple) else [where]
    return named


def role_unplayed(value: Value, models: StudyModels) -> bool:
    """The value is stated for paper models and no study model plays any of their roles."""
    named = _paper_models(value)
    return bool(named) and not any(models.run_model_for(m) for m in named)


def _no_model_in_role(value: Value, models: StudyModels) -> Verdict:
    wanted = []
    for m in _paper_models(value):
        role = models.role_of(m)
        wanted.append(f"{m} (role {role.name})" if role else m)
    roles = ", ".join(wanted)
    return Verdict(NOT_PRODUCED, f"stated for {roles}; no study model takes that role: add `roles: [<role>]` to a model entry")


def judge(value: Value, rows: Sequence[Mapping[str, Any]], models: StudyModels = StudyModels()) -> Verdict:
    """The verdict for one paper value against its regenerated rows (one population)."""
    if value.role == "parameter":
        settings = sorted({_fmt(float(r["estimate"])) for r in rows if not _missing(r.get("estimate"))})
        run = f"; this run: {', '.join(settings)}" if settings else ""
        return Verdict(NOT_COMPARED, f"a setting of the protocol, not a result{run}", "parameter")
    if role_unplayed(value, models):
        return _no_model_in_role(value, models)
    scale = 100.0 if value.unit == "percent" else 1.0
    cells = [Cell.from_row(r, scale) for r in rows if not _missing(r.get("estimate"))]
    if not cells:
        return Verdict(NOT_PRODUCED, "no regenerated estimate")
    for dim, allowed in value.where.items():
        cells = [c for c in cells if _matches(c, dim, allowed, models, missing_ok=True)]
    if not cells:
        return Verdict(NOT_PRODUCED, f"no regenerated estimate where {dict(value.where)}")
    if value.by and not _range_over_groups(value):  # only the stated groups (and the overall rows) are judged
        dim, keys = value.by_dimension(), list(value.by[value.by_dimension()])
        cells = [c for c in cells if dim not in c.group or any(_matches(c, dim, k, models, missing_ok=False) for k in keys)]
        if not cells:
            return _no_model_in_role(value, models) if dim == "model" else Verdict(NOT_PRODUCED, f"no regenerated estimate for any stated {dim}")
    analogue = models.analogue(cells)
    if analogue and value.direction:
        verdict = judge_direction(value, cells)  # other models: only the direction is comparable
    elif value.by:
        verdict = _judge_by(value, cells, models)
    else:
        verdict = verdict_function(value)(value, cells)
    return replace(verdict, analogue=analogue)


def _range_over_groups(value: Value) -> bool:
    """An overall range stated beside per-group numbers spans every group ("1.06-1.22: 1.06/1.12/...
    at group sizes 2/4/5/6"); an overall number is a total over them ("46 = 0/2/8/36")."""
    return value.kind in ("range", "ci_within") and value.low is not None and value.high is not None


def _judge_by(value: Value, cells: Sequence[Cell], models: StudyModels) -> Verdict:
    """Per group of ``by`` (and the overall number, if stated, on the rows without the group)."""
    dim = value.by_dimension()
    parts: list[tuple[str, Verdict]] = []
    plain = replace(value, by={})
    if _range_over_groups(value):  # a range spans every group, the stated ones and the others
        parts.append(("every group", verdict_function(plain)(plain, cells)))
    elif value.value is not None or value.formula is not None:  # a total: the rows without the group
        total = [c for c in cells if dim not in c.group]
        if total:
            parts.append(("overall", verdict_function(plain)(plain, total)))
    for key, entry in value.by.get(dim, {}).items():
        group = [c for c in cells if _matches(c, dim, key, models, missing_ok=False)]
        if not group:
            continue
        if isinstance(entry, tuple):
            sub = replace(plain, kind="range" if value.kind != "ci_within" else "ci_within", value=None, low=entry[0], high=entry[1])
        elif isinstance(entry, Fraction):
            sub = replace(plain, kind="identity", value=float(entry), exact=entry, low=None, high=None)
        else:  # a number: the group's point value (inside the overall range, if one is stated)
            kind = "point" if value.kind in ("range", "ci_within") else value.kind
            sub = replace(plain, kind=kind, value=entry, low=None, high=None, extreme=None)
        parts.append((f"{dim}={key}", verdict_function(sub)(sub, group)))
    if not parts:
        if dim == "model":
            return _no_model_in_role(value, models)
        return Verdict(NOT_PRODUCED, f"no regenerated estimate for any stated {dim}")
    kinds = sorted({v.kind for _, v in parts})
    reason = "; ".join(f"{name}: {v.status} ({v.reason})" for name, v in parts)
    return Verdict(combine([v for _, v in parts]), reason, "/".join(kinds))
