"""The claims report: every claim of the paper next to what this run regenerated.

Inputs: the paper's numbers (`trustmass.report.claims_data`, transcribed from the spec) and the
`headline` frame of `trustmass.report.ceiling_stats` (one row per regenerated value: claim_id, value_name,
by_key, by_value, population, estimate, low, high, n_instances, n_docs, models).  Each paper
value gets a verdict:

  * consistent    -- the regenerated estimate (or its 95 % interval) meets the paper's value:
                     point: inside the interval (or within 5 % relative without one); range: every
                     regenerated cell's interval meets [low, high]; upper/lower: the estimate's
                     interval reaches below/above the bound; count: equal;
  * inconsistent  -- regenerated but not meeting it (our models are not the paper's: this is a
                     comparison, not a failed reproduction);
  * not produced yet -- no stage of this run computes it (the stage is named).

Percent-unit claims are compared with fractions x 100.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import polars as pl

from trustmass.report.claims_data import Claim, Value

POINT_RELATIVE_TOLERANCE = 0.05
HEADLINE_COLUMNS = [
    "claim_id", "value_name", "by_key", "by_value", "population", "estimate", "low", "high", "n_instances", "n_docs", "models",
]  # fmt: skip


@dataclass(frozen=True)
class Verdict:
    status: str  # consistent | inconsistent | not produced yet
    reason: str


def _scale(value: Value) -> float:
    return 100.0 if value.unit == "percent" else 1.0


def _interval(row: dict, scale: float) -> tuple[float, float, float]:
    est = row["estimate"] * scale
    low = row["low"] * scale if row.get("low") is not None and not _nan(row["low"]) else est
    high = row["high"] * scale if row.get("high") is not None and not _nan(row["high"]) else est
    return est, low, high


def _nan(x) -> bool:
    return isinstance(x, float) and math.isnan(x)


def _by_dict(row: dict) -> dict[str, str]:
    keys, values = row.get("by_key"), row.get("by_value")
    if not keys or values is None:
        return {}
    return dict(zip(str(keys).split(","), str(values).split(",")))


def judge_by(value: Value, rows: list[dict]) -> Verdict:
    """A value stated per sub-group (e.g. per budget): each entry against the rows of its group."""
    verdicts = []
    for dim, entries in value.by.items():
        for key, entry in entries.items():
            group = [r for r in rows if _by_dict(r).get(dim) == str(key)]
            if isinstance(entry, tuple):
                sub = replace(value, by={}, value=None, low=entry[0], high=entry[1], kind="range")
            else:
                sub = replace(value, by={}, value=entry, low=None, high=None)
            verdict = judge(sub, group)
            if verdict.status != "not produced yet":
                verdicts.append(f"{dim}={key}: {verdict.status} ({verdict.reason})")
    if not verdicts:
        return Verdict("not produced yet", "no regenerated estimate for any stated sub-group")
    status = "inconsistent" if any(": inconsistent" in v for v in verdicts) else "consistent"
    return Verdict(status, "; ".join(verdicts))


def judge(value: Value, rows: list[dict]) -> Verdict:
    """Verdict for one paper value against its regenerated rows (one population)."""
    rows = [r for r in rows if r["estimate"] is not None and not _nan(r["estimate"])]
    if not rows:
        return Verdict("not produced yet", "no regenerated estimate")
    if value.value is None and value.low is None and value.high is None and value.by:
        return judge_by(value, rows)
    scale = _scale(value)
    cells = [_interval(r, scale) for r in rows]
    kind = value.kind
    if value.low is not None and value.high is not None:
        lo, hi = float(value.low), float(value.high)
        misses = [c for c in cells if c[2] < lo or c[1] > hi]
        span = f"regenerated {min(c[0] for c in cells):.4g}..{max(c[0] for c in cells):.4g} over {len(cells)} cell(s)"
        if misses:
            return Verdict("inconsistent", f"{span}; {len(misses)} cell(s) outside [{lo:g}, {hi:g}]")
        return Verdict("consistent", f"{span}; every cell meets [{lo:g}, {hi:g}]")
    target = value.value if value.value is not None else (value.high if kind == "upper" else value.low)
    if target is None:
        return Verdict("not produced yet", "the paper value has no number to compare")
    target = float(target)
    if kind == "upper":
        ok = all(c[1] <= target for c in cells)
        return Verdict("consistent" if ok else "inconsistent", f"max regenerated {max(c[0] for c in cells):.4g} vs bound {target:g}")
    if kind == "lower":
        ok = all(c[2] >= target for c in cells)
        return Verdict("consistent" if ok else "inconsistent", f"min regenerated {min(c[0] for c in cells):.4g} vs bound {target:g}")
    if kind == "count":
        ok = all(c[0] == target for c in cells)
        return Verdict("consistent" if ok else "inconsistent", f"regenerated {sorted({c[0] for c in cells})} vs {target:g}")
    # point or ratio: inside the interval, or within 5 % relative without one
    def meets(c):
        if c[1] != c[2]:
            return c[1] <= target <= c[2]
        return abs(c[0] - target) <= POINT_RELATIVE_TOLERANCE * max(abs(target), 1e-12)

    ok = all(meets(c) for c in cells)
    return Verdict("consistent" if ok else "inconsistent", f"regenerated {', '.join(f'{c[0]:.4g}' for c in cells[:6])} vs {target:g}")


def _g(x) -> str:
    return f"{float(x):g}"


def _paper_text(value: Value) -> str:
    unit = "%" if value.unit == "percent" else ""
    if value.low is not None and value.high is not None:
        return f"{_g(value.low)}–{_g(value.high)}{unit}"
    number = next((x for x in (value.value, value.high, value.low) if x is not None), None)
    if number is None and value.by:
        return "; ".join(
            f"{dim}={k}: " + (f"{_g(e[0])}–{_g(e[1])}" if isinstance(e, tuple) else _g(e)) + unit
            for dim, entries in value.by.items()
            for k, e in entries.items()
        )
    if number is None:
        return value.formula or "—"
    prefix = {"upper": "≤ ", "lower": "≥ "}.get(value.kind, "")
    return f"{prefix}{_g(number)}{unit}"


def build(claims: list[Claim], headline: pl.DataFrame, models: list[str], produced_stages: set[str]) -> dict:
    """The report as a JSON-serialisable dict: one entry per claim, one verdict per value and population."""
    missing = [c for c in HEADLINE_COLUMNS if c not in headline.columns]
    if missing:
        raise ValueError(f"headline frame lacks columns {missing}; it must have {HEADLINE_COLUMNS}")
    by_value: dict[tuple[int, str, str], list[dict]] = {}
    for row in headline.iter_rows(named=True):
        by_value.setdefault((int(row["claim_id"]), row["value_name"], row["population"]), []).append(row)
    entries = []
    for claim in claims:
        values = []
        for value in claim.values:
            results = {}
            for population in ("primary", "all"):
                rows = by_value.get((claim.id, value.name, population), [])
                if rows:
                    verdict = judge(value, rows)
                elif value.role == "parameter":
                    verdict = Verdict("not compared", "a setting of the study, not a result")
                else:
                    stage = "/".join(claim.stage)
                    why = "its stage has not run" if not (set(claim.stage) & produced_stages) else "not computed by this run"
                    verdict = Verdict("not produced yet", f"{stage}: {why}")
                results[population] = {
                    "status": verdict.status,
                    "reason": verdict.reason,
                    "regenerated": [
                        {k: rows_k for k, rows_k in r.items() if k in ("by_key", "by_value", "estimate", "low", "high", "n_instances", "n_docs", "models")}
                        for r in rows
                    ],
                }
            values.append({"name": value.name, "kind": value.kind, "unit": value.unit, "paper": _paper_text(value), **results})
        entries.append(
            {
                "id": claim.id,
                "section": claim.section,
                "stage": list(claim.stage),
                "text": claim.text,
                "values": values,
                "status": _claim_status(values),
            }
        )
    counts: dict[str, int] = {}
    for e in entries:
        counts[e["status"]] = counts.get(e["status"], 0) + 1
    return {
        "models": models,
        "note": "These models are not the paper's: a consistent/inconsistent verdict compares numbers, "
        "it does not certify or refute the paper's claim for its own models.",
        "counts": counts,
        "claims": entries,
    }


def _claim_status(values: list[dict]) -> str:
    statuses = {v["all"]["status"] for v in values} | {v["primary"]["status"] for v in values}
    statuses.discard("not compared")
    if not statuses or statuses == {"not produced yet"}:
        return "not produced yet"
    if "inconsistent" in statuses:
        return "inconsistent" if "consistent" not in statuses else "mixed"
    return "consistent"


def markdown(report: dict) -> str:
    lines = [
        "# Claims report",
        "",
        f"Models of this run: {', '.join(report['models']) or 'none'}.",
        "",
        f"> {report['note']}",
        "",
        "| status | claims |",
        "|---|---|",
        *[f"| {k} | {v} |" for k, v in sorted(report["counts"].items())],
        "",
        "| # | § | claim | value | paper | regenerated (primary 3 docs) | regenerated (all docs) | verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for entry in report["claims"]:
        text = entry["text"].replace("|", "\\|")
        if len(text) > 90:
            text = text[:87] + "..."
        if not entry["values"]:
            lines.append(f"| {entry['id']} | {entry['section']} | {text} | — | — | — | — | qualitative |")
        for i, v in enumerate(entry["values"]):
            lines.append(
                f"| {entry['id'] if i == 0 else ''} | {entry['section'] if i == 0 else ''} | {text if i == 0 else ''} | "
                f"{v['name']} | {v['paper']} | {_cell(v['primary'])} | {_cell(v['all'])} | {_verdict(v)} |"
            )
    return "\n".join(lines) + "\n"


def _verdict(value: dict) -> str:
    """All documents' verdict; the primary slice's where only it was regenerated (e.g. manifests)."""
    if value["all"]["regenerated"] or not value["primary"]["regenerated"]:
        return value["all"]["status"]
    return f"{value['primary']['status']} (primary)"


def _cell(result: dict) -> str:
    regs = result["regenerated"]
    if not regs:
        return "—"
    ests = [r["estimate"] for r in regs if r["estimate"] is not None and not _nan(r["estimate"])]
    if not ests:
        return "—"
    if len(regs) == 1:
        r = regs[0]
        ci = f" [{r['low']:.3g}, {r['high']:.3g}]" if r.get("low") is not None and not _nan(r["low"]) else ""
        return f"{r['estimate']:.4g}{ci}"
    return f"{min(ests):.4g}..{max(ests):.4g} ({len(regs)} cells)"
