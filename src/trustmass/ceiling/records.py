"""Ceiling records: every captured row at every budget (paper spec §1.4-1.8, §3.1, §3.7).

One record per (layer, query head, sampled row, budget).  At the enumerated budgets (4/8/16/32 by
default) the record carries the exact pool optimum ES_pool and everything derived from it; at
the native budgets (64/128/256) only what needs no enumeration (top-mass, balancing with a small
pool, the bounds, the group vote).  Column names are the contract other stages read.

Row -> instance: the keys of row i are the positions the model let it see (j <= i, inside the
sliding window) with p_j > 0 (a float32 softmax can underflow to exactly 0; such keys carry no
mass and cannot change es, and are counted).  p is renormalised in float64 to sum to 1; the raw
float32 sum's deviation is recorded.
"""

from __future__ import annotations

import math
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np
import polars as pl

from trustmass.core import operator as op
from trustmass.core.enumeration import PoolRule, budget_settings, candidate_pool, pool_optimum
from trustmass.core.operator import Instance
from trustmass.core.selectors import (
    balancing,
    frank_wolfe_trace,
    geometric,
    group_vote,
    ridge_leverage_scores,
    top_leverage,
)
from trustmass.plumbing.config import embedded_default

#: the record contract (issue 4); extra diagnostic columns follow it
COLUMNS = [
    "model",
    "corpus",
    "doc",
    "layer",
    "head",
    "kv_head",
    "group_size",
    "query_pos",
    "n_keys",
    "budget",
    "dropped_mass",
    "D",
    "sigma",
    "phi",
    "es_top",
    "es_pool",
    "pool_extra",
    "n_subsets",
    "es_bal",
    "n_swaps",
    "kappa_hat",
    "c_hat",
    "kappa_hat_bal",
    "ef_fw",
    "pi_hat",
    "es_geo",
    "es_lev",
    "es_vote",
    "bound_2dm",
    "bound_var",
]
DIAGNOSTICS = [
    "enumerated",
    "pool_is_row",
    "es_geo_pool",
    "es_lev_pool",
    "es_pool_fast_rel_err",
    "n_zero_mass",
    "raw_p_sum_dev",
]


_DEFAULT = embedded_default()  # config.yaml: the defaults below are its values, not copies


@dataclass(frozen=True)
class CeilingSettings:
    enumerated: tuple[int, ...] = tuple(_DEFAULT["budgets"]["enumerated"])
    native: tuple[int, ...] = tuple(_DEFAULT["budgets"]["native"])
    pool: PoolRule = PoolRule.from_config(_DEFAULT)  # e(s) at the enumerated budgets
    verify_top: int = _DEFAULT["enumeration"]["verify_top"]
    native_extra: int = _DEFAULT["balancing"]["native_extra"]  # balancing's candidate extras at native budgets
    ridge: float = _DEFAULT["leverage"]["ridge"]

    @classmethod
    def from_config(cls, cfg: dict) -> CeilingSettings:
        """From the config keys budgets, enumeration, balancing and leverage."""
        return cls(
            **budget_settings(cfg),
            verify_top=cfg["enumeration"]["verify_top"],
            native_extra=cfg["balancing"]["native_extra"],
            ridge=cfg["leverage"]["ridge"],
        )


@dataclass(frozen=True)
class Row:
    """One captured attention row over the positions 0..i it could see."""

    p: np.ndarray  # (i+1,) float32 probabilities (zeros outside the window)
    values: np.ndarray  # (i+1, d)
    keys: np.ndarray  # (i+1, d_k)
    vote_scores: np.ndarray  # (i+1,) sum of the KV group's rows at this position


def instance_of(row: Row) -> tuple[Instance, np.ndarray, int, float]:
    """(instance over positive-mass keys, their positions, zero-mass visible keys, raw sum - 1)."""
    return op.captured_instance(row.p, row.values)


