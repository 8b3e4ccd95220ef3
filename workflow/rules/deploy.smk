# Stage: deployment with enforced budgets (paper spec §7, App D).  kvpress's methods, H2O and ContourKV on
# RULER-style retrieval items cut from the offline corpora (and RULER / LongBench data where the user has
# them: deploy.benchmarks), decoded from a physically ragged cache; the
# byte ledger of every method (ragged, layer-padded, and as kvpress ships it in a prefill-only replay).
#
#   layout.DEPLOY_ROWS     results/deploy/{model}/{task}/{length}.parquet: one row per (item, variant, budget, method)
#   layout.DEPLOY_REPLAY   results/deploy/{model}/replay.parquet: kvpress's own prefill per (item, budget, method)

from trustmass.deploy.roster import library_modules as roster_modules

#: library code of both rules that no import names: the press modules the roster loads by dotted name
#: (trustmass.deploy.h2o_press), which library_code's static import closure cannot see
ROSTER_CODE = roster_modules()


rule deploy_condition:
    """Every method at every budget on the items of one (model, task, length): one prefill per item serves
    all methods and budgets; each method decodes its answer from its own ragged cache."""
    input:
        model=layout.MODEL_CONFIG,
        source=layout.MODEL_SOURCE,
        haystack=STUDY.deploy_haystack(),
        data=lambda wc: STUDY.benchmark_data(wc.task),
        code=library_code("trustmass.deploy.job", "trustmass.deploy.ragged", *ROSTER_CODE, "trustmass.plumbing.rule_io"),
    output:
        rows=layout.DEPLOY_ROWS,
        prov=prov(layout.DEPLOY_ROWS),
    params:
        config=params_of_model("seed", "deploy", "capture/device"),
        shuffle_seed=lambda wc: STUDY.of(wc.model).shuffle_seed(wc.model),  # the shuffled-text control's haystack
    wildcard_constraints:
        length="[0-9]+",
    log:
        layout.log("deploy_condition"),
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
        model=layout.MODEL_CONFIG,
        source=layout.MODEL_SOURCE,
        haystack=STUDY.deploy_haystack(),
        code=library_code("trustmass.deploy.replay", "trustmass.deploy.job", *ROSTER_CODE, "trustmass.plumbing.rule_io"),
    output:
        rows=layout.DEPLOY_REPLAY,
        prov=prov(layout.DEPLOY_REPLAY),
    params:
        config=params_of_model("seed", "deploy", "capture/device"),
        shuffle_seed=lambda wc: STUDY.of(wc.model).shuffle_seed(wc.model),  # the shuffled-text control's haystack
    log:
        layout.log("deploy_replay"),
    threads: config["deploy"]["threads"]
    priority: -1
    resources:
        mem_mb=6000,
        runtime=60,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/deploy_replay.py"
