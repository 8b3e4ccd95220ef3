"""The map from every figure and table of the study to what makes it: its statistics frames, its draw
function or table layout, its files, its caption and the paper's claims quoted there.

The workflow's render rules and named targets are generated from :data:`OUTPUTS`
(``workflow/rules/report.smk``), and the statistics rules write the frames named in
:data:`STATISTICS`; nothing about a figure is written twice.  To add a figure: a statistics function
that writes its frame (``trustmass.report.frames``), a draw function (``trustmass.report.figures``)
and one :class:`Output` here (README, "Extending"); a caption file is optional.

This module is deliberately light (strings only, no plotting or statistics imports), so that every
rule may read it without depending on the code that draws.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from trustmass.plan.layout import STATS_DIR, stats_path  # re-exported: where the catalog's frames live

__all__ = ["HEADLINE_FRAMES", "OUTPUTS", "STATISTICS", "STATS_DIR", "Output", "PaperValue", "StatisticsRule", "output", "stats_path"]



@dataclass(frozen=True)
class StatisticsRule:
    """A rule that turns a stage's records into statistics frames (the compute half of a figure)."""

    name: str
    module: str  # the library module whose functions compute the frames
    frames: tuple[str, ...]  # results/stats/<frame>.parquet, headline frames included
    doc: str


@dataclass(frozen=True)
class PaperValue:
    """A number of the paper a drawing shows for comparison (read from the claims file, never typed)."""

    claim: int
    value: str
    by: tuple[str, str] | None = None  # (dimension, key) of a per-group entry


@dataclass(frozen=True)
class Output:
    """One figure or table: frames in, files out."""

    name: str  # the named target (``snakemake fig1``)
    kind: str  # "figure" | "table"
    title: str
    frames: tuple[str, ...]  # statistics frames, in the order the draw function takes them
    draw: str  # figures: "module:function"; tables: a layout name of trustmass.report.table_layouts
    path: str  # the PNG, or the CSV (the Markdown sits beside it)
    caption: str | None  # workflow/report/<caption>.rst; None: the generic caption (title and claims)
    claims: tuple[int, ...]  # the paper's sentences quoted in the caption
    paper_file: str | None = None  # the paper's own figure file
    paper_values: Mapping[str, PaperValue] = field(default_factory=dict)  # extra keyword arguments of the draw function
    config: tuple[str, ...] = ("statistics/figure_population", "labels/kappa_threshold")

    @property
    def module(self) -> str:
        return self.draw.split(":")[0] if self.kind == "figure" else "trustmass.report.table_layouts"

    @property
    def files(self) -> dict[str, str]:
        if self.kind == "figure":
            return {"png": self.path}
        stem = self.path.removesuffix(".csv")
        return {"html": stem + ".html", "csv": self.path, "md": stem + ".md"}  # the report shows the first

    @property
    def caption_file(self) -> str:
        """The caption, relative to workflow/rules/ (as ``report(..., caption=...)`` reads it)."""
        return f"../report/{self.caption or 'generic'}.rst"

    @property
    def category(self) -> str:
        return "Figures" if self.kind == "figure" else "Tables"


