"""Rule certify_table7: substitution, Table 7 and its claims rows.  Glue only: trustmass.certification.stage."""

from trustmass.plumbing.rule_io import start_log  # first: what follows logs to the job's log

started = start_log(snakemake)  # noqa: F821 (snakemake is injected by the script directive)

import polars as pl

from trustmass.certification import stage as cert
from trustmass.plumbing.rule_io import finish, write_parquet

cfg = snakemake.params.config  # noqa: F821
out = snakemake.output  # noqa: F821
man = pl.read_parquet(snakemake.input.manifest)  # noqa: F821
certified = pl.concat([pl.read_parquet(p) for p in snakemake.input.certified])  # noqa: F821
missing = set(man["instance"].to_list()) - set(certified["instance"].to_list())
if missing:
    raise SystemExit(f"certification rows missing for instances {sorted(missing)[:10]}...")
columns = ["model", "corpus", "doc", "budget", "c_hat", "kappa_hat_bal"]
records = pl.concat([pl.read_parquet(p, columns=columns) for p in snakemake.input.records])  # noqa: F821
records = records.filter(pl.col("budget").is_in(cfg["budgets"]["enumerated"]))
joined = cert.substitute(man, certified)
t7 = cert.table7(records, man, certified)
head = cert.headline(t7, joined, None, snakemake.params.models)  # noqa: F821
write_parquet(joined, out.joined)
cert.write_table(t7, out.csv, out.md, "table7")
write_parquet(head, out.headline)
print(t7)
finish(
    snakemake,  # noqa: F821
    [out.joined, out.csv, out.md, out.headline],
    [snakemake.input.manifest, *snakemake.input.certified, *snakemake.input.records, *snakemake.input.code],  # noqa: F821
    cfg, started,
)  # fmt: skip
