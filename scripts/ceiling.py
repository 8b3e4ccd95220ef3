"""Rule ceiling: the records of one capture shard.  Glue only: the science is trustmass.ceiling."""

import sys
import time

started = time.time()
log = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected by the script directive)
sys.stdout = sys.stderr = log

from trustmass.ceiling import CeilingSettings, shard_records  # noqa: E402
from trustmass.provenance import atomic_write, write_sidecar  # noqa: E402

cfg = snakemake.params.config  # noqa: F821
wc = snakemake.wildcards  # noqa: F821
settings = CeilingSettings.from_config(cfg)
print(f"ceiling {wc.model}/{wc.corpus}/{wc.doc}: {settings}")
frame = shard_records(snakemake.input.shard, wc.model, wc.corpus, wc.doc, settings, workers=snakemake.threads)  # noqa: F821
with atomic_write(snakemake.output.records) as tmp:  # noqa: F821
    frame.write_parquet(tmp)
enumerated = frame.filter(frame["enumerated"])
summary = {
    "records": frame.height,
    "rows": frame.select(["layer", "head", "query_pos"]).n_unique(),
    "pool_is_row": int(frame["pool_is_row"].sum()),
    "zero_mass_keys_max": int(frame["n_zero_mass"].max()),
    "raw_p_sum_dev_max": float(frame["raw_p_sum_dev"].abs().max()),
    "es_pool_fast_rel_err_max": float(enumerated["es_pool_fast_rel_err"].max()) if enumerated.height else None,
    "infinite_kappa_hat": int(enumerated["kappa_hat"].is_infinite().sum()) if enumerated.height else 0,
}
print(f"summary: {summary}")
write_sidecar(
    snakemake.output.records,  # noqa: F821
    inputs=[snakemake.input.shard, *snakemake.input.code],  # noqa: F821
    config_slice=cfg,
    started=started,
    extra={"rule": snakemake.rule, "summary": summary, "settings": repr(settings)},  # noqa: F821
)
print("ok")
