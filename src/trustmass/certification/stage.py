"""Certification stage: manifest, per-instance MISOCP certification, substitution, Table 7 and the
cap-widening sweep (paper spec §3.2, §3.4-3.6, Table 7).  Orchestration over `trustmass.certification.misocp`.

* :func:`manifest` -- instances sampled evenly over model x budget x dropped-mass decile (deciles
  within (model, budget) on the primary slice), a fixed number per stratum, a fixed seed; each
  instance carries the shard (``shard``) of the job that certifies it.
* :func:`certify_rows` -- one output row per manifest instance, always: the instance is reloaded
  from its capture shard, the ES_pool argmin recomputed (the incumbent), and `certify` run.  A
  time limit gives ``undecided``; memory, a crash or any exception gives ``unsolved`` (with the
  message), never a missing row.
* :func:`table7` -- per budget: improved count, solved n, Wilson-95 f_hi, the full-records median
  c_hat and its distribution-free caps (at f_hi, and with the unsolved counted as improved), the
  paired manifest medians before/after substitution, the optimum-beats-balancing shares and the
  kappa_hat_bal = 1 share with its worst (model, budget) margin.
* :func:`sweep_heads` / :func:`sweep_rows` / :func:`sweep_table` -- the cap-widening sweep at
  s = 32 with e = 4, 5, 6 extra keys on a seeded depth-spanning head subset.
* :func:`headline` -- rows in the claims-report contract for claims 18-21, 84, 90-95.
"""

from __future__ import annotations

import math
import os
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from trustmass.core import operator as op
from trustmass.core import stats
from trustmass.certification.misocp import (
    CONFIRMED_OPTIMAL,
    IMPROVED,
    STATUSES,
    UNDECIDED,
    UNSOLVED,
    WITHIN_1PCT,
    certify,
)

#: relative tolerance of "kappa_hat_bal = 1" and of record / recomputation agreement
REL_TOL = 1e-12
#: "materially better" / "beats by more than 1 %"
MATERIAL = 0.01
IDENTITY = ["model", "corpus", "doc", "layer", "head", "kv_head", "query_pos", "budget"]
MANIFEST_COLUMNS = [
    "instance", "shard", *IDENTITY, "decile", "dropped_mass", "pool_extra", "D", "es_top", "es_pool", "es_bal",
    "c_hat", "kappa_hat", "kappa_hat_bal",
]  # fmt: skip
CERTIFIED_SCHEMA = {
    "instance": pl.Int64, "status": pl.Utf8, "es_pool": pl.Float64, "es_pool_record": pl.Float64,
    "es_cert": pl.Float64, "lower_bound": pl.Float64, "improvement": pl.Float64, "best": pl.List(pl.Int64),
    "n_keys": pl.Int64, "seconds": pl.Float64, "enumeration_seconds": pl.Float64, "n_solves": pl.Int64,
    "solve_outcomes": pl.Utf8, "max_solve_seconds": pl.Float64, "message": pl.Utf8,
    "mass_floor": pl.Float64, "low_mass_bound": pl.Float64,
}  # fmt: skip


@dataclass(frozen=True)
class CertificationSettings:
    per_stratum: int = 1  # certification.per_stratum
    n_shards: int = 2  # certification.n_shards
    time_limit_s: float = 10.0  # certification.time_limit_s (per solve)
    memory_limit_mb: float = 2000.0  # certification.memory_limit_mb
    max_solves: int = 64  # certification.max_solves
    primary_docs: int = 3  # statistics.primary_docs
    seed: int = 0
    isolate: bool = True  # each instance in a forked child: a solver crash is an `unsolved` row

    @property
    def guard_s(self) -> float:
        """Wall-clock guard per isolated instance: every solve at its limit, twice over, plus a minute."""
        return 2.0 * self.max_solves * self.time_limit_s + 60.0


# ============================================================================================ manifest


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
    n_deciles: int = 10,
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


# ======================================================================================= certify


def load_instance(shard_path: str, layer: int, head: int, kv_head: int, query_pos: int, _cache: dict | None = None):
    """(instance, positions of its keys) of one captured row, exactly as the ceiling stage built it."""
    from trustmass.ceiling.records import Row, instance_of
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
    row = Row(t["p"][head, r, : query_pos + 1], t["values"][kv_head, : query_pos + 1], t["keys"][kv_head, : query_pos + 1], None)
    inst, positive, _, _ = instance_of(row)
    return inst, positive


