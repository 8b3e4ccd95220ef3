"""The deployment claim values (claims 3-6, 59-78, 113-117, 120) from Tables 3-5, the bytes table, timing and the
replay (:mod:`trustmass.report.frames.deploy`), as rows of the one headline schema
(:mod:`trustmass.report.headline`).

- W/T/L counts are the tables' own, under the literal tie rule (tie iff the condition's Δ = 0), one count per
  row with ``n_instances`` the conditions behind it; a value stated per outcome gets one row per outcome
  (``outcome``: win / tie / loss).  Table 3 is read in the benchmark setting where the run has one, else in
  retrieval (the paper's Table 3 is its benchmark grid); Table 4 is retrieval.  ``setting`` is in every row
  read from either.
- Every row carries the dimensions its claim value's ``where`` filters on (budget, storage), so a filter
  matches it.
- ``uninformative`` (the claims report shows the row and judges nothing on it) where the hit rates behind a
  row are all 0 or all 100 (a margin, a W/T/L count or a hit-rate change is then 0 by construction), where
  the unmodified run of a decomposition finds nothing (nothing to decompose), and where the two costs a
  difference compares are both 0.

:func:`statistics` is the rule ``deploy_statistics``: the tables and the claims from the rows and the replay.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from trustmass.deploy import wtl as wtl_mod
from trustmass.plumbing.errors import CleanError
from trustmass.plumbing.rule_io import read_parquets
from trustmass.report.engine import StatisticsSettings
from trustmass.report.frames.deploy import (
    EFFECT_RECON,
    EFFECT_WINDOW,
    ENFORCED,
    PER_HEAD_KINDS,
    POPULATION,
    REALLOCATION,
    UNIFORM_KINDS,
    VS_COMPACTOR,
    VS_KVZIP_ENFORCED,
    VS_KVZIP_UNENFORCED,
    by_setting,
    bytes_rows,
    decomposition_table,
    main_rows,
    table3,
    table4,
    timing_table,
)
from trustmass.report.headline import headline_frame, row
from trustmass.report.statistics import Frames, Inputs, bootstrap_seeds

__all__ = ["headline", "statistics"]

UNENFORCED = ("contourkv_unenforced", "contourkv_recon_unenforced")
#: the storage unenforced ContourKV's bytes are read in (claims 60, 64, 114): a ragged cache holds exactly the
#: enforcing methods' rows (one global threshold over the same total), the shared pipeline pads every layer to
#: its widest head, which is what the paper's unenforced run held
UNENFORCED_HELD = "layer_padded"
#: uniform-allocation methods that are not kvpress library baselines (claim 62): H2O is this project's own press
#: (the paper: "plus H2O"), snapkv_w32 is SnapKV at ContourKV's window (the reallocation's twin)
NOT_LIBRARY = ("h2o", "snapkv_w32")
#: Table 3's counts: comparison -> (claim, value, column); the enforcement effect's W is enforcement raising the score
TABLE3_COUNTS = {
    VS_KVZIP_ENFORCED: (
        (6, "wins_vs_kvzip_enforced", "wins"),
        (6, "losses_vs_kvzip_enforced", "losses"),
        (66, "wins", "wins"),
        (66, "losses", "losses"),
    ),
    VS_KVZIP_UNENFORCED: ((64, "wins", "wins"), (64, "losses", "losses")),
    EFFECT_RECON: ((65, "conditions_lowered", "losses"), (65, "conditions_raised", "wins")),
    REALLOCATION: ((71, "n_conditions", "n_conditions"),),
}
#: Table 3's W/T/L stated per outcome: comparison -> (claim, value)
TABLE3_OUTCOMES = {VS_COMPACTOR: (70, "wtl_vs_compactor"), REALLOCATION: (71, "wtl_vs_snapkv")}
OUTCOMES = (("win", "wins"), ("tie", "ties"), ("loss", "losses"))
#: the decomposition's own variants (Table 5), the unmodified run first
DECOMPOSED = ("unmodified", "doc_rows", "doc_boundary")
NOTHING_TO_DECOMPOSE = "nothing to decompose"


# ---------------------------------------------------------------------------------------------- helpers


def _neg(x):
    return None if x is None else 0.0 - x  # 0.0 - 0.0 is 0.0, not -0.0


def _models(frame: pl.DataFrame) -> str:
    return ",".join(sorted(set(frame["model"].to_list()))) if "model" in frame.columns and frame.height else ""


def _rate(name: str, rate: float, n: int | None) -> str:
    return f"{name} {round(rate * n)} of {n}" if n else name


def _degenerate(rates: Sequence[tuple[str, float | None, int | None]], zero: str, full: str) -> str | None:
    """Why a comparison of these hit rates (name, fraction, items) says nothing: every one is 0 (``zero``) or
    every one is 1 (``full``); None otherwise, or when none is known."""
    known = [(name, r, n) for name, r, n in rates if r is not None]
    if not known:
        return None
    what = "both hit rates are" if len(known) == 2 else "every hit rate is"
    listed = ", ".join(_rate(name, r, n) for name, r, n in known)
    for edge, shown, tail in ((0.0, "0", zero), (1.0, "100", full)):
        if all(abs(r - edge) < 1e-12 for _, r, _ in known):
            return f"{what} {shown} ({listed}): {tail}"
    return None


def _pair_reason(rec: dict) -> str | None:
    """A Table 3/4 row whose two methods' hit rates are both 0 or both 100: its W/T/L are ties and its margin is 0
    by construction."""
    return _degenerate(
        [(rec["variant"], rec["variant_hit"], None), (rec["opponent"], rec["opponent_hit"], None)],
        "neither method finds the answer on any item",
        "both methods find it on every item",
    )


def _table3_setting(t3: pl.DataFrame) -> str:
    """The setting Table 3 is read in: the paper's Table 3 is its benchmark grid, so benchmark where the run has one."""
    return "benchmark" if t3.height and "benchmark" in set(t3["setting"].to_list()) else "retrieval"


