"""Benchmark: SCIP's time to certify against the enumeration time for the pool (spec §3.4).

For a few manifest instances per budget (from the default study's ceiling records and capture
shards), reports the wall time of `pool_optimum` (the exhaustive ES_pool search over the candidate
set) and of `certify` (MISOCP bisection over all keys, per-solve time limit), the status and the
solves, so the cost of certification is visible.  Single-threaded.
"""

from __future__ import annotations

import glob
import os
import platform
import time

import numpy as np
import polars as pl

from trustmass import certification as C
from trustmass.certify import certify
from trustmass.enumeration import pool_optimum


def run(
    instances: int = 2,
    seed: int = 0,
    records_glob: str = "results/ceiling/*/*/*.parquet",
    capture_root: str = "results/capture",
    time_limit: float = 10.0,
    memory_limit_mb: float = 2000.0,
    budgets=(4, 8, 16, 32),
) -> dict:
    paths = sorted(glob.glob(records_glob))
    if not paths:
        raise FileNotFoundError(f"no ceiling records under {records_glob!r}: run `snakemake records` first")
    cols = ["model", "corpus", "doc", "layer", "head", "kv_head", "query_pos", "budget", "dropped_mass", "pool_extra", "D",
            "es_top", "es_pool", "es_bal", "c_hat", "kappa_hat", "kappa_hat_bal"]  # fmt: skip
    records = pl.concat([pl.read_parquet(p, columns=cols) for p in paths])
    man = C.manifest(records, per_stratum=1, seed=seed, budgets=budgets)
    rng = np.random.default_rng(seed)
    picked = []
    for s in budgets:
        g = man.filter(pl.col("budget") == s)
        picked += [g.row(int(i), named=True) for i in np.sort(rng.choice(g.height, size=min(instances, g.height), replace=False))]
    out = []
    for it in picked:
        shard = os.path.join(capture_root, it["model"], it["corpus"], f"{it['doc']}.safetensors")
        inst, _ = C.load_instance(shard, it["layer"], it["head"], it["kv_head"], it["query_pos"])
        s = int(it["budget"])
        t0 = time.perf_counter()
        po = pool_optimum(inst, s, int(it["pool_extra"]))
        t_enum = time.perf_counter() - t0
        c = certify(inst, s, incumbent=po.kept, es_pool=po.es_pool, time_limit=time_limit, memory_limit_mb=memory_limit_mb)
        out.append({
            "model": it["model"], "budget": s, "decile": it["decile"], "n_keys": inst.n_keys, "pool_extra": int(it["pool_extra"]),
            "n_subsets": int(po.n_subsets), "enumeration_seconds": t_enum, "certify_seconds": c.seconds,
            "ratio": c.seconds / t_enum if t_enum > 0 else None, "status": c.status, "n_solves": c.n_solves,
            "solve_outcomes": [r.outcome for r in c.solves], "improvement": c.improvement,
        })  # fmt: skip
    by_budget = {}
    for s in budgets:
        rows = [r for r in out if r["budget"] == s]
        if rows:
            by_budget[str(s)] = {
                "median_enumeration_seconds": float(np.median([r["enumeration_seconds"] for r in rows])),
                "median_certify_seconds": float(np.median([r["certify_seconds"] for r in rows])),
            }
    return {"benchmark": "certify", "time_limit": time_limit, "python": platform.python_version(), "instances": out, "by_budget": by_budget}
