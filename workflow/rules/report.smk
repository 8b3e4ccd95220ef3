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
#   results/controls/<arm>/{certify,stats}/..., claims.*: each control arm's copies      <rule>_<arm>
#   results/stats/control_regime.parquet: the attention regime of each control           control_regime
#
# Compute and render are separate rules everywhere: restyling a figure (trustmass.report.style) or a
# table layout reruns its render rule only.  Captions (workflow/report/<name>.rst) quote the
# paper's own sentences from the claims file (params.paper), never typed in.
#
# Needs from common.smk: library_code, params_from_config, prov, STUDY (trustmass.plan), layout, the
# catalog, paper_quotes, statistics_inputs (target lists of the plan), statistics_params.


# ---- every statistics rule of the catalog: records -> frames (one copy per control arm, under results/controls/<arm>/)
for _arm, _study in ARM_STUDIES.items():
    for _stat in STATISTICS if _arm is None else active_statistics(_study):

        rule:
            name:
                arm_rule(_stat.name, _arm)
            input:
                **statistics_inputs(_stat, _study),
                code=library_code(_stat.module, "trustmass.report.statistics", "trustmass.plumbing.rule_io"),
            output:
                **{key: _study.pooled(path) for key, path in _stat.outputs.items()},
                prov=[prov(_study.pooled(p)) for p in _stat.outputs.values()],
            params:
                statistics=_stat.name,  # the catalog entry (the rule's name carries the arm)
                config=config_slice(_study.config, *_stat.config),
                **statistics_params(_stat, _study),
            log:
                arm_log(_stat.name, _arm),
            threads: 1
            resources:
                mem_mb=_stat.mem_mb,
                runtime=_stat.runtime,
            conda:
                "../../envs/trustmass.yaml"
            script:
                "../../scripts/statistics.py"

        workflow.get_rule(arm_rule(_stat.name, _arm)).docstring = _stat.doc


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


# ---- the claims report, once per arm; the trained study's reads the arms' as its control readings ----------
for _arm, _study in ARM_STUDIES.items():
    _claims = {key: _study.pooled(path) for key, path in layout.CLAIMS.items()}

    rule:
        name:
            arm_rule("claims_report", _arm)
        input:
            headline=[_study.pooled(stats_path(f)) for f in active_headline_frames(_study)],
            claims=CLAIMS_FILE,
            controls=[arm.pooled(layout.CLAIMS["json"]) for arm in STUDY.arms().values()] if _arm is None else [],
            regime=[stats_path(CONTROL_REGIME)] if _arm is None and STUDY.arms() else [],
            code=library_code(
                "trustmass.report.claims.report",
                "trustmass.report.claims.markdown",
                "trustmass.report.claims.roles",
                "trustmass.report.claims.controls",
                "trustmass.report.html_page",
                "trustmass.plumbing.rule_io",
            ),
        output:
            html=report(_claims["html"], caption="../report/claims.rst", category="Claims") if _arm is None else _claims["html"],
            md=_claims["md"],
            json=_claims["json"],
            prov=[prov(p) for p in _claims.values()],
        params:
            # the study and what the configuration-set values are computed from (trustmass.report.claims.configured)
            config=config_slice(
                _study.config,
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
                "controls",
            ),
            stages=_study.produced_stages(),
            control_arms=list(STUDY.arms()) if _arm is None else [],
        log:
            arm_log("claims_report", _arm),
        threads: 1
        resources:
            mem_mb=1000,
            runtime=5,
        conda:
            "../../envs/trustmass.yaml"
        script:
            "../../scripts/claims_report.py"

    workflow.get_rule(arm_rule("claims_report", _arm)).docstring = (
        "Paper value, regenerated value with interval, models and verdict for every claim"
        + (", with its readings on the controls." if _arm is None else f" (control arm {_arm}).")
    )


# ---- the regime each control sits in: attention entropy, peak and sink weight of the captured rows ---------
if STUDY.arms():

    rule control_regime:
        """Normalised entropy, max weight and weight on token 0 of the captured rows: trained and each control."""
        input:
            shards=[shard for study in ARM_STUDIES.values() for shard in study.headline_shards()],
            code=library_code("trustmass.capture.regime", "trustmass.plumbing.rule_io"),
        output:
            frame=stats_path(CONTROL_REGIME),
            prov=prov(stats_path(CONTROL_REGIME)),
        params:
            entries=[
                {"arm": arm or "trained", "model": m, "corpus": c, "doc": d}
                for arm, study in ARM_STUDIES.items()
                for m, c, d in study.headline_documents()
            ],
        log:
            layout.log("control_regime"),
        threads: 1
        resources:
            mem_mb=2000,
            runtime=10,
        conda:
            "../../envs/trustmass.yaml"
        script:
            "../../scripts/control_regime.py"
