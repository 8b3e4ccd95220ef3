"""The claims report: every claim of the paper next to what this run regenerated, direction and size apart.

Inputs: the claims (:mod:`trustmass.report.claims.data`), the headline rows of every stage (one frame
in :data:`~trustmass.report.headline.HEADLINE_SCHEMA`), the run's models as the claims see them
(:class:`~trustmass.report.claims.cells.StudyModels`: roles, paper arms) and the run's resolved
configuration (what it implies for the values it sets: :mod:`trustmass.report.claims.configured`).
Each value is judged (:func:`~trustmass.report.claims.verdicts.judge`) on the population its claim
states (primary slice, manifest and head subset: ``primary``; all documents: ``all``; unstated: both).
A claim is answered as a whole, per axis: ``k of n`` of its values answered, *agrees* only when every
value is answered and agrees, *contradicted* when any answered value disagrees, *partial* otherwise
(:func:`~trustmass.report.claims.axes.combine`; an ``alternative`` reading is shown, not counted).  The
summary lists the claim ids under each answer, for the theory, the paper's own models and analogues apart.
The Markdown rendering: :mod:`trustmass.report.claims.markdown`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import polars as pl

from trustmass.report.claims.axes import (
    AGREES,
    ANSWERED,
    CONTRADICTED,
    NO_ANSWER_ORDER,
    NOT_PRODUCED,
    PARTIAL,
    UNANSWERABLE,
    Axis,
    combine,
)
from trustmass.report.claims.configured import implied
from trustmass.report.claims.model import Claim, Value
from trustmass.report.claims.verdicts import StudyModels, Verdict, is_selected, judge
from trustmass.report.headline import HEADLINE_SCHEMA

__all__ = ["ANSWERED_CLAIM", "CLAIM_STATUSES", "JUDGED_POPULATIONS", "KEY", "QUALITATIVE", "SIDES", "build"]

#: which regenerated population a claim's stated population is judged on
JUDGED_POPULATIONS = {
    "primary_3doc": ("primary",),
    "manifest": ("primary",),
    "depth_subset": ("primary",),
    "content_run": ("primary",),
    "all_docs": ("all",),
    "heldout_docs": ("all",),
    "task_contexts": ("all",),
}
_BOTH = ("primary", "all")
_SHOWN = ("by_key", "by_value", "estimate", "low", "high", "n_instances", "n_docs", "models", "source", "uninformative")
ANSWERED_CLAIM, QUALITATIVE = "answered", "qualitative"
#: a claim's status: answered (its direction or size), or why not, in the one order of reasons
CLAIM_STATUSES = (ANSWERED_CLAIM, *NO_ANSWER_ORDER, QUALITATIVE)
#: the key to the answers, printed at the top of claims.md (and summarised in the README)
KEY = (
    "**The decision rule** (one rule for every number, range, bound, count, sign and order; "
    "`trustmass.report.claims.decision`). The paper's statement is a band: its number widened by half a unit of "
    'its printed digits (at most 10 % of the number; 20 % where it says "about"), a range so widened at each end, '
    "a bound a half-line, a count exact, a sign or an order the half-line above 0 of the stated difference. A "
    "regenerated cell **agrees** when its whole 95 % interval lies inside the band -- an equivalence test by two "
    "one-sided tests (Schuirmann 1987; Lakens 2017) -- and, against an open-ended band, is no wider than the "
    "claim's own scale; it **disagrees** when its whole interval lies outside the band, at any width; otherwise "
    "it **cannot decide** (its interval reaches across an edge of the band, or the producer flagged a degenerate "
    "comparison such as both arms at the floor), and says why. A cell without an interval is an interval of "
    "zero width: its estimate decides. "
    "**One aggregation** for cells into a value, values into a claim: *agrees* only when every item is answered "
    "and agrees; *contradicted* when any answered item disagrees; *partial* when some agree and the rest cannot "
    "answer (k of n answered). No answer, most telling first: *uninformative* (cells exist, none can decide), "
    "*not produced* (no cell; the reason names the missing stage, role or input), *by construction* (the "
    "statement cannot fail on any data) and *not comparable* (the number is set by the run's configuration or "
    "is a protocol setting); values of the last two kinds are listed apart, never counted among the n. "
    "**Direction** (the sign, trend or order the paper states) is what a result on *analogues* -- models that "
    "are not the paper's own checkpoints -- can show; their **size** is a comparison of numbers, not a "
    "replication."
)


def _g(x: Any) -> str:
    return f"{float(x):g}"


def _paper_text(value: Value) -> str:
    unit = "%" if value.unit == "percent" else ""
    if value.low is not None and value.high is not None:
        inside = "95% CI inside " if value.kind == "ci_within" else ""
        return f"{inside}{_g(value.low)}–{_g(value.high)}{unit}"
    number = value.value
    if number is None and value.by:
        return "; ".join(
            f"{dim}={k}: "
            + (
                f"{_g(e[0])}–{_g(e[1])}"
                if isinstance(e, tuple)
                else str(e)
                if not isinstance(e, (int, float))
                else _g(e)
            )
            + unit
            for dim, entries in value.by.items()
            for k, e in entries.items()
        )
    if number is None:
        prefix = {"upper": "≤ ", "lower": "≥ "}.get(value.kind, "")
        return f"{prefix}{value.formula}" if value.formula else "—"
    strict = {"upper": "< ", "lower": "> "} if value.strict else {"upper": "≤ ", "lower": "≥ "}
    prefix = strict.get(value.kind, "")
    prefix = {"max": "up to ", "min": "as few as "}.get(value.extreme or "", prefix)
    if value.kind == "identity" or value.exact is not None:
        prefix = "= "
    if value.approx:
        prefix = "≈ "
    return f"{prefix}{str(value.exact) if value.exact is not None else _g(number)}{unit}" + (
        f" of {value.of}" if value.of else ""
    )


def _direction_text(value: Value) -> str | None:
    d = value.stated_direction
    if d is None:
        return None
    if d in ("above", "below"):
        text = f"{d} {value.than}"
    elif d in ("increasing", "decreasing", "order"):
        text = f"{d} along {value.along}"
    else:
        text = f"{d}" + (f" (against {_g(value.than)})" if value.than is not None else "")
    if value.exceptions:
        text += " except " + ", ".join(
            f"{k} {'/'.join(map(str, v)) if isinstance(v, tuple) else v}" for k, v in value.exceptions.items()
        )
    return text


def _axis(axis: Axis | None) -> dict | None:
    if axis is None:
        return None
    return {
        "status": axis.status,
        "reason": axis.reason,
        "kind": axis.kind,
        "answered": axis.answered,
        "cells": axis.cells,
        "decisive": list(axis.decisive),
    }


def _missing_reason(claim: Claim, value: Value, produced_stages: set[str], config: Mapping | None = None) -> str:
    """Why a value has no row: the stage that did not run, a kind of text the run reads none of, or what a run
    needs to produce it."""
    stage = "/".join(claim.stage)
    ran = bool(set(claim.stage) & produced_stages)
    if value.needs:
        return f"needs {value.needs}" + ("" if ran else f"; its stage ({stage}) did not run")
    if not ran:
        return f"its stage ({stage}) did not run: switched off in this run's configuration"
    absent = _absent_content(value, config)
    if absent:
        return f"this run reads no {absent} corpus (study.corpora; in a control arm, controls.corpora)"
    return f"{stage} ran but emitted no row for it"


def _absent_content(value: Value, config: Mapping | None) -> str | None:
    """The kind of text (``where: {content: ...}``) a value is read on, when none of the run's corpora is of it."""
    wanted = (value.where or {}).get("content")
    if wanted is None or not config:
        return None
    corpora = config.get("corpora") or {}
    read = {(corpora.get(name) or {}).get("content") for name in (config.get("study") or {}).get("corpora") or []}
    return None if wanted in read else str(wanted)


