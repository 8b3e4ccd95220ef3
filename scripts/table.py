"""Rules render_table1/2/6/8: one summary frame -> the table as CSV and Markdown.  Glue only: the
layout is trustmass.report.tables."""

import sys
import time

started = time.time()
log = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected by the script directive)
sys.stdout = sys.stderr = log

import polars as pl  # noqa: E402

from trustmass.report import tables  # noqa: E402
from trustmass.plumbing.provenance import write_sidecar  # noqa: E402

name = snakemake.params.table  # noqa: F821
threshold = snakemake.params.config["labels"]["kappa_threshold"]  # noqa: F821
summary = pl.read_parquet(snakemake.input.summary)  # noqa: F821
table = tables.write(name, summary, snakemake.output.csv, snakemake.output.md, kappa_threshold=threshold)  # noqa: F821
print(f"{name}: {table.height} rows x {table.width} columns")
for output in (snakemake.output.csv, snakemake.output.md):  # noqa: F821
    write_sidecar(
        output,
        inputs=[snakemake.input.summary, *snakemake.input.code],  # noqa: F821
        config_slice=snakemake.params.config,  # noqa: F821
        started=started,
        extra={"rule": snakemake.rule},  # noqa: F821
    )
print("ok")
