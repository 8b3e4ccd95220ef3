"""Rule swap_rows: boundary swaps and their random controls on every sampled row of one capture
shard, es as the outcome.  Glue only: the science is trustmass.audit.swaps."""

from trustmass.plumbing.rule_io import start_log  # first: what follows logs to the job's log

started = start_log(snakemake)  # noqa: F821 (snakemake is injected by the script directive)

import time  # noqa: E402

from trustmass.audit.swaps import SwapSettings, shard_swaps  # noqa: E402
from trustmass.plumbing.rule_io import checked_shard, finish, write_parquet  # noqa: E402

cfg = snakemake.params.config  # noqa: F821
wc = snakemake.wildcards  # noqa: F821
settings = SwapSettings.from_config(cfg)
print(f"swap_rows {wc.model}/{wc.corpus}/{wc.doc}: {settings}")
checked_shard(snakemake.input.shard)  # noqa: F821 -- the shard is the one the capture wrote
frame = shard_swaps(snakemake.input.shard, wc.model, wc.corpus, wc.doc, settings)  # noqa: F821
write_parquet(frame, snakemake.output.swaps)  # noqa: F821
finish(
    snakemake,  # noqa: F821
    [snakemake.output.swaps],  # noqa: F821
    [snakemake.input.shard, *snakemake.input.code],  # noqa: F821
    cfg, started, {"records": frame.height, "seconds": round(time.time() - started, 1)}, settings=repr(settings),
)  # fmt: skip