def certify_one(inst: op.Instance, s: int, extra: int, settings: CertificationSettings) -> dict:
    """Certify one instance; never raises (an exception becomes status ``unsolved``)."""
    from trustmass.core.enumeration import pool_optimum

    out = {"n_keys": inst.n_keys}
    start = time.perf_counter()
    try:
        po = pool_optimum(inst, s, extra)
        out["enumeration_seconds"] = time.perf_counter() - start
        out["es_pool"] = po.es_pool
        cert = certify(
            inst, s, incumbent=po.kept, es_pool=po.es_pool, time_limit=settings.time_limit_s,
            memory_limit_mb=settings.memory_limit_mb, seed=settings.seed, max_solves=settings.max_solves,
            isolate_solves=settings.isolate,
        )  # fmt: skip
        out.update(
            status=cert.status, es_cert=cert.es_cert, lower_bound=cert.lower_bound, improvement=cert.improvement,
            best=np.asarray(cert.best, dtype=np.int64), seconds=cert.seconds, n_solves=cert.n_solves,
            solve_outcomes=",".join(r.outcome for r in cert.solves), max_solve_seconds=cert.max_solve_seconds,
            message="; ".join(sorted({r.message for r in cert.solves if r.message}))[:500],
            mass_floor=cert.mass_floor, low_mass_bound=cert.low_mass_bound,
        )  # fmt: skip
    except Exception as exc:  # noqa: BLE001 -- a crash is a recorded status, never a missing row
        out.update(status=UNSOLVED, message=f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}"[:2000])
    out["seconds"] = out.get("seconds", time.perf_counter() - start)
    return out


def certify_isolated(inst: op.Instance, s: int, extra: int, settings: CertificationSettings) -> dict:
    """``certify_one`` in a forked child when ``settings.isolate``: a crash in SCIP (segfault, abort,
    OOM kill) becomes status ``unsolved`` and a guard expiry status ``undecided``, with the reason."""
    if not settings.isolate:
        return certify_one(inst, s, extra, settings)
    from trustmass.plumbing.isolation import TIMEOUT, isolated_call

    start = time.perf_counter()
    outcome = isolated_call(certify_one, (inst, s, extra, settings), timeout_s=settings.guard_s)
    if outcome.ok:
        return outcome.value
    status = UNDECIDED if outcome.reason == TIMEOUT else UNSOLVED
    return {"n_keys": inst.n_keys, "status": status, "message": f"{outcome.reason}: {outcome.message}"[:2000],
            "seconds": time.perf_counter() - start}  # fmt: skip


def _certify_group(args) -> list[dict]:
    shard_path, items, settings = args
    cache: dict = {}
    rows = []
    for item in items:
        rec = {"instance": item["instance"], "es_pool_record": item["es_pool"]}
        try:
            inst, positive = load_instance(shard_path, item["layer"], item["head"], item["kv_head"], item["query_pos"], cache)
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


def certify_rows(manifest_part: pl.DataFrame, shard_of, settings: CertificationSettings, workers: int = 1) -> pl.DataFrame:
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


# ============================================================================= substitution, Table 7


def substitute(man: pl.DataFrame, certified: pl.DataFrame) -> pl.DataFrame:
    """The manifest joined with its certification, with paired before/after statistics.

    Where the status is ``improved`` the solver's subset replaces the ES_pool argmin: ES_opt =
    es_cert, and c_hat, kappa_hat_bal are recomputed from the record's es_top / es_bal (degenerate
    rules of spec §1.2); elsewhere they are unchanged.
    """
    f = man.join(certified.drop("es_pool"), on="instance", how="left")
    after_es, c_after, kb_after = [], [], []
    for r in f.select("status", "es_pool", "es_cert", "es_top", "es_bal", "D", "c_hat", "kappa_hat_bal").iter_rows(named=True):
        if r["status"] == IMPROVED and r["es_cert"] is not None:
            es_opt = r["es_cert"]
            c_after.append(op.closable_share(r["es_top"], es_opt, r["D"]))
            kb_after.append(op.ratio_kappa(r["es_bal"], es_opt, r["D"]))
        else:
            es_opt = r["es_pool"]
            c_after.append(r["c_hat"])
            kb_after.append(r["kappa_hat_bal"])
        after_es.append(es_opt)
    return f.with_columns(
        es_opt_after=pl.Series(after_es, dtype=pl.Float64),
        c_hat_after=pl.Series(c_after, dtype=pl.Float64),
        kappa_hat_bal_after=pl.Series(kb_after, dtype=pl.Float64),
    ).with_columns(
        beats_bal_before=pl.col("es_bal") > (1 + MATERIAL) * pl.col("es_pool"),
        beats_bal_after=pl.col("es_bal") > (1 + MATERIAL) * pl.col("es_opt_after"),
    )


