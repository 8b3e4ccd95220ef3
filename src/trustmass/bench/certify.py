"""Benchmark: SCIP's time to certify against the enumeration time for the pool (spec §3.4).

For a few manifest instances per budget (from the default study's ceiling records and capture
shards), reports the wall time of `pool_optimum` (the exhaustive ES_pool search over the candidate
set) and of `certify` (MISOCP bisection over all keys, per-solve time limit), the status and the
solves, so the cost of certification is visible.  Single-threaded.

With ``compare=True`` the paper's protocol and the branch-and-bound certifier run side by side on
the same manifest rows (`trustmass.bench.certify_compare`): of one or more shards given, else every
row of the study's manifest; the CLI's ``--capture PATH`` first captures a long shard (`trustmass.bench.long_capture`;
kept out of this module so that its sources depend on the shard contract, not on the capture code).

With ``shard=PATH`` the instances come from one capture shard instead (e.g. a longer document than
the study's, to time certification at a larger N): ``instances`` rows per budget drawn at random
(seeded) among the shard's sampled rows with at least ``min_keys`` positive-mass keys, each built
as `certification.load_instance` builds it, with the default pool extra `extras_for_budget(s)`.
"""

from __future__ import annotations

import glob
import os
import platform
import time

import numpy as np
import polars as pl

from trustmass.bench.certify_compare import DEFAULT_WORK, compare_manifest, run_compare
from trustmass.bench.certify_rows import shard_rows
from trustmass.certification import manifest as M
from trustmass.certification import runner as R
from trustmass.certification.misocp import certify
from trustmass.core.enumeration import extras_for_budget, pool_optimum


def _measure(inst, s: int, extra: int, time_limit: float, memory_limit_mb: float) -> dict:
    """Time the ES_pool search and the certification of one instance; the fields both modes report."""
    t0 = time.perf_counter()
    po = pool_optimum(inst, s, extra)
    t_enum = time.perf_counter() - t0
    c = certify(
        inst,
        s,
        incumbent=po.kept,
        es_pool=po.es_pool,
        time_limit=time_limit,
        memory_limit_mb=memory_limit_mb,
        isolate_solves=True,
    )
    return {
        "budget": s,
        "n_keys": inst.n_keys,
        "pool_extra": extra,
        "n_subsets": int(po.n_subsets),
        "enumeration_seconds": t_enum,
        "certify_seconds": c.seconds,
        "ratio": c.seconds / t_enum if t_enum > 0 else None,
        "status": c.status,
        "n_solves": c.n_solves,
        "solve_outcomes": [r.outcome for r in c.solves],
        "improvement": c.improvement,
        "es_pool": po.es_pool,
        "es_cert": c.es_cert,
        "lower_bound": c.lower_bound,
        "mass_floor_used": [r.mass_floor > 0 for r in c.solves],
        "low_mass_bound_over_es_pool": c.low_mass_bound / po.es_pool if po.es_pool > 0 else None,
    }


def _by_budget(out: list[dict], budgets) -> dict:
    """Per-budget medians of the measured instances."""
    summary = {}
    for s in budgets:
        rows = [r for r in out if r["budget"] == int(s)]
        if rows:
            summary[str(s)] = {
                "median_enumeration_seconds": float(np.median([r["enumeration_seconds"] for r in rows])),
                "median_certify_seconds": float(np.median([r["certify_seconds"] for r in rows])),
                "median_n_keys": float(np.median([r["n_keys"] for r in rows])),
                "statuses": sorted(r["status"] for r in rows),
            }
    return summary


