"""The claims report as Markdown (``results/claims.md``; its HTML view is drawn from it).

The first screen answers "what reproduced": the run's models and whom they stand in for (once), then the
claim ids under each answer, direction and size apart, and the claims without an answer under their reason.
Where the run has controls (:mod:`trustmass.report.claims.controls`), the sanity checks follow: the claim ids
that are specific, structural or contradicted, and the attention regime of every arm.  Then the key (the
decision rule), one line per claim (its answers, k of n values, the decisive cells, the sanity check) and, per
claim, its values with their reasons in full and the cells they were judged on (and its control readings); the
cells of a population the claim is not judged on, or outside the value's filters, sit behind a fold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from trustmass.report.claims.axes import AGREES, ANSWERED, BY_CONSTRUCTION, CONTRADICTED, PARTIAL, fmt
from trustmass.report.claims.cells import missing
from trustmass.report.claims.controls import NO_VERDICT, SPECIFIC, STRUCTURAL, VERDICTS
from trustmass.report.claims.report import ANSWERED_CLAIM, CLAIM_STATUSES, QUALITATIVE

__all__ = ["claim_label", "controls_lines", "markdown", "readme_lines", "summary_lines"]

_AXES = (("direction", "direction (the sign, trend or order stated)"), ("size", "size (the paper's number)"))
_SIDE_NAMES = {"theory": "the theory (no model)", "paper models": "the paper's own models", "analogues": "analogues"}


def _esc(text: str) -> str:
    return str(text).replace("|", "\\|")


def claim_label(entry: Mapping, limit: int = 64) -> str:
    """A few words naming a claim: its ``short`` title, else its sentence cut at a word."""
    if entry.get("short"):
        return entry["short"]
    text = " ".join(str(entry["text"]).split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut.rstrip(",;:") + " …"


def _ids(ids: Sequence[int]) -> str:
    return ", ".join(map(str, ids)) if ids else "none"


def _answer(axis: Mapping | None) -> str:
    """ "agrees (2 of 2 values)", "contradicted (1 of 3 answered)", "not produced", "—"."""
    if axis is None:
        return "—"
    apart = f"; {axis['apart']} set apart" if axis.get("apart") else ""
    if axis["status"] in ANSWERED:
        return f"{axis['status']} ({axis['answered']} of {axis['values']} values answered{apart})"
    return axis["status"] + (f" ({axis['values']} values{apart})" if axis.get("values") else "")


def summary_lines(report: Mapping) -> list[str]:
    """What reproduced: the claim ids under each answer, per axis, per side; then the unanswered ones."""
    summary = report["summary"]
    lines = [
        "| answered on | claims | | " + " | ".join(title for _, title in _AXES) + " |",
        "|---|---|---|---|---|",
    ]
    for side in ("analogues", "paper models", "theory"):
        s = summary[side]
        if not s["claims"]:
            lines.append(f"| {_SIDE_NAMES[side]} | 0 | | | |")
            continue
        for i, status in enumerate(ANSWERED):
            cells = [f"{len(s[axis][status])}: {_ids(s[axis][status])}" for axis, _ in _AXES]
            first = f"| {_SIDE_NAMES[side]} | {len(s['claims'])} " if i == 0 else "| | "
            lines.append(f"{first}| {status} | " + " | ".join(cells) + " |")
    rest = summary["not answered"]
    lines += [
        "",
        "Not answered: "
        + "; ".join(f"{status} ({len(rest[status])}): {_ids(rest[status])}" for status in CLAIM_STATUSES[1:])
        + ".",
    ]
    return lines


def _listing(report: Mapping, axis: str, status: str, sides: Sequence[str]) -> str:
    """The claims under one answer as a paragraph: "**11** group vote vs top-mass · **13** ..."."""
    ids = sorted({i for side in sides for i in report["summary"][side][axis][status]})
    entries = {e["id"]: e for e in report["claims"]}
    return " · ".join(f"**{i}** {_esc(claim_label(entries[i], 48))}" for i in ids) or "none"


def readme_lines(report: Mapping) -> list[str]:
    """What reproduced and what was contradicted, by claim id and a few words each (also the README's block)."""
    sides = ("analogues", "paper models")
    summary = report["summary"]

    def count(axis: str, status: str) -> int:
        return len({i for side in sides for i in summary[side][axis][status]})

    out = []
    for axis, status, title in (
        ("direction", AGREES, "Direction reproduced"),
        ("size", AGREES, "Size reproduced"),
        ("direction", CONTRADICTED, "Direction contradicted"),
        ("size", CONTRADICTED, "Size contradicted"),
    ):
        out += [f"- **{title}** ({count(axis, status)}): {_listing(report, axis, status, sides)}"]
    partial = sorted({i for side in sides for a, _ in _AXES for i in summary[side][a][PARTIAL]})
    rest = summary["not answered"]
    out += [
        f"- **Partial** (some values answered, none contradicted): {_ids(partial)}.",
        f"- **Theory** (worked examples and bounds, exact on any model): {_ids(summary['theory']['claims'])}.",
        "- **Not answered**: " + "; ".join(f"{s} {_ids(rest[s])}" for s in CLAIM_STATUSES[1:] if rest[s]) + ".",
    ]
    controls = report.get("controls")
    if controls:  # the sanity checks, claim by claim ("Sanity checks" below has them per axis)
        counts = controls["counts"]["claims"]
        out += [
            "- **Sanity checks** (the same study on randomised weights and on shuffled text): "
            + "; ".join(f"{v} ({len(counts[v])}) {_ids(counts[v])}" for v in VERDICTS)
            + "; no verdict: "
            + "; ".join(f"{reason} {_ids(ids)}" for reason, ids in counts[NO_VERDICT].items() if ids)
            + "."
        ]
    return out


def _regime_lines(rows: Sequence[Mapping] | None) -> list[str]:
    if not rows:
        return ["No regime table: the run gave none."]
    lines = [
        "| arm | model | corpus | rows | normalised entropy | max weight | weight on token 0 |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        numbers = [("—" if missing(r[c]) else fmt(r[c])) for c in ("n_rows", "entropy", "max_weight", "token0_weight")]
        lines.append(f"| {r['arm']} | {_esc(r['model'])} | {_esc(r['corpus'])} | " + " | ".join(numbers) + " |")
    return lines


def controls_lines(report: Mapping) -> list[str]:
    """The sanity checks: the claim ids under each verdict (the claim, its direction, its size), the controls
    that made them structural or contradict the specific ones, the regime each arm sits in.  Nothing without
    controls."""
    controls = report.get("controls")
    if not controls:
        return []
    counts, scopes = controls["counts"], ("claims", "direction", "size")
    arms = controls["arms"]
    ran = "; ".join(
        f"**{arm}** on {', '.join(a['models']) or 'no model'}" if a["run"] else f"**{arm}** not run"
        for arm, a in arms.items()
    )

    def row(title: str, pick) -> str:
        return f"| {title} | " + " | ".join(f"{len(pick(counts[s]))}: {_ids(pick(counts[s]))}" for s in scopes) + " |"

    lines = [
        "## Sanity checks",
        "",
        f"The same study, code and decision rule on the controls: {ran}. A claim that agrees on the trained models "
        "is **specific** when it agrees on no control, **structural** when it agrees on one too (or holds by "
        "construction); a control that cannot answer makes nothing structural, and one that did not produce the "
        "claim (not run, or its stage off there) leaves it without a verdict. Per axis, and for the claim as a "
        "whole (its axes combined by the one aggregation).",
        "",
        "| verdict | claims | direction | size |",
        "|---|---|---|---|",
    ]
    for verdict in VERDICTS:
        lines.append(row(verdict, lambda c, v=verdict: c[v]))
        if verdict == STRUCTURAL:
            for via in counts["claims"]["structural via"]:
                title = f"— {via}" if via == BY_CONSTRUCTION else f"— via {via}"
                lines.append(row(title, lambda c, w=via: c["structural via"][w]))
        if verdict == SPECIFIC:
            for arm in counts["claims"]["specific, contradicted on"]:
                lines.append(row(f"— contradicted on {arm}", lambda c, a=arm: c["specific, contradicted on"][a]))
    none = counts["claims"][NO_VERDICT]
    lines += [
        "",
        "No verdict: " + "; ".join(f"{r} ({len(ids)}): {_ids(ids)}" for r, ids in none.items() if ids) + ".",
        "",
        f"> {controls['structural means']}",
        "",
        *_regime_lines(controls.get("regime")),
    ]
    return lines


def _sanity(entry: Mapping) -> list[str]:
    """A claim's verdict and its readings on every control."""
    c = entry.get("controls")
    if not c:
        return []
    verdict = f"**{c['verdict']}**" if c["verdict"] else f"no verdict ({c['reason']})"
    why = f" -- {c['reason']}" if c["verdict"] else ""
    axes = ", ".join(f"{a} {c[a]['verdict'] or 'no verdict'}" for a, _ in _AXES if c.get(a))
    readings = "; ".join(
        f"{arm}: " + (", ".join(f"{a} {_answer(r[a])}" for a, _ in _AXES if r.get(a)) or r["answer"])
        for arm, r in c["arms"].items()
    )
    return [f"Sanity check: {verdict}{why}" + (f" ({axes})" if axes else "") + f". Controls: {_esc(readings)}.", ""]


def _cell_text(row: Mapping, scale: float) -> str:
    unit = "%" if scale == 100.0 else ""
    est = f"{fmt(row['estimate'] * scale)}{unit}"
    if not missing(row.get("low")) and not missing(row.get("high")):
        est += f" [{fmt(row['low'] * scale)}, {fmt(row['high'] * scale)}]"
    return est


def _cells_table(rows: Sequence[tuple[str, Mapping]], scale: float) -> list[str]:
    """(population, regenerated row) pairs as a table."""
    lines = [
        "| population | group | estimate [95 % interval] | records | docs | models | flagged |",
        "|---|---|---|---|---|---|---|",
    ]
    for population, r in rows:
        group = ", ".join(f"{k}={v}" for k, v in zip(str(r["by_key"]).split(","), str(r["by_value"]).split(",")))
        lines.append(
            f"| {population} | {_esc(group) if r.get('by_key') else 'overall'} | {_cell_text(r, scale)} | "
            f"{r.get('n_instances') if r.get('n_instances') is not None else ''} | "
            f"{r.get('n_docs') if r.get('n_docs') is not None else ''} | {_esc(r.get('models') or '')} | "
            f"{_esc(r.get('uninformative') or '')} |"
        )
    return lines


def _value_block(value: Mapping) -> list[str]:
    scale = 100.0 if value["unit"] == "percent" else 1.0
    paper = value["paper"] + (f"; {value['paper_direction']}" if value["paper_direction"] else "")
    head = f"**{value['name']}**" + (" (an alternative reading: shown, not counted)" if value["alternative"] else "")
    quote = f' -- "{value["quote"]}"' if value.get("quote") else ""
    lines = [f"- {head}: paper {_esc(paper)}{quote}"]
    for axis in ("direction", "size"):
        a = value[axis]
        if a is not None:
            lines.append(f"  - {axis}: **{a['status']}** -- {_esc(a['reason'])}")
    for extra in ("reading", "note"):
        if value.get(extra):
            lines.append(f"  - {'read as' if extra == 'reading' else 'note'}: {_esc(value[extra])}")
    judged = [(p, r) for p in ("primary", "all") for r in value[p]["regenerated"] if r.get("judged")]
    other = [(p, r) for p in ("primary", "all") for r in value[p]["regenerated"] if not r.get("judged")]
    if judged:
        lines += ["", *_cells_table(judged, scale), ""]
    if other:
        lines += [
            "<details><summary>"
            f"{len(other)} cells not judged (another population, or outside the value's filters)</summary>",
            "",
            *_cells_table(other, scale),
            "",
            "</details>",
            "",
        ]
    return lines


def _decisive(entry: Mapping) -> str:
    """The cells that decided the claim's answers (the contradicting ones where contradicted)."""
    parts = []
    values = {v["name"]: v for v in entry["values"]}
    for axis, _ in _AXES:
        a = entry[axis]
        if not a or a["status"] not in ANSWERED:
            continue
        for name in a["decisive"][:2]:
            cells = (values[name][axis] or {}).get("decisive") or []
            if cells:
                parts.append(f"{axis} {name}: {'; '.join(cells[:2])}")
    return _esc(" · ".join(parts))


def markdown(report: Mapping) -> str:
    """The whole report (module docstring)."""
    counts = report["counts"]
    checked = bool(report.get("controls"))
    mapping = report.get("mapping") or []
    lines = [
        "# Claims report",
        "",
        f"**Models**: {'; '.join(mapping) or 'none'}.",
        "",
        f"> {report['note']}",
        "",
        f"## What reproduced ({counts.get(ANSWERED_CLAIM, 0)} of {len(report['claims'])} claims answered)",
        "",
        *summary_lines(report),
        "",
        *readme_lines(report),
        "",
        *([*controls_lines(report), ""] if report.get("controls") else []),
        "## The key",
        "",
        report["key"],
        "",
        "## Every claim, one line",
        "",
        "| # | claim | direction | size | " + ("sanity check | " if checked else "") + "decisive cells |",
        "|---|---|---|---|" + ("---|" if checked else "") + "---|",
    ]
    for e in report["claims"]:
        sanity = f"{e['controls']['verdict'] or '—'} | " if checked else ""
        if e["status"] == QUALITATIVE:
            lines.append(
                f"| {e['id']} | {_esc(claim_label(e))} | — | — | {sanity}qualitative: the claim states no number |"
            )
            continue
        lines.append(
            f"| {e['id']} | {_esc(claim_label(e))} | {_answer(e['direction'])} | {_answer(e['size'])} | {sanity}"
            f"{_decisive(e) or e['status']} |"
        )
    lines += ["", "## The values, claim by claim", ""]
    for e in report["claims"]:
        lines += [f"### {e['id']}. {_esc(e['text'])}", ""]
        if e["status"] == QUALITATIVE:
            lines += ["Qualitative: the claim states no number.", ""]
            continue
        lines += [f"Direction: {_answer(e['direction'])}. Size: {_answer(e['size'])}.", "", *_sanity(e)]
        for v in e["values"]:
            lines += _value_block(v)
        lines.append("")
    return "\n".join(lines) + "\n"
