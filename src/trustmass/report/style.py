"""The one figure style: every styling choice of every figure (:data:`STYLE`), the helpers the draw
functions share, and :func:`save`.  Restyling touches this module and reruns only the drawing rules
(no statistics rule imports it)."""

from __future__ import annotations

import math
import os

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from trustmass.plumbing.provenance import atomic_write  # noqa: E402

__all__ = ["POPULATION_LABELS", "STYLE", "as_float", "empty", "population_label", "save", "select_population"]

#: every styling choice of every figure (colours, sizes, fonts, colour maps)
STYLE: dict = {
    "rc": {
        "font.size": 9,
        "axes.titlesize": 10,
        "axes.labelsize": 9,
        "legend.fontsize": 8,
        "xtick.labelsize": 8,
        "ytick.labelsize": 8,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "figure.dpi": 100,
    },
    "dpi": 200,
    # Figure 1
    "fig1_panel_size": (2.6, 2.2),  # inches per model (width) and per panel (height)
    "fig1_height_ratios": (0.8, 1.6),  # full scale, zoom
    "fig1_legend_space": 0.115,  # fraction of the figure height below the axes for the legend
    "remainder_color": "#b8c2cc",
    "cap_color": "#e0892b",
    "balancing_color": "#1f3b73",
    "whisker_color": "#333333",
    "bar_width": 0.72,
    "mark_size": 28,
    "zoom_margin": 0.15,  # fraction of the zoomed span left below the lowest whisker
    # Figure 2
    "fig2_cell_inches": 0.24,  # per head (width) and per layer (height), clipped below
    "fig2_min_panel": (2.4, 3.2),
    "fig2_colorbar_size": "6%",
    "mass_cmap": "viridis",
    "kappa_cmap": "magma_r",
    "kappa_span": (1.0, 1.5),  # colour range of median kappa_hat; larger values saturate
    "flat_marker": {"marker": "s", "s": 10, "facecolors": "none", "edgecolors": "#ff3b30", "linewidths": 0.9},
    "label_marker": {"marker": "o", "s": 6, "color": "#19c2e0", "linewidths": 0},
    # Figure 3
    "fig3_size": (10.0, 4.2),
    "fig3_legend_fontsize": 7,
    "band_color": "#d9d9d9",
    "rule_colors": {
        "snapkv": "#1f77b4",
        "h2o": "#ff7f0e",
        "quest": "#2ca02c",
        "streaming_llm": "#d62728",
        "recency": "#8c564b",
        "certificate": "#000000",
    },
    # Figure 4
    "fig4_size": (10.0, 4.6),
    "fig4_colors": {"flat_switch": "#1f3b73", "random": "#b8c2cc", "all_cell": "#e0892b"},
    # the boundary-swap figure: one panel per outcome, one colour per pair, one line style per swap kind
    "swap_panel_size": (3.2, 2.8),
    "swap_pair_colors": ("#1f3b73", "#e0892b", "#3a7d44", "#8e3b8e"),
    "swap_kind_styles": {"boundary": "-", "random": "--", "random_restricted": ":"},
    "swap_outcome_labels": {"es": "es per captured row", "ce": "held-out CE", "kl": "next-token KL to dense"},
    "rule_labels": {
        "snapkv": "SnapKV",
        "h2o": "H2O",
        "quest": "Quest",
        "streaming_llm": "StreamingLLM",
        "recency": "recency (positional control)",
        "certificate": "certificate (top-mass κ̂ > threshold)",
    },
    # the access-law figure (trustmass.report.figures.access)
    "access_panel_size": (3.6, 3.0),  # inches per panel
    "access_law_colors": {"last": "#c2185b", "all": "#e0892b", "debiased": "#2ca02c", "decode": "#000000"},
    "access_tail_cmap": "Blues",  # tail-K means: one shade per K, darker for longer tails
    "access_band_alpha": 0.18,  # the interquartile band of p_T's distance
    "access_doc_colors": ("#1f77b4", "#d62728", "#9467bd", "#8c564b", "#17becf", "#bcbd22"),
}

#: how the populations of the summaries are named in titles
POPULATION_LABELS = {"primary": "primary slice", "all": "all documents"}


def population_label(population: str, frame: pl.DataFrame) -> str:
    docs = frame["n_docs"].max() if "n_docs" in frame.columns and frame.height else None
    label = POPULATION_LABELS.get(population, population)
    return f"{label}, {docs} documents" if docs is not None else label


def select_population(frame: pl.DataFrame, population: str, what: str) -> pl.DataFrame:
    if "population" not in frame.columns:
        raise ValueError(
            f"{what}: the summary frame has no population column; fix: pass a statistics frame (trustmass.report.frames)"
        )
    out = frame.filter(pl.col("population") == population)
    if out.height == 0 and frame.height:
        known = sorted(frame["population"].unique().to_list())
        raise ValueError(f"{what}: no rows for population {population!r}; the frame has {known}")
    return out


def empty(fig: Figure, text: str) -> Figure:
    ax = fig.add_subplot(1, 1, 1)
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True)
    return fig


def as_float(x) -> float:
    return math.nan if x is None else float(x)


def save(fig: Figure, path: str | os.PathLike) -> None:
    """Write ``fig`` as PNG atomically (nothing half-written on failure) and close it."""
    try:
        with atomic_write(path) as tmp:
            fig.savefig(tmp, dpi=STYLE["dpi"], format="png", bbox_inches="tight")
    finally:
        plt.close(fig)
