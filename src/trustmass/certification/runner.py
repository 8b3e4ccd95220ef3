"""Certification runs (paper spec §3.2, §3.4): every manifest instance certified over all its keys,
and the cap-widening sweep's pools.  Orchestration over the two certifiers (``certification.certifier``):
``paper``, the paper's MISOCP bisection with SCIP (:mod:`trustmass.certification.misocp`), and ``bnb``,
the branch-and-bound search (:mod:`trustmass.certification.bnb`).

* :func:`certify_rows` -- one output row per manifest instance, always: the instance is reloaded
  from its capture shard, the ES_pool argmin recomputed (the incumbent), and the certifier run.  The
  work budget (``certification.bnb_work``; ``scip_nodes`` / ``scip_lp_iterations``) decides: spent,
  it gives ``undecided``, the same on any machine, load or shard split.  The seconds limit is a
  safety net: its hit is ``safety_stop``; memory, a crash or any exception gives ``unsolved`` (with
  the message), never a missing row.  Only the seconds columns (:data:`TIMING_COLUMNS`) depend on the
  machine.
* :func:`sweep_rows` -- ES_pool of every sweep instance at every extra-key setting.

The manifest is :mod:`trustmass.certification.manifest`; substitution, Table 7 and the sweep table
are statistics (:mod:`trustmass.report.frames.certification`).
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from trustmass.certification.bnb import certify_bnb, warm_up
from trustmass.certification.manifest import IDENTITY
from trustmass.certification.misocp import SAFETY_STOP, UNSOLVED, certify
from trustmass.core import operator as op
from trustmass.core.config_conflict import ConfigConflict

__all__ = [
    "CERTIFIED_SCHEMA",
    "TIMING_COLUMNS",
    "CertificationSettings",
    "certify_rows",
    "load_instance",
    "sweep_rows",
]

CERTIFIED_SCHEMA = {
    "instance": pl.Int64,
    "status": pl.Utf8,
    "es_pool": pl.Float64,
    "es_pool_record": pl.Float64,
    "es_cert": pl.Float64,
    "lower_bound": pl.Float64,
    "improvement": pl.Float64,
    "best": pl.List(pl.Int64),
    "n_keys": pl.Int64,
    "seconds": pl.Float64,
    "enumeration_seconds": pl.Float64,
    "n_solves": pl.Int64,
    "nodes": pl.Int64,
    "work": pl.Int64,
    "solve_outcomes": pl.Utf8,
    "max_solve_seconds": pl.Float64,
    "message": pl.Utf8,
    "mass_floor": pl.Float64,
    "low_mass_bound": pl.Float64,
    "certifier": pl.Utf8,
}
#: the columns of CERTIFIED_SCHEMA that hold seconds (the rest is a function of inputs and budget)
TIMING_COLUMNS = ("seconds", "enumeration_seconds", "max_solve_seconds")
#: certification.certifier: the paper's MISOCP bisection with SCIP (`misocp.certify`), or the
#: branch-and-bound search (`bnb.certify_bnb`)
CERTIFIERS = ("paper", "bnb")


@dataclass(frozen=True)
class CertificationSettings:
    per_stratum: int = 1  # certification.per_stratum
    n_shards: int = 2  # certification.n_shards
    time_limit_s: float = 60.0  # certification.time_limit_s: the safety net, seconds per solve / probe
    bnb_work: int = 5_000  # certification.bnb_work: millions of work units per bnb probe
    scip_nodes: int | None = None  # certification.scip_nodes: SCIP nodes per solve (None: no limit)
    scip_lp_iterations: int | None = None  # certification.scip_lp_iterations: LP iterations per solve
    memory_limit_mb: float = 2000.0  # certification.memory_limit_mb
    max_solves: int = 64  # certification.max_solves
    primary_docs: int = 3  # statistics.primary_docs
    seed: int = 0
    isolate: bool = True  # each instance in a forked child: a solver crash is an `unsolved` row
    certifier: str = "paper"  # certification.certifier (CERTIFIERS)

    def __post_init__(self):
        if self.certifier not in CERTIFIERS:
            raise ConfigConflict(
                f"certification.certifier must be one of {CERTIFIERS}, got {self.certifier!r}",
                fields=("certification.certifier",),
            )

    @property
    def guard_s(self) -> float:
        """Wall-clock guard per isolated instance (the safety net's last line): every solve at its
        seconds limit, twice over, plus a minute."""
        return 2.0 * self.max_solves * self.time_limit_s + 60.0


# ======================================================================================= certify


def load_instance(shard_path: str, layer: int, head: int, kv_head: int, query_pos: int, _cache: dict | None = None):
    """(instance, positions of its keys) of one captured row, exactly as the ceiling stage built it."""
    from trustmass.contracts.shards import read_layer

    key = (shard_path, layer)
    if _cache is not None and key in _cache:
        t = _cache[key]
    else:
        t = read_layer(shard_path, layer, ["positions", "p", "values", "keys"])
        if _cache is not None:
            _cache.clear()  # one layer at a time is enough (the manifest is sorted per shard/layer)
            _cache[key] = t
    positions = t["positions"][kv_head].tolist()
    if query_pos not in positions:
        raise KeyError(f"query position {query_pos} not captured for layer {layer} kv head {kv_head}")
    r = positions.index(query_pos)
    inst, positive, _, _ = op.captured_instance(t["p"][head, r, : query_pos + 1], t["values"][kv_head, : query_pos + 1])
    return inst, positive


def certify_one(inst: op.Instance, s: int, extra: int, settings: CertificationSettings) -> dict:
    """Certify one instance; never raises (an exception becomes status ``unsolved``)."""
    from trustmass.core.enumeration import pool_optimum

    out = {"n_keys": inst.n_keys, "certifier": settings.certifier}
    start = time.perf_counter()
    try:
        po = pool_optimum(inst, s, extra)
        out["enumeration_seconds"] = time.perf_counter() - start
        out["es_pool"] = po.es_pool
        if settings.certifier == "bnb":
            cert = certify_bnb(
                inst,
                s,
                incumbent=po.kept,
                es_pool=po.es_pool,
                work_limit=int(settings.bnb_work) * 1_000_000,
                time_limit=settings.time_limit_s,
                max_solves=settings.max_solves,
                seed=settings.seed,
            )
        else:
            cert = certify(
                inst,
                s,
                incumbent=po.kept,
                es_pool=po.es_pool,
                time_limit=settings.time_limit_s,
                node_limit=settings.scip_nodes,
                lp_iteration_limit=settings.scip_lp_iterations,
                memory_limit_mb=settings.memory_limit_mb,
                seed=settings.seed,
                max_solves=settings.max_solves,
                isolate_solves=settings.isolate,
            )
        out.update(
            status=cert.status,
            es_cert=cert.es_cert,
            lower_bound=cert.lower_bound,
            improvement=cert.improvement,
            best=np.asarray(cert.best, dtype=np.int64),
            seconds=cert.seconds,
            n_solves=cert.n_solves,
            nodes=cert.nodes,
            work=cert.work,
            solve_outcomes=",".join(r.outcome for r in cert.solves),
            max_solve_seconds=cert.max_solve_seconds,
            message="; ".join(sorted({r.message for r in cert.solves if r.message}))[:500],
            mass_floor=cert.mass_floor,
            low_mass_bound=cert.low_mass_bound,
        )
    except Exception as exc:  # noqa: BLE001 -- a crash is a recorded status, never a missing row
        out.update(status=UNSOLVED, message=f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}"[:2000])
    out["seconds"] = out.get("seconds", time.perf_counter() - start)
    return out


def certify_isolated(inst: op.Instance, s: int, extra: int, settings: CertificationSettings) -> dict:
    """``certify_one`` in a forked child when ``settings.isolate``: a crash in SCIP (segfault, abort,
    OOM kill) becomes status ``unsolved`` and a guard expiry (a clock) status ``safety_stop``, with
    the reason."""
    if not settings.isolate:
        return certify_one(inst, s, extra, settings)
    from trustmass.plumbing.isolation import TIMEOUT, isolated_call

    start = time.perf_counter()
    outcome = isolated_call(certify_one, (inst, s, extra, settings), timeout_s=settings.guard_s)
    if outcome.ok:
        return outcome.value
    status = SAFETY_STOP if outcome.reason == TIMEOUT else UNSOLVED
    return {
        "n_keys": inst.n_keys,
        "certifier": settings.certifier,
        "status": status,
        "message": f"{outcome.reason}: {outcome.message}"[:2000],
        "seconds": time.perf_counter() - start,
    }


def _certify_group(args) -> list[dict]:
    shard_path, items, settings = args
    cache: dict = {}
    rows = []
    if settings.certifier == "bnb" and settings.isolate:
        warm_up()  # the forked children inherit the loaded kernels
    for item in items:
        rec = {"instance": item["instance"], "es_pool_record": item["es_pool"]}
        try:
            inst, positive = load_instance(
                shard_path, item["layer"], item["head"], item["kv_head"], item["query_pos"], cache
            )
        except Exception as exc:  # noqa: BLE001
            rec.update(status=UNSOLVED, message=f"reload failed: {type(exc).__name__}: {exc}", seconds=0.0)
            rows.append(rec)
            continue
        res = certify_isolated(inst, int(item["budget"]), int(item["pool_extra"]), settings)
        if res.get("best") is not None:
            res["best"] = positive[res["best"]].astype(np.int64).tolist()  # key positions in the document
        rec.update(res)
        rows.append(rec)
    return rows


def certify_rows(
    manifest_part: pl.DataFrame, shard_of, settings: CertificationSettings, workers: int = 1
) -> pl.DataFrame:
    """One row per manifest instance (CERTIFIED_SCHEMA); ``shard_of(model, corpus, doc)`` -> capture path.

    ``best`` holds the kept keys' positions in the document (j <= query_pos), ascending.
    """
    groups = []
    for (model, corpus, doc), g in manifest_part.sort(["model", "corpus", "doc", "layer", "instance"]).group_by(
        ["model", "corpus", "doc"], maintain_order=True
    ):
        path = shard_of(model, corpus, doc)
        items = g.to_dicts()
        if workers > 1:  # spread the instances of one document over the workers
            for w in range(workers):
                if items[w::workers]:
                    groups.append((path, items[w::workers], settings))
        else:
            groups.append((path, items, settings))
    if workers > 1 and len(groups) > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(workers) as pool:
            parts = list(pool.map(_certify_group, groups))
    else:
        parts = [_certify_group(g) for g in groups]
    rows = {r["instance"]: r for part in parts for r in part}
    missing = set(manifest_part["instance"].to_list()) - set(rows)
    for i in missing:  # cannot happen short of a bug; still a row, never a gap
        rows[i] = {"instance": i, "status": UNSOLVED, "message": "no result"}
    ordered = [{k: rows[i].get(k) for k in CERTIFIED_SCHEMA} for i in sorted(rows)]
    return pl.DataFrame(ordered, schema=CERTIFIED_SCHEMA)


# ============================================================================== cap-widening sweep


def _sweep_group(args) -> list[dict]:
    from trustmass.core.enumeration import pool_optimum

    shard_path, items, extras = args
    cache: dict = {}
    out = []
    for it in items:
        inst, _ = load_instance(shard_path, it["layer"], it["head"], it["kv_head"], it["query_pos"], cache)
        s, D = int(it["budget"]), op.radius(inst)
        for e in extras:
            t0 = time.perf_counter()
            po = pool_optimum(inst, s, int(e))
            out.append(
                {
                    **{k: it[k] for k in IDENTITY},
                    "extra": int(e),
                    "n_subsets": int(po.n_subsets),
                    "es_top": it["es_top"],
                    "es_pool": po.es_pool,
                    "kappa_hat": op.ratio_kappa(it["es_top"], po.es_pool, D),
                    "c_hat": op.closable_share(it["es_top"], po.es_pool, D),
                    "seconds": time.perf_counter() - t0,
                }
            )
    return out


def sweep_rows(instances: pl.DataFrame, extras: Sequence[int], shard_of, workers: int = 1) -> pl.DataFrame:
    """ES_pool at every extra-key setting for every sweep instance (one row per instance and e)."""
    groups = []
    for (model, corpus, doc), g in instances.group_by(["model", "corpus", "doc"], maintain_order=True):
        items = g.sort(["layer", "head", "query_pos"]).to_dicts()
        for w in range(max(workers, 1)):
            if items[w :: max(workers, 1)]:
                groups.append((shard_of(model, corpus, doc), items[w :: max(workers, 1)], tuple(extras)))
    if workers > 1 and len(groups) > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(workers) as pool:
            parts = list(pool.map(_sweep_group, groups))
    else:
        parts = [_sweep_group(g) for g in groups]
    return pl.DataFrame([r for p in parts for r in p]).sort([*IDENTITY, "extra"])
