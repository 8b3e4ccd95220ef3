"""Rule access_statistics: the access records of every captured document -> the access-law frames
(TV distances to p_T and p*, Prop. 3, exposure bias, head-sum dilution).  Glue only:
trustmass.report.frames.access."""

from trustmass.plumbing.rule_io import start_log  # first: what follows logs to the job's log

started = start_log(snakemake)  # noqa: F821 (snakemake is injected by the script directive)

from trustmass.plumbing.rule_io import finish, read_parquets, write_parquet  # noqa: E402
from trustmass.report.engine import HeadlinePopulation, StatisticsSettings  # noqa: E402
from trustmass.report.frames.access import summarize  # noqa: E402

cfg = snakemake.params.config  # noqa: F821
settings, population = StatisticsSettings.from_config(cfg), HeadlinePopulation.from_config(cfg)
access = cfg["access_law"]
files = list(snakemake.input.access)  # noqa: F821
records = read_parquets(files)
print(f"{records.height} access records from {len(files)} documents; {settings}; headline {population.describe()}")
frames = summarize(records, settings, population, access["tail_rows"], access["dilution_rows"])
for name, frame in frames.items():
    write_parquet(frame, snakemake.output[name])  # noqa: F821
    print(f"{name}: {frame.height} rows")
print(frames["access_law"].filter(frames["access_law"]["population"] == "all"))
finish(
    snakemake,  # noqa: F821
    [snakemake.output[name] for name in frames], [*files, *snakemake.input.code], cfg, started,  # noqa: F821
    summary={"access_records": records.height, "documents": len(files)},
    seeds={"seed": settings.seed, "bootstrap": settings.bootstrap},
)  # fmt: skip
