# Trust the Mass: Forced Weights in KV-Cache Eviction — the paper, regenerated from raw attention.
#
#   snakemake --cores all                      everything below (config.yaml: laptop CPU, minutes)
#   snakemake --cores all bench                one target (any rule name below, or an output path)
#   snakemake --profile profiles/slurm ...     on a SLURM cluster
#
# Each target rule names what it produces; the stages that compute it live in workflow/rules/.
# So far the pipeline has stage 0 (self-check and benchmark).  The ceiling study, figures, tables
# and claims arrive with later stages.

import os

from snakemake.utils import min_version

min_version("9.27")


# The embedded default; `--configfile FILE` merges FILE on top of it.  Resolved next to this
# Snakefile, so `--directory` can point the outputs elsewhere.
configfile: os.path.join(workflow.basedir, "config.yaml")


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/selfcheck.smk"
include: "workflow/rules/sources_common.smk"
include: "workflow/rules/sources.smk"
include: "workflow/rules/capture_common.smk"
include: "workflow/rules/capture.smk"
include: "workflow/rules/ceiling.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/audit.smk"
include: "workflow/rules/certify_common.smk"
include: "workflow/rules/certify.smk"
include: "workflow/rules/claims.smk"


localrules:
    all,
    selfcheck,
    bench,
    captures,
    records,
    worked_examples,
    fig1,
    fig2,
    table1,
    table2,
    table6,
    table8,
    table7,
    sweep,
    claims,
    fig3,
    audit_table,
    certify_manifest,
    certify_table7,


# ---- Stage 0: self-check and benchmarks ---------------------------------------------------------


rule selfcheck:
    """The paper's worked examples recomputed by the library (fails if any disagrees)."""
    input:
        rules.worked_examples.output.json,


rule bench:
    """The exhaustive subset search: subsets per second vs a numpy reference."""
    input:
        rules.bench_enumeration.output.json,


# ---- Stage 1-2: sources and capture -----------------------------------------------------------


rule captures:
    """Every capture shard of the study (study.models x study.corpora x documents), validated."""
    input:
        study_shards(),


rule records:
    """Ceiling records of every captured document of the study."""
    input:
        study_records(),


# ---- Stage 4: figures and tables ------------------------------------------------------------------


rule fig1:
    """Figure 1: the ceiling per model and budget (paper: b9_ceiling_sym.png)."""
    input:
        rules.plot_fig1.output.png,


rule fig2:
    """Figure 2: the map, layer x head (paper: b3_map_sym.png)."""
    input:
        rules.plot_fig2.output.png,


rule table1:
    """Table 1: native budget, balancing share through s = 256."""
    input:
        rules.render_table1.output.csv,
        rules.render_table1.output.md,


rule table2:
    """Table 2: content diversity (prose, code, French)."""
    input:
        rules.render_table2.output.csv,
        rules.render_table2.output.md,


rule table6:
    """Table 6: the panel (AUC, edge/int, rho_depth, rho(Phi, ES_pool), kappa_hat_bal)."""
    input:
        rules.render_table6.output.csv,
        rules.render_table6.output.md,


rule table8:
    """Table 8: per-budget profile."""
    input:
        rules.render_table8.output.csv,
        rules.render_table8.output.md,


rule table7:
    """Table 7: certification substitution (Wilson-95 f_hi, distribution-free median caps)."""
    input:
        rules.certify_table7.output.csv,
        rules.certify_table7.output.md,


rule sweep:
    """The cap-widening sweep at s = 32 (e = 4, 5, 6 extra keys, depth-spanning head subset)."""
    input:
        rules.certify_sweep.output.csv,
        rules.certify_sweep.output.md,


rule fig3:
    """Figure 3: deployed selectors' excess over ES_pool and its predictability (paper: c8_method_headroom.png)."""
    input:
        rules.plot_fig3.output.png,


rule audit_table:
    """The selector audit table (median excess, share above 1.11 ES_pool, AUC, Spearman)."""
    input:
        rules.render_audit_table.output.csv,
        rules.render_audit_table.output.md,


rule claims:
    """Every claim of the paper next to its regenerated value, with a verdict."""
    input:
        rules.claims_report.output.md,
        rules.claims_report.output.json,


# ---- Everything ------------------------------------------------------------------------------------


rule all:
    """Everything the pipeline produces so far."""
    default_target: True
    input:
        rules.selfcheck.input,
        rules.bench.input,
        rules.captures.input,
        rules.records.input,
        rules.fig1.input,
        rules.fig2.input,
        rules.table1.input,
        rules.table2.input,
        rules.table6.input,
        rules.table8.input,
        rules.table7.input,
        rules.sweep.input,
        rules.fig3.input,
        rules.audit_table.input,
        rules.summaries.output.headline,
        rules.claims.input,
