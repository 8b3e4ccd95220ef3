"""The one statistics engine of the reporting layer: populations, groups, intervals, frames.

Every statistics frame of the study (ceiling, audit, certification) is made with these pieces:

- :class:`StatisticsSettings` -- what the statistics read from the config (threshold, bootstrap, seed,
  primary slice, map budget, ...);
- :class:`HeadlinePopulation` -- the study's headline families and headline corpus: the population of
  Figure 1, Table 8 and the headline claims (Table 2 alone compares corpora);
- :func:`with_document_columns` -- ``cluster`` (the document: ``corpus/doc``) and ``primary`` (the first
  ``primary_docs`` documents of each (model, corpus)) on any per-row frame;
- :func:`populations` / :func:`groups` / :func:`per_group` -- the two populations every statistic is
  computed on (spec §11.3: ``primary`` and ``all``) and the groups within them;
- :class:`GroupStatistics` -- median, quantile, share, AUC, Spearman and counts of one group, with
  document-cluster bootstrap 95 % percentile intervals (spec §7.5) that all use the same resamples;
- :func:`frame_from_rows` / :func:`interval_columns` -- rows as a frame with a fixed schema.

Degenerate rows (column ``degenerate``) are left out of every statistic and counted; missing values
(nulls) of the column a statistic reads are dropped for that statistic only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import polars as pl

from trustmass.core.bootstrap_closed_form import cluster_bootstrap_auc, cluster_bootstrap_quantile
from trustmass.core.config_conflict import ConfigConflict
from trustmass.core.stats import (
    ClusterIndex,
    auc_from_codes,
    median,
    percentile_interval,
    quantile,
    score_codes,
    spearman,
)
from trustmass.plan.headline import Headline
from trustmass.plumbing.config import embedded_default

__all__ = [
    "COUNT_COLUMNS",
    "POOLED",
    "POPULATIONS",
    "GroupStatistics",
    "HeadlinePopulation",
    "StatisticsSettings",
    "bootstrap_mean",
    "frame_from_rows",
    "groups",
    "interval_columns",
    "models_of",
    "per_group",
    "populations",
    "with_document_columns",
]

#: the two populations every statistic is computed on (spec §11.3)
POPULATIONS = ("primary", "all")
#: ``model`` value of rows pooled over every model (Table 1's last row)
POOLED = "(pooled)"
#: the counts every statistics row carries
COUNT_COLUMNS = {"n": pl.Int64, "n_docs": pl.Int64, "n_degenerate": pl.Int64}


_DEFAULT = embedded_default()  # config.yaml: the defaults below are its values, not copies


@dataclass(frozen=True)
class StatisticsSettings:
    """Everything the statistics read from the config (defaults: config.yaml's, the paper's protocol)."""

    kappa_threshold: float = _DEFAULT["labels"]["kappa_threshold"]
    bootstrap: int = _DEFAULT["statistics"]["bootstrap"]  # B; 0 = no intervals
    level: float = _DEFAULT["statistics"]["level"]
    seed: int = _DEFAULT["seed"]
    primary_docs: int = _DEFAULT["statistics"]["primary_docs"]
    map_budget: int = _DEFAULT["statistics"]["map_budget"]
    flat_mass: float = _DEFAULT["statistics"]["flat_mass"]
    edge_layers: int = _DEFAULT["statistics"]["edge_layers"]

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> StatisticsSettings:
        """From the resolved workflow config (keys ``seed``, ``labels``, ``statistics``)."""
        stats = config.get("statistics", {}) or {}
        known = {f for f in cls.__dataclass_fields__ if f not in ("kappa_threshold", "seed")}
        unknown = sorted(set(stats) - known - {"figure_population"})
        if unknown:
            raise ConfigConflict(
                f"config.statistics: unknown keys {unknown}; known: {sorted(known)}; fix: remove or rename them",
                fields=("statistics",),
            )
        base = cls(
            kappa_threshold=float(config.get("labels", {}).get("kappa_threshold", cls.kappa_threshold)),
            seed=int(config.get("seed", cls.seed)),
        )
        return replace(base, **{k: v for k, v in stats.items() if k in known})


@dataclass(frozen=True)
class HeadlinePopulation(Headline):
    """The study's headline population (:class:`trustmass.plan.Headline`), selecting rows of a frame."""

    def families(self, frame: pl.DataFrame) -> pl.DataFrame:
        """The rows of the headline families (every corpus: Table 2's population)."""
        return frame.filter(pl.col("model").is_in(list(self.models))) if self.models else frame

    def select(self, frame: pl.DataFrame) -> pl.DataFrame:
        """The rows of the headline families on the headline corpus."""
        out = self.families(frame)
        return out.filter(pl.col("corpus") == self.corpus) if self.corpus is not None else out


