"""Rule certify_table7: substitution, Table 7 and its claims rows.  Glue only: trustmass.certification."""

import sys
import time

started = time.time()
log = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected by the script directive)
sys.stdout = sys.stderr = log

import polars as pl

from trustmass import certification as cert
from trustmass.provenance import atomic_write, write_sidecar

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
with atomic_write(out.joined) as tmp:
    joined.write_parquet(tmp)
cert.write_table(t7, out.csv, out.md, "table7")
with atomic_write(out.headline) as tmp:
    head.write_parquet(tmp)
print(t7)
for path in (out.joined, out.csv, out.md, out.headline):
    write_sidecar(
        path,
        inputs=[snakemake.input.manifest, *snakemake.input.certified, *snakemake.input.records, *snakemake.input.code],  # noqa: F821
        config_slice=cfg,
        started=started,
        extra={"rule": snakemake.rule},  # noqa: F821
    )
print("ok")
