# The claims report: every numbered claim of the paper (src/trustmass/data/claims.yaml, transcribed
# from the spec) next to what this run regenerated (results/stats/headline*.parquet), with a verdict.
#
#   results/claims.md, results/claims.json
#
# Needs from common.smk: library_code, prov.

import importlib.resources

CLAIMS_FILE = str(importlib.resources.files("trustmass").joinpath("data", "claims.yaml"))
#: stages whose results this workflow produces so far (the rest are "not produced yet")
PRODUCED_STAGES = ["THY", "CAP", "INST", "STAT", "CERT", "AUD"]


rule claims_report:
    """Paper value, regenerated value with interval, models and verdict for every claim."""
    input:
        headline=[
            "results/stats/headline.parquet",
            "results/stats/headline_certification.parquet",
            "results/stats/headline_sweep.parquet",
            "results/stats/audit_headline.parquet",
        ],
        claims=CLAIMS_FILE,
        code=library_code("trustmass.report.claims_report", "trustmass.report.claims_data"),
    output:
        md=report("results/claims.md", caption="../report/claims.rst", category="Claims"),
        json="results/claims.json",
        prov=prov("results/claims.md"),
    params:
        models=lambda wc: config["study"]["models"],
        stages=PRODUCED_STAGES,
    log:
        "logs/claims_report.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/claims_report.py"
