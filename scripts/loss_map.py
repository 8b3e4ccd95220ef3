"""Rule loss_map: the flat cells of one model from its map documents' capture shards.
Glue only: trustmass.loss.cell_map."""

from trustmass.plumbing.rule_io import run_rule  # first: it opens the job's log before anything heavy imports


def main(snakemake, started):
    from trustmass.loss.cell_map import cell_map
    from trustmass.plumbing.rule_io import checked_shards, finish, write_parquet

    cfg = snakemake.params.config
    shards = checked_shards(snakemake.input.shards)
    frame = cell_map(shards, int(cfg["statistics"]["map_budget"]), float(cfg["statistics"]["flat_mass"]))
    write_parquet(frame, snakemake.output.map)
    n_flat = int(frame["flat"].sum())
    print(f"map of {snakemake.wildcards.model}: {n_flat} of {frame.height} cells flat, from {len(shards)} shards")
    finish(
        snakemake,
        [snakemake.output.map],
        [*shards, *snakemake.input.code],
        cfg,
        started,
        n_flat=n_flat,
        n_cells=frame.height,
    )


run_rule(snakemake, main)