def _per_outcome(claim: int, value: str, rec: dict, by: dict, source: str, reason: str | None) -> list[dict]:
    """One count per outcome of a W/T/L row (``by`` gains ``outcome``)."""
    return [
        row(
            claim,
            value,
            rec[column],
            POPULATION,
            by={**by, "outcome": outcome},
            n_instances=rec["n_conditions"],
            source=f"{source}.{column}",
            uninformative=reason,
        )
        for outcome, column in OUTCOMES
    ]


# ---------------------------------------------------------------------------------------------- bytes


def _bytes_claims(table: pl.DataFrame) -> list[dict]:
    """Claims 3, 59, 60, 61, 63, 64, 113, 114 from the bytes table (fractions of the full cache, ratios to SnapKV)."""
    out = []

    def emit(claim, value, rec, column="frac_full_median", **by):
        out.append(
            row(
                claim,
                value,
                rec[column],
                POPULATION,
                by={"model": rec["model"], "length": rec["length"], "budget": rec["budget"], **by},
                n_instances=rec["n_items"],
                models=rec["model"],
                source=f"deploy_bytes[{rec['method']}, {rec['storage']}].{column}",
            )
        )

    for rec in table.iter_rows(named=True):
        m, storage, kind = rec["method"], rec["storage"], rec.get("kind")
        if storage == "ragged" and kind in UNIFORM_KINDS:
            emit(59, "uniform_methods_cache_share", rec, method=m)
        if storage == "ragged" and m == "snapkv":
            emit(63, "kept_cache_share", rec, method=m)
        # claims 3, 59, 61 speak of the K/V rows held; the head-wise masks' index tensors come on top (bytes table)
        if storage == "as_shipped" and kind in PER_HEAD_KINDS:
            emit(59, "per_head_methods_cache_share", rec, "kv_rows_share_median", method=m)
            emit(3, "held_cache_share", rec, "kv_rows_share_median", method=m, storage=storage)
        if storage == "as_shipped" and m in ("snapkv", "compactor"):
            emit(61, "snapkv_compactor_cache_share", rec, "kv_rows_share_median", method=m)
        if storage == "as_shipped" and m == "kvzip":
            emit(61, "kvzip_cache_share", rec, "kv_rows_share_median")
            emit(113, "kvzip_bytes_over_snapkv", rec, "ratio_to_snapkv_median")
        if storage == "ragged" and m in ("contourkv_enforced", "contourkv_recon_enforced"):
            emit(60, "contourkv_cache_share_enforced", rec, method=m)
            emit(60, "contourkv_bytes_over_snapkv_enforced", rec, "ratio_to_snapkv_median", method=m)
        if storage == UNENFORCED_HELD and m in UNENFORCED:
            emit(60, "contourkv_cache_share_unenforced", rec, method=m)
            emit(114, "median_bytes_over_snapkv", rec, "ratio_to_snapkv_median", method=m)
            if m == "contourkv_recon_unenforced":
                emit(64, "contourkv_cache_share", rec)
        if storage == "ragged" and m in UNENFORCED:
            out.append(
                row(
                    114,
                    "overkeep_over_nominal",
                    rec["kept_max_head"] / rec["budget"],
                    POPULATION,
                    by={"model": rec["model"], "length": rec["length"], "budget": rec["budget"], "method": m},
                    n_instances=rec["n_items"],
                    models=rec["model"],
                    source=f"deploy_bytes[{m}]: widest cell / s",
                )
            )
    return out + _bytes_over_enforcing(table)


