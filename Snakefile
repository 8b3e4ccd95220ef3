# Trust the Mass: Forced Weights in KV-Cache Eviction — the paper, regenerated from raw attention.
#
#   snakemake --cores all                      everything (rule all; config.yaml: laptop CPU, minutes)
#   snakemake --cores all fig1                 one target (a name below, or an output path)
#   snakemake --list-target-rules              every rule you can name
#   snakemake --profile profiles/slurm ...     on a SLURM cluster
#
# Named targets: one per figure and table of the catalog (trustmass.report.catalog.OUTPUTS, generated
# below: fig1-fig4, table1-table8, sweep, audit_table, the loss, task, diagnostics, access and
# deployment tables, ...), and the stage targets written here: selfcheck, bench, captures, records,
# tasks, loss, deploy, claims, controls, all.  README.md, "Using the workflow", lists each with what it builds.
#
# The stages hand data over by files, each in its own rules file (and library package):
#   sources -> capture -> ceiling -> {certification, audit, loss}; sources -> tasks -> capture -> ceiling;
#   sources -> deploy; all of them -> report (statistics, figures, tables, claims); selfcheck stands
#   alone.  docs/stages.md describes each.

import os

from snakemake.utils import min_version

min_version("9.27")


# The embedded default; `--configfile FILE` merges FILE on top of it.  Resolved next to this
# Snakefile, so `--directory` can point the outputs elsewhere.
configfile: os.path.join(workflow.basedir, "config.yaml")


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/selfcheck.smk"
include: "workflow/rules/sources.smk"
include: "workflow/rules/capture.smk"
include: "workflow/rules/ceiling.smk"
include: "workflow/rules/certification.smk"
include: "workflow/rules/audit.smk"
include: "workflow/rules/loss.smk"
include: "workflow/rules/deploy.smk"
include: "workflow/rules/tasks.smk"
include: "workflow/rules/report.smk"


# ---- the paper's figures and tables: one named target per catalog entry (Output.name) ------------
for _out in OUTPUTS:

    rule:
        name:
            _out.name
        message:
            _out.title
        input:
            getattr(rules, f"render_{_out.name}").output,
        localrule: True


localrules:
    all,
    selfcheck,
    bench,
    captures,
    records,
    tasks,
    loss,
    deploy,
    claims,
    controls,
    certify_manifest,


# ---- stage 0: self-check and benchmarks ----------------------------------------------------------


rule selfcheck:
    """The paper's worked examples recomputed by the library (fails if any disagrees)."""
    input:
        rules.worked_examples.output.json,


rule bench:
    """The exhaustive subset search: subsets per second vs a numpy reference."""
    input:
        rules.bench_enumeration.output.json,


# ---- stages 1-3: sources, capture, ceiling records -----------------------------------------------


rule captures:
    """Every capture shard of the study (study.models x study.corpora x documents), validated."""
    input:
        STUDY.study_shards(),


rule records:
    """Ceiling records of every captured document of the study."""
    input:
        STUDY.study_records(),


rule tasks:
    """The task contexts' ceiling records and the statistics of claims 42-47 (spec §2.7)."""
    input:
        STUDY.task_records(),
        [layout.stats_path(f) for f in STATISTICS_RULES["task_statistics"].frames] if STUDY.task_models() else [],


rule loss:
    """The held-out loss of every configuration on every held-out document (Figure 4's inputs)."""
    input:
        STUDY.loss_outputs(),


rule deploy:
    """Every deployment condition's rows and the byte replay (Tables 3-5's inputs)."""
    input:
        STUDY.deploy_outputs(),
        STUDY.replay_outputs(),


# ---- the claims ----------------------------------------------------------------------------------


rule claims:
    """Every claim of the paper next to its regenerated value, with a verdict."""
    input:
        rules.claims_report.output.md,
        rules.claims_report.output.json,


rule controls:
    """Every control arm's claims (the sanity checks, trustmass.plan.controls) and the regime each sits in."""
    input:
        [study.pooled(layout.CLAIMS["json"]) for study in STUDY.arms().values()],
        rules.control_regime.output.frame if STUDY.arms() else [],


# ---- everything ----------------------------------------------------------------------------------


rule all:
    """Everything the pipeline produces so far."""
    default_target: True
    input:
        rules.selfcheck.input,
        rules.bench.input,
        rules.captures.input,
        rules.records.input,
        [getattr(rules, out.name).input for out in ACTIVE_OUTPUTS],
        rules.claims.input,
