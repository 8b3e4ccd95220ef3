# Stage 0: the library checks itself against the paper's worked examples, and the exhaustive
# subset search is benchmarked against a plain-numpy reference.  No model, no data.


rule worked_examples:
    """Example 2.2, Example A.2 and the Partition reduction, recomputed: expected vs computed."""
    input:
        code=library_code("trustmass.selfcheck.worked_examples", "trustmass.plumbing.rule_io"),
    output:
        json=report(
            layout.WORKED_EXAMPLES,
            caption="../report/worked_examples.rst",
            category="Self-check",
        ),
        prov=prov(layout.WORKED_EXAMPLES),
    log:
        layout.log("worked_examples"),
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/worked_examples.py"


rule bench_enumeration:
    """Subsets per second of the exhaustive ES_pool search vs vectorised numpy, single core."""
    input:
        code=library_code("trustmass.bench.enumeration", "trustmass.plumbing.rule_io"),
    output:
        json=report(
            layout.BENCH_ENUMERATION,
            caption="../report/bench_enumeration.rst",
            category="Benchmarks",
        ),
        prov=prov(layout.BENCH_ENUMERATION),
    params:
        config=params_from_config(
            "seed",
            "budgets/enumerated",
            "enumeration/subset_cap",
            "enumeration/max_extra",
            "benchmark",
        ),
    log:
        layout.log("bench_enumeration"),
    threads: 1  # the benchmark measures one core
    resources:
        mem_mb=2000,
        runtime=30,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/bench_enumeration.py"
