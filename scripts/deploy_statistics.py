"""Rule deploy_statistics: the deployment rows and the byte replay -> Tables 3-5, the bytes table, timing and
the deployment claims.  Glue only: trustmass.report.frames.deploy (the tables) and deploy_claims (the claims)."""

from trustmass.plumbing.rule_io import start_log  # first: what follows logs to the job's log

started = start_log(snakemake)  # noqa: F821 (snakemake is injected by the script directive)

import polars as pl  # noqa: E402

from trustmass.plumbing.rule_io import finish, read_parquets, write_parquet  # noqa: E402
from trustmass.report.engine import StatisticsSettings  # noqa: E402
from trustmass.report.frames.deploy import bytes_rows, decomposition_table, table3, table4, timing_table  # noqa: E402
from trustmass.report.frames.deploy_claims import headline  # noqa: E402

smk = snakemake  # noqa: F821
cfg = smk.params.config
settings = StatisticsSettings.from_config(cfg)
files, replays = list(smk.input.rows), list(smk.input.replay)
if not files:  # only asked for by name: `all` and the claims leave the stage out when deploy.enabled is false
    raise SystemExit("deploy_statistics: no deployment rows: deploy.enabled is false; fix: set it true")
rows = read_parquets(files, how="diagonal_relaxed")
replay = read_parquets(replays, how="diagonal_relaxed") if replays else pl.DataFrame()
print(f"{rows.height} rows from {len(files)} conditions, {replay.height} replay measurements; {settings}")
frames = {"table3": table3(rows, settings), "table4": table4(rows, settings), "table5": decomposition_table(rows, settings),
          "deploy_bytes": bytes_rows(rows, replay), "deploy_timing": timing_table(rows, replay)}
frames["headline_deploy"] = headline(rows, frames["table3"], frames["table4"], frames["table5"], frames["deploy_bytes"],
                                     frames["deploy_timing"], settings, replay=replay)
for name, frame in frames.items():
    write_parquet(frame, smk.output[name])
    print(f"{name}: {frame.height} rows")
finish(smk, [smk.output[n] for n in frames], [*files, *replays, *smk.input.code], cfg, started,
       seeds={"seed": settings.seed, "bootstrap": settings.bootstrap})