def run_shard(
    shard: str,
    instances: int = 2,
    seed: int = 0,
    min_keys: int = 0,
    time_limit: float = 10.0,
    memory_limit_mb: float = 2000.0,
    budgets=(4, 8, 16, 32),
) -> dict:
    """The benchmark on rows of one capture shard (see the module docstring)."""
    from trustmass.contracts.shards import read_metadata

    meta = read_metadata(shard)
    candidates = shard_rows(shard, min_keys)
    if not candidates:
        raise ValueError(f"no sampled row of {shard!r} has >= {min_keys} keys")
    rng = np.random.default_rng(seed)
    out = []
    for s in budgets:
        s = int(s)
        extra = extras_for_budget(s)
        for i in np.sort(rng.choice(len(candidates), size=min(instances, len(candidates)), replace=False)):
            it = candidates[int(i)]
            inst, _ = R.load_instance(shard, it["layer"], it["head"], it["kv_head"], it["query_pos"])
            where = {
                "model": meta.get("model"),
                "doc": meta.get("doc"),
                **{k: it[k] for k in ("layer", "head", "kv_head", "query_pos")},
            }
            out.append({**where, **_measure(inst, s, extra, time_limit, memory_limit_mb)})
    return {
        "benchmark": "certify",
        "mode": "shard",
        "shard": shard,
        "n_tokens": meta.get("n_tokens"),
        "min_keys": min_keys,
        "n_candidate_rows": len(candidates),
        "time_limit": time_limit,
        "memory_limit_mb": memory_limit_mb,
        "python": platform.python_version(),
        "instances": out,
        "by_budget": _by_budget(out, budgets),
    }


def run(
    instances: int = 2,
    seed: int = 0,
    records_glob: str = "results/ceiling/*/*/*.parquet",
    capture_root: str = "results/capture",
    time_limit: float = 10.0,
    memory_limit_mb: float = 2000.0,
    budgets=(4, 8, 16, 32),
    shard=None,
    min_keys: int = 0,
    compare: bool = False,
    paper_time_limit: float = 120.0,
    per_stratum: int = 1,
    n_deciles: int = 10,
    certifiers=("paper", "bnb"),
    work: int = DEFAULT_WORK,
    scip_nodes: int | None = None,
    scip_lp_iterations: int | None = None,
) -> dict:
    shards = [shard] if isinstance(shard, str) else list(shard or [])
    if compare and shards:
        return run_compare(
            shards,
            per_stratum,
            n_deciles,
            seed,
            min_keys or 3969,
            time_limit,
            paper_time_limit,
            max(memory_limit_mb, 8192.0),
            budgets,
            certifiers,
            work=work,
            scip_nodes=scip_nodes,
            scip_lp_iterations=scip_lp_iterations,
        )
    if shards:
        return run_shard(shards[0], instances, seed, min_keys, time_limit, memory_limit_mb, budgets)
    paths = sorted(glob.glob(records_glob))
    if not paths:
        raise FileNotFoundError(f"no ceiling records under {records_glob!r}: run `snakemake records` first")
    cols = [
        "model",
        "corpus",
        "doc",
        "layer",
        "head",
        "kv_head",
        "query_pos",
        "budget",
        "dropped_mass",
        "pool_extra",
        "D",
        "es_top",
        "es_pool",
        "es_bal",
        "c_hat",
        "kappa_hat",
        "kappa_hat_bal",
    ]
    records = pl.concat([pl.read_parquet(p, columns=cols) for p in paths])
    man = M.manifest(records, per_stratum=1, seed=seed, budgets=budgets)
    if compare:  # both certifiers on every manifest row of the study (its N <= 2,048 rows)

        def path_of(it):
            return os.path.join(capture_root, it["model"], it["corpus"], f"{it['doc']}.safetensors")

        settings = {
            "time_limit": time_limit,
            "paper_time_limit": paper_time_limit,
            "memory_limit_mb": memory_limit_mb,
            "work": work,
            "scip_nodes": scip_nodes,
            "scip_lp_iterations": scip_lp_iterations,
        }
        return {**compare_manifest(man, path_of, settings, budgets, certifiers, seed), "mode": "compare-records"}
    rng = np.random.default_rng(seed)
    picked = []
    for s in budgets:
        g = man.filter(pl.col("budget") == s)
        picked += [
            g.row(int(i), named=True)
            for i in np.sort(rng.choice(g.height, size=min(instances, g.height), replace=False))
        ]
    out = []
    for it in picked:
        path = os.path.join(capture_root, it["model"], it["corpus"], f"{it['doc']}.safetensors")
        inst, _ = R.load_instance(path, it["layer"], it["head"], it["kv_head"], it["query_pos"])
        s = int(it["budget"])
        where = {"model": it["model"], "decile": it["decile"]}
        out.append({**where, **_measure(inst, s, int(it["pool_extra"]), time_limit, memory_limit_mb)})
    return {
        "benchmark": "certify",
        "time_limit": time_limit,
        "python": platform.python_version(),
        "instances": out,
        "by_budget": _by_budget(out, budgets),
    }
