"""Rule audit: the audit records of one capture shard, joined to its ceiling records.  Glue only:
the science is trustmass.audit.records."""

import time

from trustmass.plumbing.rule_io import start_log  # first: what follows logs to the job's log

started = start_log(snakemake)  # noqa: F821 (snakemake is injected by the script directive)

import polars as pl  # noqa: E402

from trustmass.audit.records import AuditSettings, accounting_violations, shard_audit  # noqa: E402
from trustmass.plumbing.rule_io import checked_shard, finish, write_parquet  # noqa: E402

cfg = snakemake.params.config  # noqa: F821
wc = snakemake.wildcards  # noqa: F821
settings = AuditSettings.from_config(cfg)
print(f"audit {wc.model}/{wc.corpus}/{wc.doc}: {settings}")
checked_shard(snakemake.input.shard)  # noqa: F821 -- the shard is the one the capture wrote
ceiling = pl.read_parquet(snakemake.input.records)  # noqa: F821
frame = shard_audit(snakemake.input.shard, ceiling, wc.model, wc.corpus, wc.doc, settings, workers=snakemake.threads)  # noqa: F821
write_parquet(frame, snakemake.output.audit)  # noqa: F821
enum = frame.filter(pl.col("enumerated"))
summary = {
    "records": frame.height,
    "tova_mismatches": int(frame["tova_mismatch"].sum()),
    "excess_below_1": int((enum["excess"] < 1 - 1e-9).sum()),
    "excess_below_1_in_pool": int(((enum["excess"] < 1 - 1e-9) & enum["in_pool"]).sum()),
    "per_query_worse_than_cache_faithful": accounting_violations(frame).height,
    "seconds": round(time.time() - started, 1),
}
if summary["excess_below_1_in_pool"]:
    raise AssertionError(f"{summary['excess_below_1_in_pool']} in-pool kept sets beat ES_pool: the pool optimum is wrong")
finish(
    snakemake,  # noqa: F821
    [snakemake.output.audit],  # noqa: F821
    [snakemake.input.shard, snakemake.input.records, *snakemake.input.code],  # noqa: F821
    cfg, started, summary, settings=repr(settings),
)  # fmt: skip
