"""Rule certify_manifest: the certification manifest.  Glue only: the science is trustmass.certification.stage."""

import sys
import time

started = time.time()
log = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected by the script directive)
sys.stdout = sys.stderr = log

import polars as pl

from trustmass.certification.stage import manifest
from trustmass.plumbing.provenance import atomic_write, write_sidecar

cfg = snakemake.params.config  # noqa: F821
cc = cfg["certification"]
columns = ["model", "corpus", "doc", "layer", "head", "kv_head", "query_pos", "budget", "dropped_mass", "pool_extra", "D",
           "es_top", "es_pool", "es_bal", "c_hat", "kappa_hat", "kappa_hat_bal"]  # fmt: skip
records = pl.concat([pl.read_parquet(p, columns=columns) for p in snakemake.input.records])  # noqa: F821
frame = manifest(
    records, per_stratum=cc["per_stratum"], seed=cfg["seed"], budgets=cfg["budgets"]["enumerated"],
    n_shards=cc["n_shards"], primary_docs=cfg["statistics"]["primary_docs"],
)  # fmt: skip
with atomic_write(snakemake.output.manifest) as tmp:  # noqa: F821
    frame.write_parquet(tmp)
summary = {
    "instances": frame.height,
    "per_budget": dict(frame.group_by("budget").len().sort("budget").iter_rows()),
    "per_shard": dict(frame.group_by("shard").len().sort("shard").iter_rows()),
}
print(f"summary: {summary}")
write_sidecar(
    snakemake.output.manifest,  # noqa: F821
    inputs=[*snakemake.input.records, *snakemake.input.code],  # noqa: F821
    config_slice=cfg,
    started=started,
    extra={"rule": snakemake.rule, "summary": summary},  # noqa: F821
)
print("ok")
