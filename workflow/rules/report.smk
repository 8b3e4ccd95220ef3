# Stage 4: statistics, figures and tables.  Compute and plot are separate rules: `summaries` reads
# every ceiling record of the study once and writes small tidy frames (bootstraps included); each
# figure and table rule reads only its own frame and its own library module, so restyling a plot
# (trustmass.report.figures.STYLE) or a table (trustmass.report.tables) reruns that rule alone.
#
#   results/stats/{fig1,fig2,table1,table2,table6,table8,headline}.parquet   trustmass.report.ceiling_stats
#   results/figures/fig1_ceiling.png   (the paper's b9_ceiling_sym.png)     trustmass.report.figures
#   results/figures/fig2_map.png       (the paper's b3_map_sym.png)
#   results/tables/table{1_native,2_content,6_panel,8_profile}.{csv,md}     trustmass.report.tables
#
# Captions (workflow/report/*.rst) quote the paper's own sentences from the claims file, passed as
# params.paper (never typed in the captions).
#
# Needs from common.smk: library_code, params_from_config, prov; from capture_common.smk:
# study_records.

from trustmass.report.claims_data import claim as _claim

# the paper's sentences quoted in each caption (RST-escaped)
PAPER = {
    name: [f"claim {i}: " + _claim(i).text.replace("*", "\\*").replace("|", "\\|") for i in ids]
    for name, ids in {
        "fig1": [2, 24, 25, 28],
        "fig2": [34],
        "table1": [31, 32, 33, 96],
        "table2": [41],
        "table6": [28, 35, 38, 39, 83],
        "table8": [11, 12, 13, 22, 23, 27, 38, 88],
    }.items()
}
STATS = "results/stats"


rule summaries:
    """Every statistic behind Figures 1-2, Tables 1, 2, 6, 8 and the §2.1-2.3 claims, with intervals."""
    input:
        records=study_records(),
        code=library_code("trustmass.report.ceiling_stats"),
    output:
        fig1=f"{STATS}/fig1.parquet",
        fig2=f"{STATS}/fig2.parquet",
        table1=f"{STATS}/table1.parquet",
        table2=f"{STATS}/table2.parquet",
        table6=f"{STATS}/table6.parquet",
        table8=f"{STATS}/table8.parquet",
        headline=f"{STATS}/headline.parquet",
        prov=[prov(f"{STATS}/{name}.parquet") for name in ("fig1", "fig2", "table1", "table2", "table6", "table8", "headline")],
    params:
        names=["fig1", "fig2", "table1", "table2", "table6", "table8", "headline"],
        config=params_from_config("seed", "labels", "statistics"),
    log:
        "logs/report/summaries.log",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/summaries.py"


rule plot_fig1:
    """Figure 1: the ceiling per model and budget (block, closable cap, balancing mark, whiskers)."""
    input:
        summary=rules.summaries.output.fig1,
        code=library_code("trustmass.report.figures"),
    output:
        png=report(
            "results/figures/fig1_ceiling.png",
            caption="../report/fig1.rst",
            category="Figures",
        ),
        prov=prov("results/figures/fig1_ceiling.png"),
    params:
        figure="fig1",
        paper_file="b9_ceiling_sym.png",
        paper=PAPER["fig1"],
        config=params_from_config("statistics/figure_population"),
    log:
        "logs/report/fig1.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/figure.py"


rule plot_fig2:
    """Figure 2: the map, layer x head heatmaps of median dropped mass and median kappa_hat."""
    input:
        summary=rules.summaries.output.fig2,
        code=library_code("trustmass.report.figures"),
    output:
        png=report(
            "results/figures/fig2_map.png",
            caption="../report/fig2.rst",
            category="Figures",
        ),
        prov=prov("results/figures/fig2_map.png"),
    params:
        figure="fig2",
        paper_file="b3_map_sym.png",
        paper=PAPER["fig2"],
        config=params_from_config("statistics/figure_population"),
    log:
        "logs/report/fig2.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/figure.py"


rule render_table1:
    """Table 1: balancing share through the native budgets, and the remaining 2·D·m̄_s share."""
    input:
        summary=rules.summaries.output.table1,
        code=library_code("trustmass.report.tables"),
    output:
        csv=report(
            "results/tables/table1_native.csv",
            caption="../report/table1.rst",
            category="Tables",
        ),
        md="results/tables/table1_native.md",
        prov=prov("results/tables/table1_native.csv"),
        prov_md=prov("results/tables/table1_native.md"),
    params:
        table="table1",
        paper=PAPER["table1"],
        config=params_from_config("labels/kappa_threshold"),
    log:
        "logs/report/table1.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/table.py"


rule render_table2:
    """Table 2: label share, AUC and median kappa_hat per corpus (prose, code, French)."""
    input:
        summary=rules.summaries.output.table2,
        code=library_code("trustmass.report.tables"),
    output:
        csv=report(
            "results/tables/table2_content.csv",
            caption="../report/table2.rst",
            category="Tables",
        ),
        md="results/tables/table2_content.md",
        prov=prov("results/tables/table2_content.csv"),
        prov_md=prov("results/tables/table2_content.md"),
    params:
        table="table2",
        paper=PAPER["table2"],
        config=params_from_config("labels/kappa_threshold"),
    log:
        "logs/report/table2.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/table.py"


rule render_table6:
    """Table 6: the panel (AUC at s = 8, edge/int, rho_depth, rho(Phi, ES_pool), kappa_hat_bal)."""
    input:
        summary=rules.summaries.output.table6,
        code=library_code("trustmass.report.tables"),
    output:
        csv=report(
            "results/tables/table6_panel.csv",
            caption="../report/table6.rst",
            category="Tables",
        ),
        md="results/tables/table6_panel.md",
        prov=prov("results/tables/table6_panel.csv"),
        prov_md=prov("results/tables/table6_panel.md"),
    params:
        table="table6",
        paper=PAPER["table6"],
        config=params_from_config("labels/kappa_threshold"),
    log:
        "logs/report/table6.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/table.py"


rule render_table8:
    """Table 8: the per-budget profile (kappa_hat, pi_hat, geometric/leverage ratios, group vote)."""
    input:
        summary=rules.summaries.output.table8,
        code=library_code("trustmass.report.tables"),
    output:
        csv=report(
            "results/tables/table8_profile.csv",
            caption="../report/table8.rst",
            category="Tables",
        ),
        md="results/tables/table8_profile.md",
        prov=prov("results/tables/table8_profile.csv"),
        prov_md=prov("results/tables/table8_profile.md"),
    params:
        table="table8",
        paper=PAPER["table8"],
        config=params_from_config("labels/kappa_threshold"),
    log:
        "logs/report/table8.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/table.py"
