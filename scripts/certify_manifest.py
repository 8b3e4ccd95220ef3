"""Rule certify_manifest: the certification manifest over the headline population.  Glue only: the
science is trustmass.certification.manifest."""

from trustmass.plumbing.rule_io import run_rule  # first: it opens the job's log before anything heavy imports


def main(snakemake, started):
    from trustmass.certification.manifest import RECORD_COLUMNS, manifest
    from trustmass.plumbing.rule_io import finish, read_parquets, write_parquet

    cfg = snakemake.params.config
    cc = cfg["certification"]
    # the input is the headline population's records (headline families on the headline corpus)
    records = read_parquets(snakemake.input.records, RECORD_COLUMNS)
    frame = manifest(
        records,
        per_stratum=cc["per_stratum"],
        seed=cfg["seed"],
        budgets=cfg["budgets"]["enumerated"],
        n_shards=cc["n_shards"],
        primary_docs=cfg["statistics"]["primary_docs"],
    )
    write_parquet(frame, snakemake.output.manifest)
    summary = {
        "instances": frame.height,
        "models": sorted(frame["model"].unique().to_list()),
        "per_budget": dict(frame.group_by("budget").len().sort("budget").iter_rows()),
        "per_shard": dict(frame.group_by("shard").len().sort("shard").iter_rows()),
    }
    finish(
        snakemake, [snakemake.output.manifest], [*snakemake.input.records, *snakemake.input.code], cfg, started, summary
    )


run_rule(snakemake, main)
