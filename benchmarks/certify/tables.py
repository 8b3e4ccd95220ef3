"""The tables of benchmarks/certify.md, from the runs' JSON lines in benchmarks/certify/data/.

    python benchmarks/certify/tables.py [DATA_DIR] [benchmarks/results.md]

Inputs (each written by `run_bnb.py` / `scip_cal.py` on the rows of `rows.py`; see their docstrings):
frontier_final.jsonl (the current code, 1e11 units per probe), old_frontier.jsonl (the code before work budgets,
3a4c3b6, 60 CPU s per probe), {old,new}_{default,panel}.jsonl (5 CPU s per probe / 9e9 units per probe),
scip_cal.jsonl, and issue 15's per-row table in benchmarks/results.md (its paper and bnb columns).

A search with a larger budget goes the same way and further (`bnb.ESCALATE_WORK`), so one run gives every
smaller budget (`bench.certify_compare.budget_profile`, re-derived here from the JSON solves, which carry
tau / ES_pool but not the sets' es: a found set's es is the next record's tau over its probe's factor).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

DECIDED = ("confirmed_optimal", "within_1pct", "improved")
GAP_PROBE, OPT_PROBE, MATERIAL = 0.99, 1 - 1e-6, 0.99
#: seconds of one work unit in the code (trustmass.certification.WORK_UNIT_SECONDS)
UNIT_S = 0.56e-9
CURVE = (1e8, 3e8, 1e9, 3e9, 5e9, 1e10, 3e10, 6e10, 1e11)


def load(path: Path) -> dict[int, dict]:
    with open(path) as f:
        return {r["row"]: r for r in map(json.loads, f)}


def issue15(results_md: Path) -> dict[int, dict]:
    """Issue 15's per-row table (benchmarks/results.md): paper / bnb status and seconds, bnb gap."""
    out = {}
    for line in open(results_md):
        c = [x.strip() for x in line.strip().strip("|").split("|")]
        if len(c) == 12 and c[0].isdigit() and c[1] in ("qwen2.5", "smollm2"):
            out[int(c[0])] = dict(lh=c[2], n=int(c[5].replace(",", "")), paper=c[6], paper_s=float(c[7]))
            out[int(c[0])].update(
                bnb=c[8], bnb_s=float(c[9]), bnb_ratio=1 - float(c[10].rstrip(" %")) / 100, bnb_gap=c[11]
            )
    return out


def profile(r: dict) -> dict:
    """budget_profile of one current-code row: work of the first local search (local0), of the gap probe
    when it closed (gap_work, None: never) or in all (g1), of the optimality probe (g2), and the work at
    which a set > 1 % below ES_pool was in hand (improved_work; 0: the first local search)."""
    S = r["solves"]
    out = dict(local0=S[0][3] if S else 0, gap_work=None, g1=0, g2=0, improved_work=None)
    if not S:
        return out
    if S[0][0] < MATERIAL:
        out["improved_work"] = 0
    phase, done = 1, 0
    for k in range(1, len(S)):
        tau, outcome, _, work, _, _ = S[k]
        done += work
        out["g1" if phase == 1 else "g2"] += work
        if outcome == "feasible" and out["improved_work"] is None:
            factor = GAP_PROBE if phase == 1 else OPT_PROBE
            hi = S[k + 1][0] / factor if k + 1 < len(S) else r["es_cert"] / r["es_pool"]
            if hi < MATERIAL:
                out["improved_work"] = done
        if outcome == "infeasible" and phase == 1:
            out["gap_work"], phase = done, 2
    return out


def at_budget(r: dict, B: float) -> tuple[bool, bool, float]:
    """(decided, gap <= 1 %, work spent) of a row at B units per probe, 2 B per instance."""
    p = profile(r)
    closed = p["gap_work"] is not None and p["gap_work"] < B
    decided = closed or (p["improved_work"] is not None and p["improved_work"] < B)
    work = p["local0"] + min(p["g1"], B)
    if closed:
        work += min(p["g2"], B, 2 * B - p["local0"] - p["g1"])
    return decided, closed, work


def _gap(r: dict) -> str:
    return f"{100 * r['gap']:.2f} %" if r["gap"] <= 0.01 + 1e-12 else "open"


