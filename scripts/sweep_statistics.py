"""Rule sweep_statistics: the cap-widening sweep's rows -> its table frame and claims.  Glue only:
trustmass.report.frames.certification."""

from trustmass.plumbing.rule_io import start_log  # first: what follows logs to the job's log

started = start_log(snakemake)  # noqa: F821 (snakemake is injected by the script directive)

import polars as pl  # noqa: E402

from trustmass.plumbing.rule_io import finish, write_parquet  # noqa: E402
from trustmass.report.engine import HeadlinePopulation  # noqa: E402
from trustmass.report.frames import certification as cert  # noqa: E402

cfg = snakemake.params.config  # noqa: F821
out = snakemake.output  # noqa: F821
rows = pl.read_parquet(snakemake.input.rows)  # noqa: F821
table = cert.sweep_table(rows, cfg["labels"]["kappa_threshold"], int(cfg["certification"]["sweep"]["budget"]))
head = cert.headline(pl.DataFrame(schema=cert.TABLE7_SCHEMA), None, table, ",".join(HeadlinePopulation.from_config(cfg).models))
write_parquet(table, out.sweep)
write_parquet(head, out.headline_sweep)
print(table)
finish(snakemake, [out.sweep, out.headline_sweep], [snakemake.input.rows, *snakemake.input.code], cfg, started)  # noqa: F821
