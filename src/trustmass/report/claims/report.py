"""The claims report: every claim of the paper next to what this run regenerated, direction and size apart.

Inputs: the claims (:mod:`trustmass.report.claims.data`), the headline rows of every stage (one frame
in :data:`~trustmass.report.headline.HEADLINE_SCHEMA`), the run's models as the claims see them
(:class:`~trustmass.report.claims.cells.StudyModels`: roles, paper arms) and the run's resolved
configuration (what it implies for the values it sets: :mod:`trustmass.report.claims.configured`).
Each value is judged (:func:`~trustmass.report.claims.verdicts.judge`) on the population its claim
states (primary slice, manifest and head subset: ``primary``; all documents: ``all``; unstated: both,
combined).  A claim's direction and size combine its values' (an ``alternative`` reading is shown,
not counted); the summary counts them apart for the paper's own models and for analogues.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import polars as pl

from trustmass.report.claims.configured import implied
from trustmass.report.claims.model import Claim, Value
from trustmass.report.claims.verdicts import (
    BY_CONSTRUCTION,
    JUDGED,
    NOT_COMPARABLE,
    NOT_PRODUCED,
    UNINFORMATIVE,
    Axis,
    StudyModels,
    Verdict,
    combine,
    judge,
)
from trustmass.report.headline import HEADLINE_SCHEMA

__all__ = ["CLAIM_STATUSES", "JUDGED_POPULATIONS", "KEY", "build", "markdown"]

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
JUDGED_CLAIM, QUALITATIVE = "judged", "qualitative"
#: a claim's status: judged (direction or size answered), or why not
CLAIM_STATUSES = (JUDGED_CLAIM, UNINFORMATIVE, NOT_COMPARABLE, BY_CONSTRUCTION, NOT_PRODUCED, QUALITATIVE)
#: the key to the statuses, printed at the top of claims.md (and in the README)
KEY = (
    "Each value of each claim gets two answers. **Direction**: is the sign, trend or order the paper states "
    "reproduced? **Size**: is the number within the paper's value or range (half a unit of its printed digits, "
    'never more than 10 % of the number; 20 % where the paper says "about")? Each answers *agrees* (every '
    "informative cell), *disagrees* (none) or *mixed*; or it does not answer: *not comparable* (the number is set by "
    "the run's configuration -- an instance count, a byte share s/N, a count of conditions -- or is a protocol "
    "setting; the report shows what the configuration implies), *uninformative* (the cells exist but cannot speak: "
    "a degenerate input, an infinite cap, a 95 % interval wider than the claim's own scale or across zero where the "
    "sign matters, overlapping intervals where an order is stated, a filter that matched nothing), *by construction* "
    "(the stated trend cannot fail on any data) or *not produced* (the reason names the missing stage, role or input). "
    "An *analogue* is a value judged on models that are not the paper's own checkpoints: its direction is what it "
    "can show; its size is a comparison, not a replication. The summary counts claims answered by the theory (worked "
    "examples and bounds, exact on any model), on the paper's own checkpoints and on analogues apart."
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
    return None if axis is None else {"status": axis.status, "reason": axis.reason, "kind": axis.kind}


def _missing_reason(claim: Claim, value: Value, produced_stages: set[str]) -> str:
    """Why a value has no row: the stage that did not run, or what a run needs to produce it."""
    stage = "/".join(claim.stage)
    ran = bool(set(claim.stage) & produced_stages)
    if value.needs:
        return f"needs {value.needs}" + ("" if ran else f"; its stage ({stage}) did not run")
    if not ran:
        return f"its stage ({stage}) did not run: switched off in this run's configuration"
    return f"{stage} ran but emitted no row for it"


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
        missing_reason=_missing_reason(claim, value, produced),
    )


def _combined(verdicts: list[Verdict], which: str) -> dict | None:
    """One axis over the judged populations (reasons of the populations that answered)."""
    axes = [getattr(v, which) for v in verdicts if getattr(v, which) is not None]
    if not axes:
        return None
    status = combine([a.status for a in axes])
    telling = [a for a in axes if a.status == status] or axes
    if status not in JUDGED:  # one reason: the fullest (a population with rows adds what this run regenerated)
        telling = [max(telling, key=lambda a: len(a.reason))]
    return {"status": status, "reason": " | ".join(dict.fromkeys(a.reason for a in telling)), "kind": telling[0].kind}


def value_status(direction: Mapping | None, size: Mapping | None) -> str:
    """One word for a value: judged when either axis answered, else its most telling non-answer."""
    statuses = [a["status"] for a in (direction, size) if a is not None]
    if any(s in JUDGED for s in statuses):
        return JUDGED_CLAIM
    for status in (UNINFORMATIVE, NOT_PRODUCED, NOT_COMPARABLE, BY_CONSTRUCTION):
        if status in statuses:
            return status
    return NOT_PRODUCED


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
            "regenerated": [{k: r.get(k) for k in _SHOWN} for r in rows_of(claim.id, value.name, population)],
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


def _claim_entry(claim: Claim, values: list[dict]) -> dict:
    counted = [v for v in values if not v["alternative"]]
    direction = (
        combine([v["direction"]["status"] for v in counted if v["direction"]])
        if any(v["direction"] for v in counted)
        else None
    )
    size = combine([v["size"]["status"] for v in counted if v["size"]]) if any(v["size"] for v in counted) else None
    status = QUALITATIVE if not values else value_status(*({"status": s} if s else None for s in (direction, size)))
    analogue = sorted({v["analogue"] for v in counted if v["analogue"] and v["status"] == JUDGED_CLAIM})
    return {
        "id": claim.id,
        "section": claim.section,
        "stage": list(claim.stage),
        "population": claim.population,
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
    """Claims with an answer, split by what answered (the theory, the paper's models, analogues): per axis,
    how many agree, disagree or are mixed."""
    out = {}
    for side in SIDES:
        mine = [e for e in entries if e["status"] == JUDGED_CLAIM and _side(e) == side]
        out[side] = {"claims": len(mine)}
        for axis in ("direction", "size"):
            answered = [e[axis] for e in mine if e[axis] in JUDGED]
            out[side][axis] = {s: answered.count(s) for s in JUDGED}
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
        "paper_arms": sorted(models.paper_arms),
        "note": _note(run_models, models),
        "key": KEY,
        "counts": {status: sum(e["status"] == status for e in entries) for status in CLAIM_STATUSES},
        "summary": _summary(entries),
        "claims": entries,
    }


def _note(run_models: list[str], models: StudyModels) -> str:
    others = [m for m in run_models if m not in models.paper_arms]
    if not others:
        return "Every model of this run is one of the paper's own checkpoints: sizes and directions compare like with like."
    return (
        f"{', '.join(others)} {'is' if len(others) == 1 else 'are'} not the paper's model{'s' if len(others) > 1 else ''}: "
        "values judged on them are analogues (marked per row): the direction is what they can show, the size a "
        "comparison of numbers that neither certifies nor refutes the paper's claim for its own models."
    )


# ------------------------------------------------------------------------------------------- markdown


def summary_table(report: Mapping) -> list[str]:
    """The summary as Markdown rows: answered claims per side and axis, then the claims without an answer."""
    lines = [
        "| claims answered | claims | direction agrees | disagrees | mixed | size agrees | disagrees | mixed |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for side, s in report["summary"].items():
        d, z = s["direction"], s["size"]
        lines.append(
            f"| {'on ' + side if side != 'theory' else 'theory (no model)'} | {s['claims']} | {d['agrees']} | "
            f"{d['disagrees']} | {d['mixed']} | "
            f"{z['agrees']} | {z['disagrees']} | {z['mixed']} |"
        )
    counts = report["counts"]
    rest = ", ".join(f"{counts[s]} {s}" for s in CLAIM_STATUSES if s != JUDGED_CLAIM and counts.get(s))
    return lines + ["", f"Not answered: {rest}." if rest else "Every claim answered."]


def markdown(report: dict) -> str:
    roles = ", ".join(f"{role}: {model}" for role, model in sorted(report["roles"].items())) or "none"
    lines = [
        "# Claims report",
        "",
        f"Models of this run: {', '.join(report['models']) or 'none'} (roles: {roles}).",
        "",
        f"> {report['note']}",
        "",
        report["key"],
        "",
        *summary_table(report),
        "",
        "| # | claim | value | paper | regenerated (primary slice) | regenerated (all docs) | direction | size | why, notes |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for entry in report["claims"]:
        text = _clip(entry["text"], 90)
        if not entry["values"]:
            lines.append(
                f"| {entry['id']} | {text} | — | — | — | — | — | — | qualitative: the claim states no number |"
            )
        for i, v in enumerate(entry["values"]):
            scale = 100.0 if v["unit"] == "percent" else 1.0
            name = v["name"] + (" (alternative reading, not counted)" if v["alternative"] else "")
            paper = v["paper"] + (f"; {v['paper_direction']}" if v["paper_direction"] else "")
            lines.append(
                f"| {entry['id'] if i == 0 else ''} | {text if i == 0 else ''} | {name} | {_esc(paper)} | "
                f"{_cell(v['primary'], scale)} | {_cell(v['all'], scale)} | {_answer(v['direction'])} | {_answer(v['size'])} | "
                f"{_why(v)} |"
            )
    return "\n".join(lines) + "\n"


def _esc(text: str) -> str:
    return str(text).replace("|", "\\|")


def _clip(text: str, limit: int) -> str:
    text = _esc(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _answer(axis: Mapping | None) -> str:
    return "—" if axis is None else axis["status"]


def _why(value: Mapping, limit: int = 260) -> str:
    parts = []
    for label, axis in (("direction", value["direction"]), ("size", value["size"])):
        if axis is not None:
            parts.append(f"{label}: {axis['reason']}")
    if value.get("analogue"):
        parts.append(f"analogue ({value['analogue']})")
    if value.get("reading"):
        parts.append(f"read as: {value['reading']}")
    return _clip("; ".join(parts), limit)


def _nan(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _number(x: float) -> str:
    """Counts as integers (19,440), everything else to four significant digits."""
    if math.isfinite(x) and x == int(x) and abs(x) >= 1000:
        return f"{int(x):,}"
    return f"{x:.4g}"


def _cell(result: Mapping, scale: float = 1.0) -> str:
    """The regenerated estimates in the claim's unit (fractions x 100 for a percent claim), with their
    95 % intervals: one cell as "est [lo, hi]", several as the span of estimates and of interval ends."""
    regs = [r for r in result["regenerated"] if not _nan(r["estimate"])]
    if not regs:
        return "—"
    unit = "%" if scale == 100.0 else ""
    with_ci = [r for r in regs if not _nan(r.get("low")) and not _nan(r.get("high"))]
    if len(regs) == 1:
        r = regs[0]
        ci = f" [{_number(r['low'] * scale)}, {_number(r['high'] * scale)}]" if with_ci else ""
        return f"{_number(r['estimate'] * scale)}{unit}{ci}"
    ests = [r["estimate"] * scale for r in regs]
    ci = ""
    if with_ci:
        ci = f"; intervals within [{_number(min(r['low'] for r in with_ci) * scale)}, {_number(max(r['high'] for r in with_ci) * scale)}]"
    return f"{_number(min(ests))}..{_number(max(ests))}{unit} ({len(regs)} cells{ci})"
