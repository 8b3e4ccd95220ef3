"""Rule audit: the audit records of one capture shard, joined to its ceiling records.  Glue only:
the science is trustmass.audit.records."""

import time

from trustmass.plumbing.rule_io import run_rule  # first: it opens the job's log before anything heavy imports


def main(snakemake, started):
    import polars as pl

    from trustmass.audit.records import AuditSettings, accounting_violations, shard_audit
    from trustmass.plumbing.rule_io import checked_shard, finish, write_parquet

    cfg = snakemake.params.config
    wc = snakemake.wildcards
    settings = AuditSettings.from_config(cfg)
    print(f"audit {wc.model}/{wc.corpus}/{wc.doc}: {settings}")
    checked_shard(snakemake.input.shard)  # the shard is the one the capture wrote
    ceiling = pl.read_parquet(snakemake.input.records)
    frame = shard_audit(
        snakemake.input.shard, ceiling, wc.model, wc.corpus, wc.doc, settings, workers=snakemake.threads
    )
    write_parquet(frame, snakemake.output.audit)
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
        raise AssertionError(
            f"{summary['excess_below_1_in_pool']} in-pool kept sets beat ES_pool: the pool optimum is wrong"
        )
    finish(
        snakemake,
        [snakemake.output.audit],
        [snakemake.input.shard, snakemake.input.records, *snakemake.input.code],
        cfg,
        started,
        summary,
        settings=repr(settings),
    )


run_rule(snakemake, main)
