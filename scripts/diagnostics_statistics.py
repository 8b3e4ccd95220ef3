"""Rule diagnostics_statistics: the swap rows (es) and the diagnostics forward (CE, KL) -> the swap
curves, swap-improving boundaries and the margin split.  Glue only: trustmass.report.frames.diagnostics."""

from trustmass.plumbing.rule_io import start_log  # first: what follows logs to the job's log

started = start_log(snakemake)  # noqa: F821 (snakemake is injected by the script directive)

from trustmass.plumbing.rule_io import finish, read_parquets, write_parquet  # noqa: E402
from trustmass.report.engine import StatisticsSettings  # noqa: E402
from trustmass.report.frames.diagnostics import summarize  # noqa: E402

cfg = snakemake.params.config  # noqa: F821
settings = StatisticsSettings.from_config(cfg)
row_files, forward_files = list(snakemake.input.rows), list(snakemake.input.forward)  # noqa: F821
projection_files = list(snakemake.input.projection)  # noqa: F821
rows, tokens, projection = read_parquets(row_files), read_parquets(forward_files), read_parquets(projection_files)
print(f"{rows.height} swap rows from {len(row_files)} files, {tokens.height} token outcomes from {len(forward_files)}; {settings}")
frames = summarize(rows, tokens, snakemake.params.content, cfg["diagnostics"], settings, projection)  # noqa: F821
outputs = []
for name, frame in frames.items():
    write_parquet(frame, snakemake.output[name])  # noqa: F821
    outputs.append(snakemake.output[name])  # noqa: F821
    print(f"{name}: {frame.height} rows")
    print(frame)
finish(
    snakemake,  # noqa: F821
    outputs, [*row_files, *projection_files, *forward_files, *snakemake.input.code], cfg, started,  # noqa: F821
    summary={name: frame.height for name, frame in frames.items()},
    seeds={"seed": settings.seed, "bootstrap": settings.bootstrap},
)  # fmt: skip
