# Stage 2: capture.  One prefill per (model, document) with the capture attention function: the
# sampled rows' exact probabilities, keys, values, queries, the model's own head outputs, H2O
# column mass and SnapKV window sums, every row validated against the model's own output.
#
#   layout.CAPTURE_SHARD        results/capture/{model}/{corpus}/{doc}.safetensors (bit-reproducible)
#   layout.CAPTURE_VALIDATION   per-row deviations
#   layout.ACCESS_RECORDS       access-law records (access_law.enabled; the same prefill plus one decode step)


rule capture:
    """Sampled attention rows and side statistics of one document, validated row by row."""
    input:
        model=layout.MODEL_CONFIG,
        source=layout.MODEL_SOURCE,
        documents=layout.DOCUMENTS,
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
        shard=layout.CAPTURE_SHARD,
        report=layout.CAPTURE_VALIDATION,
        prov=[prov(layout.CAPTURE_SHARD), prov(layout.CAPTURE_VALIDATION)],
        **({"access": layout.ACCESS_RECORDS, "access_prov": prov(layout.ACCESS_RECORDS)} if STUDY.access_enabled() else {}),
    params:
        capture=params_of_model("capture"),
        access=params_of_model("access_law"),
        seed=config["seed"],
        declared=lambda wc: STUDY.of(wc.model).entry("models", wc.model, "model").get("declared"),
    wildcard_constraints:
        doc="[0-9]{4}",
    log:
        layout.log("capture"),
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