def frontier_rows(new: dict, old: dict, i15: dict) -> str:
    head = (
        "| # | model | L/H | s | stratum | N | paper, issue 15 (30 s/solve) | before: bnb 60 s/probe | gap | CPU s "
        "| after: bnb 1e11 units/probe | gap | ES/ES_pool before -> after | work (1e9) | CPU s |"
    )
    lines = [head, "|" + "---|" * 15]
    for i in sorted(new):
        n, o, p = new[i], old.get(i), i15.get(i, {})
        same = p.get("lh") == f"{n['layer']}/{n['head']}" and p.get("n") == n["n"]
        paper = f"{p['paper']} ({p['paper_s']:.1f} s)" if same else "other row*"
        if o is not None:
            before = [o["status"], _gap(o), f"{o['cpu_s']:.1f}"]
            ratio = f"{o['es_cert'] / o['es_pool']:.3f} -> "
        elif same:  # issue 15's run of the same instance (wall seconds on a pinned core)
            before = [p["bnb"] + "†", p["bnb_gap"], f"{p['bnb_s']:.1f}†"]
            ratio = f"{p['bnb_ratio']:.3f}† -> "
        else:
            before, ratio = ["-", "-", "-"], ""
        cells = [
            str(i),
            n["model"][:7],
            f"{n['layer']}/{n['head']}",
            str(n["s"]),
            str(n["decile"]),
            f"{n['n']:,}",
            paper,
        ]
        cells += before + [n["status"], _gap(n), ratio + f"{n['es_cert'] / n['es_pool']:.3f}"]
        cells += [f"{n['work'] / 1e9:.1f}", f"{n['cpu_s']:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _summary_line(label: str, rs: list[dict], cpu_key: str = "cpu_s") -> list[str]:
    cpu = np.array([r[cpu_key] for r in rs])
    dec = sum(r["status"] in DECIDED for r in rs)
    gap = sum(r["gap"] <= 0.01 + 1e-12 for r in rs)
    und = sum(r["status"] == "undecided" for r in rs)
    work = sum(r.get("work") or 0 for r in rs)
    return [
        label,
        str(len(rs)),
        f"{dec} ({dec / len(rs):.0%})",
        str(und),
        f"{gap} ({gap / len(rs):.0%})",
        f"{np.median(cpu):.1f} / {np.quantile(cpu, 0.9):.1f} / {cpu.sum():.0f}",
        f"{work / 1e12:.2f}" if work else "-",
    ]


def frontier_summary(new: dict, old: dict, i15: dict) -> str:
    head = "| run | rows | decided | undecided | gap <= 1 % | CPU s median / p90 / total | work (1e12 units) |"
    lines = [head, "|---|---|---|---|---|---|---|"]
    both = sorted(set(old) & set(new))
    rows = [
        (f"before: old code, 60 CPU s/probe, rows {both[0]}-{both[-1]}", [old[i] for i in both]),
        (f"after: current code, 1e11 units/probe, rows {both[0]}-{both[-1]}", [new[i] for i in both]),
    ]
    same = [i for i in sorted(new) if i in i15 and i15[i]["lh"] == f"{new[i]['layer']}/{new[i]['head']}"]
    if same:
        paper = [
            dict(status=i15[i]["paper"], gap=0.0 if i15[i]["paper"] in DECIDED[:2] else 1.0, s=i15[i]["paper_s"])
            for i in same
        ]
        bnb = [
            dict(status=i15[i]["bnb"], gap=0.0 if i15[i]["bnb_gap"] != "open" else 1.0, s=i15[i]["bnb_s"]) for i in same
        ]
        lab = f"rows {same[0]}-{same[-1]} (issue 15's own)"
        rows_s = [
            (f"issue 15: paper, 30 s/solve, {lab}, wall-clock s", paper),
            (f"issue 15: bnb, 60 s/probe, {lab}, wall-clock s", bnb),
        ]
        for label, rs in rows_s:
            lines.append("| " + " | ".join(_summary_line(label, rs, "s")) + " |")
        rows.append((f"after: current code, {lab}", [new[i] for i in same]))
    rows.append(("after: current code, all rows", [new[i] for i in sorted(new)]))
    for label, rs in rows:
        lines.append("| " + " | ".join(_summary_line(label, rs)) + " |")
    return "\n".join(lines)


def rate(new: dict) -> float:
    """CPU seconds per work unit over the rows that spent more than 1e10 units."""
    big = [r for r in new.values() if r["work"] > 1e10]
    return sum(r["cpu_s"] for r in big) / sum(r["work"] for r in big)


def curve(new: dict, old: dict) -> str:
    sec = rate(new)
    both = sorted(set(old) & set(new))
    head = (
        f"| work per probe (units) | s at 0.56 ns | s at this run's rate | decided (of {len(new)}) | gap <= 1 % "
        f"| total work (1e12) | ~CPU s | rows {both[0]}-{both[-1]}: decided / gap <= 1 % / ~CPU s |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|"]
    rs = [new[i] for i in sorted(new)]
    for B in CURVE:
        x = [at_budget(r, B) for r in rs]
        work = sum(w for _, _, w in x)
        xb = [at_budget(new[i], B) for i in both]
        cells = [f"{B:.0e}", f"{B * UNIT_S:.2g}", f"{B * sec:.2g}"]
        cells += [f"{sum(d for d, _, _ in x)} ({np.mean([d for d, _, _ in x]):.0%})"]
        cells += [f"{sum(g for _, g, _ in x)} ({np.mean([g for _, g, _ in x]):.0%})", f"{work / 1e12:.2f}"]
        cells += [f"{work * sec:.0f}", " / ".join(f"{sum(c[k] for c in xb):.0f}" for k in range(2))]
        cells[-1] += f" / {sum(c[2] for c in xb) * sec:.0f}"
        lines.append("| " + " | ".join(cells) + " |")
    return (
        "\n".join(lines)
        + f"\n\nThis run's rate: {sec * 1e9:.2f} ns per unit (CPU s / work over the rows past 1e10 units)."
    )


def hull(path: Path) -> dict[int, dict]:
    """hull.py's table: per row dist(mu, hull of the lightest 50 % of keys) / hi and the root cut k / (N - s + 1)."""
    out = {}
    for line in open(path):
        c = [x.strip() for x in line.strip().strip("|").split("|")]
        if c[0].isdigit():
            k, top = c[-1].replace(",", "").replace(")", "").split(" (")
            out[int(c[0])] = dict(d50=float(c[5]), cut=int(k) / int(top), cut_text=c[-1])
    return out


def reason(new: dict, h: dict) -> str:
    """The open rows: how far mu is from the light keys' hull, where the incumbent came from, where the work went."""
    head = (
        "| # | s | N | status | dist(mu, light 50 %) / hi | root cut k (of N - s + 1) "
        "| ES/ES_pool: first local search -> after escalation -> end | bnb sets found "
        "| bnb search: work (1e9) / nodes (1e6) / units per node |"
    )
    lines = [head, "|" + "---|" * 9]
    opened, lowered, per_node = [], [], {}
    for i in sorted(new):
        r = new[i]
        if r["gap"] <= 0.01 + 1e-12:
            continue
        opened.append(i)
        S = r["solves"]
        esc = [k for k, x in enumerate(S) if k > 0 and x[2] == "local_search"]
        after = S[esc[0] + 1][0] / GAP_PROBE if esc and esc[0] + 1 < len(S) else None
        if after is not None:
            lowered.append(1 - after / S[0][0])
        found = sum(1 for x in S[1:] if x[1] == "feasible" and x[2] == "bnb")
        work = sum(x[3] for x in S[1:] if x[2] == "bnb")
        nodes = sum(x[4] for x in S[1:] if x[2] == "bnb")
        per_node.setdefault(r["s"] == 4, []).append((nodes, work / max(nodes, 1)))
        cells = [str(i), str(r["s"]), f"{r['n']:,}", r["status"], f"{h[i]['d50']:.3f}", h[i]["cut_text"]]
        esc_text = "no better set" if after is None else f"{after:.3f}"
        cells.append(f"{S[0][0]:.3f} -> {esc_text} -> {r['es_cert'] / r['es_pool']:.3f}")
        cells += [str(found), f"{work / 1e9:.0f} / {nodes / 1e6:.2f} / {work / max(nodes, 1):,.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    closed = [i for i in new if i not in opened]
    med = lambda rows: float(np.median([h[i]["cut"] for i in rows]))  # noqa: E731
    notes = [
        f"open rows: {len(opened)}; dist(mu, light 50 %) < hi on {sum(h[i]['d50'] < 1 for i in opened)} of them "
        f"(0.000 on {sum(h[i]['d50'] < 5e-4 for i in opened)}); closed rows: {len(closed)}, dist >= hi on "
        f"{sum(h[i]['d50'] >= 1 for i in closed)}, below on rows {sorted(i for i in closed if h[i]['d50'] < 1)}",
        f"root cut k / (N - s + 1), median: open {med(opened):.2f}, closed {med(closed):.2f}",
        f"escalation's local search lowered hi on {len(lowered)} of {len(opened)} open rows, by "
        f"{100 * min(lowered):.0f}-{100 * max(lowered):.0f} %",
    ]
    for small, xs in sorted(per_node.items()):
        label = "s = 4" if small else "s >= 8"
        notes.append(
            f"{label}: {min(n for n, _ in xs) / 1e6:.2f}-{max(n for n, _ in xs) / 1e6:.2f} M nodes, "
            f"{min(u for _, u in xs):,.0f}-{max(u for _, u in xs):,.0f} units per node"
        )
    return "\n".join(lines) + "\n\n" + "\n".join(f"- {x}" for x in notes)


def default_panel(d: Path) -> str:
    head = (
        "| instances | run | decided | undecided | gap <= 1 % | CPU s total / median / p90 / max "
        "| at 5e9 (read off): decided / gap <= 1 % / ~CPU s |"
    )
    lines = [head, "|---|---|---|---|---|---|---|"]
    for name, n in (("default", 40), ("panel", 120)):
        for tag, label in (("old", "before: old code, 5 CPU s/probe"), ("new", "after: 9e9 units/probe")):
            rs = list(load(d / f"{tag}_{name}.jsonl").values())
            cpu = np.array([r["cpu_s"] for r in rs])
            dec = sum(r["status"] in DECIDED for r in rs)
            und = [r["row"] for r in rs if r["status"] == "undecided"]
            gap = sum(r["gap"] <= 0.01 + 1e-12 for r in rs)
            which = f"row{'s' if len(und) > 1 else ''} {', '.join(map(str, und))}"
            cells = [f"{name} ({len(rs)})", label, str(dec), f"{len(und)} ({which})", str(gap)]
            cells.append(f"{cpu.sum():.0f} / {np.median(cpu):.2f} / {np.quantile(cpu, 0.9):.1f} / {cpu.max():.1f}")
            if tag == "new":  # CPU at 5e9: the work read off at this run's CPU s per unit
                x = [at_budget(r, 5e9) for r in rs]
                unit = cpu.sum() / sum(r["work"] for r in rs)
                cells.append(
                    f"{sum(a for a, _, _ in x)} / {sum(b for _, b, _ in x)} / {sum(w for _, _, w in x) * unit:.0f}"
                )
            else:
                cells.append("-")
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def scip(d: Path, new: dict) -> str:
    head = "| # | model | s | N | tau / ES_pool | outcome | SCIP status | nodes | LP iterations | s (wall) | light-mass split |"
    lines = [head, "|---|---|---|---|---|---|---|---|---|---|---|"]
    with open(d / "scip_cal.jsonl") as f:
        for x in map(json.loads, f):
            r = new.get(x["row"], dict(model="?", n=0))
            cells = [str(x["row"]), r["model"][:7], str(x["s"]), f"{r['n']:,}", f"{x['factor']:.6g}", x["outcome"]]
            cells += [x["scip"], f"{x['nodes']:,}", f"{x['lp']:,}", f"{x['sec']:.1f}", "yes" if x["split"] else "no"]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    here = Path(__file__).resolve().parent
    d = Path(sys.argv[1]) if len(sys.argv) > 1 else here / "data"
    md = Path(sys.argv[2]) if len(sys.argv) > 2 else here.parent / "results.md"
    new, old, i15 = load(d / "frontier_final.jsonl"), load(d / "old_frontier.jsonl"), issue15(md)
    for title, text in (
        ("FRONTIER rows", frontier_rows(new, old, i15)),
        ("FRONTIER summary", frontier_summary(new, old, i15)),
        ("CURVE", curve(new, old)),
        ("REASON (open rows)", reason(new, hull(d / "hull.md"))),
        ("DEFAULT_PANEL", default_panel(d)),
        ("SCIP", scip(d, new)),
    ):
        print(f"## {title}\n\n{text}\n")
