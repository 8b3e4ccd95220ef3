"""Rules plot_fig3 and render_audit_table.  Glue only: trustmass.report.figure3 draws, trustmass.report.audit_stats
renders the table."""

import sys
import time

started = time.time()
log = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected by the script directive)
sys.stdout = sys.stderr = log

import polars as pl  # noqa: E402

from trustmass.plumbing.provenance import atomic_write, write_sidecar  # noqa: E402

population = snakemake.params.config["statistics"]["figure_population"]  # noqa: F821
table = pl.read_parquet(snakemake.input.table)  # noqa: F821
if snakemake.rule == "plot_fig3":  # noqa: F821
    from trustmass.report import figure3

    roc = pl.read_parquet(snakemake.input.roc)  # noqa: F821
    figure3.save(figure3.plot_fig3(roc, table, population), snakemake.output.png)  # noqa: F821
    outputs, inputs = [snakemake.output.png], [snakemake.input.roc, snakemake.input.table]  # noqa: F821
else:
    from trustmass.report.audit_stats import render_table

    csv, md = render_table(table, population)
    with atomic_write(snakemake.output.csv) as tmp:  # noqa: F821
        csv.write_csv(tmp)
    with atomic_write(snakemake.output.md) as tmp:  # noqa: F821
        open(tmp, "w").write(md)
    outputs, inputs = [snakemake.output.csv, snakemake.output.md], [snakemake.input.table]  # noqa: F821
for out in outputs:
    write_sidecar(out, inputs=[*inputs, *snakemake.input.code], config_slice=snakemake.params.config, started=started,  # noqa: F821
                  extra={"rule": snakemake.rule, "paper_file": getattr(snakemake.params, "paper_file", None)})  # noqa: F821
print("ok")