def _judge_population(
    claim: Claim,
    value: Value,
    population: str,
    rows_of,
    models: StudyModels,
    produced: set[str],
    config: Mapping | None,
) -> Verdict:
    rows = rows_of(claim.id, value.name, population)
    others = {v.name: rows_of(claim.id, v.name, population) for v in claim.values if v.name != value.name}
    return judge(
        value,
        rows,
        models,
        others,
        implied(value.configured, config) if value.configured else None,
        missing_reason=_missing_reason(claim, value, produced, config),
    )


def _combined(verdicts: list[Verdict], which: str) -> dict | None:
    """One axis over the judged populations, combined by the one aggregation (reasons of the telling ones)."""
    axes = [getattr(v, which) for v in verdicts if getattr(v, which) is not None]
    if not axes:
        return None
    # a population the stage writes no row for (deployment rows are all-documents only) is no item of its own
    produced = [a for a in axes if a.status != NOT_PRODUCED]
    axes = produced or axes
    status = combine([a.status for a in axes])
    telling = [a for a in axes if a.status == status] or axes
    if status not in ANSWERED:  # one reason: the fullest (a population with rows adds what this run regenerated)
        telling = [max(telling, key=lambda a: len(a.reason))]
    decisive = [d for a in axes if a.status == status for d in a.decisive]
    return {
        "status": status,
        "reason": " | ".join(dict.fromkeys(a.reason for a in telling)),
        "kind": telling[0].kind,
        "answered": max(a.answered for a in axes),
        "cells": max(a.cells for a in axes),
        "decisive": list(dict.fromkeys(decisive))[:6],
    }


