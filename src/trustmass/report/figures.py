"""The paper's figures, drawn from statistics frames (:mod:`trustmass.report.frames`) in the one style
(:mod:`trustmass.report.style`).  Each is a pure function ``frames -> matplotlib Figure``.

- :func:`figure1` — the ceiling (paper: ``b9_ceiling_sym.png``): per model a group of bars over the
  enumerated budgets.  The residual is normalised so that top-mass = 1 and dense attention = 0: the
  block is the median remainder ``ES_pool/es(A*_s)`` no candidate subset can close, the cap above it
  the median closable share ``c_hat``, the mark balancing's median residual ``es(A_bal)/es(A*_s)``;
  whiskers are document-cluster bootstrap 95% intervals.  A second panel zooms on the top of the bars.
- :func:`figure2` — the map (paper: ``b3_map_sym.png``): per model, layer x head heatmaps of the
  median dropped mass at the map budget (left) and the median ``kappa_hat`` (right), from the same
  records; flat cells and labelled cells are marked.
- :func:`figure3` — deployed selectors' excess (paper: ``c8_method_headroom.png``, App C): left, ROC
  curves of dropped mass predicting each rule's label ``es_rule > thr·ES_pool`` at s = 8 on the first
  model, plus the certificate (top-mass's own ``kappa_hat > thr``); right, AUC pooled over the
  enumerated budgets per (model, rule) with 95% document-cluster intervals, the paper's band shaded
  (claim 35, passed in: never typed here), chance dashed.
- :func:`figure4` — redirecting balancing to labelled cells (paper: App E Figure 4): left, per model
  the share of the all-cell gain kept by the map's flat cells, by random cell sets of the same size
  (mean over seeds; each seed a dot) and by all cells (1 by definition), with paired
  document-cluster 95% intervals and the paper's reference-family values (claim 125) marked; right,
  the held-out CE change against top-mass of every restricted configuration.
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

__all__ = ["figure1", "figure2", "figure3", "figure4", "save"]


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
        lows = [as_float(v) for v in frame["median_remainder_low"].to_list() + frame["median_bal_residual_low"].to_list()]
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
            zoom.annotate(model, (center, 0), xycoords=("data", "axes fraction"), xytext=(0, -24),
                          textcoords="offset points", ha="center", va="top", fontweight="bold")  # fmt: skip
        handles = [
            Patch(color=STYLE["remainder_color"], label="median remainder ES_pool / es(A*_s)"),
            Patch(color=STYLE["cap_color"], label="median closable share ĉ (lower bound on c)"),
            Line2D([], [], color=STYLE["balancing_color"], marker="D", ls="", label="median balancing residual es(A_bal) / es(A*_s)"),
            Line2D([], [], color=STYLE["whisker_color"], marker="|", ls="", markersize=9, label="95% document-cluster bootstrap interval"),
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
        ax.errorbar(x - width / 5, rem, yerr=[[rem - lo], [hi - rem]], fmt="none", ecolor=STYLE["whisker_color"],
                    elinewidth=0.9, capsize=2.5, zorder=3)  # fmt: skip
    bal = as_float(r["median_bal_residual"])
    blo, bhi = as_float(r["median_bal_residual_low"]), as_float(r["median_bal_residual_high"])
    if not math.isnan(bal):
        yerr = None if math.isnan(blo) else [[bal - blo], [bhi - bal]]
        ax.errorbar(x + width / 5, bal, yerr=yerr, fmt="D", color=STYLE["balancing_color"], markersize=3.5,
                    elinewidth=0.9, capsize=2.5, zorder=4)  # fmt: skip
    if annotate:
        c = as_float(r["median_c_hat"])
        ax.annotate(f"ĉ={c:.3f}", (x, 1.0), xytext=(0, 3), textcoords="offset points", ha="center", va="bottom", fontsize=7)


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
            _heatmap(fig, left, g, "mass", Normalize(0.0, 1.0), STYLE["mass_cmap"],
                     f"median dropped mass m̄ at s = {budget}", "flat", STYLE["flat_marker"])  # fmt: skip
            _heatmap(fig, right, g, "kappa", Normalize(lo, hi), STYLE["kappa_cmap"],
                     f"median κ̂ at s = {budget} (≥ {hi:g} saturates)", "label", STYLE["label_marker"])  # fmt: skip
            auc = first["cell_auc"]
            auc_text = "n/a" if auc is None else f"{auc:.3f}"
            left.set_title(f"{model}: median dropped mass\n{first['n_flat']} flat cells (m̄ > {first['flat_mass']:g}, □)"
                           f"\n{first['n_cells']} cells, median {rows['n'].median():g} instances per cell", loc="left")  # fmt: skip
            right.set_title(f"{model}: median κ̂\n{first['n_labelled_cells']} cells with median κ̂ ≥ {first['kappa_threshold']:g} (●)"
                            f"\ncell-level AUC(m̄ → label) = {auc_text}", loc="left")  # fmt: skip
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


def _heatmap(fig: Figure, ax, grid: dict, key: str, norm: Normalize, cmap: str, bar_label: str, mark: str, marker: dict) -> None:
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


# ============================================================================================ Figure 3


def figure3(roc: pl.DataFrame, table: pl.DataFrame, population: str = "primary", band: tuple[float, float] | None = None) -> Figure:
    """Figure 3 from the ``fig3_roc`` and ``audit_table`` frames; ``band`` is the paper's AUC range of
    the dropped mass for the headline families (claim 35), shaded for comparison."""
    with plt.rc_context({**STYLE["rc"], "legend.fontsize": STYLE["fig3_legend_fontsize"]}):
        fig, (left, right) = plt.subplots(1, 2, figsize=STYLE["fig3_size"], gridspec_kw={"width_ratios": (1, 1.3)})
        models = sorted(roc["model"].unique().to_list()) if roc.height else []
        budget = int(roc["budget"][0]) if roc.height else 8
        # the rules the audit's contracts mark for Figure 3, in their order (the ROC frame's "order")
        order = roc.select("rule", "order").unique().sort("order")["rule"].to_list() if roc.height else []
        if models:
            first = roc.filter(pl.col("model") == models[0])
            for rule in order:
                g = first.filter(pl.col("rule") == rule)
                if g.height == 0 or g["fpr"].is_null().all():
                    continue
                auc = g["auc"][0]
                lab = f"{_rule_label(rule)} (AUC {auc:.2f})" if auc is not None else _rule_label(rule)
                left.plot(g["fpr"].to_numpy(), g["tpr"].to_numpy(), color=_rule_color(rule, order), lw=1.2,
                          ls="--" if rule == "certificate" else "-", label=lab)  # fmt: skip
            left.set_title(f"ROC of dropped mass for each rule's label, s = {budget}\n{models[0]}")
        else:
            left.text(0.5, 0.5, "no ROC data", ha="center", transform=left.transAxes)
        left.plot([0, 1], [0, 1], color="grey", lw=0.8, ls=":")
        left.set_xlabel("false-positive rate")
        left.set_ylabel("true-positive rate")
        left.set_xlim(0, 1)
        left.set_ylim(0, 1)
        left.legend(loc="lower right")

        t = table.filter(pl.col("population") == population, pl.col("budget").is_null(), pl.col("rule").is_in(order))
        tmodels = sorted(t["model"].unique().to_list())
        if band is not None:
            right.axvspan(*band, color=STYLE["band_color"], zorder=0, label=f"the paper's AUC of m̄_s, headline families: {band[0]:g}–{band[1]:g}")
        right.axvline(0.5, color="grey", ls="--", lw=0.9, label="chance")
        rows = [(m, r) for m in tmodels for r in order if t.filter(pl.col("model") == m, pl.col("rule") == r).height]
        for y, (m, r) in enumerate(rows):
            rec = t.filter(pl.col("model") == m, pl.col("rule") == r).row(0, named=True)
            if rec["auc"] is None:
                continue
            lo = rec["auc"] - rec["auc_low"] if rec["auc_low"] is not None else 0.0
            hi = rec["auc_high"] - rec["auc"] if rec["auc_high"] is not None else 0.0
            right.errorbar(rec["auc"], y, xerr=[[lo], [hi]], fmt="o", color=_rule_color(r, order), ms=4, capsize=2)
        right.set_yticks(np.arange(len(rows)))
        right.set_yticklabels([f"{_rule_label(r).split(' (')[0]} · {m}" if len(tmodels) > 1 else _rule_label(r).split(" (")[0] for m, r in rows])
        right.invert_yaxis()
        right.set_xlim(0.0, 1.0)
        right.set_xlabel("AUC of dropped mass (pooled over s ≤ 32), 95% doc-cluster CI")
        right.set_title("pooled AUC per model")
        right.legend(loc="upper left", bbox_to_anchor=(0.0, -0.16), ncol=2, frameon=False)
        fig.tight_layout()
    return fig


def _rule_label(rule: str) -> str:
    return STYLE["rule_labels"].get(rule, rule)


def _rule_color(rule: str, order: list[str]):
    """The style's colour of a rule; a rule the style does not know takes one from the colour cycle."""
    return STYLE["rule_colors"].get(rule, plt.cm.tab10(order.index(rule) % 10))


