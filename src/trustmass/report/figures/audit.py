"""The audit stage's figure (Figure 3), drawn from its statistics frames (:mod:`trustmass.report.frames.audit`)
in the one style (:mod:`trustmass.report.style`).

- :func:`figure3` — deployed selectors' excess (paper: ``c8_method_headroom.png``, App C): left, ROC
  curves of dropped mass predicting each rule's label ``es_rule > thr·ES_pool`` at s = 8 on the first
  model, plus the certificate (top-mass's own ``kappa_hat > thr``); right, AUC pooled over the
  enumerated budgets per (model, rule) with 95% document-cluster intervals, the paper's band shaded
  (claim 35, passed in: never typed here), chance dashed.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # no display: figures are files

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from trustmass.report.style import STYLE, save  # noqa: E402

__all__ = ["figure3", "save"]


# ============================================================================================ Figure 3


def figure3(
    roc: pl.DataFrame, table: pl.DataFrame, population: str = "primary", band: tuple[float, float] | None = None
) -> Figure:
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
                left.plot(
                    g["fpr"].to_numpy(),
                    g["tpr"].to_numpy(),
                    color=_rule_color(rule, order),
                    lw=1.2,
                    ls="--" if rule == "certificate" else "-",
                    label=lab,
                )
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
            right.axvspan(
                *band,
                color=STYLE["band_color"],
                zorder=0,
                label=f"the paper's AUC of m̄_s, headline families: {band[0]:g}–{band[1]:g}",
            )
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
        right.set_yticklabels(
            [
                f"{_rule_label(r).split(' (')[0]} · {m}" if len(tmodels) > 1 else _rule_label(r).split(" (")[0]
                for m, r in rows
            ]
        )
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