def _med(x) -> float:
    a = np.asarray([v for v in x if v is not None and not (isinstance(v, float) and math.isnan(v))], dtype=np.float64)
    return stats.median(a) if a.size else math.nan


def _is_one(x: pl.Expr) -> pl.Expr:
    return (x - 1.0).abs() <= REL_TOL


TABLE7_SCHEMA = {
    "budget": pl.Int64, "n_manifest": pl.Int64, "n_solved": pl.Int64, "n_unsolved": pl.Int64, "n_undecided": pl.Int64,
    "n_confirmed": pl.Int64, "n_within_1pct": pl.Int64, "improved": pl.Int64, "f_hi": pl.Float64,
    "n_records": pl.Int64, "n_docs": pl.Int64, "median_c_hat": pl.Float64, "cap_f_hi": pl.Float64,
    "f_hi_unsolved": pl.Float64, "cap_unsolved": pl.Float64,
    "manifest_median_c_hat_before": pl.Float64, "manifest_median_c_hat_after": pl.Float64,
    "manifest_median_kappa_hat_bal_before": pl.Float64, "manifest_median_kappa_hat_bal_after": pl.Float64,
    "beats_bal_before": pl.Float64, "beats_bal_after": pl.Float64,
    "median_improvement": pl.Float64, "max_improvement": pl.Float64,
    "kappa_hat_bal_eq_1": pl.Float64, "worst_cell_margin": pl.Float64, "median_kappa_hat_bal_cap": pl.Float64,
    "median_seconds": pl.Float64, "max_seconds": pl.Float64,
}  # fmt: skip


def table7(records: pl.DataFrame, man: pl.DataFrame, certified: pl.DataFrame) -> pl.DataFrame:
    """Table 7 per budget (spec §3.6); ``records`` are the full ceiling records (every document)."""
    sub = substitute(man, certified)
    rows = []
    for s in sorted(sub["budget"].unique().to_list()):
        g = sub.filter(pl.col("budget") == s)
        status = g["status"].to_list()
        n_unsolved = sum(st == UNSOLVED for st in status)
        n_solved = len(status) - n_unsolved
        k = sum(st == IMPROVED for st in status)
        f_hi = stats.wilson_upper(k, n_solved) if n_solved else math.nan
        f_hi_u = stats.wilson_upper(k + n_unsolved, len(status)) if status else math.nan
        full = records.filter((pl.col("budget") == s) & pl.col("c_hat").is_not_null() & pl.col("c_hat").is_not_nan())
        c = full["c_hat"].to_numpy()
        kb = full.filter(pl.col("kappa_hat_bal").is_not_null() & pl.col("kappa_hat_bal").is_not_nan())
        cells = kb.group_by("model").agg(_is_one(pl.col("kappa_hat_bal")).mean().alias("frac"))
        imp = g.filter(pl.col("status") == IMPROVED)["improvement"].to_numpy()
        rows.append({
            "budget": s, "n_manifest": g.height, "n_solved": n_solved, "n_unsolved": n_unsolved,
            "n_undecided": sum(st == UNDECIDED for st in status), "n_confirmed": sum(st == CONFIRMED_OPTIMAL for st in status),
            "n_within_1pct": sum(st == WITHIN_1PCT for st in status), "improved": k, "f_hi": f_hi,
            "n_records": full.height, "n_docs": full.select("model", "corpus", "doc").n_unique(),
            "median_c_hat": stats.median(c) if c.size else math.nan,
            "cap_f_hi": stats.median_cap(c, f_hi) if c.size and not math.isnan(f_hi) else math.nan,
            "f_hi_unsolved": f_hi_u,
            "cap_unsolved": stats.median_cap(c, f_hi_u) if c.size and not math.isnan(f_hi_u) else math.nan,
            "manifest_median_c_hat_before": _med(g["c_hat"].to_list()),
            "manifest_median_c_hat_after": _med(g["c_hat_after"].to_list()),
            "manifest_median_kappa_hat_bal_before": _med(g["kappa_hat_bal"].to_list()),
            "manifest_median_kappa_hat_bal_after": _med(g["kappa_hat_bal_after"].to_list()),
            "beats_bal_before": float(g["beats_bal_before"].mean()) if g.height else math.nan,
            "beats_bal_after": float(g["beats_bal_after"].mean()) if g.height else math.nan,
            "median_improvement": stats.median(imp) if imp.size else math.nan,
            "max_improvement": float(imp.max()) if imp.size else math.nan,
            "kappa_hat_bal_eq_1": float(kb.select(_is_one(pl.col("kappa_hat_bal")).mean()).item()) if kb.height else math.nan,
            "worst_cell_margin": float((cells["frac"] - 0.5 - f_hi).min()) if cells.height and not math.isnan(f_hi) else math.nan,
            "median_kappa_hat_bal_cap": stats.median_cap(kb["kappa_hat_bal"].to_numpy(), f_hi) if kb.height and not math.isnan(f_hi) else math.nan,
            "median_seconds": _med(g["seconds"].to_list()), "max_seconds": float(g["seconds"].max() or math.nan),
        })  # fmt: skip
    return pl.DataFrame(rows, schema=TABLE7_SCHEMA)


