# Stage 5: certification (paper spec §3.2, §3.4-3.5).  The exact optimum over all keys of a manifest
# of instances by MISOCP bisection (SCIP, trustmass.certification.misocp), and the cap-widening
# sweep at s = 32.  Both draw from the headline population (headline families on the headline
# corpus: the paper's 4 x 4 x 10 x 6 = 960).  Substitution, Table 7 and the sweep table are
# statistics (report.smk: certification_statistics, sweep_statistics).
#
#   layout.CERTIFY_MANIFEST   results/certify/manifest.parquet: instances, strata and shard of each
#   layout.CERTIFY_SHARD      results/certify/shards/{shard}.parquet: one row per instance of the shard, always
#   layout.SWEEP_ROWS         results/certify/sweep_rows.parquet: ES_pool per sweep instance and extra-key setting

#: what the manifest and the certification read of the config (a change reruns them); config_slice leaves out
#: certification.runtime_min, the cluster time limit of a certify job, which changes no result
#: (trustmass.plumbing.config.SCHEDULING_KEYS): raising it re-solves nothing.  The work budget (bnb_work,
#: scip_nodes, scip_lp_iterations) decides every outcome; time_limit_s, the safety net, stays in too: a row it
#: stopped is status safety_stop, and must be re-solved when the net is raised
CERT_CONFIG = ("seed", "budgets/enumerated", "certification", "statistics/primary_docs", "study/headline", "study/models", "study/corpora")


# one copy of each rule per control arm (trustmass.plan.controls), on the arm's headline population
for _arm, _study in ARM_STUDIES.items():

    rule:
        name:
            arm_rule("certify_manifest", _arm)
        input:
            records=_study.headline_records(),
            code=library_code("trustmass.certification.manifest", "trustmass.plumbing.rule_io"),
        output:
            manifest=_study.certify_manifest(),
            prov=prov(_study.certify_manifest()),
        params:
            config=config_slice(_study.config, *CERT_CONFIG),
        log:
            arm_log("certify_manifest", _arm),
        threads: 1
        resources:
            mem_mb=4000,
            runtime=10,
        conda:
            "../../envs/trustmass.yaml"
        script:
            "../../scripts/certify_manifest.py"

    rule:
        name:
            arm_rule("certify_shard", _arm)
        input:
            manifest=_study.certify_manifest(),
            shards=_study.headline_shards(),
            code=library_code("trustmass.certification.runner", "trustmass.plumbing.rule_io"),
        output:
            certified=_study.pooled(layout.CERTIFY_SHARD),
            prov=prov(_study.pooled(layout.CERTIFY_SHARD)),
        params:
            config=config_slice(_study.config, *CERT_CONFIG),
        wildcard_constraints:
            shard="[0-9]{3}",
        log:
            arm_log("certify_shard", _arm),
        threads: 2
        resources:
            mem_mb=lambda wc, threads: threads * (int(config["certification"]["memory_limit_mb"]) + 1000),
            runtime=lambda wc: int(config["certification"]["runtime_min"]),
        conda:
            "../../envs/trustmass.yaml"
        script:
            "../../scripts/certify_shard.py"

    rule:
        name:
            arm_rule("certify_sweep", _arm)
        input:
            records=_study.headline_records(),
            shards=_study.headline_shards(),
            code=library_code("trustmass.certification.manifest", "trustmass.certification.runner", "trustmass.plumbing.rule_io"),
        output:
            rows=_study.sweep_rows(),
            prov=prov(_study.sweep_rows()),
        params:
            config=config_slice(
                _study.config,
                "seed", "budgets/enumerated", "certification/sweep", "statistics/primary_docs", "labels/kappa_threshold",
                "study/headline", "study/models", "study/corpora",
            ),
        log:
            arm_log("certify_sweep", _arm),
        threads: 2
        resources:
            mem_mb=4000,
            runtime=60,
        conda:
            "../../envs/trustmass.yaml"
        script:
            "../../scripts/certify_sweep.py"

    workflow.get_rule(arm_rule("certify_manifest", _arm)).docstring = """The certification manifest: instances per (model, budget, dropped-mass decile), seeded, sharded."""
    workflow.get_rule(arm_rule("certify_shard", _arm)).docstring = """Certify one manifest shard: reload each instance, recompute the ES_pool argmin, run the bisection."""
    workflow.get_rule(arm_rule("certify_sweep", _arm)).docstring = """Cap-widening sweep at s = 32: ES_pool with e extra keys on a seeded depth-spanning head subset."""
