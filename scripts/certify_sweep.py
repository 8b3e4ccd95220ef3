"""Rule certify_sweep: the cap-widening sweep's pools at s = 32 on the headline population (its table
and claims are sweep_statistics).  Glue only: trustmass.certification.manifest / .runner."""

import sys

from trustmass.plumbing.rule_io import run_rule  # first: it opens the job's log before anything heavy imports


def main(snakemake, started):
    from trustmass.certification.manifest import RECORD_COLUMNS, sweep_budget, sweep_heads, sweep_instances
    from trustmass.certification.runner import sweep_rows
    from trustmass.plumbing.rule_io import checked_capture_path, finish, read_parquets, write_parquet

    cfg = snakemake.params.config
    sw = cfg["certification"]["sweep"]
    budget = sweep_budget(cfg)
    records = read_parquets(snakemake.input.records, RECORD_COLUMNS)
    heads = sweep_heads(records, int(sw["heads_per_layer"]), int(cfg["seed"]))
    inst = sweep_instances(records, heads, budget, cfg["statistics"]["primary_docs"])
    print(f"sweep: {heads.height} heads, {inst.height} instances, extras {sw['extras']}")
    if inst.height == 0:
        sys.exit(f"sweep: no records at s = {budget} for the sampled heads; nothing to widen")
    rows = sweep_rows(inst, sw["extras"], checked_capture_path, workers=snakemake.threads)
    write_parquet(rows, snakemake.output.rows)
    finish(
        snakemake,
        [snakemake.output.rows],
        [*snakemake.input.records, *snakemake.input.code],
        cfg,
        started,
        {"heads": heads.height, "instances": inst.height, "rows": rows.height},
        heads=heads.to_dicts(),
    )


run_rule(snakemake, main)
