# Stage 3: ceiling records.  One job per capture shard: every (layer, head, sampled row) at every
# budget -- the exact pool optimum ES_pool at the enumerated budgets, balancing and the bounds at
# the native budgets (trustmass.ceiling.records).  Column names are the contract downstream stages read.
#
#   layout.CEILING   results/ceiling/{model}/{corpus}/{doc}.parquet


rule ceiling:
    """Ceiling records of one captured document (float64 throughout)."""
    input:
        shard=layout.CAPTURE_SHARD,
        code=library_code("trustmass.ceiling.records", "trustmass.plumbing.rule_io"),
    output:
        records=layout.CEILING,
        prov=prov(layout.CEILING),
    params:
        config=params_of_model("budgets", "enumeration", "balancing", "leverage"),
    wildcard_constraints:
        doc="[0-9]{4}",
    log:
        layout.log("ceiling"),
    threads: 2
    resources:
        mem_mb=4000,
        runtime=60,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/ceiling.py"
