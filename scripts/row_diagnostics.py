"""Rule row_diagnostics: on every sampled row of one capture shard, boundary swaps between selector pairs
with their random controls, and the block rules' strict projection against its token-fill; es as the
outcome.  Glue only: the science is trustmass.audit.swaps and trustmass.audit.projection."""

from trustmass.plumbing.rule_io import start_log  # first: what follows logs to the job's log

started = start_log(snakemake)  # noqa: F821 (snakemake is injected by the script directive)

import time  # noqa: E402

from trustmass.audit.projection import ProjectionSettings, shard_projection  # noqa: E402
from trustmass.audit.swaps import SwapSettings, shard_swaps  # noqa: E402
from trustmass.plumbing.rule_io import checked_shard, finish, write_parquet  # noqa: E402

cfg = snakemake.params.config  # noqa: F821
wc = snakemake.wildcards  # noqa: F821
swaps, projection = SwapSettings.from_config(cfg), ProjectionSettings.from_config(cfg)
print(f"row_diagnostics {wc.model}/{wc.corpus}/{wc.doc}: {swaps}; {projection}")
checked_shard(snakemake.input.shard)  # noqa: F821 -- the shard is the one the capture wrote
swap_frame = shard_swaps(snakemake.input.shard, wc.model, wc.corpus, wc.doc, swaps)  # noqa: F821
swap_s = time.time() - started
projection_frame = shard_projection(snakemake.input.shard, wc.model, wc.corpus, wc.doc, projection)  # noqa: F821
write_parquet(swap_frame, snakemake.output.swaps)  # noqa: F821
write_parquet(projection_frame, snakemake.output.projection)  # noqa: F821
finish(
    snakemake,  # noqa: F821
    [snakemake.output.swaps, snakemake.output.projection],  # noqa: F821
    [snakemake.input.shard, *snakemake.input.code],  # noqa: F821
    cfg, started,
    {"swap_records": swap_frame.height, "projection_records": projection_frame.height,
     "swap_seconds": round(swap_s, 1), "seconds": round(time.time() - started, 1)},
    settings=f"{swaps!r}; {projection!r}",
)  # fmt: skip
