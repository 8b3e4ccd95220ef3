# Stage: deployment with enforced budgets (paper spec §7, App D).  kvpress's methods, H2O and ContourKV on
# RULER-style retrieval items cut from the offline corpora (and RULER / LongBench data where the user has
# them: deploy.benchmarks), decoded from a physically ragged cache; the
# byte ledger of every method (ragged, layer-padded, and as kvpress ships it in a prefill-only replay).
#
#   results/deploy/{model}/{task}/{length}.parquet   one row per (item, variant, budget, method)
#   results/deploy/{model}/replay.parquet            kvpress's own prefill per (item, budget, method): bytes, seconds
#
# Needs from common.smk: library_code, params_from_config, prov; sources_common.smk: model_source_record;
# deploy_common.smk: the paths.


rule deploy_condition:
    """Every method at every budget on the items of one (model, task, length): one prefill per item serves
    all methods and budgets; each method decodes its answer from its own ragged cache."""
    input:
        model="resources/models/{model}/config.json",
        source=model_source_record("{model}"),
        haystack=deploy_haystack(),
        data=lambda w: benchmark_data(w.task),
        code=library_code("trustmass.deploy.job", "trustmass.deploy.ragged", "trustmass.plumbing.rule_io"),
    output:
        rows=deploy_rows("{model}", "{task}", "{length}"),
        prov=prov(deploy_rows("{model}", "{task}", "{length}")),
    params:
        config=params_from_config("seed", "deploy", "capture/device"),
    wildcard_constraints:
        length="[0-9]+",
    log:
        "logs/deploy/condition/{model}/{task}/{length}.log",
    threads: config["deploy"]["threads"]
    # early, on one core: the longest single-core job (146 s of the default run); left to the end it ran
    # alone while the two-core ceiling jobs waited for both cores (126 s of one idle core, 2026-12-03)
    priority: 1
    resources:
        mem_mb=6000,
        runtime=120,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/deploy_condition.py"


rule deploy_replay:
    """The prefill-only byte replay: each replayed method as kvpress ships it, bytes held and prefill seconds."""
    input:
        model="resources/models/{model}/config.json",
        source=model_source_record("{model}"),
        haystack=deploy_haystack(),
        code=library_code("trustmass.deploy.replay", "trustmass.deploy.job", "trustmass.plumbing.rule_io"),
    output:
        rows="results/deploy/{model}/replay.parquet",
        prov=prov("results/deploy/{model}/replay.parquet"),
    params:
        config=params_from_config("seed", "deploy", "capture/device"),
    log:
        "logs/deploy/replay/{model}.log",
    threads: config["deploy"]["threads"]
    priority: -1
    resources:
        mem_mb=6000,
        runtime=60,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/deploy_replay.py"