STATISTICS: tuple[StatisticsRule, ...] = (
    StatisticsRule("ceiling_statistics", "trustmass.report.frames.ceiling_claims",
                   ("fig1", "fig2", "table1", "table2", "table6", "table8", "headline_ceiling"),
                   "Figures 1-2, Tables 1, 2, 6, 8 and the §2.1-2.3 claims, with intervals, from the ceiling records"),
    StatisticsRule("audit_statistics", "trustmass.report.frames.audit", ("audit_table", "fig3_roc", "headline_audit"),
                   "The audit table, Figure 3's ROC points and the audit claims, from the audit records"),
    StatisticsRule("certification_statistics", "trustmass.report.frames.certification", ("table7", "headline_certification"),
                   "Substitution, Table 7 and the certification claims, from the manifest, its certification and the records"),
    StatisticsRule("sweep_statistics", "trustmass.report.frames.certification", ("sweep", "headline_sweep"),
                   "The cap-widening sweep's table and claims, from the sweep rows"),
    StatisticsRule("loss_statistics", "trustmass.report.frames.loss",
                   ("loss_table", "allocation", "probe", "curvature", "headline_loss"),
                   "Figure 4, the loss table, the allocation panel, the probe, curvature and the loss claims, from the "
                   "held-out NLLs, per-cell frames and the panels"),
    StatisticsRule("deploy_statistics", "trustmass.report.frames.deploy_claims",
                   ("table3", "table4", "table5", "deploy_bytes", "deploy_timing", "headline_deploy"),
                   "Tables 3-5, the bytes table, timing and the deployment claims, from the deployment rows and the replay"),
    StatisticsRule("task_statistics", "trustmass.report.frames.tasks", ("task_contexts", "task_map", "headline_tasks"),
                   "The task-context claims 42-47 (retrieval vs background rows, the map on task contexts), from the task "
                   "corpus's ceiling records and manifests"),
    StatisticsRule("diagnostics_statistics", "trustmass.report.frames.diagnostics",
                   ("swap_curves", "swap_boundaries", "projection", "margin_cells", "margin_split"),
                   "The fixed-contract diagnostics: boundary-swap curves against random swaps (es, held-out CE, next-token "
                   "KL), swap-improving boundaries and the signed reference margin split"),
    StatisticsRule("access_statistics", "trustmass.report.frames.access", ("access_law", "access_layers", "access_dilution"),
                   "The access-law distances (TV of p_T, tail means, the full mixture and count-debiased C to p*) and "
                   "head-sum dilution on the task contexts, from the access records of every captured document"),
    StatisticsRule("selfcheck_statistics", "trustmass.report.frames.selfcheck", ("headline_selfcheck",),
                   "The theory claims (worked examples, EF bound, reduction gap), from the self-check"),
    StatisticsRule("gpu_statistics", "trustmass.report.frames.gpu", ("headline_gpu",),
                   "The paper's hardware claims (40, 102, 103, 115) from the committed GPU check, when one is committed"),
)  # fmt: skip

#: every headline frame the claims report reads
HEADLINE_FRAMES = tuple(f for rule in STATISTICS for f in rule.frames if f.startswith("headline_"))

_FIGURES = "results/figures"
_TABLES = "results/tables"

