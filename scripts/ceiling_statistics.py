"""Rule ceiling_statistics: every ceiling record of the study -> the statistics frames of Figures 1-2,
Tables 1, 2, 6, 8 and the claims they regenerate.  Glue only: trustmass.report.frames.ceiling(_claims)."""

from trustmass.plumbing.rule_io import start_log  # first: what follows logs to the job's log

started = start_log(snakemake)  # noqa: F821 (snakemake is injected by the script directive)

from trustmass.plumbing.rule_io import finish, read_parquets, write_parquet  # noqa: E402
from trustmass.report.engine import HeadlinePopulation, StatisticsSettings  # noqa: E402
from trustmass.report.frames.ceiling import summarize  # noqa: E402
from trustmass.report.frames.ceiling_claims import headline  # noqa: E402

cfg = snakemake.params.config  # noqa: F821
settings = StatisticsSettings.from_config(cfg)
population = HeadlinePopulation.from_config(cfg)
files = list(snakemake.input.records)  # noqa: F821
records = read_parquets(files)
print(f"{records.height} records from {len(files)} files; headline population: {population.describe()}; {settings}")
frames = summarize(records, settings, population)
frames["headline_ceiling"] = headline(records, settings, population, frames, snakemake.params.content)  # noqa: F821
outputs = []
for name, frame in frames.items():
    write_parquet(frame, snakemake.output[name])  # noqa: F821
    outputs.append(snakemake.output[name])  # noqa: F821
    print(f"{name}: {frame.height} rows")
finish(
    snakemake,  # noqa: F821
    outputs, [*files, *snakemake.input.code], cfg, started,  # noqa: F821
    summary={"records": records.height, "headline_values": frames["headline_ceiling"].select("claim_id", "value_name").n_unique()},
    seeds={"seed": settings.seed, "bootstrap": settings.bootstrap},
    population=population.describe(),
)  # fmt: skip
