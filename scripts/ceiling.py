"""Rule ceiling: the records of one capture shard.  Glue only: the science is trustmass.ceiling.records."""

from trustmass.plumbing.rule_io import run_rule  # first: it opens the job's log before anything heavy imports


def main(snakemake, started):
    from trustmass.ceiling.records import CeilingSettings, shard_records
    from trustmass.plumbing.rule_io import checked_shard, finish, write_parquet

    cfg = snakemake.params.config
    wc = snakemake.wildcards
    settings = CeilingSettings.from_config(cfg)
    print(f"ceiling {wc.model}/{wc.corpus}/{wc.doc}: {settings}")
    checked_shard(snakemake.input.shard)  # the shard is the one the capture wrote
    frame = shard_records(snakemake.input.shard, wc.model, wc.corpus, wc.doc, settings, workers=snakemake.threads)
    write_parquet(frame, snakemake.output.records)
    enumerated = frame.filter(frame["enumerated"])
    summary = {
        "records": frame.height,
        "rows": frame.select(["layer", "head", "query_pos"]).n_unique(),
        "pool_is_row": int(frame["pool_is_row"].sum()),
        "zero_mass_keys_max": int(frame["n_zero_mass"].max()),
        "raw_p_sum_dev_max": float(frame["raw_p_sum_dev"].abs().max()),
        "es_pool_fast_rel_err_max": float(enumerated["es_pool_fast_rel_err"].max()) if enumerated.height else None,
        "infinite_kappa_hat": int(enumerated["kappa_hat"].is_infinite().sum()) if enumerated.height else 0,
    }
    finish(
        snakemake,
        [snakemake.output.records],
        [snakemake.input.shard, *snakemake.input.code],
        cfg,
        started,
        summary,
        settings=repr(settings),
    )


run_rule(snakemake, main)
