"""The two certifiers side by side on the same manifest rows of long captures (issue 15).

`run_compare` builds a certification manifest (`trustmass.certification.manifest.manifest`: seeded,
``per_stratum`` rows per (model, budget, dropped-mass decile)) from the sampled rows of one or more
capture shards with at least ``min_keys`` keys (the N ~ 4,096 shards of `bench.long_capture`), then
certifies every instance with the paper's protocol (`misocp.certify`: plain SCIP bisection, each
solve in a forked child, at most ``scip_nodes`` nodes / ``scip_lp_iterations`` LP iterations per
solve, ``paper_time_limit`` s per solve as the safety net) and with the branch-and-bound certifier
(`bnb.certify_bnb`, ``work`` million work units per probe, ``time_limit`` s per probe as the safety
net), one after the other in this process (one core).

Reported per (budget) and overall, for each certifier: the rows, the *decided* share (the question
Table 7 asks -- is ES_pool within 1 % of the optimum over all keys? -- answered: confirmed_optimal,
within_1pct, or improved by a set more than 1 % better), the share whose gap is closed to 1 %
((hi - lo) <= 0.01 hi: a proved optimum to 1 %, improved or not), median and p90 seconds per
instance, and the ratio of the medians (paper / bnb).  For bnb also the budget -> gap curve
(`curve`): a search with a larger budget goes the same way and further, so one run gives, for every
smaller budget per probe, the share of rows decided and with the gap closed to 1 % (`budget_profile`).
A certifier left out (``certifiers``) is
"not run" in every column it would have filled: its statuses, its summary values (``None``) and its
table cells, and the ratio's.  Only ``dropped_mass`` of the shard rows enters the manifest (the other
record columns are not computed: NaN); ES_pool is computed for the drawn rows.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from functools import partial

import numpy as np
import polars as pl

from trustmass.bench.certify_rows import shard_records
from trustmass.certification import WORK_UNIT_SECONDS
from trustmass.certification import manifest as M
from trustmass.certification import runner as R
from trustmass.certification.bnb import certify_bnb
from trustmass.certification.misocp import CONFIRMED_OPTIMAL, IMPROVED, INFEASIBLE, MATERIAL, WITHIN_1PCT, certify
from trustmass.core.enumeration import pool_optimum

DECIDED = (CONFIRMED_OPTIMAL, WITHIN_1PCT, IMPROVED)
CERTIFIERS = ("paper", "bnb")
#: the status, and every table cell, of a certifier that was left out
NOT_RUN = "not run"
#: a certifier's summary columns (``{certifier}_{column}``)
COLUMNS = ("decided", "gap_1pct", "median_s", "p90_s")


#: bnb's work budget per probe when none is given: 6 x 10^10 units, today's 60 s per probe (benchmarks/certify.md)
DEFAULT_WORK = 60_000
#: the probe budgets (work units) the curve reads off one run
CURVE = (1e8, 3e8, 1e9, 3e9, 1e10, 3e10, 6e10)


def _gap(c) -> float:
    return (c.es_cert - c.lower_bound) / c.es_cert if c.es_cert > 0 else 0.0


def budget_profile(c, es_pool: float) -> dict:
    """Where a bnb certificate's answers came, in work units of the probe that gave them: the gap
    probe's work when it closed the gap to 1 % (``gap_work``), the work when a set more than 1 % below
    ES_pool was in hand (``improved_work``; 0: by the first local search), None where it never came.
    With a budget B per probe the same search stops once it has spent B, so the row is decided at B
    iff one of them is < B (or confirmed, ``confirmed_work``: both probes within theirs)."""
    solves = list(c.solves)
    if not solves:  # decided before any search (every key kept, or ES_pool = 0)
        return {"gap_work": 0, "improved_work": None, "confirmed_work": 0}
    improved = 0 if solves and solves[0].es_found is not None and solves[0].es_found < MATERIAL * es_pool else None
    gap = confirmed = None
    done = 0
    for k, r in enumerate(solves[1:], start=1):
        done += r.work
        if improved is None and r.es_found is not None and r.es_found < MATERIAL * es_pool:
            improved = done
        if r.outcome == INFEASIBLE:
            if gap is None:
                gap, done = done, 0
            else:
                confirmed = max(gap, done)
                break
    return {"gap_work": gap, "improved_work": improved, "confirmed_work": confirmed}


def _one(inst, s: int, which: str, po, settings: dict, seed: int) -> dict:
    t0 = time.perf_counter()
    if which == "paper":
        c = certify(
            inst,
            s,
            incumbent=po.kept,
            es_pool=po.es_pool,
            time_limit=settings["paper_time_limit"],
            node_limit=settings["scip_nodes"],
            lp_iteration_limit=settings["scip_lp_iterations"],
            memory_limit_mb=settings["memory_limit_mb"],
            seed=seed,
            isolate_solves=True,
        )
    else:
        c = certify_bnb(
            inst,
            s,
            incumbent=po.kept,
            es_pool=po.es_pool,
            work_limit=int(settings["work"]) * 1_000_000,
            time_limit=settings["time_limit"],
            seed=seed,
        )
    out = {
        "status": c.status,
        "seconds": time.perf_counter() - t0,
        "es_cert_over_pool": c.es_cert / po.es_pool,
        "lower_over_cert": c.lower_bound / c.es_cert if c.es_cert > 0 else 1.0,
        "gap": _gap(c),
        "work": c.work,
        "nodes": c.nodes,
        "solves": [f"{r.outcome}:{r.seconds:.1f}:{r.work}" for r in c.solves],
    }
    if which == "bnb":
        out.update(budget_profile(c, po.es_pool))
    return out


def curve(rows: list[dict], budgets=CURVE) -> list[dict]:
    """bnb's budget -> gap curve from one run (`budget_profile`): per probe budget B (work units), the
    share of rows decided and the share with the gap closed to 1 %."""
    ran = [r["bnb"] for r in rows if r["bnb"]["status"] != NOT_RUN]
    out = []
    for b in budgets:
        if not ran:
            break

        def within(w) -> bool:
            return w is not None and w < b

        gap = [within(r["gap_work"]) for r in ran]
        decided = [g or within(r["improved_work"]) for g, r in zip(gap, ran)]
        out.append(
            {"work_per_probe": b, "rows": len(ran), "decided": float(np.mean(decided)), "gap_1pct": float(np.mean(gap))}
        )
    return out


def summarise(rows: list[dict], budgets) -> list[dict]:
    """Per budget (and "all"): rows, decided share, gap <= 1 % share, median / p90 seconds, ratio."""
    out = []
    for s in [*budgets, "all"]:
        part = [r for r in rows if s == "all" or r["budget"] == s]
        if not part:
            continue
        line = {"budget": s, "rows": len(part)}
        for which in CERTIFIERS:
            ran = [r for r in part if r[which]["status"] != NOT_RUN]
            if not ran:  # not run: no value, rather than a 0 % that reads as "decided none"
                line.update({f"{which}_{c}": None for c in COLUMNS})
                continue
            sec = np.array([r[which]["seconds"] for r in ran])
            line[f"{which}_decided"] = float(np.mean([r[which]["status"] in DECIDED for r in ran]))
            line[f"{which}_gap_1pct"] = float(np.mean([r[which]["gap"] <= 0.01 + 1e-12 for r in ran]))
            line[f"{which}_median_s"] = float(np.median(sec))
            line[f"{which}_p90_s"] = float(np.quantile(sec, 0.9))
        paper, bnb = line["paper_median_s"], line["bnb_median_s"]
        line["median_ratio"] = paper / bnb if paper is not None and bnb else None
        out.append(line)
    return out


def _cells(r: dict, which: str, digits: int) -> list[str]:
    """One certifier's three cells: decided, gap <= 1 %, median / p90 s ("not run" in each when left out)."""
    if r[f"{which}_decided"] is None:
        return [NOT_RUN] * 3
    return [
        f"{r[f'{which}_decided']:.0%}",
        f"{r[f'{which}_gap_1pct']:.0%}",
        f"{r[f'{which}_median_s']:.{digits}f} / {r[f'{which}_p90_s']:.{digits}f}",
    ]


