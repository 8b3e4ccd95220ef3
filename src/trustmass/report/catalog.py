"""The map from every figure and table of the study to what makes it: its statistics rule (named inputs ->
statistics function -> frames), its draw function or table layout, its files, its caption and the
paper's claims quoted there.

The workflow's statistics rules, render rules and named targets are generated from :data:`STATISTICS`
and :data:`OUTPUTS` (``workflow/rules/report.smk``); nothing about a figure is written twice.  The
report is laid out by stage alike for the three kinds of code: ``trustmass.report.frames.<stage>``
(statistics), ``trustmass.report.figures.<stage>`` (draw functions), ``trustmass.report.layouts.<stage>``
(table layouts).  To add a figure: a statistics function that returns its frame, a draw function, and
one :class:`Output` here naming both (``statistics=`` and ``inputs=``: the output's own statistics rule,
``<name>_statistics``, is derived from it; README, "Extending"); a caption file is optional.

This module is deliberately light (strings only, no plotting or statistics imports), so that every
rule may read it without depending on the code that draws.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from trustmass.plan.layout import CERTIFIED, STATS_DIR, stats_path  # re-exported: where the catalog's frames live

__all__ = [
    "GPU_CHECK",
    "HEADLINE_FRAMES",
    "OUTPUTS",
    "STATISTICS",
    "STATISTICS_CONFIG",
    "STATS_DIR",
    "Output",
    "PaperValue",
    "StatisticsRule",
    "output",
    "stats_path",
    "statistics_rule",
]


#: the config every statistics rule reads (an entry adds its own keys)
STATISTICS_CONFIG = ("seed", "labels", "statistics", "study/headline", "study/models", "study/corpora")
#: where the GPU check's result is committed (relative to the repository; ``make gpu-check``)
GPU_CHECK = "benchmarks/gpu/gpu-check.json"


@dataclass(frozen=True)
class StatisticsRule:
    """A rule that turns a stage's records into statistics frames (the compute half of a figure).

    The workflow generates the rule from the entry (``workflow/rules/report.smk``): its inputs are the
    workflow's path lists named in ``inputs`` (resolved by ``statistics_inputs`` in
    ``workflow/rules/report.smk``), its outputs the frames (and ``extra`` files), its params the config slice
    ``config`` (and the workflow values named in ``params``); ``scripts/statistics.py`` calls
    ``<module>.<function>(inputs, config)`` (:mod:`trustmass.report.statistics`).
    """

    name: str
    module: str  # the library module of the statistics function
    frames: tuple[str, ...]  # results/stats/<frame>.parquet, headline frames included
    doc: str
    inputs: Mapping[str, str]  # input name -> the name of the workflow's path list
    config: tuple[str, ...] = STATISTICS_CONFIG  # config keys (slash paths) the function reads
    params: tuple[str, ...] = ()  # workflow values passed besides the config slice (e.g. "content")
    extra: Mapping[str, str] = field(default_factory=dict)  # outputs besides the frames: name -> path
    function: str = "statistics"
    mem_mb: int = 2000
    runtime: int = 10  # minutes
    when: str | None = None  # the config switch ("section/key") that turns it on, or "file:<path>" that must exist

    @property
    def outputs(self) -> dict[str, str]:
        """Every file the rule writes but the sidecars: frames, then ``extra``."""
        return {**{name: stats_path(name) for name in self.frames}, **self.extra}


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
    draw: str  # "module:name": a draw function of trustmass.report.figures.<stage>, or a layout of ...layouts.<stage>
    path: str  # the PNG, or the CSV (the Markdown sits beside it)
    caption: str | None = None  # workflow/report/<caption>.rst; None: the generic caption (title and claims)
    claims: tuple[int, ...] = ()  # the paper's sentences quoted in the caption
    paper_file: str | None = None  # the paper's own figure file
    paper_values: Mapping[str, PaperValue] = field(default_factory=dict)  # extra keyword arguments of the draw function
    config: tuple[str, ...] = ("statistics/figure_population", "labels/kappa_threshold")
    # an output of its own statistics: "module:function" returning exactly ``frames``, from the workflow's
    # path lists ``inputs`` (as a StatisticsRule's), switched on by ``when``; None: a StatisticsRule writes them
    statistics: str | None = None
    inputs: Mapping[str, str] = field(default_factory=dict)
    when: str | None = None

    def __post_init__(self) -> None:
        if (self.statistics is None) != (not self.inputs) or (self.when is not None and self.statistics is None):
            raise ValueError(
                f"Output {self.name!r}: statistics= and inputs= go together (when= only with them); "
                "fix: give both (the output's own statistics rule) or neither (a StatisticsRule's frames)"
            )

    @property
    def module(self) -> str:
        return self.draw.split(":")[0]

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

    @property
    def statistics_rule(self) -> StatisticsRule | None:
        """The output's own statistics rule (``<name>_statistics``), when it names its statistics function."""
        if self.statistics is None:
            return None
        module, function = self.statistics.split(":")
        return StatisticsRule(
            name=f"{self.name}_statistics",
            module=module,
            function=function,
            frames=self.frames,
            doc=f"The frames of {self.title}",
            inputs=self.inputs,
            when=self.when,
        )


