# The reporting layer (trustmass.report): statistics rules turn each stage's records into small
# frames (results/stats/*.parquet); the figure and table rules are *generated* from the catalog
# (trustmass.report.catalog.OUTPUTS: frames -> draw function or table layout -> files, caption
# claims), one `render_<name>` rule each; the claims report reads every headline frame.
#
#   results/stats/{fig1,fig2,table1,table2,table6,table8,headline_ceiling}.parquet   ceiling_statistics
#   results/stats/{audit_table,fig3_roc,headline_audit}.parquet                      audit_statistics
#   results/stats/{table7,headline_certification}.parquet + results/certify/certified.parquet
#   results/stats/{sweep,headline_sweep}.parquet, results/stats/headline_selfcheck.parquet
#   results/stats/{task_contexts,task_map,headline_tasks}.parquet                      task_statistics
#   results/stats/{swap_curves,swap_boundaries,projection,margin_cells,margin_split}.parquet   diagnostics_statistics
#   results/stats/{access_law,access_layers,access_dilution}.parquet                   access_statistics
#   results/figures/*.png, results/tables/*.{html,csv,md}                            render_<name>
#   results/claims.{html,md,json}                                                       claims_report
#
# Compute and render are separate rules everywhere: restyling a figure (trustmass.report.style) or a
# table layout reruns its render rule only.  Captions (workflow/report/<name>.rst) quote the
# paper's own sentences from the claims file (params.paper), never typed in.
#
# Needs from common.smk: library_code, params_from_config, prov, headline_records,
# headline_documents, study_records; from report_common.smk: the catalog, paper_quotes, frames_of,
# STATISTICS_RULES; from audit.smk: AUDIT; from certification_common.smk: CERT,
# certify_shard_outputs; from sources_common.smk: model_source_record.

rule ceiling_statistics:
    """Figures 1-2, Tables 1, 2, 6, 8 and the §2.1-2.3 claims, with intervals, from the ceiling records."""
    input:
        records=study_records(),
        code=library_code(STATISTICS_RULES["ceiling_statistics"].module, "trustmass.plumbing.rule_io"),
    output:
        **frames_of("ceiling_statistics"),
    params:
        config=params_from_config(*STATISTICS_CONFIG),
        content={name: (entry or {}).get("content") for name, entry in config["corpora"].items()},
    log:
        "logs/report/ceiling_statistics.log",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/ceiling_statistics.py"


rule audit_statistics:
    """The audit table, Figure 3's ROC points and the audit claims, from the audit records."""
    input:
        audit=[AUDIT.format(model=m, corpus=c, doc=d) for m, c, d in headline_documents()],
        sources=sorted({model_source_record(m) for m, _, _ in headline_documents()}),
        code=library_code(STATISTICS_RULES["audit_statistics"].module, "trustmass.plumbing.rule_io"),
    output:
        **frames_of("audit_statistics"),
    params:
        config=params_from_config(*STATISTICS_CONFIG),
    log:
        "logs/report/audit_statistics.log",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/audit_statistics.py"


rule certification_statistics:
    """Substitution, Table 7 and the certification claims, from the manifest, its certification and the records."""
    input:
        manifest=f"{CERT}/manifest.parquet",
        certified=certify_shard_outputs(),
        records=headline_records(),
        code=library_code(STATISTICS_RULES["certification_statistics"].module, "trustmass.plumbing.rule_io"),
    output:
        joined=f"{CERT}/certified.parquet",
        **frames_of("certification_statistics"),
    params:
        config=params_from_config(*STATISTICS_CONFIG, "budgets/enumerated"),
    log:
        "logs/report/certification_statistics.log",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=10,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/certification_statistics.py"


rule sweep_statistics:
    """The cap-widening sweep's table and claims, from the sweep rows."""
    input:
        rows=f"{CERT}/sweep_rows.parquet",
        code=library_code(STATISTICS_RULES["sweep_statistics"].module, "trustmass.plumbing.rule_io"),
    output:
        **frames_of("sweep_statistics"),
    params:
        config=params_from_config(*STATISTICS_CONFIG, "certification/sweep/budget"),
    log:
        "logs/report/sweep_statistics.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/sweep_statistics.py"


rule loss_statistics:
    """Figure 4, the loss table, the probe, curvature and the loss claims, from the held-out documents'
    token NLLs and per-cell frames."""
    input:
        tokens=loss_outputs(),
        allocation=allocation_outputs(),
        probe=[f"results/loss/{m}/probe_recall.parquet" for m in probe_models()],
        curvature=curvature_outputs(),
        cells=cells_outputs(),
        code=library_code(STATISTICS_RULES["loss_statistics"].module, "trustmass.plumbing.rule_io"),
    output:
        **frames_of("loss_statistics"),
    params:
        config=params_from_config(*STATISTICS_CONFIG, "loss/rules"),
    log:
        "logs/report/loss_statistics.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/loss_statistics.py"


rule deploy_statistics:
    """Tables 3-5, the bytes table, timing and the deployment claims, from the deployment rows and the replay."""
    input:
        rows=deploy_outputs(),
        replay=replay_outputs(),
        code=library_code(STATISTICS_RULES["deploy_statistics"].module, "trustmass.plumbing.rule_io"),
    output:
        **frames_of("deploy_statistics"),
    params:
        config=params_from_config(*STATISTICS_CONFIG),
    log:
        "logs/report/deploy_statistics.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/deploy_statistics.py"


