"""The held-out loss table (paper spec §6): per-document CE and the loss table's rows.

Per (model, document, configuration) the continuation CE is the mean token NLL; a model's CE is
the mean over its held-out documents.  Every derived quantity is computed on the same document
resamples (the paired document-cluster bootstrap, spec §7.5, :class:`Replicates`):

* ``delta_vs_top = CE(X) - CE(top_mass)``; ``gain = -delta_vs_top``;
* ``share = gain(X) / gain(all_cell)`` (Figure 4's percentages);
* for ``<rule>+flat``: ``delta_vs_rule = CE(rule+flat) - CE(rule)`` and the recovered gap
  ``(CE(rule) - CE(rule+flat)) / (CE(rule) - CE(all_cell))``;
* ``random`` is the mean over the random-cell seeds, per document, before anything else;
* ``keep_all``: ``max_abs_vs_dense`` is the largest token NLL difference from the dense model and
  ``max_ce_vs_dense`` the largest per-document CE difference (the operator's unit test at model
  scale: float32 roundings of two attention paths, compounded over the layers).

The curvature, the probe and the claims built on this table are :mod:`trustmass.report.frames.loss`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl

from trustmass.core.stats import ClusterIndex, percentile_interval
from trustmass.report.engine import StatisticsSettings, frame_from_rows, interval_columns

RANDOM = "random"
ALL_CELL = "all_cell"
POPULATION = "all"  # every held-out document (the claims' heldout_docs population)
LOSS_TABLE_SCHEMA = {
    "model": pl.Utf8,
    "population": pl.Utf8,
    "budget": pl.Int64,
    "config": pl.Utf8,
    "base_rule": pl.Utf8,
    "switch_rule": pl.Utf8,
    "cells": pl.Utf8,
    "accounting": pl.Utf8,
    "n_docs": pl.Int64,
    "n": pl.Int64,
    "n_cells_switched": pl.Int64,
    "n_seeds": pl.Int64,
    **interval_columns("ce", "delta_vs_top", "share", "delta_vs_rule", "gap_recovered"),
    "gain": pl.Float64,
    "max_abs_vs_dense": pl.Float64,
    "max_ce_vs_dense": pl.Float64,
}


def document_ce(tokens: pl.DataFrame) -> pl.DataFrame:
    """CE per (model, corpus, doc, configuration), with the random seeds' mean as config ``random``
    (and the budget the tokens were decoded at, null where they do not say)."""
    for name, dtype in (("alpha", pl.Float64), ("budget", pl.Int64)):
        if name not in tokens.columns:
            tokens = tokens.with_columns(pl.lit(None, dtype=dtype).alias(name))
    keys = ["model", "corpus", "doc", "config", "base_rule", "switch_rule", "cells", "accounting", "alpha", "budget"]
    per_doc = tokens.group_by(keys, maintain_order=True).agg(  # in input order: the table's rows are reproducible
        ce=pl.col("nll").mean(), n=pl.len(), n_cells_switched=pl.col("n_cells_switched").first(), n_seeds=pl.lit(1)
    )
    random = per_doc.filter(pl.col("cells") == RANDOM)
    if random.height:
        mean = (
            random.group_by([k for k in keys if k != "config"], maintain_order=True)
            .agg(
                ce=pl.col("ce").mean(),
                n=pl.col("n").sum(),
                n_cells_switched=pl.col("n_cells_switched").first(),
                n_seeds=pl.len(),
            )
            .with_columns(config=pl.lit(RANDOM))
        )
        per_doc = pl.concat(
            [per_doc.with_columns(pl.col("n_seeds").cast(pl.UInt32)), mean.select(per_doc.columns)],
            how="vertical_relaxed",
        )
    return per_doc.with_columns(cluster=pl.concat_str("corpus", "doc", separator="/"))


class Replicates:
    """Per-config means over documents (CE by default) of one model on shared document resamples
    (row 0: the estimate).  The resamples depend only on the seed and the number of documents, so
    two replicate sets over the same documents (say CE and a curvature prediction) are paired."""

    def __init__(self, per_doc: pl.DataFrame, settings: StatisticsSettings, on: str = "config", values: str = "ce"):
        wide = per_doc.pivot(on=on, index="cluster", values=values).sort("cluster")
        self.configs = [c for c in wide.columns if c != "cluster"]
        ce = wide.select(self.configs).to_numpy().astype(np.float64)  # [docs, configs]
        n_docs = ce.shape[0]
        weights = np.ones((1, n_docs))
        if settings.bootstrap:
            index = ClusterIndex(np.arange(n_docs))
            picks = index.draw(np.random.default_rng(settings.seed), settings.bootstrap)
            weights = np.vstack([weights, index.multiplicities(picks)])
        self.ce = (weights @ ce) / n_docs  # [1 + B, configs]
        self.level = settings.level

    def has(self, *configs: str) -> bool:
        return all(c in self.configs for c in configs)

    def of(self, config: str) -> np.ndarray:
        return self.ce[:, self.configs.index(config)]

    def interval(self, name: str, statistic: Callable[[], np.ndarray]) -> dict:
        with np.errstate(divide="ignore", invalid="ignore"):
            values = statistic()
        low, high = (None, None)
        if values.shape[0] > 1:
            low, high = percentile_interval(values[1:], self.level, nan_policy="omit")
        return {name: float(values[0]), f"{name}_low": low, f"{name}_high": high}


def loss_table(tokens: pl.DataFrame, settings: StatisticsSettings = StatisticsSettings()) -> pl.DataFrame:
    """One row per (model, configuration): CE, the change against top-mass, shares, recovered gaps."""
    per_doc = document_ce(tokens)
    rows = []
    for (model,), g in per_doc.group_by(["model"], maintain_order=True):
        reps = Replicates(g, settings)
        dense = tokens.filter(pl.col("model") == model)
        for cfg, c in g.group_by(["config"], maintain_order=True):
            name = cfg[0]
            first = c.row(0, named=True)
            out = {
                "model": model,
                "population": POPULATION,
                "budget": first["budget"],
                "config": name,
                "base_rule": first["base_rule"],
                "switch_rule": first["switch_rule"],
                "cells": first["cells"],
                "accounting": first["accounting"],
                "n_docs": c.height,
                "n": int(c["n"].sum()),
                "n_cells_switched": first["n_cells_switched"],
                "n_seeds": int(c["n_seeds"].max()),
                **reps.interval("ce", lambda name=name: reps.of(name)),
            }
            out.update(_relative(reps, name, first["base_rule"], first["switch_rule"], first["accounting"]))
            if name == "keep_all":
                out["max_abs_vs_dense"] = _max_abs_difference(dense, "keep_all", "dense")
                pair = g.filter(pl.col("config").is_in(["keep_all", "dense"])).pivot(
                    on="config", index="cluster", values="ce"
                )
                if "dense" in pair.columns:
                    out["max_ce_vs_dense"] = float((pair["keep_all"] - pair["dense"]).abs().max())
            rows.append(out)
    return frame_from_rows(rows, LOSS_TABLE_SCHEMA)


def _relative(reps: Replicates, name: str, base: str, switch: str | None, accounting: str | None) -> dict:
    """Changes against top-mass, shares of the all-cell gain and rules' recovered gaps, each against
    the configurations of the same accounting (``top_mass@cache_faithful`` for a cache-faithful row)."""
    suffix = "" if accounting in (None, "per_query") else f"@{accounting}"
    top_name, all_name = "top_mass" + suffix, ALL_CELL + suffix
    out = {}
    if reps.has(top_name):
        out.update(reps.interval("delta_vs_top", lambda: reps.of(name) - reps.of(top_name)))
        out["gain"] = -out["delta_vs_top"]
        if reps.has(all_name):
            top, all_cell = reps.of(top_name), reps.of(all_name)
            out.update(reps.interval("share", lambda: (top - reps.of(name)) / (top - all_cell)))
    if switch is not None and base not in ("top_mass", "probe") and reps.has(base + suffix, all_name):
        rule, all_cell = reps.of(base + suffix), reps.of(all_name)
        out.update(reps.interval("delta_vs_rule", lambda: reps.of(name) - rule))
        out.update(reps.interval("gap_recovered", lambda: (rule - reps.of(name)) / (rule - all_cell)))
    return out


def _max_abs_difference(tokens: pl.DataFrame, a: str, b: str) -> float | None:
    pair = tokens.filter(pl.col("config").is_in([a, b])).pivot(
        on="config", index=["corpus", "doc", "position"], values="nll"
    )
    if a not in pair.columns or b not in pair.columns:
        return None
    return float((pair[a] - pair[b]).abs().max())