def _first_reason(statuses: Iterable[str]) -> str:
    present = set(statuses)
    return next((s for s in NO_ANSWER_ORDER if s in present), NOT_PRODUCED)


def value_status(direction: Mapping | None, size: Mapping | None) -> str:
    """One word for a value: answered when either axis answered, else its first reason in the one order."""
    statuses = [a["status"] for a in (direction, size) if a is not None]
    if any(s in ANSWERED for s in statuses):
        return ANSWERED_CLAIM
    return _first_reason(statuses)


def _judge_value(
    claim: Claim, value: Value, rows_of, models: StudyModels, produced: set[str], config: Mapping | None
) -> dict:
    judged_in = JUDGED_POPULATIONS.get(claim.population, _BOTH)
    results, judged = {}, []
    for population in _BOTH:
        verdict = _judge_population(claim, value, population, rows_of, models, produced, config)
        results[population] = {
            "direction": _axis(verdict.direction),
            "size": _axis(verdict.size),
            "analogue": verdict.analogue,
            "judged": population in judged_in,
            "regenerated": [
                {**{k: r.get(k) for k in _SHOWN}, "judged": population in judged_in and is_selected(value, r, models)}
                for r in rows_of(claim.id, value.name, population)
            ],
        }
        if population in judged_in:
            judged.append(verdict)
    direction, size = _combined(judged, "direction"), _combined(judged, "size")
    analogue = next((v.analogue for v in judged if v.analogue), None)
    return {
        "name": value.name,
        "kind": value.kind,
        "unit": value.unit,
        "role": value.role,
        "paper": _paper_text(value),
        "paper_direction": _direction_text(value),
        "quote": value.quote,
        "configured": value.configured,
        "reading": value.reading,
        "alternative": value.alternative,
        "note": value.note,
        "status": value_status(direction, size),
        "direction": direction,
        "size": size,
        "analogue": analogue,
        **results,
    }


def claim_axis(values: list[dict], which: str) -> dict | None:
    """A claim's answer on one axis: its counted values' answers combined; ``answered`` of ``values`` (those a
    run can answer), ``apart`` (by construction or set by the configuration), the values that decided it."""
    items = [(v["name"], v[which]) for v in values if not v["alternative"] and v[which]]
    if not items:
        return None
    statuses = [a["status"] for _, a in items]
    status = combine(statuses)
    answerable = [(name, a) for name, a in items if a["status"] not in UNANSWERABLE]
    wanted = (CONTRADICTED,) if status == CONTRADICTED else (AGREES, PARTIAL)
    return {
        "status": status,
        "answered": sum(a["status"] in ANSWERED for _, a in answerable),
        "values": len(answerable),
        "apart": len(items) - len(answerable),
        "decisive": [name for name, a in answerable if a["status"] in wanted],
    }


def _claim_entry(claim: Claim, values: list[dict]) -> dict:
    direction, size = claim_axis(values, "direction"), claim_axis(values, "size")
    axes = [a["status"] for a in (direction, size) if a]
    if not values:
        status = QUALITATIVE
    elif any(s in ANSWERED for s in axes):
        status = ANSWERED_CLAIM
    else:
        status = _first_reason(axes)
    counted = [v for v in values if not v["alternative"]]
    analogue = sorted({v["analogue"] for v in counted if v["analogue"] and v["status"] == ANSWERED_CLAIM})
    return {
        "id": claim.id,
        "section": claim.section,
        "stage": list(claim.stage),
        "population": claim.population,
        "short": claim.short,
        "text": claim.text,
        "note": claim.note,
        "values": values,
        "status": status,
        "direction": direction,
        "size": size,
        "analogue": "; ".join(analogue) or None,
    }