def _bytes_over_enforcing(table: pl.DataFrame) -> list[dict]:
    """Claim 114: unenforced ContourKV's bytes over each enforcing (uniform-allocation) method's at the same model,
    length and budget, both in the storage unenforced ContourKV is held in (their medians over items of the bytes
    over SnapKV's, divided)."""
    if not table.height or "kind" not in table.columns:
        return []
    keys = ["model", "length", "budget"]
    held = table.filter(pl.col("storage") == UNENFORCED_HELD)
    enforcing = held.filter(pl.col("kind").is_in(UNIFORM_KINDS)).select(
        *keys, opponent=pl.col("method"), opponent_ratio=pl.col("ratio_to_snapkv_median")
    )
    pairs = held.filter(pl.col("method").is_in(UNENFORCED)).join(enforcing, on=keys).sort([*keys, "method", "opponent"])
    return [
        row(
            114,
            "bytes_over_enforcing_methods",
            rec["ratio_to_snapkv_median"] / rec["opponent_ratio"],
            POPULATION,
            by={
                **{k: rec[k] for k in keys},
                "method": rec["method"],
                "opponent": rec["opponent"],
                "storage": UNENFORCED_HELD,
            },
            n_instances=rec["n_items"],
            models=rec["model"],
            source=f"deploy_bytes[{rec['method']} over {rec['opponent']}, {UNENFORCED_HELD}].ratio_to_snapkv_median",
        )
        for rec in pairs.iter_rows(named=True)
    ]


# ---------------------------------------------------------------------------------------------- W/T/L


def _table3_claims(t3: pl.DataFrame) -> list[dict]:
    """Claims 4, 6, 64, 65, 66, 70, 71 from Table 3's rows in its setting (margins in points, counts of conditions)."""
    if not t3.height:
        return []
    out = []
    for rec in t3.filter(pl.col("setting") == _table3_setting(t3)).iter_rows(named=True):
        label, by, reason = rec["comparison"], {"setting": rec["setting"]}, _pair_reason(rec)
        source = f"table3[{rec['setting']}, {label}]"
        margin = dict(n_instances=rec["n_conditions"], source=f"{source}.mean_delta", uninformative=reason)
        if label in (EFFECT_RECON, EFFECT_WINDOW):
            out.append(
                row(
                    4,
                    "enforcement_cost",
                    _neg(rec["mean_delta"]),
                    POPULATION,
                    by={**by, "variant": rec["variant"]},
                    low=_neg(rec["delta_hi"]),
                    high=_neg(rec["delta_lo"]),
                    **margin,
                )
            )
        if label == REALLOCATION:
            out.append(
                row(
                    71,
                    "mean_margin_vs_snapkv",
                    rec["mean_delta"],
                    POPULATION,
                    by=by,
                    low=rec["delta_lo"],
                    high=rec["delta_hi"],
                    **margin,
                )
            )
        for claim, value, column in TABLE3_COUNTS.get(label, ()):
            out.append(
                row(
                    claim,
                    value,
                    rec[column],
                    POPULATION,
                    by=by,
                    n_instances=rec["n_conditions"],
                    source=f"{source}.{column}",
                    uninformative=None if column == "n_conditions" else reason,
                )
            )
        if label in TABLE3_OUTCOMES:
            out += _per_outcome(*TABLE3_OUTCOMES[label], rec, by, source, reason)
    return out


