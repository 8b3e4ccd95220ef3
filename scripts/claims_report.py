"""Rule claims_report.  Glue only: verdicts live in trustmass.report.claims_report."""

import sys
import time

started = time.time()
log = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected by the script directive)
sys.stdout = sys.stderr = log

import polars as pl  # noqa: E402

from trustmass.report.claims_data import load_claims  # noqa: E402
from trustmass.report.claims_report import build, markdown  # noqa: E402
from trustmass.plumbing.provenance import atomic_write, write_json, write_sidecar  # noqa: E402

report = build(
    load_claims(snakemake.input.claims),  # noqa: F821
    pl.concat([pl.read_parquet(path) for path in snakemake.input.headline], how="diagonal_relaxed"),  # noqa: F821
    list(snakemake.params.models),  # noqa: F821
    set(snakemake.params.stages),  # noqa: F821
)
write_json(snakemake.output.json, report)  # noqa: F821
with atomic_write(snakemake.output.md) as tmp:  # noqa: F821
    tmp.write_text(markdown(report), encoding="utf-8")
print(f"claims: {report['counts']}")
write_sidecar(
    snakemake.output.md,  # noqa: F821
    inputs=[*snakemake.input.headline, snakemake.input.claims, *snakemake.input.code],  # noqa: F821
    config_slice={"study": {"models": list(snakemake.params.models)}, "stages": list(snakemake.params.stages)},  # noqa: F821
    started=started,
    extra={"rule": snakemake.rule, "counts": report["counts"], "json": snakemake.output.json},  # noqa: F821
)
print("ok")