_FRAMES = "trustmass.report.frames"

_STAGE_STATISTICS: tuple[StatisticsRule, ...] = (
    StatisticsRule(
        name="ceiling_statistics",
        module=f"{_FRAMES}.ceiling_claims",
        frames=("fig1", "fig2", "table1", "table2", "table6", "table8", "headline_ceiling"),
        doc="Figures 1-2, Tables 1, 2, 6, 8 and the §2.1-2.3 claims, with intervals, from the ceiling records",
        inputs={"records": "study_records"},
        params=("content",),
        mem_mb=4000,
        runtime=30,
    ),
    StatisticsRule(
        name="audit_statistics",
        module=f"{_FRAMES}.audit",
        frames=("audit_table", "fig3_roc", "headline_audit"),
        doc="The audit table, Figure 3's ROC points and the audit claims, from the audit records",
        inputs={"audit": "audit_records", "sources": "headline_sources"},
        mem_mb=4000,
        runtime=30,
    ),
    StatisticsRule(
        name="certification_statistics",
        module=f"{_FRAMES}.certification",
        frames=("table7", "headline_certification"),
        doc="Substitution, Table 7 and the certification claims, from the manifest, its certification and the records",
        inputs={"manifest": "certify_manifest", "certified": "certify_shards", "records": "headline_records"},
        config=(*STATISTICS_CONFIG, "budgets/enumerated"),
        extra={"joined": CERTIFIED},
        mem_mb=4000,
    ),
    StatisticsRule(
        name="sweep_statistics",
        module=f"{_FRAMES}.certification",
        function="sweep_statistics",
        frames=("sweep", "headline_sweep"),
        doc="The cap-widening sweep's table and claims, from the sweep rows",
        inputs={"rows": "sweep_rows"},
        config=(*STATISTICS_CONFIG, "certification/sweep/budget"),
    ),
    StatisticsRule(
        name="loss_statistics",
        module=f"{_FRAMES}.loss",
        frames=("loss_table", "allocation", "probe", "curvature", "headline_loss"),
        doc="Figure 4, the loss table, the allocation panel, the probe, curvature and the loss claims, from the "
        "held-out NLLs, per-cell frames and the panels",
        inputs={
            "tokens": "loss_outputs",
            "allocation": "allocation_outputs",
            "probe": "probe_recalls",
            "curvature": "curvature_outputs",
            "cells": "cells_outputs",
        },
        config=(*STATISTICS_CONFIG, "loss/rules"),
    ),
    StatisticsRule(
        name="deploy_statistics",
        module=f"{_FRAMES}.deploy_claims",
        frames=("table3", "table4", "table5", "deploy_bytes", "deploy_timing", "headline_deploy"),
        doc="Tables 3-5, the bytes table, timing and the deployment claims, from the deployment rows and the replay",
        inputs={"rows": "deploy_outputs", "replay": "replay_outputs"},
        when="deploy/enabled",
    ),
    StatisticsRule(
        name="task_statistics",
        module=f"{_FRAMES}.tasks",
        frames=("task_contexts", "task_map", "headline_tasks"),
        doc="The task-context claims 42-47 (retrieval vs background rows, the map on task contexts), from the task "
        "corpus's ceiling records and manifests",
        inputs={"records": "task_records", "prose": "headline_records", "manifests": "task_manifests"},
        config=(*STATISTICS_CONFIG, "task_contexts"),
        when="task_contexts/enabled",
    ),
    StatisticsRule(
        name="diagnostics_statistics",
        module=f"{_FRAMES}.diagnostics",
        frames=("swap_curves", "swap_boundaries", "projection", "margin_cells", "margin_split"),
        doc="The fixed-contract diagnostics: boundary-swap curves against random swaps (es, held-out CE, next-token "
        "KL), swap-improving boundaries and the signed reference margin split",
        inputs={"rows": "swap_rows", "projection": "projection_rows", "forward": "diagnostics_outputs"},
        config=(*STATISTICS_CONFIG, "diagnostics"),
        params=("content",),
        mem_mb=3000,
        when="diagnostics/enabled",
    ),
    StatisticsRule(
        name="access_statistics",
        module=f"{_FRAMES}.access",
        frames=("access_law", "access_layers", "access_dilution"),
        doc="The access-law distances (TV of p_T, tail means, the full mixture and count-debiased C to p*) and "
        "head-sum dilution on the task contexts, from the access records of every captured document",
        inputs={"access": "study_access_records"},
        config=(*STATISTICS_CONFIG, "access_law"),
        when="access_law/enabled",
    ),
    StatisticsRule(
        name="selfcheck_statistics",
        module=f"{_FRAMES}.selfcheck",
        frames=("headline_selfcheck",),
        doc="The theory claims (worked examples, EF bound, reduction gap), from the self-check",
        inputs={"worked": "worked_examples"},
        config=("seed",),
        mem_mb=1000,
        runtime=5,
    ),
    StatisticsRule(
        name="gpu_statistics",
        module=f"{_FRAMES}.gpu",
        frames=("headline_gpu",),
        doc="The paper's hardware claims (40, 102, 103, 115) from the committed GPU check, when one is committed",
        inputs={"check": f"repo:{GPU_CHECK}"},
        config=("seed",),
        mem_mb=1000,
        runtime=5,
        when=f"file:{GPU_CHECK}",
    ),
)


