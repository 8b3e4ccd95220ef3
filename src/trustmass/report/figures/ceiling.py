"""The ceiling stage's figures, drawn from its statistics frames (:mod:`trustmass.report.frames.ceiling`) in
the one style (:mod:`trustmass.report.style`).  Each is a pure function ``frames -> matplotlib Figure``.

- :func:`figure1` — the ceiling (paper: ``b9_ceiling_sym.png``): per model a group of bars over the
  enumerated budgets.  The residual is normalised so that top-mass = 1 and dense attention = 0: the
  block is the median remainder ``ES_pool/es(A*_s)`` no candidate subset can close, the cap above it
  the median closable share ``c_hat``, the mark balancing's median residual ``es(A_bal)/es(A*_s)``;
  whiskers are document-cluster bootstrap 95% intervals.  A second panel zooms on the top of the bars.
- :func:`figure2` — the map (paper: ``b3_map_sym.png``): per model, layer x head heatmaps of the
  median dropped mass at the map budget (left) and the median ``kappa_hat`` (right), from the same
  records; flat cells and labelled cells are marked.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import matplotlib

matplotlib.use("Agg")  # no display: figures are files

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from matplotlib.colors import Normalize  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from mpl_toolkits.axes_grid1 import make_axes_locatable  # noqa: E402

from trustmass.report.style import STYLE, as_float, empty, population_label, save, select_population  # noqa: E402

__all__ = ["figure1", "figure2", "save"]


# ============================================================================================ Figure 1


def figure1(summary: pl.DataFrame, population: str = "primary") -> Figure:
    """Figure 1 from the ``fig1`` summary frame (one group of bars per model)."""
    frame = select_population(summary, population, "figure 1").sort(["model", "budget"])
    models = frame["model"].unique(maintain_order=True).to_list()
    with plt.rc_context(STYLE["rc"]):
        w, h = STYLE["fig1_panel_size"]
        fig = plt.figure(figsize=(max(4.8, 1.2 + w * max(len(models), 1)), h * sum(STYLE["fig1_height_ratios"]) + 2.0))
        if frame.height == 0:
            return empty(fig, "Figure 1: no enumerated-budget records in this population")
        full, zoom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": STYLE["fig1_height_ratios"]})
        ticks, labels, centers = [], [], []
        x0 = 0.0
        for model in models:
            rows = frame.filter(pl.col("model") == model)
            xs = x0 + np.arange(rows.height)
            for x, r in zip(xs, rows.iter_rows(named=True)):
                _draw_bar(full, x, r, annotate=False)
                _draw_bar(zoom, x, r, annotate=True)
                ticks.append(x)
                labels.append(f"s={r['budget']}")
            centers.append((xs.mean(), model))
            x0 = xs[-1] + 1.8
        lows = [
            as_float(v) for v in frame["median_remainder_low"].to_list() + frame["median_bal_residual_low"].to_list()
        ]
        lows = [v for v in lows if not math.isnan(v)] or [0.9]
        bottom = min(lows)
        bottom -= STYLE["zoom_margin"] * (1.0 - bottom) + 1e-3
        zoom.set_ylim(max(0.0, bottom), 1.0 + 0.12 * (1.0 - bottom))
        full.set_ylim(0.0, 1.08)
        for ax in (full, zoom):
            ax.axhline(1.0, color=STYLE["whisker_color"], lw=0.6, ls=":")
            ax.set_xticks(ticks, labels)
        full.set_ylabel("residual error\n(top-mass = 1, dense = 0)")
        zoom.set_ylabel("residual error (zoom)")
        for center, model in centers:
            zoom.annotate(
                model,
                (center, 0),
                xycoords=("data", "axes fraction"),
                xytext=(0, -24),
                textcoords="offset points",
                ha="center",
                va="top",
                fontweight="bold",
            )
        handles = [
            Patch(color=STYLE["remainder_color"], label="median remainder ES_pool / es(A*_s)"),
            Patch(color=STYLE["cap_color"], label="median closable share ĉ (lower bound on c)"),
            Line2D(
                [],
                [],
                color=STYLE["balancing_color"],
                marker="D",
                ls="",
                label="median balancing residual es(A_bal) / es(A*_s)",
            ),
            Line2D(
                [],
                [],
                color=STYLE["whisker_color"],
                marker="|",
                ls="",
                markersize=9,
                label="95% document-cluster bootstrap interval",
            ),
        ]
        fig.suptitle(f"Figure 1 — closable ceiling by budget\n{population_label(population, frame)}", fontsize=10)
        fig.tight_layout(rect=(0, STYLE["fig1_legend_space"], 1, 1))
        fig.legend(handles=handles, loc="lower center", ncol=1, frameon=False)
    return fig


def _draw_bar(ax, x: float, r: Mapping, annotate: bool) -> None:
    width = STYLE["bar_width"]
    rem = as_float(r["median_remainder"])
    ax.bar(x, rem, width, color=STYLE["remainder_color"], zorder=1)
    ax.bar(x, 1.0 - rem, width, bottom=rem, color=STYLE["cap_color"], zorder=1)
    lo, hi = as_float(r["median_remainder_low"]), as_float(r["median_remainder_high"])
    if not (math.isnan(lo) or math.isnan(hi)):
        ax.errorbar(
            x - width / 5,
            rem,
            yerr=[[rem - lo], [hi - rem]],
            fmt="none",
            ecolor=STYLE["whisker_color"],
            elinewidth=0.9,
            capsize=2.5,
            zorder=3,
        )
    bal = as_float(r["median_bal_residual"])
    blo, bhi = as_float(r["median_bal_residual_low"]), as_float(r["median_bal_residual_high"])
    if not math.isnan(bal):
        yerr = None if math.isnan(blo) else [[bal - blo], [bhi - bal]]
        ax.errorbar(
            x + width / 5,
            bal,
            yerr=yerr,
            fmt="D",
            color=STYLE["balancing_color"],
            markersize=3.5,
            elinewidth=0.9,
            capsize=2.5,
            zorder=4,
        )
    if annotate:
        c = as_float(r["median_c_hat"])
        ax.annotate(
            f"ĉ={c:.3f}", (x, 1.0), xytext=(0, 3), textcoords="offset points", ha="center", va="bottom", fontsize=7
        )


# ============================================================================================ Figure 2


def figure2(summary: pl.DataFrame, population: str = "primary") -> Figure:
    """Figure 2 from the ``fig2`` summary frame: one row of two heatmaps per model."""
    frame = select_population(summary, population, "figure 2")
    models = sorted(frame["model"].unique().to_list())
    with plt.rc_context(STYLE["rc"]):
        if not models:
            return empty(plt.figure(figsize=(6, 3)), "Figure 2: no records at the map budget in this population")
        grids = {m: _grid(frame.filter(pl.col("model") == m)) for m in models}
        cell = STYLE["fig2_cell_inches"]
        min_w, min_h = STYLE["fig2_min_panel"]
        width = max(max(min_w, cell * g["mass"].shape[1] + 1.4) for g in grids.values())
        heights = [max(min_h, cell * g["mass"].shape[0] + 1.2) for g in grids.values()]
        fig = plt.figure(figsize=(2 * width + 0.6, sum(heights) + 0.5))
        axes = fig.subplots(len(models), 2, squeeze=False, gridspec_kw={"height_ratios": heights})
        lo, hi = STYLE["kappa_span"]
        for (left, right), model in zip(axes, models):
            g, rows = grids[model], frame.filter(pl.col("model") == model)
            first = rows.row(0, named=True)
            budget = first["budget"]
            _heatmap(
                fig,
                left,
                g,
                "mass",
                Normalize(0.0, 1.0),
                STYLE["mass_cmap"],
                f"median dropped mass m̄ at s = {budget}",
                "flat",
                STYLE["flat_marker"],
            )
            _heatmap(
                fig,
                right,
                g,
                "kappa",
                Normalize(lo, hi),
                STYLE["kappa_cmap"],
                f"median κ̂ at s = {budget} (≥ {hi:g} saturates)",
                "label",
                STYLE["label_marker"],
            )
            auc = first["cell_auc"]
            auc_text = "n/a" if auc is None else f"{auc:.3f}"
            left.set_title(
                f"{model}: median dropped mass\n{first['n_flat']} flat cells (m̄ > {first['flat_mass']:g}, □)"
                f"\n{first['n_cells']} cells, median {rows['n'].median():g} instances per cell",
                loc="left",
            )
            right.set_title(
                f"{model}: median κ̂\n{first['n_labelled_cells']} cells with median κ̂ ≥ {first['kappa_threshold']:g} (●)"
                f"\ncell-level AUC(m̄ → label) = {auc_text}",
                loc="left",
            )
        fig.suptitle(f"Figure 2 — the map, layer × query head; {population_label(population, frame)}", fontsize=10)
        fig.tight_layout(rect=(0, 0, 1, 1 - 0.4 / fig.get_figheight()))  # room for the suptitle
    return fig


def _grid(rows: pl.DataFrame) -> dict:
    layers = int(rows["layer"].max()) + 1
    heads = int(rows["head"].max()) + 1
    out = {k: np.full((layers, heads), np.nan) for k in ("mass", "kappa")}
    out.update(flat=np.zeros((layers, heads), dtype=bool), label=np.zeros((layers, heads), dtype=bool))
    for r in rows.iter_rows(named=True):
        i, j = r["layer"], r["head"]
        out["mass"][i, j] = as_float(r["median_dropped_mass"])
        out["kappa"][i, j] = as_float(r["median_kappa_hat"])
        out["flat"][i, j] = bool(r["flat"])
        out["label"][i, j] = bool(r["label"])
    return out


def _heatmap(
    fig: Figure, ax, grid: dict, key: str, norm: Normalize, cmap: str, bar_label: str, mark: str, marker: dict
) -> None:
    data = grid[key]
    image = ax.imshow(np.ma.masked_invalid(data), cmap=cmap, norm=norm, aspect="auto", interpolation="nearest")
    ys, xs = np.nonzero(grid[mark])
    ax.scatter(xs, ys, **marker)
    ax.set_xlabel("query head")
    ax.set_ylabel("layer")
    n_layers, n_heads = data.shape
    ax.set_xticks(range(n_heads))
    step = max(1, math.ceil(n_layers / 16))
    ax.set_yticks(range(0, n_layers, step))
    cax = make_axes_locatable(ax).append_axes("right", size=STYLE["fig2_colorbar_size"], pad=0.08)
    bar = fig.colorbar(image, cax=cax, extend="max" if key == "kappa" else "neither")
    bar.set_label(bar_label)
