# Stage 3: ceiling records.  One job per capture shard: every (layer, head, sampled row) at every
# budget -- the exact pool optimum ES_pool at the enumerated budgets, balancing and the bounds at
# the native budgets (trustmass.ceiling.records).  Column names are the contract downstream stages read.
#
#   results/ceiling/{model}/{corpus}/{doc}.parquet
#
# Needs from common.smk: library_code, params_from_config, prov; from capture_common.smk:
# capture_shard.


rule ceiling:
    """Ceiling records of one captured document (float64 throughout)."""
    input:
        shard=capture_shard("{model}", "{corpus}", "{doc}"),
        code=library_code("trustmass.ceiling.records", "trustmass.plumbing.rule_io"),
    output:
        records="results/ceiling/{model}/{corpus}/{doc}.parquet",
        prov=prov("results/ceiling/{model}/{corpus}/{doc}.parquet"),
    params:
        config=params_from_config("budgets", "enumeration", "balancing", "leverage"),
    wildcard_constraints:
        doc="[0-9]{4}",
    log:
        "logs/ceiling/{model}/{corpus}/{doc}.log",
    threads: 2
    resources:
        mem_mb=4000,
        runtime=60,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/ceiling.py"