def _table4_claims(t4: pl.DataFrame) -> list[dict]:
    """Claims 67, 73, 75, 120 from Table 4's rows against SnapKV, per budget (margins in points, hit rates as
    fractions, W/T/L counts of conditions)."""
    out = []
    for rec in t4.iter_rows(named=True) if t4.height else []:
        if rec["opponent"] != "snapkv" or rec["budget"] == "all":
            continue
        by, reason = {"setting": rec["setting"], "budget": int(rec["budget"])}, _pair_reason(rec)
        source = f"table4[{rec['setting']}, snapkv, s={rec['budget']}]"
        common = dict(n_instances=rec["n_conditions"], source=source)
        out.append(
            row(
                67,
                "advantage_vs_snapkv",
                rec["mean_delta"],
                POPULATION,
                by=by,
                low=rec["delta_lo"],
                high=rec["delta_hi"],
                uninformative=reason,
                **common,
            )
        )
        out.append(row(73, "contourkv_hit_rate", rec["variant_hit"], POPULATION, by=by, uninformative=reason, **common))
        out.append(row(73, "snapkv_hit_rate", rec["opponent_hit"], POPULATION, by=by, uninformative=reason, **common))
        out.append(row(75, "bytes_over_snapkv", rec["bytes_ratio"], POPULATION, by=by, **common))
        out.append(
            row(
                75,
                "n_conditions",
                rec["n_conditions"],
                POPULATION,
                by=by,
                n_instances=rec["n_conditions"],
                source=f"{source}.n_conditions",
            )
        )
        out += _per_outcome(75, "wtl_vs_snapkv", rec, by, source, reason)
        if by["budget"] == 64:
            out += _per_outcome(120, "wtl_vs_snapkv", rec, by, source, reason)
    return out


def _pooled_level(t4: pl.DataFrame) -> pl.DataFrame:
    """Table 4's rows pooled over budgets (the one budget's where the run has one)."""
    return t4.filter(pl.col("budget") == "all") if "all" in set(t4["budget"].to_list()) else t4


def _significant_losses(t3: pl.DataFrame, t4: pl.DataFrame) -> list[dict]:
    """Claim 117: ContourKV's significant losses (the pair's "L sig.": conditions whose item-bootstrap interval lies
    below 0) against every baseline, in Table 3's setting: Table 3's rows against a baseline (not its own
    unenforced form), plus Table 4's rows (pooled over budgets) against the baselines Table 3 does not pair it with."""
    setting = _table3_setting(t3)
    mine = t3.filter(pl.col("setting") == setting) if t3.height else t3
    mine = mine.filter(~pl.col("opponent").str.starts_with("contourkv")) if mine.height else mine
    extra = _pooled_level(t4.filter(pl.col("setting") == setting)) if t4.height else t4
    if extra.height:
        extra = extra.filter(~pl.col("opponent").str.starts_with("contourkv"))
        if mine.height:  # a pair Table 3 already counts
            extra = extra.join(mine.select("variant", "opponent"), on=["variant", "opponent"], how="anti")
    if not mine.height and not extra.height:
        return []
    parts = [f"table3[{setting}]: {'; '.join(mine['comparison'].to_list())}"] if mine.height else []
    if extra.height:
        parts.append(f"table4[{setting}, s={extra['budget'][0]}]: {', '.join(extra['opponent'].to_list())}")
    n = sum(int(f["losses_sig"].sum()) for f in (mine, extra) if f.height)
    conditions = sum(int(f["n_conditions"].sum()) for f in (mine, extra) if f.height)
    return [
        row(
            117,
            "n_significant_losses",
            n,
            POPULATION,
            by={"setting": setting},
            n_instances=conditions,
            source=" + ".join(parts) + " (losses_sig)",
        )
    ]