rule task_statistics:
    """Claims 42-47 from the task contexts' ceiling records, their manifests and the headline corpus's map."""
    input:
        records=task_records(),
        prose=headline_records(),
        manifests=task_manifests(),
        code=library_code(STATISTICS_RULES["task_statistics"].module, "trustmass.plumbing.rule_io"),
    output:
        **frames_of("task_statistics"),
    params:
        config=params_from_config(*STATISTICS_CONFIG, "task_contexts"),
    log:
        "logs/report/task_statistics.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/task_statistics.py"


rule diagnostics_statistics:
    """The swap curves (es, held-out CE, next-token KL), swap-improving boundaries and the margin split,
    from the swap rows of the headline documents and the diagnostics forward of the held-out ones."""
    input:
        rows=[SWAP_ROWS.format(model=m, corpus=c, doc=d) for m, c, d in headline_documents()],
        projection=[PROJECTION_ROWS.format(model=m, corpus=c, doc=d) for m, c, d in headline_documents()],
        forward=diagnostics_outputs(),
        code=library_code(STATISTICS_RULES["diagnostics_statistics"].module, "trustmass.plumbing.rule_io"),
    output:
        **frames_of("diagnostics_statistics"),
    params:
        config=params_from_config(*STATISTICS_CONFIG, "diagnostics"),
        content={name: (entry or {}).get("content") for name, entry in config["corpora"].items()},
    log:
        "logs/report/diagnostics_statistics.log",
    threads: 1
    resources:
        mem_mb=3000,
        runtime=10,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/diagnostics_statistics.py"


rule access_statistics:
    """The access-law distances and head-sum dilution, from the access records of every captured document."""
    input:
        access=study_access_records(),
        code=library_code(STATISTICS_RULES["access_statistics"].module, "trustmass.plumbing.rule_io"),
    output:
        **frames_of("access_statistics"),
    params:
        config=params_from_config(*STATISTICS_CONFIG, "access_law"),
    log:
        "logs/report/access_statistics.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/access_statistics.py"


rule selfcheck_statistics:
    """The theory claims (worked examples, EF bound, reduction gap), from the self-check."""
    input:
        worked="results/selfcheck/worked_examples.json",
        code=library_code(STATISTICS_RULES["selfcheck_statistics"].module, "trustmass.plumbing.rule_io"),
    output:
        **frames_of("selfcheck_statistics"),
    params:
        config=params_from_config("seed"),
    log:
        "logs/report/selfcheck_statistics.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/selfcheck_statistics.py"


rule gpu_statistics:
    """The paper's hardware claims (40, 102, 103, 115) from the committed GPU check (make gpu-check)."""
    input:
        check=os.path.join(workflow.basedir, GPU_CHECK),
        code=library_code(STATISTICS_RULES["gpu_statistics"].module, "trustmass.plumbing.rule_io"),
    output:
        **frames_of("gpu_statistics"),
    params:
        config=params_from_config("seed"),
    log:
        "logs/report/gpu_statistics.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/gpu_statistics.py"


# ---- every figure and table of the catalog: frames -> files ---------------------------------------
for _out in OUTPUTS:

    rule:
        name:
            f"render_{_out.name}"
        message:
            _out.title
        input:
            frames=[stats_path(f) for f in _out.frames],
            code=library_code("trustmass.report.render", _out.module, "trustmass.plumbing.rule_io"),
        output:
            **{
                key: (report(path, caption=_out.caption_file, category=_out.category) if i == 0 else path)
                for i, (key, path) in enumerate(_out.files.items())
            },
            prov=[prov(p) for p in _out.files.values()],
        params:
            output=_out.name,
            title=_out.title,
            paper=paper_quotes(_out.claims),
            paper_file=_out.paper_file,
            config=params_from_config(*_out.config),
        log:
            f"logs/report/{_out.name}.log",
        threads: 1
        resources:
            mem_mb=2000,
            runtime=10,
        conda:
            "../../envs/trustmass.yaml"
        script:
            "../../scripts/render.py"


rule claims_report:
    """Paper value, regenerated value with interval, models and verdict for every claim."""
    input:
        headline=[stats_path(f) for f in ACTIVE_HEADLINE_FRAMES],
        claims=CLAIMS_FILE,
        code=library_code("trustmass.report.claims.report", "trustmass.report.claims.roles", "trustmass.plumbing.rule_io"),
    output:
        html=report("results/claims.html", caption="../report/claims.rst", category="Claims"),
        md="results/claims.md",
        json="results/claims.json",
        prov=[prov("results/claims.html"), prov("results/claims.md"), prov("results/claims.json")],
    params:
        # the study and what the configuration-set values are computed from (trustmass.report.claims.configured)
        config=params_from_config("study", "models", "budgets", "documents", "capture", "certification", "loss", "deploy", "corpora"),
        stages=PRODUCED_STAGES,
    log:
        "logs/report/claims_report.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/claims_report.py"
