"""Rules plot_fig1, plot_fig2: one summary frame -> one figure.  Glue only: the drawing is
trustmass.report.figures (its STYLE holds every styling choice)."""

import sys
import time

started = time.time()
log = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected by the script directive)
sys.stdout = sys.stderr = log

import polars as pl  # noqa: E402

from trustmass.report import figures  # noqa: E402
from trustmass.plumbing.provenance import write_sidecar  # noqa: E402

name = snakemake.params.figure  # noqa: F821
population = snakemake.params.config["statistics"]["figure_population"]  # noqa: F821
draw = {"fig1": figures.figure1, "fig2": figures.figure2}[name]
summary = pl.read_parquet(snakemake.input.summary)  # noqa: F821
print(f"{name} ({snakemake.params.paper_file} in the paper) from {summary.height} summary rows, population {population}")  # noqa: F821
figures.save(draw(summary, population), snakemake.output.png)  # noqa: F821
write_sidecar(
    snakemake.output.png,  # noqa: F821
    inputs=[snakemake.input.summary, *snakemake.input.code],  # noqa: F821
    config_slice=snakemake.params.config,  # noqa: F821
    started=started,
    extra={"rule": snakemake.rule, "paper_file": snakemake.params.paper_file},  # noqa: F821
)
print("ok")
