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
# Needs from common.smk: library_code, params_from_config, prov, STUDY (trustmass.plan), layout; from
# below: the catalog, paper_quotes, statistics_inputs (target lists of the plan), statistics_params.


import importlib.resources
import os

from trustmass.report.catalog import HEADLINE_FRAMES, OUTPUTS, STATISTICS, stats_path
from trustmass.report.claims.data import claim as _claim

CLAIMS_FILE = os.path.relpath(str(importlib.resources.files("trustmass").joinpath("data", "claims.yaml")))
#: stages whose results this workflow produces (the rest are "not produced yet")
PRODUCED_STAGES = STUDY.produced_stages()
STATISTICS_RULES = {r.name: r for r in STATISTICS}


def paper_quotes(ids):
    """The paper's claim texts for a caption (RST-escaped)."""
    escape = str.maketrans({"*": "\\*", "|": "\\|"})
    return [f"claim {i}: {_claim(i).text.translate(escape)}" for i in ids]


def repository_file(path):
    """A file of this checkout (the claims file, a committed GPU check) as an input relative to the working
    directory, so that a moved or copied checkout reruns nothing."""
    return os.path.relpath(os.path.join(workflow.basedir, path))


def statistics_inputs(entry):
    """The input path lists of a statistics rule: each name its catalog entry gives is a target list of the
    study plan (trustmass.plan.Study), or ``repo:<path>``, a file of this checkout."""
    unknown = sorted(k for k in entry.inputs.values() if not k.startswith("repo:") and not callable(getattr(STUDY, k, None)))
    if unknown:
        raise ValueError(f"{entry.name}: unknown input lists {unknown} in its catalog entry; fix: name a method of "
                         "trustmass.plan.Study (or add one there)")
    return {name: repository_file(key.removeprefix("repo:")) if key.startswith("repo:") else getattr(STUDY, key)()
            for name, key in entry.inputs.items()}


def statistics_params(entry):
    """The workflow values a statistics rule takes besides its config slice (the entry's ``params``)."""
    values = {"content": STUDY.corpus_contents}
    return {name: values[name]() for name in entry.params}


#: the statistics rules of stages switched off, their frames, and the outputs and claims that remain
_OFF_RULES = {r.name for r in STATISTICS if not STUDY.statistics_enabled(r, workflow.basedir)}
_OFF_FRAMES = {f for r in STATISTICS if r.name in _OFF_RULES for f in r.frames}
ACTIVE_OUTPUTS = [o for o in OUTPUTS if not set(o.frames) & _OFF_FRAMES]
ACTIVE_HEADLINE_FRAMES = [f for f in HEADLINE_FRAMES if f not in _OFF_FRAMES]


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
