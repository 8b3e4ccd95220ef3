"""The certification instances of benchmarks/certify.md, pickled once so that every run certifies the same ones.

    # issue 15's 40-row frontier: the manifest `bench certify --compare` draws (seed 0, 5 dropped-mass strata,
    # one row per (model, budget, stratum), rows with >= 3,969 keys) from the N ~ 4,096 shards of
    # `python -m trustmass.bench certify --capture PATH --model-dir ... --documents ...`
    PYTHONPATH=src python benchmarks/certify/rows.py frontier frontier40.pkl SMOLLM2.safetensors QWEN.safetensors

    # a finished run's certification manifest (the default study: a `make run` checkout; the CPU panel: a
    # `--configfile config/cpu-panel.yaml` run): its results/certify/{manifest,certified}.parquet and captures
    PYTHONPATH=src python benchmarks/certify/rows.py run default40.pkl /path/to/checkout

Each pickled row: p, v (the instance), s, kept (the ES_pool argmin, sorted) and es_pool (`pool_optimum`), and
meta (the manifest row).  The pickles are large (20-170 MB) and stay out of the repository.
"""

from __future__ import annotations

import pickle
import sys

import numpy as np
import polars as pl

from trustmass.bench.certify_rows import shard_records
from trustmass.certification import manifest as M
from trustmass.certification import runner as R
from trustmass.core.enumeration import pool_optimum

BUDGETS = (4, 8, 16, 32)


def _row(meta: dict, shard: str) -> dict:
    inst, _ = R.load_instance(shard, meta["layer"], meta["head"], meta["kv_head"], meta["query_pos"])
    s = int(meta["budget"])
    po = pool_optimum(inst, s, int(meta["pool_extra"]))
    return dict(meta=meta, p=inst.p, v=inst.v, s=s, kept=np.sort(po.kept), es_pool=po.es_pool)


def frontier(shards: list[str]) -> list[dict]:
    """The manifest of `bench certify --compare --deciles 5` (`certify_compare.run_compare`) over the shards."""
    records = pl.concat([shard_records(sh, 3969, BUDGETS) for sh in shards], how="diagonal_relaxed")
    man = M.manifest(records, per_stratum=1, seed=0, budgets=BUDGETS, primary_docs=None, n_deciles=5)
    return [_row(it, it["corpus"]) for it in man.iter_rows(named=True)]


def run(root: str) -> list[dict]:
    """A run's certification manifest, joined with its certified rows (their status, seconds: the meta)."""
    cert = pl.read_parquet(f"{root}/results/certify/certified.parquet")
    man = pl.read_parquet(f"{root}/results/certify/manifest.parquet")
    rows = man.join(cert.select("instance", "status", "es_cert", "lower_bound", "seconds"), on="instance")
    return [
        _row(it, f"{root}/results/capture/{it['model']}/{it['corpus']}/{it['doc']}.safetensors")
        for it in rows.iter_rows(named=True)
    ]


if __name__ == "__main__":
    kind, out, *args = sys.argv[1:]
    rows = frontier(args) if kind == "frontier" else run(args[0])
    with open(out, "wb") as f:
        pickle.dump(rows, f)
    print(len(rows), "rows ->", out)
