"""The boundary-swap figure (related-methods A.2): the error after a swap relative to X's against the
swapped fraction of the disagreement, boundary swaps against random ones, Y's own level marked, one
panel per outcome (es per captured row, held-out CE, next-token KL to the dense model).  The error
ratio rather than the gap recovered: the gap's denominator err(X) - err(Y) is small wherever the two
selectors err alike, and the ratio then swings without meaning (the table shows both)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
from matplotlib.figure import Figure

from trustmass.report.style import STYLE, as_float, empty, save

__all__ = ["save", "swap_figure"]

OUTCOMES = ("es", "ce", "kl")


def _swap_panel(ax, part: pl.DataFrame, pairs: list[str]) -> None:
    """One model's curves at one outcome and budget: boundary and random swaps per pair, Y's level dotted."""
    for k, pair in enumerate(pairs):
        color = STYLE["swap_pair_colors"][k % len(STYLE["swap_pair_colors"])]
        for kind, style in STYLE["swap_kind_styles"].items():
            line = part.filter(pl.col("pair") == pair, pl.col("kind") == kind).sort("fraction")
            if not line.height:
                continue
            x = np.concatenate([[0.0], line["fraction"].to_numpy()])
            y = np.array([1.0] + [as_float(v) for v in line["err_ratio"].to_list()])
            low = np.array([1.0] + [as_float(v) for v in line["err_ratio_low"].to_list()])
            high = np.array([1.0] + [as_float(v) for v in line["err_ratio_high"].to_list()])
            ax.plot(x, y, style, color=color, marker="o", ms=3, label=f"{pair}, {kind.replace('_', ' ')}")
            ax.fill_between(x, low, high, color=color, alpha=0.12, lw=0)
        ends = part.filter(pl.col("pair") == pair)
        if ends.height:  # Y's own level: err(Y) / err(X)
            ax.axhline(ends["err_y"][0] / ends["err_x"][0], color=color, lw=0.8, ls=(0, (1, 3)))
    ax.axhline(1.0, color="grey", lw=0.7)


def swap_figure(curves: pl.DataFrame, population: str = "all") -> Figure:
    """From the ``swap_curves`` frame, a row of panels per model (es at the smallest budget the forward
    also ran, else the smallest; held-out CE; next-token KL)."""
    outcomes = [o for o in OUTCOMES if curves.height and o in curves["outcome"].to_list()]
    models = sorted(curves["model"].unique().to_list()) if curves.height else []
    with plt.rc_context(STYLE["rc"]):
        width, height = STYLE["swap_panel_size"]
        n_rows, n_cols = max(len(models), 1), max(len(outcomes), 1)
        fig, axes = plt.subplots(n_rows, n_cols, figsize=(width * n_cols, height * n_rows + 0.6), squeeze=False)
        if not outcomes:
            return empty(fig, "Boundary swaps: no swap results")
        pairs = sorted(curves["pair"].unique().to_list())
        forward_budgets = curves.filter(pl.col("outcome") != "es")["budget"].unique().to_list()
        for row, model in zip(axes, models):
            for ax, outcome in zip(row, outcomes):
                part = curves.filter(pl.col("outcome") == outcome, pl.col("model") == model)
                budgets = sorted(part["budget"].unique().to_list())
                if not budgets:
                    ax.set_axis_off()
                    continue
                budget = next((b for b in budgets if b in forward_budgets), budgets[0])
                _swap_panel(ax, part.filter(pl.col("budget") == budget), pairs)
                ax.set_title(
                    f"{model if len(models) > 1 else ''}{chr(10) if len(models) > 1 else ''}"
                    f"{STYLE['swap_outcome_labels'][outcome]}, s = {budget}"
                )
            row[0].set_ylabel("error / error of X  (dots: Y's level)")
        for ax in axes[-1]:
            ax.set_xlabel("fraction of the disagreement swapped")
        handles, labels = axes[0][0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=min(3, max(len(labels), 1)), frameon=False)
        legend_rows = 1 + len(labels) // 3
        fig.tight_layout(rect=(0, min(0.4, 0.25 * legend_rows / fig.get_figheight()), 1, 1))
    return fig
