"""W/T/L of a variant against opponents over paired conditions (spec part B "W/T/L", paper §7.4–7.5).

Input: one row per (condition, item, method) with ``score`` in points, **0–100** (RULER's
string_match_all × 100, LongBench metrics × 100), so the paper's "0.05 points" is 0.05 on this scale.
A condition is (model, task, length, budget), plus ``query_aware`` when the frame has it.  Only
dense-valid items count (``dense_valid`` column, when present; an item counts when both methods'
rows say so); a condition without a dense-valid item is left out.  Items are paired by ``item_id``; an
item scored by one method only is an error.

Per condition: Δ = mean over items of (variant − opponent), i.e. mean variant score − mean opponent
score.  Literal rule: W if Δ > 0, L if Δ < 0, T if Δ = 0 (up to float rounding, |Δ| ≤ 1e-9).
Alternative rule (``ties_alt``): T if |Δ| < 0.05 points.  Significance: paired item bootstrap
(``core.stats.bootstrap_replicates`` with items as clusters), B = 1000, 95 % percentile interval;
``wins_sig``/``losses_sig`` count W/L whose interval excludes 0.

A condition is *silent* when both methods score 0 on every item (the floor) or both 100 on every item (the
ceiling): its Δ is 0 whatever the methods do, so it cannot speak to which is better.  ``n_silent`` counts them
(each is also a tie); a W/T/L judged on the conditions that can speak is W / T - n_silent / L over
n_conditions - n_silent (:func:`speaking`).  ``n_items`` counts the paired items over every condition.  Each condition has its own seed,
``sha256(seed, variant, opponent, condition)``, so its interval does not depend on the others.
``mean_delta`` is the mean of the conditions' Δ; its interval is the percentile interval of the mean
of the conditions' replicates (a bootstrap stratified by condition).

``contracts`` (``deploy.contracts.contrast``): ``like_for_like`` when the two methods differ in the ranking
scalar alone, else the contract fields the comparison crosses (allocation, window, ...).

Retrieval and benchmark conditions are never pooled: the setting comes from a ``setting`` column,
else from the task (the ``deploy.tasks`` tasks are retrieval, anything else a benchmark), and a
frame with both is an error.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import polars as pl

from trustmass.core.stats import bootstrap_replicates, percentile_interval
from trustmass.deploy.contracts import contrast
from trustmass.deploy.tasks import TASKS

__all__ = ["CEILING", "CONDITION", "FLOOR", "TIE_ALT", "TIE_RULES", "conditions", "setting_of", "speaking", "wtl"]

CONDITION = ("model", "task", "length", "budget")
TIE_ALT = 0.05  # points on the 0–100 scale
TIE_RULES = {"literal": "tie iff delta == 0", "alt": f"tie iff |delta| < {TIE_ALT} points (0-100 scale)"}
_EXACT = 1e-9
#: the score scale's ends (points): an item scored FLOOR was missed, CEILING found in full
FLOOR, CEILING = 0.0, 100.0
COLUMNS = (
    "variant",
    "opponent",
    "n_conditions",
    "n_silent",
    "n_items",
    "wins",
    "ties",
    "losses",
    "ties_alt",
    "wins_sig",
    "losses_sig",
    "mean_delta",
    "delta_lo",
    "delta_hi",
    "contracts",
)


def setting_of(frame: pl.DataFrame) -> str:
    """``"retrieval"`` or ``"benchmark"``; a ValueError when the frame mixes them."""
    if "setting" in frame.columns:
        settings = set(frame.get_column("setting").unique().to_list())
    else:
        settings = {"retrieval" if t in TASKS else "benchmark" for t in frame.get_column("task").unique().to_list()}
    if len(settings) != 1:
        raise ValueError(
            f"the frame mixes settings {sorted(settings)}: retrieval and benchmark conditions are never "
            "pooled (spec §7.5); fix: call wtl() once per setting"
        )
    return settings.pop()


def _keys(frame: pl.DataFrame) -> list[str]:
    return list(CONDITION) + (["query_aware"] if "query_aware" in frame.columns else [])


def _check(frame: pl.DataFrame, method_col: str) -> list[str]:
    need = [*CONDITION, "item_id", method_col, "score"]
    missing = [c for c in need if c not in frame.columns]
    if missing:
        raise ValueError(f"the W/T/L frame lacks column(s) {missing} (needs {need}, optional dense_valid, query_aware)")
    setting_of(frame)
    scores = frame.get_column("score").cast(pl.Float64)
    if scores.is_null().any() or scores.is_nan().any() or scores.min() < 0 or scores.max() > 100:
        raise ValueError("score must be points in [0, 100] (string_match_all × 100), with no null or NaN")
    keys = _keys(frame)
    if frame.select([*keys, "item_id", method_col]).is_duplicated().any():
        raise ValueError(f"duplicate (condition, item_id, {method_col}) rows; fix: one score per item and method")
    return keys


def _seed(seed: int, variant: str, opponent: str, key: tuple) -> int:
    digest = hashlib.sha256(json.dumps([seed, variant, opponent, [str(k) for k in key]]).encode()).digest()
    return int.from_bytes(digest[:8], "little")


def _paired(frame: pl.DataFrame, keys: list[str], variant: str, opponent: str, method_col: str) -> pl.DataFrame:
    """One row per (condition, item) with both scores, restricted to conditions that ran both methods."""
    cols = [*keys, "item_id", "score"] + (["dense_valid"] if "dense_valid" in frame.columns else [])
    a = frame.filter(pl.col(method_col) == variant).select(cols)
    b = frame.filter(pl.col(method_col) == opponent).select(cols)
    both = a.select(keys).unique().join(b.select(keys).unique(), on=keys, how="inner")
    a, b = a.join(both, on=keys, how="semi"), b.join(both, on=keys, how="semi")
    joined = a.join(b, on=[*keys, "item_id"], how="full", suffix="_opp", coalesce=True)
    unpaired = joined.filter(pl.col("score").is_null() | pl.col("score_opp").is_null())
    if unpaired.height:
        raise ValueError(
            f"{unpaired.height} item(s) scored by only one of {variant!r} / {opponent!r}, e.g. "
            f"{unpaired.row(0, named=True)}; fix: run both methods on the same items"
        )
    if "dense_valid" in cols:
        joined = joined.filter(pl.col("dense_valid") & pl.col("dense_valid_opp"))
    return joined.with_columns((pl.col("score").cast(pl.Float64) - pl.col("score_opp").cast(pl.Float64)).alias("d"))


def _silent(mine: pl.Series, theirs: pl.Series) -> bool:
    """Both methods at the floor on every item, or both at the ceiling: Δ = 0 by construction."""
    return any(bool((mine == edge).all() and (theirs == edge).all()) for edge in (FLOOR, CEILING))


def speaking(frame: pl.DataFrame) -> pl.DataFrame:
    """A W/T/L frame (:func:`wtl`'s columns) with the counts judged on the conditions that can speak:
    ``n_speaking`` = n_conditions - n_silent and ``ties_speaking`` = ties - n_silent (a silent condition is a tie);
    wins and losses are never silent."""
    return frame.with_columns(
        n_speaking=pl.col("n_conditions") - pl.col("n_silent"), ties_speaking=pl.col("ties") - pl.col("n_silent")
    )


def _conditions(frame, variant, opponent, method_col, B, seed, level):
    keys = _check(frame, method_col)
    paired = _paired(frame, keys, variant, opponent, method_col)
    rows, reps = [], []
    for key, group in sorted(paired.group_by(keys, maintain_order=True), key=lambda kv: [str(k) for k in kv[0]]):
        d = group.get_column("d").to_numpy()
        mine, theirs = group.get_column("score").cast(pl.Float64), group.get_column("score_opp").cast(pl.Float64)
        delta = float(d.mean())
        delta = 0.0 if abs(delta) <= _EXACT else delta
        rep = bootstrap_replicates(
            {"item": group.get_column("item_id").to_numpy(), "d": d},
            lambda x: x["d"].mean(),
            cluster="item",
            B=B,
            seed=_seed(seed, variant, opponent, key),
        )
        lo, hi = percentile_interval(rep, level)
        rows.append(
            {
                **dict(zip(keys, key)),
                "variant": variant,
                "opponent": opponent,
                "n_items": d.size,
                "delta": delta,
                "delta_lo": lo,
                "delta_hi": hi,
                "outcome": "W" if delta > 0 else "L" if delta < 0 else "T",
                "outcome_alt": "T" if abs(delta) < TIE_ALT else "W" if delta > 0 else "L",
                "significant": bool(lo > 0 or hi < 0),
                "variant_points": float(mine.mean()),
                "opponent_points": float(theirs.mean()),
                "silent": _silent(mine, theirs),
            }
        )
        reps.append(rep)
    return rows, reps


def conditions(
    frame: pl.DataFrame,
    variant: str,
    opponent: str,
    *,
    method_col: str = "method",
    B: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> pl.DataFrame:
    """Per paired condition: ``n_items``, ``delta`` with its interval, ``outcome``/``outcome_alt``, ``significant``,
    each method's mean score (``variant_points``, ``opponent_points``) and whether the condition is ``silent``."""
    rows, _ = _conditions(frame, variant, opponent, method_col, B, seed, level)
    return pl.DataFrame(rows) if rows else pl.DataFrame()


def wtl(
    frame: pl.DataFrame,
    variant: str,
    opponents=None,
    *,
    method_col: str = "method",
    B: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> pl.DataFrame:
    """One row per opponent (all other methods by default) with the columns of ``COLUMNS``."""
    _check(frame, method_col)
    methods = frame.get_column(method_col).unique().sort().to_list()
    if variant not in methods:
        raise ValueError(f"variant {variant!r} is not among the {method_col} values {methods}")
    opponents = [m for m in methods if m != variant] if opponents is None else list(opponents)
    out = []
    for opponent in opponents:
        if opponent == variant or opponent not in methods:
            raise ValueError(f"opponent {opponent!r} must be a {method_col} value other than the variant ({methods})")
        rows, reps = _conditions(frame, variant, opponent, method_col, B, seed, level)
        deltas = np.array([r["delta"] for r in rows])
        lo, hi = percentile_interval(np.mean(reps, axis=0), level) if rows else (float("nan"), float("nan"))
        out.append(
            {
                "variant": variant,
                "opponent": opponent,
                "n_conditions": len(rows),
                "n_silent": sum(r["silent"] for r in rows),
                "n_items": sum(r["n_items"] for r in rows),
                "wins": int((deltas > 0).sum()),
                "ties": int((deltas == 0).sum()),
                "losses": int((deltas < 0).sum()),
                "ties_alt": int((np.abs(deltas) < TIE_ALT).sum()),
                "wins_sig": sum(r["delta"] > 0 and r["significant"] for r in rows),
                "losses_sig": sum(r["delta"] < 0 and r["significant"] for r in rows),
                "mean_delta": float(deltas.mean()) if rows else float("nan"),
                "delta_lo": lo,
                "delta_hi": hi,
                "contracts": contrast(variant, opponent),
            }
        )
    return pl.DataFrame(
        out,
        schema={
            c: (
                pl.Utf8
                if c in ("variant", "opponent", "contracts")
                else pl.Float64
                if c.startswith(("mean", "delta"))
                else pl.Int64
            )
            for c in COLUMNS
        },
    )
