"""Rule certification_statistics: substitution, Table 7's frame and the certification claims.  Glue
only: trustmass.report.frames.certification."""

from trustmass.plumbing.rule_io import start_log  # first: what follows logs to the job's log

started = start_log(snakemake)  # noqa: F821 (snakemake is injected by the script directive)

import polars as pl  # noqa: E402

from trustmass.plumbing.rule_io import finish, read_parquets, write_parquet  # noqa: E402
from trustmass.report.engine import HeadlinePopulation, StatisticsSettings  # noqa: E402
from trustmass.report.frames import certification as cert  # noqa: E402

cfg = snakemake.params.config  # noqa: F821
out = snakemake.output  # noqa: F821
population = HeadlinePopulation.from_config(cfg)
man = pl.read_parquet(snakemake.input.manifest)  # noqa: F821
certified = read_parquets(snakemake.input.certified)  # noqa: F821
missing = set(man["instance"].to_list()) - set(certified["instance"].to_list())
if missing:
    raise SystemExit(f"certification rows missing for instances {sorted(missing)[:10]}...")
columns = ["model", "corpus", "doc", "budget", "c_hat", "kappa_hat_bal"]
records = read_parquets(snakemake.input.records, columns)  # noqa: F821
records = population.select(records).filter(pl.col("budget").is_in(cfg["budgets"]["enumerated"]))
joined = cert.substitute(man, certified)
t7 = cert.table7(records, man, certified)
head = cert.headline(t7, joined, None, ",".join(population.models), StatisticsSettings.from_config(cfg))
write_parquet(joined, out.joined)
write_parquet(t7, out.table7)
write_parquet(head, out.headline_certification)
print(t7)
finish(
    snakemake,  # noqa: F821
    [out.joined, out.table7, out.headline_certification],
    [snakemake.input.manifest, *snakemake.input.certified, *snakemake.input.records, *snakemake.input.code],  # noqa: F821
    cfg, started, summary={"instances": man.height, "records": records.height}, population=population.describe(),
)  # fmt: skip