# ============================================================================================ Figure 4

_FIG4_SETS = (("flat_switch", "map (flat cells)"), ("random", "random cells, same count"), ("all_cell", "all cells"))


def figure4(table: pl.DataFrame, population: str = "all", paper_map: float | None = None, paper_random: float | None = None) -> Figure:
    """Figure 4 from the ``loss_table`` frame; ``paper_map`` / ``paper_random`` are the paper's shares
    (percent) on its reference family (claim 125), drawn as reference ticks."""
    t = table.filter(pl.col("accounting") == "per_query")
    models = sorted(t["model"].unique().to_list())
    width_in, height_in = STYLE["fig4_size"]
    rows = _ce_rows(t).height  # the right panel: one row per (model, configuration), about 0.2 in each
    with plt.rc_context(STYLE["rc"]):
        fig, (left, right) = plt.subplots(1, 2, figsize=(width_in, max(height_in, 1.6 + 0.2 * rows)),
                                          gridspec_kw={"width_ratios": (1, 1.4)})  # fmt: skip
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
                left.axhline(value / 100.0, color=STYLE["fig4_colors"][key], ls=":", lw=1.0,
                             label=f"paper, reference family: {key.replace('_', ' ')} {value:g}%")  # fmt: skip
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
        ax.errorbar(x, y, yerr=[[y - max(lo, bottom)], [min(hi, top) - y]], fmt="none", capsize=2, color="black", lw=1.0)
        for end, edge, va in ((lo, bottom, "bottom"), (hi, top, "top")):
            if (end < bottom) if va == "bottom" else (end > top):
                ax.annotate(f"{end:.2g}", (x, edge), xytext=(2, 2 if va == "bottom" else -2), textcoords="offset points",
                            ha="left", va=va, fontsize=6)  # fmt: skip


