"""Rule loss_statistics: the held-out documents' token NLLs -> the loss table (Figure 4's frame) and
the loss claims.  Glue only: trustmass.report.frames.loss."""

from trustmass.plumbing.rule_io import start_log  # first: what follows logs to the job's log

started = start_log(snakemake)  # noqa: F821 (snakemake is injected by the script directive)

from trustmass.plumbing.rule_io import finish, read_parquets, write_parquet  # noqa: E402
from trustmass.report.engine import StatisticsSettings  # noqa: E402
import polars as pl  # noqa: E402

from trustmass.report.frames.loss import (  # noqa: E402
    allocation_headline, curvature_headline, curvature_table, headline, loss_table, probe_headline, probe_table,
)  # fmt: skip

smk = snakemake  # noqa: F821
cfg = smk.params.config
settings = StatisticsSettings.from_config(cfg)
files = list(smk.input.tokens)
tokens = read_parquets(files)
print(f"{tokens.height} token NLLs from {len(files)} held-out documents; {settings}")
table = loss_table(tokens, settings)
panels = list(smk.input.allocation)
allocation = read_parquets(panels) if panels else pl.DataFrame()
claims = [headline(table, tuple(cfg["loss"]["rules"]))] + ([allocation_headline(allocation)] if panels else [])
recalls = list(smk.input.probe)
probe = probe_table(tokens, read_parquets(recalls), settings) if recalls else pl.DataFrame()
if recalls:
    claims.append(probe_headline(probe))
curvature_files = list(smk.input.curvature)
curvature = (curvature_table(read_parquets(curvature_files), table, read_parquets(list(smk.input.cells)), settings)
             if curvature_files else pl.DataFrame())  # fmt: skip
if curvature_files:
    claims.append(curvature_headline(curvature))
frames = {"loss_table": table, "allocation": allocation, "probe": probe, "curvature": curvature, "headline_loss": pl.concat(claims)}
for name, frame in frames.items():
    write_parquet(frame, smk.output[name])
    print(f"{name}: {frame.height} rows")
finish(smk, [smk.output[n] for n in frames], [*files, *panels, *recalls, *curvature_files, *smk.input.cells, *smk.input.code],
       cfg, started,
       seeds={"seed": settings.seed, "bootstrap": settings.bootstrap})  # fmt: skip
