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


def swap_figure(curves: pl.DataFrame, population: str = "all") -> Figure:
    """From the ``swap_curves`` frame; es at the smallest budget the forward also ran (else the smallest)."""
    outcomes = [o for o in OUTCOMES if curves.height and o in curves["outcome"].to_list()]
    with plt.rc_context(STYLE["rc"]):
        width, height = STYLE["swap_panel_size"]
        fig, axes = plt.subplots(1, max(len(outcomes), 1), figsize=(width * max(len(outcomes), 1), height), squeeze=False)
        if not outcomes:
            return empty(fig, "Boundary swaps: no swap results")
        pairs = sorted(curves["pair"].unique().to_list())
        forward_budgets = curves.filter(pl.col("outcome") != "es")["budget"].unique().to_list()
        for ax, outcome in zip(axes[0], outcomes):
            part = curves.filter(pl.col("outcome") == outcome)
            budgets = sorted(part["budget"].unique().to_list())
            budget = next((b for b in budgets if b in forward_budgets), budgets[0])
            part = part.filter(pl.col("budget") == budget)
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
            ax.set_xlabel("fraction of the disagreement swapped")
            ax.set_title(f"{STYLE['swap_outcome_labels'][outcome]}, s = {budget}")
        axes[0][0].set_ylabel("error / error of X  (dots: Y's level)")
        handles, labels = axes[0][0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=min(3, max(len(labels), 1)), frameon=False)
        fig.tight_layout(rect=(0, 0.08 + 0.05 * (len(labels) // 3), 1, 1))
    return fig
