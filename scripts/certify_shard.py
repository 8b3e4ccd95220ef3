"""Rule certify_shard: certify the instances of one manifest shard (one output row per instance,
always).  Glue only: the science is trustmass.certification / trustmass.certify."""

import os
import sys
import time

started = time.time()
log = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected by the script directive)
sys.stdout = sys.stderr = log

import polars as pl

from trustmass.certification import CertificationSettings, certify_rows
from trustmass.provenance import atomic_write, write_sidecar

cfg = snakemake.params.config  # noqa: F821
cc = cfg["certification"]
shard = int(snakemake.wildcards.shard)  # noqa: F821
settings = CertificationSettings(
    per_stratum=cc["per_stratum"], n_shards=cc["n_shards"], time_limit_s=float(cc["time_limit_s"]),
    memory_limit_mb=float(cc["memory_limit_mb"]), max_solves=int(cc["max_solves"]),
    primary_docs=cfg["statistics"]["primary_docs"], seed=int(cfg["seed"]),
)  # fmt: skip
part = pl.read_parquet(snakemake.input.manifest).filter(pl.col("shard") == shard)  # noqa: F821
print(f"certify shard {shard}: {part.height} instances, {settings}")


def shard_of(model, corpus, doc):
    return os.path.join("results", "capture", model, corpus, f"{doc}.safetensors")


frame = certify_rows(part, shard_of, settings, workers=snakemake.threads)  # noqa: F821
assert frame.height == part.height, "one row per instance"
with atomic_write(snakemake.output.certified) as tmp:  # noqa: F821
    frame.write_parquet(tmp)
summary = {
    "instances": frame.height,
    "statuses": dict(frame.group_by("status").len().sort("status").iter_rows()),
    "seconds_total": float(frame["seconds"].sum()),
    "seconds_max": float(frame["seconds"].max()) if frame.height else 0.0,
}
print(f"summary: {summary}")
write_sidecar(
    snakemake.output.certified,  # noqa: F821
    inputs=[snakemake.input.manifest, *snakemake.input.code],  # noqa: F821
    config_slice=cfg,
    started=started,
    extra={"rule": snakemake.rule, "summary": summary, "settings": repr(settings)},  # noqa: F821
)
print("ok")
