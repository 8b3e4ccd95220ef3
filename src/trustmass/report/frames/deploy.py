"""The deployment statistics (spec §7): Tables 3, 4 and 5, the bytes table, timing, and the deployment claims.

Inputs: the rows of every ``deploy_condition`` job (one per item, variant, budget and method; scores on the
0-100 scale, ``dense_valid`` per item) and the ``deploy_replay`` rows (kvpress's own prefill, bytes as
shipped).  The main rows are the run's own eviction point: ``unmodified`` (question-visible) or
``doc_boundary``.  Every W/T/L is ``deploy.wtl`` (literal and 0.05-point ties, paired item bootstrap per
condition), on dense-valid items only; retrieval and benchmark conditions are never pooled (one table row per
setting).  Every W/T/L row also counts its silent conditions (``n_silent``: both methods at 0 on every item, or
both at 100; each is also a tie) and its paired items (``n_items``): the tables show every condition, the claims
judge W/T/L on the speaking ones (:mod:`trustmass.report.frames.deploy_comparison_claims`).  Results on the
packaged models and synthetic items are analogues of the paper's: the claims report judges them by their own
verdict kinds and names the models.

- Table 3: every ContourKV variant against its paper opponents (KVzip, Compactor, SnapKV) and against its
  own unenforced form (the enforcement effect: conditions lowered / raised, mean change).
- Table 4: window-scored enforced ContourKV against every other method, pooled and per budget, with both
  methods' hit rates and the bytes ratio.
- Table 5: the question-visible decomposition per (model, budget, method): hit rate of each variant, its
  change against ``unmodified`` (paired), memory at the first answer token relative to ``doc_boundary``,
  the question rows in the cache and evicted; "allocation swapped": the same score under the uniform
  allocation (``snapkv_w32`` for window-scored ContourKV) against it.

The claim values read from these tables are :mod:`trustmass.report.frames.deploy_claims`'s.
"""

from __future__ import annotations

import polars as pl

from trustmass.deploy import wtl as wtl_mod
from trustmass.deploy.bytes_table import bytes_summary
from trustmass.report.engine import StatisticsSettings

__all__ = [
    "bytes_rows",
    "by_setting",
    "decomposition_table",
    "main_rows",
    "retrieval_rows",
    "table3",
    "table4",
    "timing_table",
]

POPULATION = "all"
ENFORCED = "contourkv_enforced"
#: Table 3's comparison labels (the claims read their rows by these)
VS_KVZIP_UNENFORCED = "vs KVzip, unenforced (reconstruction score)"
VS_KVZIP_ENFORCED = "vs KVzip, enforced"
VS_COMPACTOR = "vs Compactor"
REALLOCATION = "window-score reallocation vs SnapKV (the same 32-row window score)"
EFFECT_RECON = "enforcement effect (reconstruction score)"
EFFECT_WINDOW = "enforcement effect (window score)"
#: Table 3's comparisons: (ContourKV variant, opponent, what the paper's row is)
TABLE3_PAIRS = (
    ("contourkv_recon_unenforced", "kvzip", VS_KVZIP_UNENFORCED),
    ("contourkv_recon_enforced", "kvzip", VS_KVZIP_ENFORCED),
    ("contourkv_enforced", "compactor", VS_COMPACTOR),
    ("contourkv_recon_enforced", "compactor", "vs Compactor (reconstruction score)"),
    ("contourkv_enforced", "snapkv_w32", REALLOCATION),
    ("contourkv_enforced", "snapkv", "vs SnapKV (its own 64-row window)"),
    ("contourkv_recon_enforced", "contourkv_recon_unenforced", EFFECT_RECON),
    ("contourkv_enforced", "contourkv_unenforced", EFFECT_WINDOW),
)
PER_HEAD_KINDS = ("headwise", "kvzip")
UNIFORM_KINDS = ("uniform", "pyramid")


def main_rows(rows: pl.DataFrame) -> pl.DataFrame:
    """The rows of the run's own eviction point (not the decomposition's extra variants)."""
    main = pl.when(pl.col("query_aware")).then(pl.lit("unmodified")).otherwise(pl.lit("doc_boundary"))
    return rows.filter(pl.col("variant") == main)