def _kvzip_margins(rows: pl.DataFrame, settings: StatisticsSettings) -> list[dict]:
    """Claim 116: enforced reconstruction-scored ContourKV over KVzip per condition, with its interval, and the
    (model, length) cells behind them per setting and budget."""
    main = main_rows(rows) if rows.height else rows
    if not main.height or not {"contourkv_recon_enforced", "kvzip"} <= set(main["method"].unique().to_list()):
        return []
    per = [
        wtl_mod.conditions(
            part,
            "contourkv_recon_enforced",
            "kvzip",
            B=max(settings.bootstrap, 1),
            seed=settings.seed,
            level=settings.level,
        ).with_columns(setting=pl.lit(setting))
        for setting, part in by_setting(main)
    ]
    per = [p for p in per if p.height]
    if not per:
        return []
    per = pl.concat(per, how="diagonal_relaxed")
    out = []
    for rec in per.iter_rows(named=True):
        by = {k: rec[k] for k in ("setting", "model", "task", "length", "budget")}
        common = dict(n_instances=rec["n_items"], models=rec["model"], source="conditions[recon_enforced vs kvzip]")
        out.append(
            row(
                116,
                "margin_vs_kvzip",
                rec["delta"],
                POPULATION,
                by=by,
                low=rec["delta_lo"],
                high=rec["delta_hi"],
                **common,
            )
        )
        out.append(row(116, "ci_low", rec["delta_lo"], POPULATION, by=by, **common))
    cells = per.group_by(["setting", "budget"]).agg(
        n_cells=pl.struct("model", "length").n_unique(),
        n=pl.len(),
        models=pl.col("model").unique().sort().str.join(","),
    )
    for rec in cells.sort(["setting", "budget"]).iter_rows(named=True):
        out.append(
            row(
                116,
                "n_cells",
                rec["n_cells"],
                POPULATION,
                by={"setting": rec["setting"], "budget": rec["budget"]},
                n_instances=rec["n"],
                models=rec["models"],
                source="conditions[recon_enforced vs kvzip]: distinct (model, length)",
            )
        )
    return out


# ---------------------------------------------------------------------------------------------- Table 5


def _decomposition_claims(t5: pl.DataFrame) -> list[dict]:
    """Claims 5, 76, 78 from Table 5's pooled rows of window-scored enforced ContourKV (else the first method)."""
    if not t5.height:
        return []
    method = ENFORCED if ENFORCED in set(t5["method"].to_list()) else t5["method"][0]
    out = []
    for model in sorted(set(t5["model"].to_list())):
        mine = t5.filter((pl.col("model") == model) & (pl.col("method") == method))
        level = "all" if "all" in set(mine["budget"].to_list()) else mine["budget"][0]  # one budget: no pooled row
        pooled = {r["variant"]: r for r in mine.filter(pl.col("budget") == level).iter_rows(named=True)}
        if not set(DECOMPOSED) <= set(pooled):
            continue
        out += _decomposition_rows(model, pooled, f"table5[{method}, budget {level}]")
    return out


def _hits(pooled: dict, variants: Sequence[str]) -> list[tuple[str, float | None, int | None]]:
    """(variant, hit rate, items) of Table 5's rows, for :func:`_degenerate`."""
    return [(v, pooled[v]["hit_rate"], pooled[v]["n_items"]) for v in variants]


