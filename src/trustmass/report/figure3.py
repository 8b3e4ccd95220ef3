"""Figure 3 of the paper (``c8_method_headroom.png``): deployed selectors' excess (App C).

Drawn from the audit summaries (:mod:`trustmass.report.audit_stats`); imports nothing from them, so
restyling (:data:`STYLE`) reruns only the plotting rule.

- Left: ROC curves of dropped mass predicting each rule's label ``es_rule > thr·ES_pool`` at s = 8
  on the first model, plus the certificate (top-mass's own ``kappa_hat > thr``).
- Right: AUC pooled over the enumerated budgets per (model, rule) with 95% document-cluster
  bootstrap intervals; the certificate row; the paper's §2.3 band 0.76-0.85 grey; chance dashed.
"""

from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from trustmass.plumbing.provenance import atomic_write  # noqa: E402

__all__ = ["STYLE", "plot_fig3", "save"]

STYLE: dict = {
    "rc": {"font.size": 9, "axes.titlesize": 10, "legend.fontsize": 7, "axes.spines.top": False, "axes.spines.right": False},
    "dpi": 200,
    "size": (10.0, 4.2),
    "band": (0.76, 0.85),
    "band_color": "#d9d9d9",
    "colors": {
        "snapkv": "#1f77b4", "h2o": "#ff7f0e", "quest": "#2ca02c", "streaming_llm": "#d62728",
        "recency": "#8c564b", "certificate": "#000000",
    },  # fmt: skip
    "labels": {
        "snapkv": "SnapKV", "h2o": "H2O", "quest": "Quest", "streaming_llm": "StreamingLLM",
        "recency": "recency (positional control)", "certificate": "certificate (top-mass κ̂ > 1.11)",
    },  # fmt: skip
}
ORDER = ("snapkv", "h2o", "quest", "streaming_llm", "recency", "certificate")


def plot_fig3(roc: pl.DataFrame, table: pl.DataFrame, population: str = "primary") -> Figure:
    """Figure 3 from the ``fig3_roc`` and ``audit_table`` frames."""
    with plt.rc_context(STYLE["rc"]):
        fig, (left, right) = plt.subplots(1, 2, figsize=STYLE["size"], gridspec_kw={"width_ratios": (1, 1.3)})
        models = sorted(roc["model"].unique().to_list()) if roc.height else []
        budget = int(roc["budget"][0]) if roc.height else 8
        if models:
            first = roc.filter(pl.col("model") == models[0])
            for rule in ORDER:
                g = first.filter(pl.col("rule") == rule)
                if g.height == 0 or g["fpr"].is_null().all():
                    continue
                auc = g["auc"][0]
                lab = f"{STYLE['labels'][rule]} (AUC {auc:.2f})" if auc is not None else STYLE["labels"][rule]
                left.plot(g["fpr"].to_numpy(), g["tpr"].to_numpy(), color=STYLE["colors"][rule], lw=1.2,
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

        t = table.filter(pl.col("population") == population, pl.col("budget").is_null(), pl.col("rule").is_in(list(ORDER)))
        tmodels = sorted(t["model"].unique().to_list())
        right.axvspan(*STYLE["band"], color=STYLE["band_color"], zorder=0, label="§2.3 certificate AUC band 0.76–0.85")
        right.axvline(0.5, color="grey", ls="--", lw=0.9, label="chance")
        rows = [(m, r) for m in tmodels for r in ORDER if t.filter(pl.col("model") == m, pl.col("rule") == r).height]
        for y, (m, r) in enumerate(rows):
            rec = t.filter(pl.col("model") == m, pl.col("rule") == r).row(0, named=True)
            if rec["auc"] is None:
                continue
            lo = rec["auc"] - rec["auc_low"] if rec["auc_low"] is not None else 0.0
            hi = rec["auc_high"] - rec["auc"] if rec["auc_high"] is not None else 0.0
            right.errorbar(rec["auc"], y, xerr=[[lo], [hi]], fmt="o", color=STYLE["colors"][r], ms=4, capsize=2)
        right.set_yticks(np.arange(len(rows)))
        right.set_yticklabels([f"{STYLE['labels'][r].split(' (')[0]} · {m}" if len(tmodels) > 1 else STYLE["labels"][r].split(" (")[0] for m, r in rows])
        right.invert_yaxis()
        right.set_xlim(0.0, 1.0)
        right.set_xlabel("AUC of dropped mass (pooled over s ≤ 32), 95% doc-cluster CI")
        right.set_title("pooled AUC per model")
        right.legend(loc="upper left", bbox_to_anchor=(0.0, -0.16), ncol=2, frameon=False)
        fig.tight_layout()
    return fig


def save(fig: Figure, path: str | os.PathLike) -> None:
    with atomic_write(path) as tmp:
        fig.savefig(tmp, dpi=STYLE["dpi"], format="png")
    plt.close(fig)
