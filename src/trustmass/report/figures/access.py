"""The access-law figure (related-methods A.4 Stage I), drawn from the ``access_layers`` and
``access_dilution`` frames (:mod:`trustmass.report.frames.access`) in the one style.

Per model, three panels: (left) the median over heads and documents of TV(p*, law) per layer for the
laws the prefill offers as estimates of the first decode step's access law p* -- the last prefill row
p_T (with its interquartile band), the tail means of the last K rows, the full mixture (normalised
cumulative attention C) and count-debiased C; (middle) TV(p_T, law) per layer, the term of Prop. 3 the
prefill alone measures; (right) head-sum dilution on the task contexts: r_eff, the participation ratio
of the per-head masses on the planted target, per layer and context, against H (every head alike)
and 1 (one head).  Left and middle show the headline population.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from trustmass.report.style import STYLE, empty, save  # noqa: E402

__all__ = ["access_figure", "save"]

LAW_LABELS = {
    "last": "p_T (last prefill row)",
    "all": "full mixture (C normalised)",
    "debiased": "C_i/(T−i) normalised",
    "decode": "p* (first decode row)",
}


def access_figure(layers: pl.DataFrame, dilution: pl.DataFrame, population: str = "all") -> Figure:
    """The figure from the two frames (``population`` is not used: the frames hold every document)."""
    shown = layers.filter(pl.col("headline"))
    models = sorted(set(shown["model"].unique().to_list()) | set(dilution["model"].unique().to_list()))
    with plt.rc_context(STYLE["rc"]):
        w, h = STYLE["access_panel_size"]
        fig = plt.figure(figsize=(3 * w + 0.6, h * max(len(models), 1) + 0.9))
        if not models:
            return empty(fig, "access laws: no records (access_law.enabled is false, or nothing was captured)")
        axes = np.atleast_2d(fig.subplots(len(models), 3, squeeze=False))
        for row, model in zip(axes, models):
            frame = shown.filter(pl.col("model") == model)
            corpus = ", ".join(sorted(frame["corpus"].unique().to_list())) or "no headline documents"
            _by_layer(row[0], frame, "tv_decode", exclude="decode")
            row[0].set_title(f"{model}, {corpus}: TV(p*, law)")
            _by_layer(row[1], frame, "tv_last", exclude="last")
            row[1].set_title("TV(p_T, law): Prop. 3's prefill term")
            _dilution(row[2], dilution.filter(pl.col("model") == model))
        legend = {}
        for ax in axes[0][:2]:  # every law once, from the two TV panels
            for handle, label in zip(*ax.get_legend_handles_labels()):
                legend.setdefault(label, handle)
        fig.tight_layout(rect=(0, 0.1, 1, 1))
        fig.legend(list(legend.values()), list(legend), loc="lower center", ncol=4, frameon=False)
    return fig


def _tail_color(k: int, ks: list[int]):
    shade = 0.45 + 0.5 * (ks.index(k) + 1) / len(ks)
    return plt.get_cmap(STYLE["access_tail_cmap"])(shade)


def _by_layer(ax, frame: pl.DataFrame, column: str, exclude: str) -> None:
    """Median ``column`` per layer, one line per law (the tail means shaded by K)."""
    ks = sorted(frame.filter(pl.col("law") == "tail")["tail_rows"].unique().to_list())
    for law in ("last", "tail", "all", "debiased", "decode"):
        if law == exclude:
            continue
        for k in ks if law == "tail" else [None]:
            g = frame.filter(
                (pl.col("law") == law) & (pl.col("tail_rows") == k if k is not None else pl.col("tail_rows").is_null())
            )
            if g.height == 0:
                continue
            g = g.sort("layer")
            color = _tail_color(k, ks) if law == "tail" else STYLE["access_law_colors"][law]
            label = f"mean of the last {k} rows" if law == "tail" else LAW_LABELS[law]
            ax.plot(g["layer"].to_numpy(), g[column].to_numpy(), color=color, lw=1.3, label=label)
            if law == "last" or (law == "decode" and exclude == "last"):
                ax.fill_between(
                    g["layer"].to_numpy(),
                    g[f"{column}_q25"].to_numpy(),
                    g[f"{column}_q75"].to_numpy(),
                    color=color,
                    alpha=STYLE["access_band_alpha"],
                    lw=0,
                )
    ax.set_xlabel("layer")
    ax.set_ylabel("total variation (median over heads, documents)")
    ax.set_ylim(0, 1)


def _dilution(ax, frame: pl.DataFrame) -> None:
    """r_eff per layer, one line per task context, with H and 1 marked."""
    if frame.height == 0:
        ax.text(0.5, 0.5, "no task contexts with a planted target", ha="center", va="center", transform=ax.transAxes)
        ax.axis("off")
        return
    colors = STYLE["access_doc_colors"]
    for i, ((doc, task, target), g) in enumerate(
        sorted(frame.group_by(["doc", "task", "target"]), key=lambda kg: kg[0])
    ):
        g = g.sort("layer")
        ax.plot(
            g["layer"].to_numpy(),
            g["r_eff"].to_numpy(),
            color=colors[i % len(colors)],
            lw=1.2,
            marker="o",
            ms=2.5,
            label=f"{task} (i* = {target})",
        )
    heads = int(frame["n_heads"].max())
    ax.axhline(heads, color="grey", ls="--", lw=0.9)
    ax.axhline(1.0, color="grey", ls=":", lw=0.9)
    ax.text(0.01, heads, f"H = {heads}", va="bottom", fontsize=7, transform=ax.get_yaxis_transform())
    ax.set_ylim(0, heads + 1)
    ax.set_xlabel("layer")
    ax.set_ylabel("r_eff = (Σ_h m_h)² / Σ_h m_h²")
    rows = int(frame["dilution_rows"].max())
    ax.set_title(f"head-sum dilution on the planted target\n(m_h over the last {rows} rows)")
    ax.legend(loc="upper right", bbox_to_anchor=(1.0, 0.88), fontsize=6, frameon=False)