def _decomposition_rows(model: str, pooled: dict, source: str) -> list[dict]:
    """One model's rows of claims 5, 76 and 78 from its pooled Table 5 rows (``pooled``: variant -> row)."""
    unmodified, doc_rows, boundary = (pooled[v] for v in DECOMPOSED)
    by, common = {"model": model}, dict(n_instances=doc_rows["n_items"], models=model)
    whole = _degenerate(_hits(pooled, DECOMPOSED), NOTHING_TO_DECOMPOSE, NOTHING_TO_DECOMPOSE)
    out = []
    for name, variant in (
        ("doc_rows_ranking", "doc_rows"),
        ("doc_boundary_eviction", "doc_boundary"),
        ("allocation_swapped", "allocation_swapped"),
    ):
        if variant not in pooled:
            continue
        rec = pooled[variant]
        reason = _degenerate(_hits(pooled, ("unmodified", variant)), "no change can show", "no change can show")
        out.append(
            row(
                76,
                "hit_rate_change",
                rec["hit_change_points"],
                POPULATION,
                by={**by, "variant": name},
                low=rec["hit_change_lo"],
                high=rec["hit_change_hi"],
                source=f"{source}[{variant}].hit_change_points",
                uninformative=reason,
                **common,
            )
        )
    changes = (doc_rows["hit_change_points"], boundary["hit_change_points"])
    difference = None if None in changes else abs(changes[0] - changes[1])
    out.append(
        row(
            76,
            "main_costs_difference",
            difference,
            POPULATION,
            by=by,
            source=f"{source}: |doc_rows - doc_boundary| hit_change_points",
            uninformative=whole or _both_zero(changes),
            **common,
        )
    )
    out.append(
        row(
            5,
            "retrieval_margin_question_visible",
            _neg(boundary["hit_change_points"]),
            POPULATION,
            by=by,
            low=_neg(boundary["hit_change_hi"]),
            high=_neg(boundary["hit_change_lo"]),
            source=f"{source}[doc_boundary].hit_change_points, negated",
            uninformative=whole or _nothing_found(unmodified),
            **{**common, "n_instances": boundary["n_items"]},
        )
    )
    out.append(
        row(
            78,
            "question_rows_evicted",
            doc_rows["question_rows_evicted"],
            POPULATION,
            by=by,
            source=f"{source}[doc_rows].question_rows_evicted",
            uninformative=whole,
            **common,
        )
    )
    out.append(
        row(
            78,
            "question_rows",
            doc_rows["question_rows"],
            POPULATION,
            by=by,
            source=f"{source}[doc_rows].question_rows",
            **common,
        )
    )
    return out


def _both_zero(changes: Sequence[float | None]) -> str | None:
    """Claim 76's difference of the two main costs says nothing when both are 0."""
    if all(c == 0 for c in changes):
        return "both hit-rate changes are 0 (doc_rows, doc_boundary): their difference is 0 by construction"
    return None


def _nothing_found(unmodified: dict) -> str | None:
    """Claim 5's margin says nothing when the unmodified run finds nothing: no hit can be lost."""
    if unmodified["hit_rate"] == 0:
        return (
            f"the unmodified hit rate is 0 ({_rate('unmodified', 0.0, unmodified['n_items'])}): {NOTHING_TO_DECOMPOSE}"
        )
    return None


# ---------------------------------------------------------------------------------------------- roster, replay, timing


def _roster_claims(rows: pl.DataFrame) -> list[dict]:
    """Claims 59 and 62: how many methods of each kind the run deployed (59: every uniform-allocation method, the
    ones claim 59's cache shares cover; 62: the kvpress library baselines, without H2O and snapkv_w32)."""
    if not rows.height or "kind" not in rows.columns:
        return []
    kinds = dict(rows.select("method", "kind").unique("method").iter_rows())
    uniform = sorted(m for m, k in kinds.items() if k in UNIFORM_KINDS)
    per_head = sorted(m for m, k in kinds.items() if k in PER_HEAD_KINDS)
    library = [m for m in uniform if m not in NOT_LIBRARY]

    def count(claim, value, methods, what):
        return row(
            claim, value, len(methods), POPULATION, source=f"deploy rows, {what}: {', '.join(methods) or 'none'}"
        )

    uniform_kinds, per_head_kinds = f"kind {'/'.join(UNIFORM_KINDS)}", f"kind {'/'.join(PER_HEAD_KINDS)}"
    return [
        count(59, "n_uniform_methods", uniform, uniform_kinds),
        count(59, "n_per_head_methods", per_head, per_head_kinds),
        count(62, "n_uniform", library, f"{uniform_kinds} but {', '.join(NOT_LIBRARY)}"),
        count(62, "n_per_head", per_head, per_head_kinds),
        count(62, "n_library_baselines", library + per_head, "the two"),
    ]