_FIGURES = "results/figures"
_TABLES = "results/tables"
_DRAW = "trustmass.report.figures"
_LAYOUTS = "trustmass.report.layouts"

OUTPUTS: tuple[Output, ...] = (
    Output(
        name="fig1",
        kind="figure",
        title="Figure 1: the ceiling per model and budget",
        frames=("fig1",),
        draw=f"{_DRAW}.ceiling:figure1",
        path=f"{_FIGURES}/fig1_ceiling.png",
        caption="fig1",
        claims=(2, 24, 25, 28),
        paper_file="b9_ceiling_sym.png",
    ),
    Output(
        name="fig2",
        kind="figure",
        title="Figure 2: the map, layer x head",
        frames=("fig2",),
        draw=f"{_DRAW}.ceiling:figure2",
        path=f"{_FIGURES}/fig2_map.png",
        caption="fig2",
        claims=(34,),
        paper_file="b3_map_sym.png",
    ),
    Output(
        name="fig3",
        kind="figure",
        title="Figure 3: deployed selectors' excess over ES_pool and its predictability",
        frames=("fig3_roc", "audit_table"),
        draw=f"{_DRAW}.audit:figure3",
        path=f"{_FIGURES}/fig3_method_headroom.png",
        caption="fig3",
        claims=(35, 48, 105, 106),
        paper_file="c8_method_headroom.png",
        paper_values={"band": PaperValue(35, "auc_dropped_mass", ("family_set", "headline"))},
    ),
    Output(
        name="table1",
        kind="table",
        title="Table 1: native budget, balancing share through s = 256",
        frames=("table1",),
        draw=f"{_LAYOUTS}.ceiling:table1",
        path=f"{_TABLES}/table1_native.csv",
        caption="table1",
        claims=(31, 32, 33, 96),
    ),
    Output(
        name="table2",
        kind="table",
        title="Table 2: content diversity (prose, code, French)",
        frames=("table2",),
        draw=f"{_LAYOUTS}.ceiling:table2",
        path=f"{_TABLES}/table2_content.csv",
        caption="table2",
        claims=(41,),
    ),
    Output(
        name="table6",
        kind="table",
        title="Table 6: the panel (AUC, edge/int, rho_depth, rho(Phi, ES_pool), kappa_hat_bal)",
        frames=("table6",),
        draw=f"{_LAYOUTS}.ceiling:table6",
        path=f"{_TABLES}/table6_panel.csv",
        caption="table6",
        claims=(28, 35, 38, 39, 83),
    ),
    Output(
        name="table7",
        kind="table",
        title="Table 7: certification substitution (Wilson-95 f_hi, distribution-free median caps)",
        frames=("table7",),
        draw=f"{_LAYOUTS}.certification:table7",
        path=f"{_TABLES}/table7_certification.csv",
        caption="table7",
        claims=(18, 21, 84, 90, 91, 92, 93, 94, 95),
    ),
    Output(
        name="table8",
        kind="table",
        title="Table 8: per-budget profile",
        frames=("table8",),
        draw=f"{_LAYOUTS}.ceiling:table8",
        path=f"{_TABLES}/table8_profile.csv",
        caption="table8",
        claims=(11, 12, 13, 22, 23, 27, 38, 88),
    ),
    Output(
        name="sweep",
        kind="table",
        title="The cap-widening sweep at s = 32 (e = 4, 5, 6 extra keys)",
        frames=("sweep",),
        draw=f"{_LAYOUTS}.certification:sweep",
        path=f"{_TABLES}/sweep_cap_widening.csv",
        caption="sweep",
        claims=(18, 19, 20),
    ),
    Output(
        name="audit_table",
        kind="table",
        title="The selector audit table (median excess, share above 1.11 ES_pool, AUC, Spearman)",
        frames=("audit_table",),
        draw=f"{_LAYOUTS}.audit:audit_table",
        path=f"{_TABLES}/audit_table.csv",
        caption="audit_table",
        claims=(48, 49, 50, 51, 105, 106, 107, 108, 109),
    ),
    Output(
        name="fig4",
        kind="figure",
        title="Figure 4: redirecting balancing to the map's flat cells (held-out CE at s = 8)",
        frames=("loss_table",),
        draw=f"{_DRAW}.loss:figure4",
        path=f"{_FIGURES}/fig4_redirect.png",
        claims=(52, 53, 125),
        paper_values={
            "paper_map": PaperValue(125, "map_share_of_all_cell_gain", ("model", "Qwen2.5-1.5B")),
            "paper_random": PaperValue(125, "random_share_of_all_cell_gain", ("model", "Qwen2.5-1.5B")),
        },
    ),
    Output(
        name="loss_table",
        kind="table",
        title="The held-out loss under the restricted operator, every configuration",
        frames=("loss_table",),
        draw=f"{_LAYOUTS}.loss:loss_table",
        path=f"{_TABLES}/loss_table.csv",
        claims=(52, 53, 55, 111, 125),
    ),
    Output(
        name="probe_table",
        kind="table",
        title="The rank-16 probe: held-out swap recall and CE change against balancing's",
        frames=("probe",),
        draw=f"{_LAYOUTS}.loss:probe_table",
        path=f"{_TABLES}/probe.csv",
        claims=(57, 124),
    ),
    Output(
        name="curvature_table",
        kind="table",
        title="Curvature: the second-order prediction of the switch vs its measured share",
        frames=("curvature",),
        draw=f"{_LAYOUTS}.loss:curvature_table",
        path=f"{_TABLES}/curvature.csv",
        claims=(58, 126),
    ),
    Output(
        name="task_table",
        kind="table",
        title="Task-structured contexts: retrieval against background rows (claims 42-46)",
        frames=("task_contexts",),
        draw=f"{_LAYOUTS}.tasks:task_table",
        path=f"{_TABLES}/task_contexts.csv",
        claims=(42, 43, 44, 45, 46),
    ),
    Output(
        name="fig_swaps",
        kind="figure",
        title="Boundary swaps against random swaps: the gap recovered (es, held-out CE, next-token KL)",
        frames=("swap_curves",),
        draw=f"{_DRAW}.diagnostics:swap_figure",
        path=f"{_FIGURES}/fig_swaps.png",
    ),
    Output(
        name="swap_table",
        kind="table",
        title="Boundary swaps: the gap recovered per outcome (es, held-out CE, next-token KL)",
        frames=("swap_curves",),
        draw=f"{_LAYOUTS}.diagnostics:swap_table",
        path=f"{_TABLES}/swap_curves.csv",
    ),
    Output(
        name="boundary_table",
        kind="table",
        title="Swap-improving boundaries per selector pair and outcome",
        frames=("swap_boundaries",),
        draw=f"{_LAYOUTS}.diagnostics:boundary_table",
        path=f"{_TABLES}/swap_boundaries.csv",
    ),
    Output(
        name="projection_table",
        kind="table",
        title="Block projection: strict block TopK against its token-fill (slack, es, held-out CE)",
        frames=("projection",),
        draw=f"{_LAYOUTS}.diagnostics:projection_table",
        path=f"{_TABLES}/projection.csv",
    ),
    Output(
        name="margin_table",
        kind="table",
        title="The signed reference margin split (held-out CE): positive-shift rates per bucket",
        frames=("margin_split",),
        draw=f"{_LAYOUTS}.diagnostics:margin_table",
        path=f"{_TABLES}/margin_split.csv",
    ),
    Output(
        name="margin_cells_table",
        kind="table",
        title="The margin split's cells: CE of dense, host and rule per (model, content, budget)",
        frames=("margin_cells",),
        draw=f"{_LAYOUTS}.diagnostics:margin_cells_table",
        path=f"{_TABLES}/margin_cells.csv",
    ),
    Output(
        name="allocation_table",
        kind="table",
        title="The allocation panel: map-proportional, mass-greedy and pyramid budgets vs uniform",
        frames=("allocation",),
        draw=f"{_LAYOUTS}.loss:allocation_table",
        path=f"{_TABLES}/allocation_panel.csv",
        claims=(97,),
    ),
    Output(
        name="table3",
        kind="table",
        title="Table 3: ContourKV's W/T/L, unenforced and enforced",
        frames=("table3",),
        draw=f"{_LAYOUTS}.deploy:table3",
        path=f"{_TABLES}/table3_wtl.csv",
        claims=(4, 64, 65, 66, 70, 71),
    ),
    Output(
        name="table4",
        kind="table",
        title="Table 4: retrieval W/T/L of window-scored enforced ContourKV",
        frames=("table4",),
        draw=f"{_LAYOUTS}.deploy:table4",
        path=f"{_TABLES}/table4_retrieval.csv",
        claims=(67, 73, 75, 120),
    ),
    Output(
        name="table5",
        kind="table",
        title="Table 5: the question-visible decomposition",
        frames=("table5",),
        draw=f"{_LAYOUTS}.deploy:table5",
        path=f"{_TABLES}/table5_decomposition.csv",
        claims=(5, 76, 77, 78),
    ),
    Output(
        name="bytes_table",
        kind="table",
        title="The byte ledger: every method's cache, ragged, layer-padded and as shipped",
        frames=("deploy_bytes",),
        draw=f"{_LAYOUTS}.deploy:bytes_table",
        path=f"{_TABLES}/bytes.csv",
        claims=(3, 59, 60, 61, 113, 114),
    ),
    Output(
        name="access_figure",
        kind="figure",
        title="Access laws: TV to the first decode row by layer, and head-sum dilution on the task contexts",
        frames=("access_layers", "access_dilution"),
        draw=f"{_DRAW}.access:access_figure",
        path=f"{_FIGURES}/access_law.png",
    ),
    Output(
        name="access_table",
        kind="table",
        title="Access laws: the prefill's estimates of the first decode step's law (Prop. 3, exposure bias)",
        frames=("access_law",),
        draw=f"{_LAYOUTS}.access:access_table",
        path=f"{_TABLES}/access_law.csv",
    ),
    Output(
        name="timing_table",
        kind="table",
        title="Deployment timing per method (prefill, scoring, decode; replay cost)",
        frames=("deploy_timing",),
        draw=f"{_LAYOUTS}.deploy:timing_table",
        path=f"{_TABLES}/deploy_timing.csv",
        claims=(69, 115),
    ),
)

#: every statistics rule: the stages' and those of outputs with their own statistics function
STATISTICS: tuple[StatisticsRule, ...] = (*_STAGE_STATISTICS, *(o.statistics_rule for o in OUTPUTS if o.statistics))


def statistics_rule(name: str) -> StatisticsRule:
    """The statistics rule named ``name``."""
    for rule in STATISTICS:
        if rule.name == name:
            return rule
    raise KeyError(f"no statistics rule {name!r}; known: {', '.join(r.name for r in STATISTICS)}")


#: every headline frame the claims report reads
HEADLINE_FRAMES = tuple(f for rule in STATISTICS for f in rule.frames if f.startswith("headline_"))


def output(name: str) -> Output:
    """The figure or table named ``name``."""
    for out in OUTPUTS:
        if out.name == name:
            return out
    raise KeyError(f"no figure or table {name!r}; known: {', '.join(o.name for o in OUTPUTS)}")
