"""Rule certify_sweep: the cap-widening sweep at s = 32.  Glue only: trustmass.certification.stage."""

import sys

from trustmass.plumbing.rule_io import start_log  # first: what follows logs to the job's log

started = start_log(snakemake)  # noqa: F821 (snakemake is injected by the script directive)

import polars as pl

from trustmass.certification import stage as cert
from trustmass.plumbing.rule_io import capture_path, finish, write_parquet

cfg = snakemake.params.config  # noqa: F821
sw = cfg["certification"]["sweep"]
if int(sw["budget"]) not in cfg["budgets"]["enumerated"]:
    sys.exit(
        f"certification.sweep.budget={sw['budget']} is not in budgets.enumerated={cfg['budgets']['enumerated']}: "
        "the sweep widens the enumerated pool of that budget; add it to budgets.enumerated or change the sweep budget"
    )
out = snakemake.output  # noqa: F821
columns = ["model", "corpus", "doc", "layer", "head", "kv_head", "query_pos", "budget", "es_top", "es_pool", "pool_extra"]
records = pl.concat([pl.read_parquet(p, columns=columns) for p in snakemake.input.records])  # noqa: F821
heads = cert.sweep_heads(records, int(sw["heads_per_layer"]), int(cfg["seed"]))
inst = cert.sweep_instances(records, heads, int(sw["budget"]), cfg["statistics"]["primary_docs"])
print(f"sweep: {heads.height} heads, {inst.height} instances, extras {sw['extras']}")

if inst.height == 0:
    sys.exit(f"sweep: no records at s = {sw['budget']} for the sampled heads; nothing to widen")
rows = cert.sweep_rows(inst, sw["extras"], capture_path, workers=snakemake.threads)  # noqa: F821
table = cert.sweep_table(rows, cfg["labels"]["kappa_threshold"], int(sw["budget"]))
empty = pl.DataFrame(schema=cert.TABLE7_SCHEMA)
head = cert.headline(empty, None, table, snakemake.params.models)  # noqa: F821
write_parquet(rows, out.rows)
cert.write_table(table, out.csv, out.md, "sweep")
write_parquet(head, out.headline)
print(table)
finish(
    snakemake,  # noqa: F821
    [out.rows, out.csv, out.md, out.headline],
    [*snakemake.input.records, *snakemake.input.code],  # noqa: F821
    cfg, started, heads=heads.to_dicts(),
)  # fmt: skip
