"""The claims report: every claim of the paper next to what this run regenerated, with a verdict.

Inputs: the claims (:mod:`trustmass.report.claims.data`), the headline rows of every stage (one
frame in :data:`~trustmass.report.headline.HEADLINE_SCHEMA`) and the run's models as the claims see
them (:class:`~trustmass.report.claims.verdicts.StudyModels`: roles, paper arms).  Each value is
judged (:func:`~trustmass.report.claims.verdicts.judge`) on the population its claim states
(primary slice, manifest and head subset: ``primary``; all documents: ``all``; unstated: both, and
two differing verdicts make it ``mixed``); a claim's status combines its values' (parameters are
settings, never judged).  Statuses: :data:`~trustmass.report.claims.verdicts.STATUSES`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import polars as pl

from trustmass.report.claims.model import Claim, Value
from trustmass.report.claims.verdicts import (
    NOT_COMPARED,
    NOT_PRODUCED,
    QUALITATIVE,
    STATUSES,
    StudyModels,
    Verdict,
    combine,
    judge,
    role_unplayed,
)
from trustmass.report.headline import HEADLINE_SCHEMA

__all__ = ["JUDGED_POPULATIONS", "build", "markdown"]

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
_SHOWN = ("by_key", "by_value", "estimate", "low", "high", "n_instances", "n_docs", "models", "source")
STATUS_MEANING = {
    "consistent": "every regenerated cell meets the paper's value (within the precision it is printed with)",
    "inconsistent": "no regenerated cell meets it",
    "mixed": "some cells, groups or populations meet it and some do not",
    "not produced yet": "no stage of this run computes it (the reason names what is missing)",
    "not compared": "a setting of the paper's protocol (a cap, a document count), shown, not judged",
    "qualitative": "the claim states no number",
}


def _paper_text(value: Value) -> str:
    unit = "%" if value.unit == "percent" else ""
    g = lambda x: f"{float(x):g}"  # noqa: E731
    if value.low is not None and value.high is not None:
        inside = "95% CI inside " if value.kind == "ci_within" else ""
        return f"{inside}{g(value.low)}–{g(value.high)}{unit}"
    number = value.value
    if number is None and value.by:
        return "; ".join(
            f"{dim}={k}: " + (f"{g(e[0])}–{g(e[1])}" if isinstance(e, tuple) else str(e) if not isinstance(e, (int, float)) else g(e)) + unit
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
    return f"{prefix}{str(value.exact) if value.exact is not None else g(number)}{unit}" + (f" of {value.of}" if value.of else "")


def _judge_value(claim: Claim, value: Value, rows_of, models: StudyModels, produced_stages: set[str]) -> dict:
    results: dict[str, dict] = {}
    verdicts = []
    judged = JUDGED_POPULATIONS.get(claim.population, _BOTH)
    for population in _BOTH:
        rows = rows_of(claim.id, value.name, population)
        if rows or value.role == "parameter" or role_unplayed(value, models):
            verdict = judge(value, rows, models)  # with rows, or a paper model whose role nobody plays
        else:
            stage = "/".join(claim.stage)
            why = "its stage has not run" if not (set(claim.stage) & produced_stages) else "not computed by this run"
            verdict = Verdict(NOT_PRODUCED, f"{stage}: {why}")
        results[population] = {
            "status": verdict.status, "reason": verdict.reason, "verdict_kind": verdict.kind, "analogue": verdict.analogue,
            "judged": population in judged, "regenerated": [{k: r.get(k) for k in _SHOWN} for r in rows],
        }  # fmt: skip
        if population in judged:
            verdicts.append(verdict)
    if value.role == "parameter":
        status = NOT_COMPARED
    else:
        status = combine(verdicts)
    analogue = next((v.analogue for v in verdicts if v.analogue and v.status != NOT_PRODUCED), None)
    return {
        "name": value.name, "kind": value.kind, "unit": value.unit, "role": value.role, "paper": _paper_text(value),
        "status": status, "analogue": analogue, **results,
    }  # fmt: skip


def _claim_status(values: list[dict]) -> str:
    if not values:
        return QUALITATIVE
    judged = [v for v in values if v["status"] != NOT_COMPARED]
    if not judged:
        return NOT_COMPARED
    return combine([Verdict(v["status"], "") for v in judged])


def build(
    claims: Iterable[Claim],
    headline: pl.DataFrame,
    models: StudyModels = StudyModels(),
    produced_stages: Iterable[str] = (),
    run_models: Iterable[str] = (),
) -> dict:
    """The report as a JSON-serialisable dict: one entry per claim, a verdict per value and population."""
    missing = [c for c in HEADLINE_SCHEMA if c not in headline.columns and c != "context"]
    if missing:
        raise ValueError(f"headline frame lacks columns {missing}; it must have {list(HEADLINE_SCHEMA)}")
    grouped: dict[tuple[int, str, str], list[dict]] = {}
    for row in headline.iter_rows(named=True):
        grouped.setdefault((int(row["claim_id"]), row["value_name"], row["population"]), []).append(row)
    produced = set(produced_stages)

    def rows_of(claim_id: int, name: str, population: str) -> list[dict]:
        return grouped.get((claim_id, name, population), [])

    entries = []
    for claim in claims:
        values = [_judge_value(claim, v, rows_of, models, produced) for v in claim.values]
        analogue = sorted({v["analogue"] for v in values if v["analogue"]})
        entries.append({
            "id": claim.id, "section": claim.section, "stage": list(claim.stage), "population": claim.population,
            "text": claim.text, "values": values, "status": _claim_status(values), "analogue": "; ".join(analogue) or None,
        })  # fmt: skip
    counts = {status: sum(e["status"] == status for e in entries) for status in STATUSES}
    run_models = list(run_models)
    return {
        "models": run_models,
        "roles": dict(models.roles),
        "paper_arms": sorted(models.paper_arms),
        "note": _note(run_models, models),
        "statuses": STATUS_MEANING,
        "counts": counts,
        "produced": sum(e["status"] not in (NOT_PRODUCED, QUALITATIVE, NOT_COMPARED) for e in entries),
        "claims": entries,
    }


def _note(run_models: list[str], models: StudyModels) -> str:
    others = [m for m in run_models if m not in models.paper_arms]
    if not others:
        return "Every model of this run is one of the paper's own checkpoints: verdicts compare like with like."
    return (
        f"{', '.join(others)} {'is' if len(others) == 1 else 'are'} not the paper's model{'s' if len(others) > 1 else ''}: "
        "verdicts on them are analogues (marked per row), comparisons of numbers that neither certify nor refute "
        "the paper's claim for its own models; values with a stated direction are judged by their direction there."
    )


def markdown(report: dict) -> str:
    roles = ", ".join(f"{role}: {model}" for role, model in sorted(report["roles"].items())) or "none"
    lines = [
        "# Claims report",
        "",
        f"Models of this run: {', '.join(report['models']) or 'none'} (roles: {roles}).",
        "",
        f"> {report['note']}",
        "",
        f"Claims with a regenerated verdict: {report['produced']} of {len(report['claims'])}.",
        "",
        "| status | claims | meaning |",
        "|---|---|---|",
        *[f"| {k} | {report['counts'].get(k, 0)} | {report['statuses'][k]} |" for k in STATUSES],
        "",
        "| # | § | claim | value | paper | regenerated (primary slice) | regenerated (all docs) | verdict | why |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for entry in report["claims"]:
        text = entry["text"].replace("|", "\\|")
        if len(text) > 90:
            text = text[:87] + "..."
        if not entry["values"]:
            lines.append(f"| {entry['id']} | {entry['section']} | {text} | — | — | — | — | qualitative | |")
        for i, v in enumerate(entry["values"]):
            first = i == 0
            scale = 100.0 if v["unit"] == "percent" else 1.0
            lines.append(
                f"| {entry['id'] if first else ''} | {entry['section'] if first else ''} | {text if first else ''} | "
                f"{v['name']} | {v['paper']} | {_cell(v['primary'], scale)} | {_cell(v['all'], scale)} | {_verdict(v)} | {_why(v)} |"
            )
    return "\n".join(lines) + "\n"


def _judged(value: Mapping) -> Mapping:
    """The population result the value's verdict rests on (the primary slice where both are judged)."""
    judged = [value[p] for p in ("primary", "all") if value[p]["judged"]]
    produced = [r for r in judged if r["status"] != NOT_PRODUCED]
    return (produced or judged or [value["primary"]])[0]


