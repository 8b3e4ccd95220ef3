"""Rule loss_map: the flat cells of one model from its map documents' capture shards.
Glue only: trustmass.loss.cell_map."""

from trustmass.plumbing.rule_io import start_log  # first: what follows logs to the job's log

started = start_log(snakemake)  # noqa: F821 (snakemake is injected by the script directive)

from trustmass.loss.cell_map import cell_map  # noqa: E402
from trustmass.plumbing.rule_io import checked_shards, finish, write_parquet  # noqa: E402

cfg = snakemake.params.config  # noqa: F821
shards = checked_shards(snakemake.input.shards)  # noqa: F821
frame = cell_map(shards, int(cfg["statistics"]["map_budget"]), float(cfg["statistics"]["flat_mass"]))
write_parquet(frame, snakemake.output.map)  # noqa: F821
n_flat = int(frame["flat"].sum())
print(f"map of {snakemake.wildcards.model}: {n_flat} of {frame.height} cells flat, from {len(shards)} shards")  # noqa: F821
finish(snakemake, [snakemake.output.map], [*shards, *snakemake.input.code], cfg, started, n_flat=n_flat, n_cells=frame.height)  # noqa: F821
