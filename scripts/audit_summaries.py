"""Rule audit_summaries: every audit record of the study -> audit table, Figure-3 ROC and the audit
headline rows.  Glue only: the statistics are trustmass.report.audit_stats."""

import sys
import time

started = time.time()
log = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected by the script directive)
sys.stdout = sys.stderr = log

import json  # noqa: E402
from pathlib import Path  # noqa: E402

import polars as pl  # noqa: E402

from trustmass.report.audit_stats import AuditSummarySettings, summarize  # noqa: E402
from trustmass.plumbing.provenance import atomic_write, write_sidecar  # noqa: E402

cfg = snakemake.params.config  # noqa: F821
settings = AuditSummarySettings.from_config(cfg)
files = list(snakemake.input.audit)  # noqa: F821
records = pl.concat([pl.read_parquet(p) for p in files], how="vertical_relaxed")
print(f"{records.height} audit records from {len(files)} files; {settings}")
# QK-norm per model, from the shapes the model preparation recorded beside each config.json
qk_norm = {}
for config_json in snakemake.input.models:  # noqa: F821
    source = json.loads((Path(config_json).parent / "trustmass_source.json").read_text())
    qk_norm[Path(config_json).parent.name] = source.get("shapes", {}).get("qk_norm")
print(f"qk_norm per model: {qk_norm}")
frames = summarize(records, settings, qk_norm)
for name in ("audit_table", "fig3_roc", "audit_headline"):
    with atomic_write(snakemake.output[name]) as tmp:  # noqa: F821
        frames[name].write_parquet(tmp)
    write_sidecar(
        snakemake.output[name],  # noqa: F821
        inputs=[*files, *snakemake.input.models, *snakemake.input.code],  # noqa: F821
        config_slice=cfg,
        seeds={"seed": settings.summary.seed, "bootstrap": settings.summary.bootstrap},
        started=started,
        extra={"rule": snakemake.rule, "records": records.height},  # noqa: F821
    )
    print(f"{name}: {frames[name].height} rows")
print(f"ok in {time.time() - started:.1f} s")
