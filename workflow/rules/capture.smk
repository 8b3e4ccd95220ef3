# Stage 2: capture.  One prefill per (model, document) with the capture attention function: the
# sampled rows' exact probabilities, keys, values, queries, the model's own head outputs, H2O
# column mass and SnapKV window sums, every row validated against the model's own output.
#
#   results/capture/{model}/{corpus}/{doc}.safetensors          the shard (bit-reproducible)
#   results/capture/{model}/{corpus}/{doc}.validation.parquet   per-row deviations
#   results/capture/{model}/{corpus}/{doc}.access.parquet       access-law records (access_law.enabled;
#                                                               the same prefill plus one decode step)
#
# Needs from common.smk: library_code, params_from_config, prov; from sources_common.smk:
# documents_path, model_entry, model_source_record; from capture_common.smk: capture_shard,
# access_outputs.


rule capture:
    """Sampled attention rows and side statistics of one document, validated row by row."""
    input:
        model="resources/models/{model}/config.json",
        source=model_source_record("{model}"),
        documents=lambda wc: documents_path(wc.model, wc.corpus),
        code=library_code(
            "trustmass.capture.prefill",
            "trustmass.capture.shards",
            "trustmass.capture.access",
            "trustmass.kernels",
            "trustmass.sources.attention",
            "trustmass.sources.documents",
            "trustmass.sources.loading",
            "trustmass.plumbing.rule_io",
        ),
    output:
        shard=capture_shard("{model}", "{corpus}", "{doc}"),
        report="results/capture/{model}/{corpus}/{doc}.validation.parquet",
        prov=prov(capture_shard("{model}", "{corpus}", "{doc}")),
        **access_outputs("{model}", "{corpus}", "{doc}"),
    params:
        capture=params_from_config("capture"),
        access=params_from_config("access_law"),
        seed=config["seed"],
        declared=lambda wc: model_entry(wc).get("declared"),
    wildcard_constraints:
        doc="[0-9]{4}",
    log:
        "logs/capture/{model}/{corpus}/{doc}.log",
    # One thread: imports and the model load are serial, so two one-thread captures on 2 cores finish
    # sooner than two two-thread ones in turn (4 SmolLM2 documents: 44 s vs 68 s).  A GPU job or a
    # cluster that wants more: --set-threads capture=N.
    threads: 1
    resources:
        mem_mb=8000,
        runtime=60,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/capture.py"
