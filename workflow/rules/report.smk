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
# Paths and input lists: trustmass.plan (layout, STUDY); the catalog, paper_quotes, frames_of and
# STATISTICS_RULES: report_common.smk.

rule ceiling_statistics:
    """Figures 1-2, Tables 1, 2, 6, 8 and the §2.1-2.3 claims, with intervals, from the ceiling records."""
    input:
        records=STUDY.study_records(),
        code=library_code(STATISTICS_RULES["ceiling_statistics"].module, "trustmass.plumbing.rule_io"),
    output:
        **frames_of("ceiling_statistics"),
    params:
        config=params_from_config(*STATISTICS_CONFIG),
        content={name: (entry or {}).get("content") for name, entry in config["corpora"].items()},
    log:
        layout.log("ceiling_statistics"),
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
        audit=STUDY.audit_records(),
        sources=STUDY.headline_sources(),
        code=library_code(STATISTICS_RULES["audit_statistics"].module, "trustmass.plumbing.rule_io"),
    output:
        **frames_of("audit_statistics"),
    params:
        config=params_from_config(*STATISTICS_CONFIG),
    log:
        layout.log("audit_statistics"),
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
        manifest=layout.CERTIFY_MANIFEST,
        certified=STUDY.certify_shards(),
        records=STUDY.headline_records(),
        code=library_code(STATISTICS_RULES["certification_statistics"].module, "trustmass.plumbing.rule_io"),
    output:
        joined=layout.CERTIFIED,
        **frames_of("certification_statistics"),
    params:
        config=params_from_config(*STATISTICS_CONFIG, "budgets/enumerated"),
    log:
        layout.log("certification_statistics"),
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
        rows=layout.SWEEP_ROWS,
        code=library_code(STATISTICS_RULES["sweep_statistics"].module, "trustmass.plumbing.rule_io"),
    output:
        **frames_of("sweep_statistics"),
    params:
        config=params_from_config(*STATISTICS_CONFIG, "certification/sweep/budget"),
    log:
        layout.log("sweep_statistics"),
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
        tokens=STUDY.loss_outputs(),
        allocation=STUDY.allocation_outputs(),
        probe=STUDY.probe_recalls(),
        curvature=STUDY.curvature_outputs(),
        cells=STUDY.cells_outputs(),
        code=library_code(STATISTICS_RULES["loss_statistics"].module, "trustmass.plumbing.rule_io"),
    output:
        **frames_of("loss_statistics"),
    params:
        config=params_from_config(*STATISTICS_CONFIG, "loss/rules"),
    log:
        layout.log("loss_statistics"),
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
        rows=STUDY.deploy_outputs(),
        replay=STUDY.replay_outputs(),
        code=library_code(STATISTICS_RULES["deploy_statistics"].module, "trustmass.plumbing.rule_io"),
    output:
        **frames_of("deploy_statistics"),
    params:
        config=params_from_config(*STATISTICS_CONFIG),
    log:
        layout.log("deploy_statistics"),
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
        records=STUDY.task_records(),
        prose=STUDY.headline_records(),
        manifests=STUDY.task_manifests(),
        code=library_code(STATISTICS_RULES["task_statistics"].module, "trustmass.plumbing.rule_io"),
    output:
        **frames_of("task_statistics"),
    params:
        config=params_from_config(*STATISTICS_CONFIG, "task_contexts"),
    log:
        layout.log("task_statistics"),
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
        rows=STUDY.swap_rows(),
        projection=STUDY.projection_rows(),
        forward=STUDY.diagnostics_outputs(),
        code=library_code(STATISTICS_RULES["diagnostics_statistics"].module, "trustmass.plumbing.rule_io"),
    output:
        **frames_of("diagnostics_statistics"),
    params:
        config=params_from_config(*STATISTICS_CONFIG, "diagnostics"),
        content={name: (entry or {}).get("content") for name, entry in config["corpora"].items()},
    log:
        layout.log("diagnostics_statistics"),
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
        access=STUDY.study_access_records(),
        code=library_code(STATISTICS_RULES["access_statistics"].module, "trustmass.plumbing.rule_io"),
    output:
        **frames_of("access_statistics"),
    params:
        config=params_from_config(*STATISTICS_CONFIG, "access_law"),
    log:
        layout.log("access_statistics"),
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
        worked=layout.WORKED_EXAMPLES,
        code=library_code(STATISTICS_RULES["selfcheck_statistics"].module, "trustmass.plumbing.rule_io"),
    output:
        **frames_of("selfcheck_statistics"),
    params:
        config=params_from_config("seed"),
    log:
        layout.log("selfcheck_statistics"),
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
        layout.log("gpu_statistics"),
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
            layout.log(_out.name),
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
        html=report(layout.CLAIMS["html"], caption="../report/claims.rst", category="Claims"),
        md=layout.CLAIMS["md"],
        json=layout.CLAIMS["json"],
        prov=[prov(p) for p in layout.CLAIMS.values()],
    params:
        # the study and what the configuration-set values are computed from (trustmass.report.claims.configured)
        config=params_from_config("study", "models", "budgets", "documents", "capture", "certification", "loss", "deploy", "corpora"),
        stages=PRODUCED_STAGES,
    log:
        layout.log("claims_report"),
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/claims_report.py"