OUTPUTS: tuple[Output, ...] = (
    Output("fig1", "figure", "Figure 1: the ceiling per model and budget", ("fig1",), "trustmass.report.figures:figure1",
           f"{_FIGURES}/fig1_ceiling.png", "fig1", (2, 24, 25, 28), "b9_ceiling_sym.png"),
    Output("fig2", "figure", "Figure 2: the map, layer x head", ("fig2",), "trustmass.report.figures:figure2",
           f"{_FIGURES}/fig2_map.png", "fig2", (34,), "b3_map_sym.png"),
    Output("fig3", "figure", "Figure 3: deployed selectors' excess over ES_pool and its predictability", ("fig3_roc", "audit_table"),
           "trustmass.report.figures:figure3", f"{_FIGURES}/fig3_method_headroom.png", "fig3", (35, 48, 105, 106),
           "c8_method_headroom.png", {"band": PaperValue(35, "auc_dropped_mass", ("family_set", "headline"))}),
    Output("table1", "table", "Table 1: native budget, balancing share through s = 256", ("table1",), "table1",
           f"{_TABLES}/table1_native.csv", "table1", (31, 32, 33, 96)),
    Output("table2", "table", "Table 2: content diversity (prose, code, French)", ("table2",), "table2",
           f"{_TABLES}/table2_content.csv", "table2", (41,)),
    Output("table6", "table", "Table 6: the panel (AUC, edge/int, rho_depth, rho(Phi, ES_pool), kappa_hat_bal)", ("table6",), "table6",
           f"{_TABLES}/table6_panel.csv", "table6", (28, 35, 38, 39, 83)),
    Output("table7", "table", "Table 7: certification substitution (Wilson-95 f_hi, distribution-free median caps)", ("table7",),
           "table7", f"{_TABLES}/table7_certification.csv", "table7", (18, 21, 84, 90, 91, 92, 93, 94, 95)),
    Output("table8", "table", "Table 8: per-budget profile", ("table8",), "table8",
           f"{_TABLES}/table8_profile.csv", "table8", (11, 12, 13, 22, 23, 27, 38, 88)),
    Output("sweep", "table", "The cap-widening sweep at s = 32 (e = 4, 5, 6 extra keys)", ("sweep",), "sweep",
           f"{_TABLES}/sweep_cap_widening.csv", "sweep", (18, 19, 20)),
    Output("audit_table", "table", "The selector audit table (median excess, share above 1.11 ES_pool, AUC, Spearman)",
           ("audit_table",), "audit_table", f"{_TABLES}/audit_table.csv", "audit_table", (48, 49, 50, 51, 105, 106, 107, 108, 109)),
    Output("fig4", "figure", "Figure 4: redirecting balancing to the map's flat cells (held-out CE at s = 8)", ("loss_table",),
           "trustmass.report.figures:figure4", f"{_FIGURES}/fig4_redirect.png", None, (52, 53, 125), None,
           {"paper_map": PaperValue(125, "map_share_of_all_cell_gain", ("model", "Qwen2.5-1.5B")),
            "paper_random": PaperValue(125, "random_share_of_all_cell_gain", ("model", "Qwen2.5-1.5B"))}),
    Output("loss_table", "table", "The held-out loss under the restricted operator, every configuration", ("loss_table",),
           "loss_table", f"{_TABLES}/loss_table.csv", None, (52, 53, 55, 111, 125)),
    Output("probe_table", "table", "The rank-16 probe: held-out swap recall and CE change against balancing's", ("probe",),
           "probe_table", f"{_TABLES}/probe.csv", None, (57, 124)),
    Output("curvature_table", "table", "Curvature: the second-order prediction of the switch vs its measured share",
           ("curvature",), "curvature_table", f"{_TABLES}/curvature.csv", None, (58, 126)),
    Output("task_table", "table", "Task-structured contexts: retrieval against background rows (claims 42-46)",
           ("task_contexts",), "task_table", f"{_TABLES}/task_contexts.csv", None, (42, 43, 44, 45, 46)),
    Output("fig_swaps", "figure", "Boundary swaps against random swaps: the gap recovered (es, held-out CE, next-token KL)",
           ("swap_curves",), "trustmass.report.diagnostic_figures:swap_figure", f"{_FIGURES}/fig_swaps.png", None, ()),
    Output("swap_table", "table", "Boundary swaps: the gap recovered per outcome (es, held-out CE, next-token KL)",
           ("swap_curves",), "swap_table", f"{_TABLES}/swap_curves.csv", None, ()),
    Output("boundary_table", "table", "Swap-improving boundaries per selector pair and outcome",
           ("swap_boundaries",), "boundary_table", f"{_TABLES}/swap_boundaries.csv", None, ()),
    Output("projection_table", "table", "Block projection: strict block TopK against its token-fill (slack, es, held-out CE)",
           ("projection",), "projection_table", f"{_TABLES}/projection.csv", None, ()),
    Output("margin_table", "table", "The signed reference margin split (held-out CE): positive-shift rates per bucket",
           ("margin_split",), "margin_table", f"{_TABLES}/margin_split.csv", None, ()),
    Output("margin_cells_table", "table", "The margin split's cells: CE of dense, host and rule per (model, content, budget)",
           ("margin_cells",), "margin_cells_table", f"{_TABLES}/margin_cells.csv", None, ()),
    Output("allocation_table", "table", "The allocation panel: map-proportional, mass-greedy and pyramid budgets vs uniform",
           ("allocation",), "allocation_table", f"{_TABLES}/allocation_panel.csv", None, (97,)),
    Output("table3", "table", "Table 3: ContourKV's W/T/L, unenforced and enforced", ("table3",), "table3",
           f"{_TABLES}/table3_wtl.csv", None, (4, 64, 65, 66, 70, 71)),
    Output("table4", "table", "Table 4: retrieval W/T/L of window-scored enforced ContourKV", ("table4",), "table4",
           f"{_TABLES}/table4_retrieval.csv", None, (67, 73, 75, 120)),
    Output("table5", "table", "Table 5: the question-visible decomposition", ("table5",), "table5",
           f"{_TABLES}/table5_decomposition.csv", None, (5, 76, 77, 78)),
    Output("bytes_table", "table", "The byte ledger: every method's cache, ragged, layer-padded and as shipped",
           ("deploy_bytes",), "bytes_table", f"{_TABLES}/bytes.csv", None, (3, 59, 60, 61, 113, 114)),
    Output("access_figure", "figure", "Access laws: TV to the first decode row by layer, and head-sum dilution on the task contexts",
           ("access_layers", "access_dilution"), "trustmass.report.access_figures:access_figure", f"{_FIGURES}/access_law.png",
           None, ()),
    Output("access_table", "table", "Access laws: the prefill's estimates of the first decode step's law (Prop. 3, exposure bias)",
           ("access_law",), "access_table", f"{_TABLES}/access_law.csv", None, ()),
    Output("timing_table", "table", "Deployment timing per method (prefill, scoring, decode; replay cost)",
           ("deploy_timing",), "timing_table", f"{_TABLES}/deploy_timing.csv", None, (69, 115)),
)  # fmt: skip


def output(name: str) -> Output:
    """The figure or table named ``name``."""
    for out in OUTPUTS:
        if out.name == name:
            return out
    raise KeyError(f"no figure or table {name!r}; known: {', '.join(o.name for o in OUTPUTS)}")