def _replay_claims(replay: pl.DataFrame | None) -> list[dict]:
    """Claim 61: the replay's measurements per model (a press's prefill; each item's plain prefill is not one) and
    its conditions (model, task, length, budget)."""
    if replay is None or not replay.height:
        return []
    pressed = replay.filter(pl.col("method") != "dense")
    out = [
        row(
            61,
            "replay_measurements_per_model",
            rec["n"],
            POPULATION,
            by={"model": rec["model"]},
            n_instances=rec["n"],
            models=rec["model"],
            source="deploy_replay: rows of a press (not the plain prefill)",
        )
        for rec in pressed.group_by("model").agg(n=pl.len()).sort("model").iter_rows(named=True)
    ]
    keys = [k for k in wtl_mod.CONDITION if k in pressed.columns]
    out.append(
        row(
            61,
            "n_conditions",
            pressed.select(keys).unique().height,
            POPULATION,
            n_instances=pressed.height,
            models=_models(pressed),
            source=f"deploy_replay: distinct ({', '.join(keys)})",
        )
    )
    return out


def _timing_claims(timing: pl.DataFrame) -> list[dict]:
    """Claims 69 and 115: each press's prefill in the replay over the plain prefill."""
    out = []
    if "replay_cost_over_dense" not in timing.columns:
        return out
    for rec in timing.filter(pl.col("replay_cost_over_dense").is_not_null()).iter_rows(named=True):
        by, m = {"model": rec["model"], "length": rec["length"]}, rec["method"]
        common = dict(models=rec["model"], source=f"deploy_timing[{m}].replay_cost_over_dense")
        if m == "kvzip":
            out.append(
                row(
                    69,
                    "reconstruction_score_cost_over_prefill",
                    rec["replay_cost_over_dense"],
                    POPULATION,
                    by=by,
                    **common,
                )
            )
            out.append(
                row(115, "reconstruction_cost_over_prefill", rec["replay_cost_over_dense"], POPULATION, by=by, **common)
            )
        if m == "snapkv":
            out.append(
                row(
                    115,
                    "snapkv_compresskv_cost_over_prefill",
                    rec["replay_cost_over_dense"],
                    POPULATION,
                    by=by,
                    **common,
                )
            )
    return out


def headline(
    rows: pl.DataFrame,
    t3: pl.DataFrame,
    t4: pl.DataFrame,
    t5: pl.DataFrame,
    table: pl.DataFrame,
    timing: pl.DataFrame,
    settings: StatisticsSettings = StatisticsSettings(),
    replay: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Every deployment claim value this run measures (``replay``: the byte replay's rows, for claim 61's counts).
    Counts the run's configuration sets (conditions, methods, W/T/L) are shown beside what the configuration
    implies, not judged."""
    out = _bytes_claims(table) + _table3_claims(t3) + _table4_claims(t4) + _significant_losses(t3, t4)
    out += _kvzip_margins(rows, settings) + _decomposition_claims(t5) + _roster_claims(rows) + _replay_claims(replay)
    out += _timing_claims(timing)
    models = _models(rows)
    return headline_frame([{**r, "models": r["models"] or models} for r in out])


def statistics(inputs: Inputs, config: Mapping[str, Any]) -> Frames:
    """Rule ``deploy_statistics``: the deployment rows (``rows``) and the byte replay (``replay``) -> Tables 3-5,
    the bytes table, timing and ``headline_deploy``."""
    settings = StatisticsSettings.from_config(config)
    files, replays = list(inputs["rows"]), list(inputs["replay"])
    if not files:  # only asked for by name: `all` and the claims leave the stage out when deploy.enabled is false
        raise CleanError("deploy_statistics: no deployment rows: deploy.enabled is false; fix: set it true")
    rows = read_parquets(files, how="diagonal_relaxed")
    replay = read_parquets(replays, how="diagonal_relaxed") if replays else pl.DataFrame()
    frames = {
        "table3": table3(rows, settings),
        "table4": table4(rows, settings),
        "table5": decomposition_table(rows, settings),
        "deploy_bytes": bytes_rows(rows, replay),
        "deploy_timing": timing_table(rows, replay),
    }
    frames["headline_deploy"] = headline(
        rows,
        frames["table3"],
        frames["table4"],
        frames["table5"],
        frames["deploy_bytes"],
        frames["deploy_timing"],
        settings,
        replay=replay,
    )
    return Frames(
        frames,
        seeds=bootstrap_seeds(settings),
        notes=[f"{rows.height} rows from {len(files)} conditions, {replay.height} replay measurements; {settings}"],
    )
