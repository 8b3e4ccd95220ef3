"""Rule summaries: every ceiling record of the study -> the summary frames.  Glue only: the
statistics are trustmass.report.ceiling_stats."""

import sys
import time

started = time.time()
log = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected by the script directive)
sys.stdout = sys.stderr = log

import polars as pl  # noqa: E402

from trustmass.plumbing.provenance import atomic_write, write_sidecar  # noqa: E402
from trustmass.report.ceiling_stats import SummarySettings, summarize  # noqa: E402

cfg = snakemake.params.config  # noqa: F821
settings = SummarySettings.from_config(cfg)
records_files = list(snakemake.input.records)  # noqa: F821
print(f"summaries of {len(records_files)} record files with {settings}")
records = pl.concat([pl.read_parquet(path) for path in records_files], how="vertical_relaxed")
print(f"{records.height} records read in {time.time() - started:.1f} s")
frames = summarize(records, settings)
print(f"summaries computed in {time.time() - started:.1f} s")
for name in snakemake.params.names:  # noqa: F821
    frame = frames[name]
    with atomic_write(snakemake.output[name]) as tmp:  # noqa: F821
        frame.write_parquet(tmp)
    print(f"{name}: {frame.height} rows")
headline = frames["headline"]
extra = {
    "rule": snakemake.rule,  # noqa: F821
    "settings": repr(settings),
    "records": records.height,
    "record_files": len(records_files),
    "degenerate_records": int(frames["table1"].filter(pl.col("model") != "(pooled)")["n_degenerate"].sum()),
    "headline_values": headline.select(["claim_id", "value_name"]).n_unique(),
}
for name in snakemake.params.names:  # noqa: F821
    write_sidecar(
        snakemake.output[name],  # noqa: F821
        inputs=[*records_files, *snakemake.input.code],  # noqa: F821
        config_slice=cfg,
        seeds={"seed": settings.seed, "bootstrap": settings.bootstrap},
        started=started,
        extra=extra,
    )
print(f"ok in {time.time() - started:.1f} s")