# ============================================================================== cap-widening sweep


def sweep_heads(records: pl.DataFrame, heads_per_layer: int, seed: int) -> pl.DataFrame:
    """The depth-spanning head subset: ``heads_per_layer`` query heads of every layer of every model, seeded."""
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 11]))
    rows = []
    for (model, layer), g in records.select("model", "layer", "head").unique().sort(["model", "layer", "head"]).group_by(
        ["model", "layer"], maintain_order=True
    ):
        heads = g["head"].to_numpy()
        for h in np.sort(rng.choice(heads, size=min(heads_per_layer, heads.size), replace=False)):
            rows.append({"model": model, "layer": int(layer), "head": int(h)})
    return pl.DataFrame(rows, schema={"model": pl.Utf8, "layer": pl.Int64, "head": pl.Int64})


def sweep_instances(records: pl.DataFrame, heads: pl.DataFrame, budget: int = 32, primary_docs: int | None = 3) -> pl.DataFrame:
    f = records.filter((pl.col("budget") == budget) & pl.col("es_pool").is_not_null())
    if primary_docs is not None:
        f = _primary(f, primary_docs)
    return f.join(heads, on=["model", "layer", "head"], how="semi").sort(["model", "corpus", "doc", "layer", "head", "query_pos"])


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
            out.append({
                **{k: it[k] for k in IDENTITY}, "extra": int(e), "n_subsets": int(po.n_subsets), "es_top": it["es_top"],
                "es_pool": po.es_pool, "kappa_hat": op.ratio_kappa(it["es_top"], po.es_pool, D),
                "c_hat": op.closable_share(it["es_top"], po.es_pool, D), "seconds": time.perf_counter() - t0,
            })  # fmt: skip
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


SWEEP_SCHEMA = {
    "extra": pl.Int64, "subsets": pl.Int64, "n": pl.Int64, "label_rate": pl.Float64, "median_c_hat": pl.Float64,
    "median_gap_shift": pl.Float64, "median_gap_shift_rel": pl.Float64, "improved_over_base": pl.Float64,
    "median_seconds": pl.Float64,
}  # fmt: skip