def row_records(row: Row, settings: CeilingSettings, leverage_cache: dict | None = None) -> list[dict]:
    """Every budget's record for one row (identity columns are added by the caller).

    The ridge-leverage scores depend only on the keys, which the query heads of a KV group share:
    pass one `leverage_cache` per (KV head, row) to compute them once for the group.
    """
    inst, positive, n_zero, raw_dev = instance_of(row)
    cache = {} if leverage_cache is None else leverage_cache
    visible = positive.tobytes()  # the scores are over the positive-mass keys, usually all of them
    if visible not in cache:
        cache[visible] = ridge_leverage_scores(row.keys[positive].astype(np.float64), settings.ridge)
    leverage_scores = cache[visible]
    fw = frank_wolfe_trace(inst, max(settings.enumerated)) if settings.enumerated else None  # one run, every budget
    scale = op.radius(inst)
    base = {"n_keys": inst.n_keys, "D": scale, "sigma": op.sigma(inst), "n_zero_mass": n_zero, "raw_p_sum_dev": raw_dev}
    records = []
    for s in (*settings.enumerated, *settings.native):
        top = op.top_mass(inst, s)
        es_top = op.es(inst, top)
        vote = np.flatnonzero(np.isin(positive, group_vote(row.vote_scores[None, :], s)))
        rec = dict(base)
        rec.update(
            budget=s,
            dropped_mass=op.dropped_mass(inst, top),
            phi=op.phi(inst, s),
            es_top=es_top,
            es_vote=op.es(inst, vote) if vote.size else math.nan,
            bound_2dm=op.mass_cap_bound(inst, s),
            bound_var=op.variance_bound(inst, top),
        )
        enumerated = s in settings.enumerated
        extra = settings.pool.extra(s) if enumerated else settings.native_extra
        pool = candidate_pool(inst, s, extra)
        rec.update(enumerated=enumerated, pool_extra=extra, pool_is_row=bool(pool.shape[0] == inst.n_keys))
        if enumerated:
            opt = pool_optimum(inst, s, extra, n_verify=settings.verify_top)
            bal = balancing(inst, s, opt.pool)
            geo = geometric(inst, s, trace=fw)
            rec.update(
                es_pool=opt.es_pool,
                n_subsets=opt.n_subsets,
                es_pool_fast_rel_err=opt.fast_relative_error,
                kappa_hat=op.ratio_kappa(es_top, opt.es_pool, scale),
                c_hat=op.closable_share(es_top, opt.es_pool, scale),
                kappa_hat_bal=op.ratio_kappa(bal.es, opt.es_pool, scale),
                ef_fw=geo.ef_fw,
                pi_hat=op.ratio_penalty(opt.es_pool, geo.ef_fw, scale),
                es_geo=geo.es,
                es_geo_pool=geometric(inst, s, candidates=opt.pool, with_ef=False).es,
                es_lev=op.es(inst, top_leverage(leverage_scores, s)),
                es_lev_pool=op.es(inst, top_leverage(leverage_scores, s, candidates=opt.pool)),
            )
        else:
            bal = balancing(inst, s, pool)
        rec.update(es_bal=bal.es, n_swaps=bal.swaps)
        records.append(rec)
    return records


def layer_records(shard_path: str, layer: int, settings: CeilingSettings) -> list[dict]:
    """Records of every (query head, sampled row, budget) of one layer of a capture shard."""
    from trustmass.contracts.shards import read_layer

    t = read_layer(shard_path, layer, ["positions", "p", "values", "keys"])
    n_q, n_kv = t["p"].shape[0], t["values"].shape[0]
    group = n_q // n_kv
    out = []
    for kv in range(n_kv):
        heads = range(kv * group, (kv + 1) * group)
        for r, i in enumerate(t["positions"][kv].tolist()):
            vote_scores = sum(t["p"][h, r, : i + 1].astype(np.float64) for h in heads)
            leverage_cache: dict = {}
            for h in heads:
                row = Row(t["p"][h, r, : i + 1], t["values"][kv, : i + 1], t["keys"][kv, : i + 1], vote_scores)
                for rec in row_records(row, settings, leverage_cache):
                    rec.update(layer=layer, head=h, kv_head=kv, group_size=group, query_pos=i)
                    out.append(rec)
    return out


def shard_records(
    shard_path: str, model: str, corpus: str, doc: str, settings: CeilingSettings, workers: int = 1
) -> pl.DataFrame:
    """All records of one capture shard as a polars frame (COLUMNS, then DIAGNOSTICS)."""
    from trustmass.contracts.shards import read_metadata

    layers = sorted(int(k) for k in read_metadata(shard_path)["layers"])
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            parts = list(pool.map(layer_records, [shard_path] * len(layers), layers, [settings] * len(layers)))
    else:
        parts = [layer_records(shard_path, layer, settings) for layer in layers]
    rows = [rec for part in parts for rec in part]
    for rec in rows:
        rec.update(model=model, corpus=corpus, doc=doc)
    frame = pl.DataFrame(rows, infer_schema_length=None)
    for name in COLUMNS + DIAGNOSTICS:  # native budgets leave the enumeration columns empty
        if name not in frame.columns:
            frame = frame.with_columns(pl.lit(None, dtype=pl.Float64).alias(name))
    return frame.select(COLUMNS + DIAGNOSTICS).sort(["layer", "head", "query_pos", "budget"])