def _verdict(value: Mapping) -> str:
    text = value["status"]
    if _judged(value).get("verdict_kind") == "direction":
        text += " (direction)"
    if value.get("analogue"):
        text += f" · analogue ({value['analogue']})"
    return text


def _why(value: Mapping, limit: int = 140) -> str:
    reason = str(_judged(value)["reason"]).replace("|", "\\|")
    return reason if len(reason) <= limit else reason[: limit - 3] + "..."


def _nan(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _number(x: float) -> str:
    """Counts as integers (19,440), everything else to four significant digits."""
    if math.isfinite(x) and x == int(x) and abs(x) >= 1000:
        return f"{int(x):,}"
    return f"{x:.4g}"


def _cell(result: Mapping, scale: float = 1.0) -> str:
    """The regenerated estimates in the claim's unit (fractions x 100 for a percent claim)."""
    regs = [r for r in result["regenerated"] if not _nan(r["estimate"])]
    if not regs:
        return "—"
    unit = "%" if scale == 100.0 else ""
    if len(regs) == 1:
        r = regs[0]
        ci = f" [{r['low'] * scale:.3g}, {r['high'] * scale:.3g}]" if not _nan(r.get("low")) and not _nan(r.get("high")) else ""
        return f"{_number(r['estimate'] * scale)}{unit}{ci}"
    ests = [r["estimate"] * scale for r in regs]
    return f"{_number(min(ests))}..{_number(max(ests))}{unit} ({len(regs)} cells)"