def with_document_columns(frame: pl.DataFrame, primary_docs: int) -> pl.DataFrame:
    """Adds ``cluster`` (the document, ``corpus/doc``: the bootstrap's resampling unit) and
    ``primary`` (among the first ``primary_docs`` documents of its (model, corpus), by doc id)."""
    return frame.with_columns(
        cluster=pl.concat_str([pl.col("corpus").cast(pl.Utf8), pl.col("doc").cast(pl.Utf8)], separator="/"),
        primary=pl.col("doc").rank("dense").over(["model", "corpus"]) <= primary_docs,
    )


def populations(frame: pl.DataFrame) -> Iterable[tuple[str, pl.DataFrame]]:
    """(name, rows) of the primary slice and of every document."""
    yield "primary", frame.filter(pl.col("primary"))
    yield "all", frame


def groups(frame: pl.DataFrame, keys: Sequence[str]) -> Iterable[tuple[dict, pl.DataFrame]]:
    """Groups of ``frame`` by ``keys`` in sorted key order (one group, ``{}``, when keys are empty)."""
    if not keys:
        if frame.height:
            yield {}, frame
        return
    for key, g in sorted(frame.group_by(list(keys)), key=lambda kg: tuple(_sortable(k) for k in kg[0])):
        yield dict(zip(keys, key)), g


def _sortable(x: Any) -> tuple:
    return (x is None, x if x is not None else 0)


def per_group(
    frame: pl.DataFrame, keys: Sequence[str], fn: Callable[[pl.DataFrame], dict], pooled_model: bool = False
) -> list[dict]:
    """Rows of ``fn`` per population and group; with ``pooled_model`` also rows pooled over models."""
    rows = []
    for population, pop in populations(frame):
        for key, g in groups(pop, keys):
            rows.append({"population": population, **key, **fn(g)})
        if pooled_model:
            other = [k for k in keys if k != "model"]
            for key, g in groups(pop, other):
                rows.append({"population": population, "model": POOLED, **key, **fn(g)})
    return rows


def models_of(g: pl.DataFrame) -> str:
    """The models behind a group, comma-separated."""
    return ",".join(sorted(g["model"].unique().to_list()))


def frame_from_rows(rows: list[dict], schema: Mapping[str, Any]) -> pl.DataFrame:
    """Rows (dicts) as a frame with exactly ``schema`` (missing keys null, extra keys an error)."""
    for row in rows:
        extra = set(row) - set(schema)
        if extra:
            raise KeyError(f"statistics row has columns outside its schema: {sorted(extra)}")
    if not rows:
        return pl.DataFrame(schema=dict(schema))
    return pl.DataFrame([{k: row.get(k) for k in schema} for row in rows], schema=dict(schema), strict=False)


def interval_columns(*names: str) -> dict:
    """Schema entries of estimates with intervals: ``name``, ``name_low``, ``name_high``."""
    out = {}
    for n in names:
        out.update({n: pl.Float64, f"{n}_low": pl.Float64, f"{n}_high": pl.Float64})
    return out


