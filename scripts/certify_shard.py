"""Rule certify_shard: certify the instances of one manifest shard (one output row per instance,
always).  Glue only: the science is trustmass.certification.runner / .misocp / .bnb."""

from trustmass.plumbing.rule_io import start_log  # first: what follows logs to the job's log

started = start_log(snakemake)  # noqa: F821 (snakemake is injected by the script directive)

import polars as pl

from trustmass.certification.runner import CertificationSettings, certify_rows
from trustmass.plumbing.rule_io import checked_capture_path, finish, write_parquet

cfg = snakemake.params.config  # noqa: F821
cc = cfg["certification"]
shard = int(snakemake.wildcards.shard)  # noqa: F821
settings = CertificationSettings(
    per_stratum=cc["per_stratum"], n_shards=cc["n_shards"], time_limit_s=float(cc["time_limit_s"]),
    memory_limit_mb=float(cc["memory_limit_mb"]), max_solves=int(cc["max_solves"]),
    primary_docs=cfg["statistics"]["primary_docs"], seed=int(cfg["seed"]), certifier=cc["certifier"],
)  # fmt: skip
part = pl.read_parquet(snakemake.input.manifest).filter(pl.col("shard") == shard)  # noqa: F821
print(f"certify shard {shard}: {part.height} instances, {settings}")

frame = certify_rows(part, checked_capture_path, settings, workers=snakemake.threads)  # noqa: F821
assert frame.height == part.height, "one row per instance"
write_parquet(frame, snakemake.output.certified)  # noqa: F821
summary = {
    "instances": frame.height,
    "statuses": dict(frame.group_by("status").len().sort("status").iter_rows()),
    "seconds_total": float(frame["seconds"].sum()),
    "seconds_max": float(frame["seconds"].max()) if frame.height else 0.0,
}
finish(
    snakemake,  # noqa: F821
    [snakemake.output.certified],  # noqa: F821
    [snakemake.input.manifest, *snakemake.input.code],  # noqa: F821
    cfg, started, summary, settings=repr(settings),
)  # fmt: skip
