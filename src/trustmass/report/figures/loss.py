"""The loss stage's figure (Figure 4), drawn from its statistics frames (:mod:`trustmass.report.frames.loss`)
in the one style (:mod:`trustmass.report.style`).

- :func:`figure4` — redirecting balancing to labelled cells (paper: App E Figure 4): left, per model
  the share of the all-cell gain kept by the map's flat cells, by random cell sets of the same size
  (mean over seeds; each seed a dot) and by all cells (1 by definition), with paired
  document-cluster 95% intervals and the paper's reference-family values (claim 125) marked; right,
  the held-out CE change against top-mass of every restricted configuration.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # no display: figures are files

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from trustmass.report.style import STYLE, as_float, empty, save  # noqa: E402

__all__ = ["figure4", "save"]


# ============================================================================================ Figure 4

_FIG4_SETS = (("flat_switch", "map (flat cells)"), ("random", "random cells, same count"), ("all_cell", "all cells"))


def figure4(
    table: pl.DataFrame, population: str = "all", paper_map: float | None = None, paper_random: float | None = None
) -> Figure:
    """Figure 4 from the ``loss_table`` frame; ``paper_map`` / ``paper_random`` are the paper's shares
    (percent) on its reference family (claim 125), drawn as reference ticks."""
    t = table.filter(pl.col("accounting") == "per_query")
    models = sorted(t["model"].unique().to_list())
    width_in, height_in = STYLE["fig4_size"]
    rows = _ce_rows(t).height  # the right panel: one row per (model, configuration), about 0.2 in each
    with plt.rc_context(STYLE["rc"]):
        fig, (left, right) = plt.subplots(
            1, 2, figsize=(width_in, max(height_in, 1.6 + 0.2 * rows)), gridspec_kw={"width_ratios": (1, 1.4)}
        )
        if not models:
            return empty(fig, "Figure 4: no held-out loss results")
        width = 0.8 / len(_FIG4_SETS)
        shown, intervals = [], []  # the share axis is fitted to the point estimates, not to the intervals
        for k, (config, label) in enumerate(_FIG4_SETS):
            xs, ys, lows, highs = [], [], [], []
            for i, model in enumerate(models):
                rec = _record(t, model, config)
                if rec is None or rec["share"] is None:
                    continue
                xs.append(i + (k - 1) * width)
                ys.append(rec["share"])
                lows.append(as_float(rec["share_low"]) if rec["share_low"] is not None else rec["share"])
                highs.append(as_float(rec["share_high"]) if rec["share_high"] is not None else rec["share"])
            left.bar(xs, ys, width, color=STYLE["fig4_colors"][config], label=label)
            shown += ys
            intervals += list(zip(xs, ys, lows, highs))
        seeds = t.filter(pl.col("cells") == "random", pl.col("config") != "random")
        for i, model in enumerate(models):
            dots = seeds.filter(pl.col("model") == model)["share"].drop_nulls().to_numpy()
            left.scatter(np.full(dots.shape, i), dots, s=8, color="black", zorder=3)
            shown += dots.tolist()
        for value, key in ((paper_map, "flat_switch"), (paper_random, "random")):
            if value is not None:
                left.axhline(
                    value / 100.0,
                    color=STYLE["fig4_colors"][key],
                    ls=":",
                    lw=1.0,
                    label=f"paper, reference family: {key.replace('_', ' ')} {value:g}%",
                )
        left.set_xticks(np.arange(len(models)))
        left.set_xticklabels(models, rotation=15 if len(models) > 1 else 0, ha="right" if len(models) > 1 else "center")
        low, high = min(shown + [0.0]), max(shown + [1.0])  # intervals may reach one such span beyond the estimates
        span = high - low
        low = max(min([low] + [lo for _, _, lo, _ in intervals]), low - span)
        high = min(max([high] + [hi for _, _, _, hi in intervals]), high + span)
        left.set_ylim(low - 0.05 * (high - low), high + 0.05 * (high - low))
        _whiskers(left, intervals)
        left.set_ylabel("share of the all-cell gain")
        left.set_title("balancing on a cell set, top-mass elsewhere")
        left.legend(loc="upper left", bbox_to_anchor=(0.0, -0.2), frameon=False)
        _ce_changes(right, t, models)
        fig.tight_layout()
    return fig


def _whiskers(ax, intervals: list[tuple[float, float, float, float]]) -> None:
    """(x, estimate, low, high) intervals drawn within the axis's current y-limits; an end beyond them
    stops at the edge with its value written there (a three-document share interval of -25 would
    otherwise flatten every bar)."""
    bottom, top = ax.get_ylim()
    for x, y, lo, hi in intervals:
        ax.errorbar(
            x, y, yerr=[[y - max(lo, bottom)], [min(hi, top) - y]], fmt="none", capsize=2, color="black", lw=1.0
        )
        for end, edge, va in ((lo, bottom, "bottom"), (hi, top, "top")):
            if (end < bottom) if va == "bottom" else (end > top):
                ax.annotate(
                    f"{end:.2g}",
                    (x, edge),
                    xytext=(2, 2 if va == "bottom" else -2),
                    textcoords="offset points",
                    ha="left",
                    va=va,
                    fontsize=6,
                )


def _record(t: pl.DataFrame, model: str, config: str) -> dict | None:
    rows = t.filter(pl.col("model") == model, pl.col("config") == config)
    return rows.row(0, named=True) if rows.height else None


def _ce_rows(t: pl.DataFrame) -> pl.DataFrame:
    """The restricted configurations the right panel shows (random cells: their pooled row only)."""
    return t.filter(
        pl.col("delta_vs_top").is_not_null(),
        ~pl.col("config").is_in(["top_mass", "keep_all", "dense"]),
        ~((pl.col("cells") == "random") & (pl.col("config") != "random")),
    ).sort(["model", "config"])


def _ce_changes(ax, t: pl.DataFrame, models: list[str]) -> None:
    """CE(X) - CE(top-mass) with intervals, one row per (model, restricted configuration)."""
    labels = []
    for y, rec in enumerate(_ce_rows(t).iter_rows(named=True)):
        lo = rec["delta_vs_top"] - as_float(rec["delta_vs_top_low"]) if rec["delta_vs_top_low"] is not None else 0.0
        hi = as_float(rec["delta_vs_top_high"]) - rec["delta_vs_top"] if rec["delta_vs_top_high"] is not None else 0.0
        ax.errorbar(
            rec["delta_vs_top"],
            y,
            xerr=[[lo], [hi]],
            fmt="o",
            ms=3.5,
            capsize=2,
            color=STYLE["fig4_colors"].get(rec["config"], STYLE["whisker_color"]),
        )
        labels.append(rec["config"] if len(models) == 1 else f"{rec['config']} · {rec['model']}")
    ax.axvline(0.0, color="grey", ls="--", lw=0.9)
    ax.set_yticks(np.arange(len(labels)))
    ax.set_yticklabels(labels)
    ax.invert_yaxis()
    ax.set_xlabel("held-out CE − CE(top-mass), nats (95% paired doc-cluster CI)")
    ax.set_title("every restricted configuration")