#: the summary's sides: the theory (worked examples and bounds, on no model), the paper's own checkpoints, analogues
SIDES = ("theory", "paper models", "analogues")


def _side(entry: Mapping) -> str:
    if entry["stage"] == ["THY"]:
        return "theory"
    return "paper models" if entry["analogue"] is None else "analogues"


def _summary(entries: list[dict]) -> dict:
    """The claim ids under each answer, per side (the theory, the paper's models, analogues) and axis, and the
    ids of the claims without an answer under their reason."""
    out: dict[str, Any] = {}
    for side in SIDES:
        mine = [e for e in entries if e["status"] == ANSWERED_CLAIM and _side(e) == side]
        out[side] = {"claims": [e["id"] for e in mine]}
        for axis in ("direction", "size"):
            out[side][axis] = {s: [e["id"] for e in mine if e[axis] and e[axis]["status"] == s] for s in ANSWERED}
    out["not answered"] = {
        s: [e["id"] for e in entries if e["status"] == s] for s in CLAIM_STATUSES if s != ANSWERED_CLAIM
    }
    return out


def build(
    claims: Iterable[Claim],
    headline: pl.DataFrame,
    models: StudyModels = StudyModels(),
    produced_stages: Iterable[str] = (),
    run_models: Iterable[str] = (),
    config: Mapping[str, Any] | None = None,
) -> dict:
    """The report as a JSON-serialisable dict: one entry per claim, two answers per value and population."""
    missing = [c for c in HEADLINE_SCHEMA if c not in headline.columns and c not in ("context", "uninformative")]
    if missing:
        raise ValueError(f"headline frame lacks columns {missing}; it must have {list(HEADLINE_SCHEMA)}")
    grouped: dict[tuple[int, str, str], list[dict]] = {}
    for row in headline.iter_rows(named=True):
        grouped.setdefault((int(row["claim_id"]), row["value_name"], row["population"]), []).append(row)
    produced = set(produced_stages)

    def rows_of(claim_id: int, name: str, population: str) -> list[dict]:
        return grouped.get((claim_id, name, population), [])

    entries = [
        _claim_entry(c, [_judge_value(c, v, rows_of, models, produced, config) for v in c.values]) for c in claims
    ]
    run_models = list(run_models)
    return {
        "models": run_models,
        "roles": dict(models.roles),
        "mapping": _mapping(run_models, models),
        "paper_arms": sorted(models.paper_arms),
        "note": _note(run_models, models),
        "key": KEY,
        "counts": {status: sum(e["status"] == status for e in entries) for status in CLAIM_STATUSES},
        "summary": _summary(entries),
        "claims": entries,
    }


def _mapping(run_models: list[str], models: StudyModels) -> list[str]:
    """Which run model stands in for which paper model (printed once, not per row)."""
    out = []
    for model in run_models:
        paper = models.paper_model_of(model)
        roles = sorted(r for r, m in models.roles.items() if m == model)
        arm = model in models.paper_arms
        plays = f"plays {paper} ({', '.join(roles)})" if paper else "plays no paper model's role"
        out.append(f"{model} {'is the paper' + chr(39) + 's own checkpoint and ' if arm else ''}{plays}")
    return out


def _note(run_models: list[str], models: StudyModels) -> str:
    others = [m for m in run_models if m not in models.paper_arms]
    if not others:
        return "Every model of this run is one of the paper's own checkpoints: sizes and directions compare like with like."
    return (
        f"{', '.join(others)} {'is' if len(others) == 1 else 'are'} not the paper's model{'s' if len(others) > 1 else ''}: "
        f"values judged on {'it' if len(others) == 1 else 'them'} are analogues: the direction is what "
        f"{'it' if len(others) == 1 else 'they'} can show, the size a comparison of numbers that neither certifies nor "
        "refutes the paper's claim for its own models."
    )
