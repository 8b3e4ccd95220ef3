# The reporting layer (trustmass.report): statistics rules turn each stage's records into small
# frames (results/stats/*.parquet), the figure and table rules draw them; both are *generated* from
# the catalog (trustmass.report.catalog.STATISTICS: named inputs -> statistics function -> frames,
# one rule each, all run by scripts/statistics.py; OUTPUTS: frames -> draw function or table layout
# -> files, caption claims, one `render_<name>` rule each); the claims report reads every headline frame.
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
# Needs from common.smk: library_code, params_from_config, prov, STUDY (trustmass.plan), layout, the
# catalog, paper_quotes, statistics_inputs (target lists of the plan), statistics_params.


# ---- every statistics rule of the catalog: records -> frames ----------------------------------------
for _stat in STATISTICS:

    rule:
        name:
            _stat.name
        input:
            **statistics_inputs(_stat),
            code=library_code(_stat.module, "trustmass.report.statistics", "trustmass.plumbing.rule_io"),
        output:
            **_stat.outputs,
            prov=[prov(p) for p in _stat.outputs.values()],
        params:
            config=params_from_config(*_stat.config),
            **statistics_params(_stat),
        log:
            layout.log(_stat.name),
        threads: 1
        resources:
            mem_mb=_stat.mem_mb,
            runtime=_stat.runtime,
        conda:
            "../../envs/trustmass.yaml"
        script:
            "../../scripts/statistics.py"

    workflow.get_rule(_stat.name).docstring = _stat.doc


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
        code=library_code(
            "trustmass.report.claims.report",
            "trustmass.report.claims.markdown",
            "trustmass.report.claims.roles",
            "trustmass.plumbing.rule_io",
        ),
    output:
        html=report(layout.CLAIMS["html"], caption="../report/claims.rst", category="Claims"),
        md=layout.CLAIMS["md"],
        json=layout.CLAIMS["json"],
        prov=[prov(p) for p in layout.CLAIMS.values()],
    params:
        # the study and what the configuration-set values are computed from (trustmass.report.claims.configured)
        config=params_from_config(
            "study",
            "models",
            "budgets",
            "documents",
            "capture",
            "certification",
            "loss",
            "deploy",
            "corpora",
            "task_contexts",
            "statistics",
        ),
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
