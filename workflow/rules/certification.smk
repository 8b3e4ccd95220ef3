# Stage 5: certification (paper spec §3.2, §3.4-3.5).  The exact optimum over all keys of a manifest
# of instances by MISOCP bisection (SCIP, trustmass.certification.misocp), and the cap-widening
# sweep at s = 32.  Both draw from the headline population (headline families on the headline
# corpus: the paper's 4 x 4 x 10 x 6 = 960).  Substitution, Table 7 and the sweep table are
# statistics (report.smk: certification_statistics, sweep_statistics).
#
#   layout.CERTIFY_MANIFEST   results/certify/manifest.parquet: instances, strata and shard of each
#   layout.CERTIFY_SHARD      results/certify/shards/{shard}.parquet: one row per instance of the shard, always
#   layout.SWEEP_ROWS         results/certify/sweep_rows.parquet: ES_pool per sweep instance and extra-key setting

#: what the manifest and the certification read of the config (a change reruns them)
CERT_CONFIG = ("seed", "budgets/enumerated", "certification", "statistics/primary_docs", "study/headline", "study/models", "study/corpora")

rule certify_manifest:
    """The certification manifest: instances per (model, budget, dropped-mass decile), seeded, sharded."""
    input:
        records=STUDY.headline_records(),
        code=library_code("trustmass.certification.manifest", "trustmass.plumbing.rule_io"),
    output:
        manifest=layout.CERTIFY_MANIFEST,
        prov=prov(layout.CERTIFY_MANIFEST),
    params:
        config=params_from_config(*CERT_CONFIG),
    log:
        layout.log("certify_manifest"),
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
        shards=STUDY.headline_shards(),
        code=library_code("trustmass.certification.runner", "trustmass.plumbing.rule_io"),
    output:
        certified=layout.CERTIFY_SHARD,
        prov=prov(layout.CERTIFY_SHARD),
    params:
        config=params_from_config(*CERT_CONFIG),
    wildcard_constraints:
        shard="[0-9]{3}",
    log:
        layout.log("certify_shard"),
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
        records=STUDY.headline_records(),
        shards=STUDY.headline_shards(),
        code=library_code("trustmass.certification.manifest", "trustmass.certification.runner", "trustmass.plumbing.rule_io"),
    output:
        rows=layout.SWEEP_ROWS,
        prov=prov(layout.SWEEP_ROWS),
    params:
        config=params_from_config(
            "seed", "budgets/enumerated", "certification/sweep", "statistics/primary_docs", "labels/kappa_threshold",
            "study/headline", "study/models", "study/corpora",
        ),
    log:
        layout.log("certify_sweep"),
    threads: 2
    resources:
        mem_mb=4000,
        runtime=60,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/certify_sweep.py"