def _record(t: pl.DataFrame, model: str, config: str) -> dict | None:
    rows = t.filter(pl.col("model") == model, pl.col("config") == config)
    return rows.row(0, named=True) if rows.height else None


def _ce_rows(t: pl.DataFrame) -> pl.DataFrame:
    """The restricted configurations the right panel shows (random cells: their pooled row only)."""
    return t.filter(pl.col("delta_vs_top").is_not_null(), ~pl.col("config").is_in(["top_mass", "keep_all", "dense"]),
                    ~((pl.col("cells") == "random") & (pl.col("config") != "random"))).sort(["model", "config"])  # fmt: skip


def _ce_changes(ax, t: pl.DataFrame, models: list[str]) -> None:
    """CE(X) - CE(top-mass) with intervals, one row per (model, restricted configuration)."""
    labels = []
    for y, rec in enumerate(_ce_rows(t).iter_rows(named=True)):
        lo = rec["delta_vs_top"] - as_float(rec["delta_vs_top_low"]) if rec["delta_vs_top_low"] is not None else 0.0
        hi = as_float(rec["delta_vs_top_high"]) - rec["delta_vs_top"] if rec["delta_vs_top_high"] is not None else 0.0
        ax.errorbar(rec["delta_vs_top"], y, xerr=[[lo], [hi]], fmt="o", ms=3.5, capsize=2,
                    color=STYLE["fig4_colors"].get(rec["config"], STYLE["whisker_color"]))  # fmt: skip
        labels.append(rec["config"] if len(models) == 1 else f"{rec['config']} · {rec['model']}")
    ax.axvline(0.0, color="grey", ls="--", lw=0.9)
    ax.set_yticks(np.arange(len(labels)))
    ax.set_yticklabels(labels)
    ax.invert_yaxis()
    ax.set_xlabel("held-out CE − CE(top-mass), nats (95% paired doc-cluster CI)")
    ax.set_title("every restricted configuration")