@dataclass
class GroupStatistics:
    """Statistics of one group; every interval uses the same document resamples (same seed)."""

    settings: StatisticsSettings

    def clean(self, g: pl.DataFrame, *cols: str) -> pl.DataFrame:
        """The group without degenerate rows and without nulls in ``cols``."""
        g = g.filter(~pl.col("degenerate"))
        for c in cols:
            g = g.filter(pl.col(c).is_not_null())
        return g

    def _with_intervals(self) -> bool:
        return self.settings.bootstrap > 0

    # --- statistics: each returns {name: estimate[, name_low, name_high]}
    def median(self, g: pl.DataFrame, col: str, name: str, ci: bool = True) -> dict:
        return self.quantile(g, col, name, 0.5, ci)

    @staticmethod
    def _empty(name: str, ci: bool) -> dict:
        """A statistic with nothing to estimate: the estimate (and its interval) null."""
        return {name: None, f"{name}_low": None, f"{name}_high": None} if ci else {name: None}

    def quantile(self, g: pl.DataFrame, col: str, name: str, q: float, ci: bool = False) -> dict:
        g = self.clean(g, col)
        out = self._empty(name, ci)
        if g.height == 0:
            return out
        x = g[col].to_numpy()
        out[name] = median(x) if q == 0.5 else float(quantile(x, q))
        if ci and self._with_intervals():
            s = self.settings
            iv = cluster_bootstrap_quantile(x, g["cluster"].to_numpy(), q, s.bootstrap, s.seed, s.level)
            out.update({f"{name}_low": iv.low, f"{name}_high": iv.high})
        return out

    def value(self, g: pl.DataFrame, col: str, q: float = 0.5) -> float | None:
        """The median (or quantile ``q``) of ``col`` alone, no interval."""
        return self.quantile(g, col, "x", q, ci=False)["x"]

    def share(self, g: pl.DataFrame, col: str, name: str, ci: bool = True) -> dict:
        """Fraction of true values of a boolean column (interval: ratio of cluster sums per resample)."""
        g = self.clean(g, col)
        out = self._empty(name, ci)
        if g.height == 0:
            return out
        x = g[col].cast(pl.Float64).to_numpy()
        out[name] = float(x.mean())
        if ci and self._with_intervals():
            low, high = bootstrap_mean(x, g["cluster"].to_numpy(), self.settings)
            out.update({f"{name}_low": low, f"{name}_high": high})
        return out

    def fraction(self, g: pl.DataFrame, col: str) -> float | None:
        """The share of ``col`` alone, no interval."""
        return self.share(g, col, "x", ci=False)["x"]

    def auc(self, g: pl.DataFrame, score: str, label: str, name: str, ci: bool = True) -> dict:
        """AUC of ``score`` for ``label`` (Mann-Whitney, ties averaged); resamples lacking a class are dropped."""
        g = self.clean(g, score, label)
        out = {**self._empty(name, ci), f"{name}_n_pos": 0}
        if g.height == 0:
            return out
        y = g[label].to_numpy().astype(bool)
        out[f"{name}_n_pos"] = int(y.sum())
        codes = score_codes(g[score].to_numpy())
        k = int(codes.max()) + 1
        est = auc_from_codes(codes, y, k)
        out[name] = None if math.isnan(est) else est
        if ci and self._with_intervals() and out[name] is not None:
            s = self.settings
            iv = cluster_bootstrap_auc(codes, y, g["cluster"].to_numpy(), s.bootstrap, s.seed, s.level, n_codes=k)
            out.update({f"{name}_low": iv.low, f"{name}_high": iv.high})
        return out

    def spearman(self, g: pl.DataFrame, x: str, y: str, name: str) -> dict:
        g = self.clean(g, x, y)
        if g.height < 2:
            return {name: None}
        value = spearman(g[x].to_numpy(), g[y].to_numpy())
        return {name: None if math.isnan(value) else value}

    def rank_correlation(self, g: pl.DataFrame, x: str, y: str) -> float | None:
        """Spearman's rho of ``x`` and ``y`` alone."""
        return self.spearman(g, x, y, "x")["x"]

    def counts(self, g: pl.DataFrame) -> dict:
        return {
            "n": int((~g["degenerate"]).sum()),
            "n_docs": int(g["cluster"].n_unique()),
            "n_degenerate": int(g["degenerate"].sum()),
        }


def bootstrap_mean(x: np.ndarray, clusters: np.ndarray, settings: StatisticsSettings) -> tuple[float, float]:
    """Cluster-bootstrap percentile interval of a mean, from per-cluster sums: the same resamples and
    the same replicates as ``cluster_bootstrap(x, np.mean, clusters, B, seed)``, in one matrix product."""
    index = ClusterIndex(clusters)
    picks = index.draw(np.random.default_rng(settings.seed), settings.bootstrap)
    sums = np.bincount(index.codes, weights=x, minlength=index.n_clusters)
    weight = index.multiplicities(picks)
    reps = (weight @ sums) / (weight @ index.counts)
    return percentile_interval(reps, settings.level)
