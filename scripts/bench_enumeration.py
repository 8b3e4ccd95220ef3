"""Rule bench_enumeration: time the exhaustive ES_pool search against a numpy reference.

Glue only: the benchmark lives in trustmass.bench.enumeration (also `make bench`).
"""

from trustmass.plumbing.rule_io import run_rule  # first: it opens the job's log before anything heavy imports


def main(snakemake, started):
    import os

    # Snakemake sets OMP/OpenBLAS/MKL threads to the rule's threads; numba reads its own variable.
    os.environ.setdefault("NUMBA_NUM_THREADS", str(snakemake.threads))

    from trustmass.bench.enumeration import run
    from trustmass.plumbing.provenance import write_json
    from trustmass.plumbing.rule_io import finish

    cfg = snakemake.params.config
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
    write_json(snakemake.output.json, result)
    finish(
        snakemake,
        [snakemake.output.json],
        snakemake.input.code,
        cfg,
        started,
        seeds={"seed": cfg["seed"]},
        threads=snakemake.threads,
    )


run_rule(snakemake, main)
