"""Rule bench_enumeration: time the exhaustive ES_pool search against a numpy reference.

Glue only: the benchmark lives in trustmass.bench.enumeration (also `make bench`).
"""

from trustmass.plumbing.rule_io import start_log  # first: what follows logs to the job's log

started = start_log(snakemake)  # noqa: F821 (snakemake is injected by the script directive)

import os  # noqa: E402

# Snakemake sets OMP/OpenBLAS/MKL threads to the rule's threads; numba reads its own variable.
os.environ.setdefault("NUMBA_NUM_THREADS", str(snakemake.threads))  # noqa: F821

from trustmass.bench.enumeration import run  # noqa: E402
from trustmass.plumbing.provenance import write_json  # noqa: E402
from trustmass.plumbing.rule_io import finish  # noqa: E402

cfg = snakemake.params.config  # noqa: F821
print(f"benchmark settings: {cfg}")
result = run(
    n_keys=cfg["benchmark"]["n_keys"],
    head_dim=cfg["benchmark"]["head_dim"],
    instances=cfg["benchmark"]["instances"],
    budgets=cfg["budgets"]["enumerated"],
    seed=cfg["seed"],
    subset_cap=cfg["enumeration"]["subset_cap"],
    max_extra=cfg["enumeration"]["max_extra"],
)
write_json(snakemake.output.json, result)  # noqa: F821
finish(
    snakemake,  # noqa: F821
    [snakemake.output.json],  # noqa: F821
    snakemake.input.code,  # noqa: F821
    cfg,
    started,
    seeds={"seed": cfg["seed"]},
    threads=snakemake.threads,  # noqa: F821
)