def sweep_table(rows: pl.DataFrame, kappa_threshold: float = 1.11, budget: int = 32) -> pl.DataFrame:
    """Per e: subsets C(s+e, s), fraction kappa_hat > threshold, median c_hat and its shift from the smallest e."""
    extras = sorted(rows["extra"].unique().to_list())
    base = rows.filter(pl.col("extra") == extras[0]).select(*IDENTITY, pl.col("es_pool").alias("_base"))
    base_med = _med(rows.filter(pl.col("extra") == extras[0])["c_hat"].to_list())
    out = []
    for e in extras:
        g = rows.filter(pl.col("extra") == e).join(base, on=IDENTITY, how="left")
        med = _med(g["c_hat"].to_list())
        out.append({
            "extra": e, "subsets": math.comb(budget + e, budget), "n": g.height,
            "label_rate": float((g["kappa_hat"] > kappa_threshold).mean()), "median_c_hat": med,
            "median_gap_shift": med - base_med, "median_gap_shift_rel": (med - base_med) / base_med if base_med else math.nan,
            "improved_over_base": float((g["es_pool"] < (1 - 1e-12) * g["_base"]).mean()),
            "median_seconds": _med(g["seconds"].to_list()),
        })  # fmt: skip
    return pl.DataFrame(out, schema=SWEEP_SCHEMA)


# ================================================================================ tables, headline


def _fmt(x, digits=4) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def _markdown(table: pl.DataFrame, columns: Sequence[tuple[str, str]], title: str) -> str:
    lines = [f"# {title}", "", "| " + " | ".join(h for _, h in columns) + " |", "|" + "---|" * len(columns)]
    for r in table.iter_rows(named=True):
        lines.append("| " + " | ".join(_fmt(r[c]) for c, _ in columns) + " |")
    return "\n".join(lines) + "\n"


TABLE7_MD = [
    ("budget", "s"), ("improved", "improved"), ("n_solved", "solved"), ("n_unsolved", "unsolved"), ("n_confirmed", "confirmed"),
    ("f_hi", "f_hi"), ("median_c_hat", "median ĉ"), ("cap_f_hi", "cap at f_hi"), ("cap_unsolved", "cap (unsolved as improved)"),
    ("manifest_median_c_hat_before", "manifest ĉ before"), ("manifest_median_c_hat_after", "after"),
    ("beats_bal_before", "opt beats bal >1% before"), ("beats_bal_after", "after"), ("kappa_hat_bal_eq_1", "κ̂_bal = 1"),
    ("median_kappa_hat_bal_cap", "κ̂_bal median cap"), ("n_records", "records"),
]  # fmt: skip
SWEEP_MD = [
    ("extra", "e"), ("subsets", "subsets"), ("n", "instances"), ("label_rate", "κ̂ > thr"), ("median_c_hat", "median ĉ"),
    ("median_gap_shift", "shift"), ("median_gap_shift_rel", "shift (rel.)"), ("improved_over_base", "ES_pool lower than e_min"),
]  # fmt: skip


def write_table(table: pl.DataFrame, csv_path, md_path, kind: str) -> None:
    from trustmass.plumbing.provenance import atomic_write

    with atomic_write(csv_path) as tmp:
        table.write_csv(tmp)
    cols, title = (TABLE7_MD, "Table 7 — certification substitution") if kind == "table7" else (SWEEP_MD, "Cap-widening sweep at s = 32")
    with atomic_write(md_path) as tmp:
        tmp.write_text(_markdown(table, cols, title), encoding="utf-8")


HEADLINE_SCHEMA = {
    "claim_id": pl.Int64, "value_name": pl.Utf8, "by_key": pl.Utf8, "by_value": pl.Utf8, "population": pl.Utf8,
    "estimate": pl.Float64, "low": pl.Float64, "high": pl.Float64, "n_instances": pl.Int64, "n_docs": pl.Int64,
    "models": pl.Utf8, "n_excluded": pl.Int64, "source": pl.Utf8,
}  # fmt: skip
#: the claims report reads populations "primary" / "all": the manifest and the sweep are drawn from
#: the primary slice, the Table 7 medians and caps read every document's records
_POPULATION = {"manifest": "primary", "depth_subset": "primary", "all_docs": "all"}


