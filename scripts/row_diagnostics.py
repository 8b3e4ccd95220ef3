"""Rule row_diagnostics: on every sampled row of one capture shard, boundary swaps between selector pairs
with their random controls, and the block rules' strict projection against its token-fill; es as the
outcome.  Glue only: the science is trustmass.audit.swaps and trustmass.audit.projection."""

from trustmass.plumbing.rule_io import run_rule  # first: it opens the job's log before anything heavy imports


def main(snakemake, started):
    import time

    from trustmass.audit.projection import ProjectionSettings, shard_projection
    from trustmass.audit.swaps import SwapSettings, shard_swaps
    from trustmass.plumbing.rule_io import checked_shard, finish, write_parquet

    cfg = snakemake.params.config
    wc = snakemake.wildcards
    swaps, projection = SwapSettings.from_config(cfg), ProjectionSettings.from_config(cfg)
    print(f"row_diagnostics {wc.model}/{wc.corpus}/{wc.doc}: {swaps}; {projection}")
    checked_shard(snakemake.input.shard)  # the shard is the one the capture wrote
    swap_frame = shard_swaps(snakemake.input.shard, wc.model, wc.corpus, wc.doc, swaps)
    swap_s = time.time() - started
    projection_frame = shard_projection(snakemake.input.shard, wc.model, wc.corpus, wc.doc, projection)
    write_parquet(swap_frame, snakemake.output.swaps)
    write_parquet(projection_frame, snakemake.output.projection)
    finish(
        snakemake,
        [snakemake.output.swaps, snakemake.output.projection],
        [snakemake.input.shard, *snakemake.input.code],
        cfg,
        started,
        {
            "swap_records": swap_frame.height,
            "projection_records": projection_frame.height,
            "swap_seconds": round(swap_s, 1),
            "seconds": round(time.time() - started, 1),
        },
        settings=f"{swaps!r}; {projection!r}",
    )


run_rule(snakemake, main)
