"""The certification manifest (spec §3.5) and the cap-widening sweep's instances (spec §3.2).

* :func:`manifest` -- instances sampled evenly over family x budget x dropped-mass decile (deciles
  within (model, budget) on the primary slice), a fixed number per stratum, a fixed seed; each
  instance carries the shard (``shard``) of the job that certifies it.  Give it the records of the
  study's headline population (the paper: 4 families x 4 budgets x 10 deciles x 6 = 960).
* :func:`sweep_heads` / :func:`sweep_instances` -- the seeded depth-spanning head subset at s = 32.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from trustmass.core.config_conflict import ConfigConflict
from trustmass.plumbing.config_checks import sweep_budget_problem

__all__ = [
    "IDENTITY",
    "MANIFEST_COLUMNS",
    "N_DECILES",
    "RECORD_COLUMNS",
    "manifest",
    "sweep_budget",
    "sweep_heads",
    "sweep_instances",
]

IDENTITY = ["model", "corpus", "doc", "layer", "head", "kv_head", "query_pos", "budget"]
MANIFEST_COLUMNS = [
    "instance",
    "shard",
    *IDENTITY,
    "decile",
    "dropped_mass",
    "pool_extra",
    "D",
    "es_top",
    "es_pool",
    "es_bal",
    "c_hat",
    "kappa_hat",
    "kappa_hat_bal",
]
#: strata of dropped mass within (family, budget)
N_DECILES = 10
#: the ceiling-record columns the manifest and the sweep read
RECORD_COLUMNS = [c for c in MANIFEST_COLUMNS if c not in ("instance", "shard", "decile")]


def _primary(records: pl.DataFrame, primary_docs: int) -> pl.DataFrame:
    rank = pl.col("doc").rank("dense").over(["model", "corpus"])
    return records.filter(rank <= primary_docs)


def manifest(
    records: pl.DataFrame,
    per_stratum: int,
    seed: int,
    budgets: Sequence[int] = (4, 8, 16, 32),
    n_shards: int = 1,
    primary_docs: int | None = 3,
    n_deciles: int = N_DECILES,
) -> pl.DataFrame:
    """``per_stratum`` instances per (model, budget, dropped-mass decile), seeded; deterministic.

    Deciles are ranks of ``dropped_mass`` within (model, budget) on the primary slice (ties broken by
    the record identity): decile = floor(10 * rank / n).  A stratum with fewer records than
    ``per_stratum`` contributes all of them.  ``instance`` numbers the manifest 0.. in (model,
    budget, decile, identity) order; ``shard = instance mod n_shards``.
    """
    if per_stratum < 1 or n_shards < 1:
        raise ValueError("per_stratum and n_shards must be positive")
    f = records.filter(pl.col("budget").is_in(list(budgets)) & pl.col("es_pool").is_not_null())
    if primary_docs is not None:
        f = _primary(f, primary_docs)
    f = f.sort(["model", "budget", "dropped_mass", "corpus", "doc", "layer", "head", "query_pos"])
    idx = pl.int_range(pl.len()).over(["model", "budget"])
    f = f.with_columns(decile=(idx * n_deciles // pl.len().over(["model", "budget"])).cast(pl.Int64))
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 7]))  # 7: this stage's stream
    parts = []
    for key, g in f.group_by(["model", "budget", "decile"], maintain_order=True):
        take = min(per_stratum, g.height)
        rows = np.sort(rng.choice(g.height, size=take, replace=False))
        parts.append(g[rows.tolist()])
    out = pl.concat(parts).sort(["model", "budget", "decile", "corpus", "doc", "layer", "head", "query_pos"])
    out = out.with_columns(instance=pl.int_range(pl.len(), dtype=pl.Int64))
    out = out.with_columns(shard=(pl.col("instance") % n_shards).cast(pl.Int64))
    return out.select(MANIFEST_COLUMNS)


def sweep_heads(records: pl.DataFrame, heads_per_layer: int, seed: int) -> pl.DataFrame:
    """The depth-spanning head subset: ``heads_per_layer`` query heads of every layer of every model, seeded."""
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 11]))
    rows = []
    for (model, layer), g in (
        records.select("model", "layer", "head")
        .unique()
        .sort(["model", "layer", "head"])
        .group_by(["model", "layer"], maintain_order=True)
    ):
        heads = g["head"].to_numpy()
        for h in np.sort(rng.choice(heads, size=min(heads_per_layer, heads.size), replace=False)):
            rows.append({"model": model, "layer": int(layer), "head": int(h)})
    return pl.DataFrame(rows, schema={"model": pl.Utf8, "layer": pl.Int64, "head": pl.Int64})


def sweep_budget(config: dict) -> int:
    """certification.sweep.budget, which must be enumerated (the sweep widens that budget's pool)."""
    problem = sweep_budget_problem(config)
    if problem:
        raise ConfigConflict(problem, fields=("certification.sweep.budget", "budgets.enumerated"))
    return int(config["certification"]["sweep"]["budget"])


def sweep_instances(
    records: pl.DataFrame, heads: pl.DataFrame, budget: int = 32, primary_docs: int | None = 3
) -> pl.DataFrame:
    f = records.filter((pl.col("budget") == budget) & pl.col("es_pool").is_not_null())
    if primary_docs is not None:
        f = _primary(f, primary_docs)
    return f.join(heads, on=["model", "layer", "head"], how="semi").sort(
        ["model", "corpus", "doc", "layer", "head", "query_pos"]
    )
