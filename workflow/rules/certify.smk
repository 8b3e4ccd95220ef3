# Stage 5: certification (paper spec §3.2, §3.4-3.6, Table 7).  The exact optimum over all keys of a
# manifest of instances by MISOCP bisection (SCIP, trustmass.certification.misocp), substituted into the ceiling
# statistics; and the cap-widening sweep at s = 32.  Orchestration is trustmass.certification.stage.
#
#   results/certify/manifest.parquet                 instances, strata and shard of each
#   results/certify/shards/{shard}.parquet           one row per instance of the shard, always
#   results/certify/certified.parquet                the manifest joined with its certification
#   results/tables/table7_certification.{csv,md}     Table 7
#   results/stats/headline_certification.parquet     claims 18, 21, 84, 90-95 (claims-report contract)
#   results/certify/sweep_rows.parquet               ES_pool per sweep instance and extra-key setting
#   results/tables/sweep_cap_widening.{csv,md}       the sweep table
#   results/stats/headline_sweep.parquet             claims 19, 20
#
# Needs from common.smk: library_code, params_from_config, prov; from capture_common.smk:
# study_records, study_shards; from certify_common.smk: CERT, CERT_CONFIG, certify_shard_outputs,
# paper_claim_texts.

rule certify_manifest:
    """The certification manifest: instances per (model, budget, dropped-mass decile), seeded, sharded."""
    input:
        records=study_records(),
        code=library_code("trustmass.certification.stage"),
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
        shards=study_shards(),
        code=library_code("trustmass.certification.stage", "trustmass.plumbing.rule_io"),
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


rule certify_table7:
    """Substitution and Table 7 (Wilson-95 f_hi, distribution-free median caps), with claims rows."""
    input:
        manifest=rules.certify_manifest.output.manifest,
        certified=certify_shard_outputs(),
        records=study_records(),
        code=library_code("trustmass.certification.stage", "trustmass.plumbing.rule_io"),
    output:
        joined=f"{CERT}/certified.parquet",
        csv=report("results/tables/table7_certification.csv", caption="../report/table7.rst", category="Tables"),
        md="results/tables/table7_certification.md",
        headline="results/stats/headline_certification.parquet",
        prov=[prov(p) for p in (f"{CERT}/certified.parquet", "results/tables/table7_certification.csv",
                                "results/tables/table7_certification.md", "results/stats/headline_certification.parquet")],
    params:
        config=params_from_config(*CERT_CONFIG),
        paper=paper_claim_texts(18, 21, 84, 90, 91, 92, 93, 94, 95),
        models=lambda wc: ",".join(config["study"]["models"]),
    log:
        "logs/certify/table7.log",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=10,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/certify_table7.py"


rule certify_sweep:
    """Cap-widening sweep at s = 32: ES_pool with e extra keys on a seeded depth-spanning head subset."""
    input:
        records=study_records(),
        shards=study_shards(),
        code=library_code("trustmass.certification.stage", "trustmass.plumbing.rule_io"),
    output:
        rows=f"{CERT}/sweep_rows.parquet",
        csv=report("results/tables/sweep_cap_widening.csv", caption="../report/sweep.rst", category="Tables"),
        md="results/tables/sweep_cap_widening.md",
        headline="results/stats/headline_sweep.parquet",
        prov=[prov(p) for p in (f"{CERT}/sweep_rows.parquet", "results/tables/sweep_cap_widening.csv",
                                "results/tables/sweep_cap_widening.md", "results/stats/headline_sweep.parquet")],
    params:
        config=params_from_config(
            "seed", "budgets/enumerated", "certification/sweep", "statistics/primary_docs", "labels/kappa_threshold"
        ),
        paper=paper_claim_texts(18, 19, 20),
        models=lambda wc: ",".join(config["study"]["models"]),
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