def headline(t7: pl.DataFrame, certified_manifest: pl.DataFrame | None, sweep: pl.DataFrame | None, models: str) -> pl.DataFrame:
    """Claims-report rows for claims 18-21, 84, 90-95 (estimates as fractions; percent scaling is the report's)."""
    out: list[dict] = []

    def add(cid, name, est, n=None, by_key=None, by_value=None, population="manifest", n_docs=None, source="table7"):
        out.append({
            "claim_id": cid, "value_name": name, "by_key": by_key, "by_value": None if by_value is None else str(by_value),
            "population": _POPULATION[population], "estimate": None if est is None else float(est), "low": None, "high": None,
            "n_instances": n, "n_docs": n_docs, "models": models, "n_excluded": None, "source": f"{source}:{population}",
        })  # fmt: skip

    for r in t7.iter_rows(named=True):
        s = r["budget"]
        add(18, "median_c_hat_certified", r["cap_f_hi"], r["n_records"], "budget", s, "all_docs", r["n_docs"])
        add(90, "median_c_hat_shift", r["manifest_median_c_hat_after"] - r["manifest_median_c_hat_before"], r["n_manifest"], "budget", s)
        add(90, "median_kappa_hat_bal_shift", r["manifest_median_kappa_hat_bal_after"] - r["manifest_median_kappa_hat_bal_before"], r["n_manifest"], "budget", s)
        add(91, "n_improvements", r["improved"], r["n_solved"], "budget", s)
        if s == 32:
            add(90, "median_c_hat_s32", r["manifest_median_c_hat_before"], r["n_manifest"], "substitution", "before")
            add(90, "median_c_hat_s32", r["manifest_median_c_hat_after"], r["n_manifest"], "substitution", "after")
            add(92, "optimum_beats_balancing_share", r["beats_bal_before"], r["n_manifest"], "substitution", "before")
            add(92, "optimum_beats_balancing_share", r["beats_bal_after"], r["n_manifest"], "substitution", "after")
            add(93, "median_c_hat_cap", r["cap_f_hi"], r["n_records"], None, None, "all_docs", r["n_docs"])
        else:
            add(92, "optimum_beats_balancing_share_elsewhere", r["beats_bal_after"], r["n_manifest"], "budget", s)
        add(94, "kappa_hat_bal_eq_1_share", r["kappa_hat_bal_eq_1"], r["n_records"], "budget", s, "all_docs", r["n_docs"])
        add(94, "median_kappa_hat_bal_cap", r["median_kappa_hat_bal_cap"], r["n_records"], "budget", s, "all_docs", r["n_docs"])
        add(95, "n_instances_per_budget", r["n_records"], r["n_records"], "budget", s, "all_docs", r["n_docs"])
    if t7.height:
        add(94, "worst_cell_margin", t7["worst_cell_margin"].min(), int(t7["n_records"].sum()), population="all_docs")
        add(95, "n_docs", t7["n_docs"].max(), population="all_docs")
    if certified_manifest is not None and certified_manifest.height:
        st = certified_manifest["status"]
        solved = int((st != UNSOLVED).sum())
        add(21, "confirmed_optimal_share", (st == CONFIRMED_OPTIMAL).sum() / solved if solved else None, solved)
        add(21, "improved_share", (st == IMPROVED).sum() / solved if solved else None, solved)
        imp = certified_manifest.filter(st == IMPROVED)["improvement"].to_numpy()
        add(91, "n_improvements", int((st == IMPROVED).sum()), solved)
        add(91, "median_improvement", stats.median(imp) if imp.size else None, int(imp.size))
        add(91, "max_improvement", float(imp.max()) if imp.size else None, int(imp.size))
        add(84, "n_unsolved", int((st == UNSOLVED).sum()), certified_manifest.height)
        add(84, "largest_improvement", float(imp.max()) if imp.size else None, int(imp.size))
    if sweep is not None and sweep.height:
        for r in sweep.iter_rows(named=True):
            add(20, "label_rate", r["label_rate"], r["n"], "pool_extra", r["extra"], "depth_subset", source="sweep")
        last = sweep.row(-1, named=True)
        add(19, "median_gap_change", abs(last["median_gap_shift_rel"]), last["n"], "budget", 32, "depth_subset", source="sweep")
        add(19, "extra_keys", last["extra"], last["n"], population="depth_subset", source="sweep")
        add(19, "enumeration_cap_widened", last["subsets"], population="depth_subset", source="sweep")
    return pl.DataFrame(out, schema=HEADLINE_SCHEMA)


def statuses() -> tuple[str, ...]:
    return STATUSES


def default_workers(threads: int) -> int:
    return max(1, min(int(threads), os.cpu_count() or 1))
