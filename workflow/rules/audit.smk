# Stage 5: the selector audit (spec §5, App C; issue 6).  One job per capture shard scores every
# rule whose contract declares an audit role (trustmass.core.selectors.registry.audit_rules()) on
# every (layer, head, sampled row, budget), per query and cache-faithful, joined row by row to that
# shard's ceiling records; then the statistics, the audit table and Figure 3.
#
#   results/audit/{model}/{corpus}/{doc}.parquet          trustmass.audit.records
#   results/stats/{audit_table,fig3_roc,audit_headline}.parquet   trustmass.report.audit_stats
#   results/figures/fig3_method_headroom.png  (the paper's c8_method_headroom.png)   trustmass.report.figure3
#   results/tables/audit_table.{csv,md}
#
# Needs from common.smk: library_code, params_from_config, prov; from capture_common.smk:
# capture_shard, ceiling_records, study_documents.  Uses report.smk's PAPER-style caption quotes.

from trustmass.report.claims_data import claim as _audit_claim

AUDIT_PAPER = {
    name: [f"claim {i}: " + _audit_claim(i).text.replace("*", "\\*").replace("|", "\\|") for i in ids]
    for name, ids in {"fig3": [48, 105, 106], "audit_table": [48, 49, 50, 51, 105, 106, 107, 109]}.items()
}
AUDIT = "results/audit/{model}/{corpus}/{doc}.parquet"
#: every audit record file of the study (one per capture shard)
STUDY_AUDIT_RECORDS = [AUDIT.format(model=m, corpus=c, doc=d) for m, c, d in study_documents()]


rule audit:
    """Audit records of one captured document: every audited rule's es per query and cache-faithful."""
    input:
        shard=capture_shard("{model}", "{corpus}", "{doc}"),
        records=ceiling_records("{model}", "{corpus}", "{doc}"),
        code=library_code("trustmass.audit.records", "trustmass.plumbing.rule_io"),
    output:
        audit=AUDIT,
        prov=prov(AUDIT),
    params:
        config=params_from_config("budgets", "enumeration", "labels", "capture/windows"),
    wildcard_constraints:
        doc="[0-9]{4}",
    log:
        "logs/audit/{model}/{corpus}/{doc}.log",
    threads: 2
    resources:
        mem_mb=4000,
        runtime=60,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/audit.py"


rule audit_summaries:
    """Audit table, Figure-3 ROC points and the audit claims' headline rows, with intervals."""
    input:
        audit=STUDY_AUDIT_RECORDS,
        models=sorted({f"resources/models/{m}/config.json" for m, _, _ in study_documents()}),
        code=library_code("trustmass.report.audit_stats"),
    output:
        audit_table="results/stats/audit_table.parquet",
        fig3_roc="results/stats/fig3_roc.parquet",
        audit_headline="results/stats/audit_headline.parquet",
        prov=[prov(f"results/stats/{n}.parquet") for n in ("audit_table", "fig3_roc", "audit_headline")],
    params:
        config=params_from_config("seed", "labels", "statistics"),
    log:
        "logs/report/audit_summaries.log",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/audit_summaries.py"


rule plot_fig3:
    """Figure 3: ROC of dropped mass per rule at s = 8 and pooled AUC per model (App C)."""
    input:
        roc=rules.audit_summaries.output.fig3_roc,
        table=rules.audit_summaries.output.audit_table,
        code=library_code("trustmass.report.figure3"),
    output:
        png=report(
            "results/figures/fig3_method_headroom.png",
            caption="../report/fig3.rst",
            category="Figures",
        ),
        prov=prov("results/figures/fig3_method_headroom.png"),
    params:
        paper_file="c8_method_headroom.png",
        paper=AUDIT_PAPER["fig3"],
        config=params_from_config("statistics/figure_population"),
    log:
        "logs/report/fig3.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/audit_figure.py"


rule render_audit_table:
    """The audit table: per (model, rule, budget) median excess, label share, AUC, Spearman, cache-faithful."""
    input:
        table=rules.audit_summaries.output.audit_table,
        code=library_code("trustmass.report.audit_stats"),
    output:
        csv=report(
            "results/tables/audit_table.csv",
            caption="../report/audit_table.rst",
            category="Tables",
        ),
        md="results/tables/audit_table.md",
        prov=prov("results/tables/audit_table.csv"),
        prov_md=prov("results/tables/audit_table.md"),
    params:
        paper=AUDIT_PAPER["audit_table"],
        config=params_from_config("statistics/figure_population"),
    log:
        "logs/report/audit_table.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/audit_figure.py"
