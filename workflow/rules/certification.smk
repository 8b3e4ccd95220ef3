# Stage 5: certification (paper spec §3.2, §3.4-3.5).  The exact optimum over all keys of a manifest
# of instances by MISOCP bisection (SCIP, trustmass.certification.misocp), and the cap-widening
# sweep at s = 32.  Both draw from the headline population (headline families on the headline
# corpus: the paper's 4 x 4 x 10 x 6 = 960).  Substitution, Table 7 and the sweep table are
# statistics (report.smk: certification_statistics, sweep_statistics).
#
#   results/certify/manifest.parquet                 instances, strata and shard of each
#   results/certify/shards/{shard}.parquet           one row per instance of the shard, always
#   results/certify/sweep_rows.parquet               ES_pool per sweep instance and extra-key setting
#
# Needs from common.smk: library_code, params_from_config, prov, headline_records; from
# capture_common.smk: study_shards; from certification_common.smk: CERT, CERT_CONFIG.

rule certify_manifest:
    """The certification manifest: instances per (model, budget, dropped-mass decile), seeded, sharded."""
    input:
        records=headline_records(),
        code=library_code("trustmass.certification.manifest", "trustmass.plumbing.rule_io"),
    output:
        manifest=f"{CERT}/manifest.parquet",
        prov=prov(f"{CERT}/manifest.parquet"),
    params:
        config=params_from_config(*CERT_CONFIG),
    log:
        "logs/certify/manifest.log",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=10,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/certify_manifest.py"


rule certify_shard:
    """Certify one manifest shard: reload each instance, recompute the ES_pool argmin, run the bisection."""
    input:
        manifest=rules.certify_manifest.output.manifest,
        shards=[capture_shard(*key) for key in headline_documents()],
        code=library_code("trustmass.certification.runner", "trustmass.plumbing.rule_io"),
    output:
        certified=f"{CERT}/shards/{{shard}}.parquet",
        prov=prov(f"{CERT}/shards/{{shard}}.parquet"),
    params:
        config=params_from_config(*CERT_CONFIG),
    wildcard_constraints:
        shard="[0-9]{3}",
    log:
        "logs/certify/shard_{shard}.log",
    threads: 2
    resources:
        mem_mb=lambda wc, threads: threads * (int(config["certification"]["memory_limit_mb"]) + 1000),
        runtime=lambda wc: int(config["certification"]["runtime_min"]),
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/certify_shard.py"


rule certify_sweep:
    """Cap-widening sweep at s = 32: ES_pool with e extra keys on a seeded depth-spanning head subset."""
    input:
        records=headline_records(),
        shards=[capture_shard(*key) for key in headline_documents()],
        code=library_code("trustmass.certification.manifest", "trustmass.certification.runner", "trustmass.plumbing.rule_io"),
    output:
        rows=f"{CERT}/sweep_rows.parquet",
        prov=prov(f"{CERT}/sweep_rows.parquet"),
    params:
        config=params_from_config(
            "seed", "budgets/enumerated", "certification/sweep", "statistics/primary_docs", "labels/kappa_threshold",
            "study/headline", "study/models", "study/corpora",
        ),
    log:
        "logs/certify/sweep.log",
    threads: 2
    resources:
        mem_mb=4000,
        runtime=60,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/certify_sweep.py"