def table(summary: list[dict]) -> str:
    """The summary as a Markdown table."""
    head = (
        "| s | rows | paper decided | paper gap<=1% | paper median / p90 s | bnb decided | bnb gap<=1% | "
        "bnb median / p90 s | median ratio |\n|---|---|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for r in summary:
        if r["median_ratio"] is not None:
            ratio = f"{r['median_ratio']:.0f}x"
        else:  # a certifier left out, or bnb's median of 0 s
            ratio = NOT_RUN if None in (r["paper_decided"], r["bnb_decided"]) else "n/a"
        cells = [str(r["budget"]), str(r["rows"]), *_cells(r, "paper", 1), *_cells(r, "bnb", 2), ratio]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run_compare(
    shards,
    per_stratum: int = 1,
    n_deciles: int = 10,
    seed: int = 0,
    min_keys: int = 3969,
    time_limit: float = 600.0,
    paper_time_limit: float = 120.0,
    memory_limit_mb: float = 8192.0,
    budgets=(4, 8, 16, 32),
    certifiers=CERTIFIERS,
    log=partial(print, file=sys.stderr, flush=True),
    work: int = DEFAULT_WORK,
    scip_nodes: int | None = None,
    scip_lp_iterations: int | None = None,
) -> dict:
    """Both certifiers on the manifest rows of the shards (module docstring)."""
    shards = list(dict.fromkeys(shards))  # a shard given twice is read once
    records = pl.concat([shard_records(sh, min_keys, budgets) for sh in shards], how="diagonal_relaxed")
    man = M.manifest(
        records, per_stratum=per_stratum, seed=seed, budgets=budgets, primary_docs=None, n_deciles=n_deciles
    )
    settings = {
        "time_limit": time_limit,
        "paper_time_limit": paper_time_limit,
        "memory_limit_mb": memory_limit_mb,
        "work": work,
        "scip_nodes": scip_nodes,
        "scip_lp_iterations": scip_lp_iterations,
    }
    # each row is reloaded from the shard it was drawn from: shard_records' corpus is that shard's path
    out = compare_manifest(man, lambda it: it["corpus"], settings, budgets, certifiers, seed, log)
    return {"shards": list(shards), "per_stratum": per_stratum, "n_deciles": n_deciles, "min_keys": min_keys, **out}


def compare_manifest(
    man: pl.DataFrame,
    path_of,
    settings: dict,
    budgets,
    certifiers=CERTIFIERS,
    seed: int = 0,
    log=partial(print, file=sys.stderr, flush=True),
) -> dict:
    """Both certifiers on every row of a manifest; ``path_of(row)`` -> its capture shard.  ``settings``:
    time_limit / work (bnb: safety net seconds and budget per probe, millions of units), paper_time_limit /
    scip_nodes / scip_lp_iterations (the paper's protocol), memory_limit_mb."""
    unknown = [c for c in certifiers if c not in CERTIFIERS]
    if unknown or not certifiers:
        raise ValueError(
            f"certifiers = {list(certifiers)}: {'unknown ' + ', '.join(unknown) if unknown else 'none'}; "
            f"fix: --certifiers with a comma-separated subset of {','.join(CERTIFIERS)}"
        )
    load = os.getloadavg()
    rows = []
    for it in man.iter_rows(named=True):
        shard = path_of(it)
        inst, _ = R.load_instance(shard, it["layer"], it["head"], it["kv_head"], it["query_pos"])
        s = int(it["budget"])
        po = pool_optimum(inst, s, int(it["pool_extra"]))
        row = {
            k: it[k] for k in ("instance", "model", "layer", "head", "query_pos", "budget", "decile", "dropped_mass")
        }
        row["shard"], row["n_keys"] = shard, inst.n_keys
        for which in CERTIFIERS:
            if which in certifiers:
                row[which] = _one(inst, s, which, po, settings, seed)
            else:
                row[which] = {"status": NOT_RUN, "seconds": None, "gap": None}
        rows.append(row)
        log(
            f"{row['instance']:3d} {row['model']} L{row['layer']}/H{row['head']} s={s} dec={row['decile']} N={inst.n_keys}: "
            + "; ".join(
                f"{w} {NOT_RUN}"
                if row[w]["status"] == NOT_RUN
                else f"{w} {row[w]['status']} {row[w]['seconds']:.1f}s gap={row[w]['gap']:.4f}"
                for w in CERTIFIERS
            )
        )
    summary = summarise(rows, budgets)
    bnb_curve = curve(rows) if "bnb" in certifiers else []
    return {
        "benchmark": "certify",
        "mode": "compare",
        "certifiers": [c for c in CERTIFIERS if c in certifiers],
        "seed": seed,
        **settings,
        "python": platform.python_version(),
        "loadavg_start": load,
        "loadavg_end": os.getloadavg(),
        "instances": rows,
        "summary": summary,
        "curve": bnb_curve,
        "table": table(summary),
        "curve_table": curve_table(bnb_curve) if bnb_curve else "",
    }


def curve_table(points: list[dict]) -> str:
    """bnb's budget -> gap curve as a Markdown table."""
    lines = ["| work per probe (units) | ~seconds here | decided | gap <= 1 % |", "|---|---|---|---|"]
    for p in points:
        lines.append(
            f"| {p['work_per_probe']:.0e} | {p['work_per_probe'] * WORK_UNIT_SECONDS:.2g} | {p['decided']:.0%} "
            f"| {p['gap_1pct']:.0%} |"
        )
    return "\n".join(lines)