def _wtl(frame: pl.DataFrame, variant: str, opponents, settings: StatisticsSettings, **kw) -> pl.DataFrame:
    return wtl_mod.wtl(
        frame, variant, opponents, B=max(settings.bootstrap, 1), seed=settings.seed, level=settings.level, **kw
    )


def _valid(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.filter(pl.col("dense_valid"))


def _hit(frame: pl.DataFrame, method: str) -> float | None:
    return _mean(_valid(frame).filter(pl.col("method") == method)["score"] / 100.0)


def _excluded(frame: pl.DataFrame) -> int:
    items = frame.filter(pl.col("method") == "dense").unique(["model", "task", "length", "item_id"])
    return int((~items["dense_valid"]).sum())


def by_setting(rows: pl.DataFrame) -> list[tuple[str, pl.DataFrame]]:
    """(setting, its rows), benchmark first: retrieval and benchmark conditions are never pooled (spec §7.5)."""
    if "setting" not in rows.columns:  # rows written before the benchmark setting existed: the synthetic tasks
        rows = rows.with_columns(setting=pl.lit("retrieval"))
    return [
        (name, rows.filter(pl.col("setting") == name))
        for name in ("benchmark", "retrieval")
        if name in set(rows["setting"].to_list())
    ]


def retrieval_rows(rows: pl.DataFrame) -> pl.DataFrame:
    """The synthetic retrieval tasks' rows (Tables 4 and 5 read these only)."""
    return dict(by_setting(rows)).get("retrieval", rows.clear())


def table3(rows: pl.DataFrame, settings: StatisticsSettings = StatisticsSettings()) -> pl.DataFrame:
    """Table 3: ContourKV's variants against KVzip, Compactor, SnapKV and their own unenforced form, per setting."""
    methods = set(rows["method"].unique().to_list())
    out = []
    for setting, part in by_setting(main_rows(rows)):
        for variant, opponent, label in TABLE3_PAIRS:
            if {variant, opponent} <= methods:
                got = _wtl(part, variant, [opponent], settings).row(0, named=True)
                share = part.filter(pl.col("method") == variant)["frac_full"]
                out.append(
                    {
                        "setting": setting,
                        "comparison": label,
                        **got,
                        "variant_hit": _hit(part, variant),
                        "opponent_hit": _hit(part, opponent),
                        "variant_frac_min": float(share.min()),
                        "variant_frac_max": float(share.max()),
                        "n_excluded_items": _excluded(part),
                    }
                )
    return pl.DataFrame(out) if out else pl.DataFrame()


def table4(rows: pl.DataFrame, settings: StatisticsSettings = StatisticsSettings()) -> pl.DataFrame:
    """Table 4: window-scored enforced ContourKV against every other method, pooled and per budget (retrieval)."""
    main = main_rows(retrieval_rows(rows))
    if ENFORCED not in set(main["method"].unique().to_list()):
        return pl.DataFrame()
    opponents = [m for m in main["method"].unique(maintain_order=True).to_list() if m not in ("dense", ENFORCED)]
    out = []
    for budget in _budget_levels(main):
        part = main if budget is None else main.filter(pl.col("budget") == budget)
        for got in _wtl(part, ENFORCED, opponents, settings).iter_rows(named=True):
            opp = got["opponent"]
            ratio = _bytes_ratio(part, ENFORCED, opp)
            out.append(
                {
                    "setting": wtl_mod.setting_of(part),
                    "budget": "all" if budget is None else str(budget),
                    **got,
                    "variant_hit": _hit(part, ENFORCED),
                    "opponent_hit": _hit(part, opp),
                    "bytes_ratio": ratio,
                }
            )
    return pl.DataFrame(out)


def _budget_levels(frame: pl.DataFrame) -> list:
    """[None (pooled), each budget], or the one budget alone (its pooled row would repeat it)."""
    budgets = sorted(frame["budget"].unique().to_list())
    return budgets if len(budgets) == 1 else [None, *budgets]


def _bytes_ratio(frame: pl.DataFrame, a: str, b: str) -> float | None:
    """Median over items of a's ragged bytes over b's."""
    keys = ["model", "task", "length", "budget", "item_id"]
    x = frame.filter(pl.col("method") == a).select([*keys, "bytes_ragged"])
    y = frame.filter(pl.col("method") == b).select([*keys, pl.col("bytes_ragged").alias("other")])
    j = x.join(y, on=keys)
    return float((j["bytes_ragged"] / j["other"]).median()) if j.height else None


def decomposition_table(rows: pl.DataFrame, settings: StatisticsSettings = StatisticsSettings()) -> pl.DataFrame:
    """Table 5: per (model, budget, method) and pooled over budgets ("all"), each variant against ``unmodified``
    (retrieval items)."""
    rows = retrieval_rows(rows)
    variants = set(rows["variant"].unique().to_list())
    if not {"unmodified", "doc_rows", "doc_boundary"} <= variants:
        return pl.DataFrame()
    methods = rows.filter(pl.col("variant") == "doc_rows")["method"].unique(maintain_order=True).to_list()
    cells = _cells(rows)
    frame = rows.filter(pl.col("method").is_in(methods)).with_columns(
        rows_at_answer=pl.col("kept_entries") / cells + pl.col("block_tokens")
    )
    out = []
    for (model, method), group in frame.group_by(["model", "method"], maintain_order=True):
        for budget in _budget_levels(group):
            part = group if budget is None else group.filter(pl.col("budget") == budget)
            reference = _valid(part).filter(pl.col("variant") == "doc_boundary")
            memory_ref = _mean(reference["rows_at_answer"]) or float("nan")
            for variant in ("unmodified", "doc_rows", "doc_boundary"):
                mine = _valid(part).filter(pl.col("variant") == variant)
                change = {"mean_delta": 0.0, "delta_lo": None, "delta_hi": None, "n_conditions": None, "n_silent": None}
                if variant != "unmodified":
                    got = _wtl(part, variant, ["unmodified"], settings, method_col="variant").row(0, named=True)
                    change = {k: got[k] for k in change}
                out.append(
                    {
                        "model": model,
                        "method": method,
                        "budget": "all" if budget is None else str(budget),
                        "variant": variant,
                        "n_items": mine.height,
                        "hit_rate": _mean(mine["score"] / 100.0),
                        "hit_change_points": change["mean_delta"],
                        "hit_change_lo": change["delta_lo"],
                        "hit_change_hi": change["delta_hi"],
                        "n_conditions": change["n_conditions"],
                        "n_silent": change["n_silent"],
                        "memory_vs_doc_boundary": _mean(mine["rows_at_answer"] / memory_ref),
                        "question_rows": _mean(mine["question_in_cache"]),
                        "question_rows_evicted": _mean(mine["question_in_cache"] - mine["question_kept_mean"]),
                    }
                )
            out += _allocation_swapped(rows, model, method, budget, settings)
    return pl.DataFrame(out)


#: the uniform allocation of a ContourKV method's own score (Table 5's "allocation swapped")
UNIFORM_TWIN = {"contourkv_enforced": "snapkv_w32"}


def _allocation_swapped(rows, model, method, budget, settings) -> list[dict]:
    """Table 5's "allocation swapped" row: the same score under the uniform allocation against ``method``, both
    question-visible (the main rows), when the run has the uniform twin."""
    twin = UNIFORM_TWIN.get(method)
    main = main_rows(rows).filter((pl.col("model") == model) & pl.col("method").is_in([method, twin or ""]))
    if budget is not None:
        main = main.filter(pl.col("budget") == budget)
    if twin is None or twin not in set(main["method"].to_list()) or not main["query_aware"].all():
        return []
    got = _wtl(main, twin, [method], settings).row(0, named=True)
    mine = _valid(main).filter(pl.col("method") == twin)
    return [
        {
            "model": model,
            "method": method,
            "budget": "all" if budget is None else str(budget),
            "variant": "allocation_swapped",
            "n_items": mine.height,
            "hit_rate": _mean(mine["score"] / 100.0),
            "hit_change_points": got["mean_delta"],
            "hit_change_lo": got["delta_lo"],
            "hit_change_hi": got["delta_hi"],
            "n_conditions": got["n_conditions"],
            "n_silent": got["n_silent"],
            "memory_vs_doc_boundary": None,
            "question_rows": _mean(mine["question_in_cache"]),
            "question_rows_evicted": _mean(mine["question_in_cache"] - mine["question_kept_mean"]),
        }
    ]


def _mean(values: pl.Series) -> float | None:
    """The mean, or None over no items (every item dense-missed)."""
    return float(values.mean()) if values.len() else None


def _cells(frame: pl.DataFrame) -> int:
    """(layer, KV head) cells of the model: the dense rows keep every position of every cell."""
    dense = frame.filter(pl.col("method") == "dense")
    if dense.height:
        r = dense.row(0, named=True)
        return int(round(r["kept_entries"] / r["n_cached"]))
    r = frame.row(0, named=True)  # a uniform method would do; fall back on bytes: full = N * cells * row bytes
    return int(round(r["bytes_full"] / r["bytes_ragged"] * r["kept_entries"] / r["n_cached"]))


def bytes_rows(rows: pl.DataFrame, replay: pl.DataFrame) -> pl.DataFrame:
    """The bytes table: the runs' ragged bytes and layer-padded counterfactual, and the replay's as-shipped bytes."""
    main = main_rows(rows)
    common = ["model", "item_id", "length", "budget", "method", "bytes_full", "kept_min_head", "kept_max_head"]
    ledger = [
        main.select([*common, pl.lit("ragged").alias("storage"), pl.col("bytes_ragged").alias("bytes_measured")]),
        main.select(
            [*common, pl.lit("layer_padded").alias("storage"), pl.col("bytes_layer_padded").alias("bytes_measured")]
        ),
    ]
    if replay.height:
        shipped = replay.filter(pl.col("method") != "dense")
        ledger.append(shipped.select([*common, "storage", "bytes_measured"]))
    table = bytes_summary(pl.concat(ledger, how="vertical_relaxed"))
    kinds = rows.select("method", "kind").unique("method")
    table = table.join(kinds, on="method", how="left")
    if replay.height:  # K/V rows the shipped cache holds per head, over the positions (1 for a masked full cache)
        share = (
            replay.filter(pl.col("method") != "dense")
            .group_by(["model", "length", "budget", "method"])
            .agg(kv_rows_share_median=(pl.col("cache_rows") / pl.col("n_cached")).median())
        )
        return table.join(
            share.with_columns(storage=pl.lit("as_shipped")),
            on=["model", "length", "budget", "method", "storage"],
            how="left",
        )
    return table.with_columns(kv_rows_share_median=pl.lit(None, dtype=pl.Float64))


def timing_table(rows: pl.DataFrame, replay: pl.DataFrame) -> pl.DataFrame:
    """Seconds per method (mean over items and budgets of the main rows) and, from the replay, each press's
    prefill over the plain prefill (median over its ``replay_n`` items), per model, length, method and -- where the
    rows record it -- the ``device`` they were timed on (a time measured on another device is another row)."""
    main = main_rows(rows)
    keys = _timing_keys(main)
    out = main.group_by(keys, maintain_order=True).agg(
        n=pl.len(),
        prefill_s=pl.col("prefill_s").mean(),
        score_s=pl.col("score_s").mean(),
        decode_s=pl.col("decode_s").mean(),
    )
    if replay.height:
        cost = replay.group_by(_timing_keys(replay)).agg(
            replay_n=pl.len(),
            replay_prefill_s=pl.col("prefill_s").median(),
            replay_cost_over_dense=pl.col("cost_over_dense").median(),
        )
        on = [k for k in keys if k in cost.columns]
        out = out.join(cost, on=on, how="full", coalesce=True)
    return out.sort(["model", "length", "method"])


def _timing_keys(frame: pl.DataFrame) -> list[str]:
    return ["model", "length", "method"] + (["device"] if "device" in frame.columns else [])
