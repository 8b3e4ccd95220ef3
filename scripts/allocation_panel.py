"""Rule allocation_panel: one model's allocation panel from its capture shards.
Glue only: trustmass.loss.allocation."""

from trustmass.plumbing.rule_io import run_rule  # first: it opens the job's log before anything heavy imports


def main(snakemake, started):
    import polars as pl

    from trustmass.loss.allocation import shard_panel
    from trustmass.plumbing.rule_io import checked_shards, finish, write_parquet

    smk = snakemake
    cfg = smk.params.config
    settings = cfg["loss"]["allocation"]
    shards = checked_shards(smk.input.shards)
    frame, data = shard_panel(
        shards,
        tuple(settings["units"]),
        tuple(settings["selectors"]),
        model=smk.wildcards.model,
        B=max(1, int(cfg["statistics"]["bootstrap"])),
        seed=int(cfg["seed"]),
        map_budget=int(cfg["statistics"]["map_budget"]),
    )
    frame = frame.with_columns(n_docs=pl.lit(len(shards)))
    write_parquet(frame, smk.output.panel)
    with pl.Config(tbl_cols=-1, tbl_rows=-1, tbl_width_chars=200):
        print(
            frame.select(
                "unit",
                "selector",
                "allocator",
                "pooled_es",
                "delta_es",
                "delta_lo",
                "delta_hi",
                "budget_min",
                "budget_max",
            )
        )
    finish(smk, [smk.output.panel], [*shards, *smk.input.code], cfg, started, seeds={"seed": cfg["seed"]})


run_rule(snakemake, main)
