"""The deployment claim values read from the comparison tables (:mod:`trustmass.report.frames.deploy`): claims
4-6, 64-67, 70, 71, 73, 75, 76, 78, 116, 117 and 120 from Tables 3-5 and the per-condition margins over KVzip.
:func:`comparison_frames` computes each value as a column of a claims frame (``population``, the group columns,
``<column>_low``/``_high`` where there is an interval, the ``uninformative`` flag, the counts behind it) and
:data:`COMPARISON_HEADLINE` declares where each is read (:func:`trustmass.report.headline.declared_rows`);
:mod:`trustmass.report.frames.deploy_claims` joins them to the bytes, roster, replay and timing values.

- W/T/L counts are judged on the conditions that can speak: a condition where both methods score 0 on every item
  or both 100 (``deploy.wtl``'s *silent* conditions, always ties) is left out of the count and counted apart
  (``n_degenerate``, the headline's ``n_excluded``); ``n_instances`` is the speaking conditions.  A value stated
  per outcome gets one row per outcome (``outcome``: win / tie / loss).  Table 3 is read in the benchmark setting
  where the run has one, else in retrieval (the paper's Table 3 is its benchmark grid); Table 4 is retrieval.
- Degenerate comparisons never decide (``uninformative``, shown and not judged): a comparison whose method under
  test (ContourKV, the variant) scores 0 on every item of its slice (it measures the floor), whose two methods both
  score 100 on every item (the ceiling), or with no speaking condition.  An opponent alone at the floor is the
  comparison's result (claim 73: SnapKV at 0.00-0.11 against ContourKV at 0.37-1.00).  Margins, hit rates and
  counts of a comparison all carry it; a count of conditions and a bytes ratio do not (they do not depend on the
  scores).  Table 5 compares a method's
  own runs: its decomposition says nothing when the unmodified run finds nothing or every run agrees at 0 or 100,
  while a variant at the floor beside a spread unmodified run is the loss the decomposition measures (claim 76's
  -88 points); its "allocation swapped" row compares two methods and follows the rule above.
- Domains (``HeadlineValue.domain``): a margin in points lies in [-100, 100]; a hit rate in [0, 1]; a count of
  conditions in [0, the run's conditions] (the frame's ``n_conditions``; declared [0, inf) since the declaration
  is the configuration's, not the run's).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import polars as pl

from trustmass.deploy import wtl as wtl_mod
from trustmass.report.engine import StatisticsSettings
from trustmass.report.frames.deploy import (
    EFFECT_RECON,
    EFFECT_WINDOW,
    ENFORCED,
    POPULATION,
    REALLOCATION,
    UNIFORM_TWIN,
    VS_COMPACTOR,
    VS_KVZIP_ENFORCED,
    VS_KVZIP_UNENFORCED,
    by_setting,
    main_rows,
)
from trustmass.report.headline import HeadlineValue

__all__ = ["COMPARISON_HEADLINE", "comparison_frames", "floor_reason", "kvzip_conditions"]

FLAG = "uninformative"
POINTS = (-100.0, 100.0)
SHARE = (0.0, 1.0)
COUNT = (0.0, math.inf)
RECON_ENFORCED = "contourkv_recon_enforced"
OUTCOMES = (("win", "wins"), ("tie", "ties_speaking"), ("loss", "losses"))
#: the decomposition's own variants (Table 5), the unmodified run first, and the names claim 76 gives them
DECOMPOSED = ("unmodified", "doc_rows", "doc_boundary")
CLAIM76_NAMES = {
    "doc_rows": "doc_rows_ranking",
    "doc_boundary": "doc_boundary_eviction",
    "allocation_swapped": "allocation_swapped",
}
NOTHING_TO_DECOMPOSE = "nothing to decompose"
#: group columns: a setting, a setting's outcome, a setting's budget, a condition
_SETTING, _OUTCOME, _SB = ("setting",), ("setting", "outcome"), ("setting", "budget")
_CELL = ("setting", "model", "task", "length", "budget")


def _t3(claim, value, column, where, n_column="n_speaking", *, source="table3_counts", keys=_SETTING, **kw):
    """A Table 3 value in its setting, read on the row of one comparison."""
    where = {"comparison": where}
    return HeadlineValue(claim, value, source, column, keys, where, n_column=n_column, flag=FLAG, **kw)


def _at(claim, value, source, column, keys, n_column, domain, flag=FLAG, **kw) -> HeadlineValue:
    return HeadlineValue(claim, value, source, column, keys, n_column=n_column, flag=flag, domain=domain, **kw)


#: claim value -> the claims frame and column it is read from
COMPARISON_HEADLINE: tuple[HeadlineValue, ...] = (
    # Table 3: margins over every condition, counts over the speaking ones
    _t3(4, "enforcement_cost", "enforcement_cost", (EFFECT_RECON, EFFECT_WINDOW), "n_conditions",
        source="table3_margins", keys=("setting", "variant"), ci=True, domain=POINTS,
        note="unenforced minus enforced: the effect negated"),
    _t3(71, "mean_margin_vs_snapkv", "mean_delta", REALLOCATION, "n_conditions", source="table3_margins", ci=True,
        domain=POINTS),
    _t3(6, "wins_vs_kvzip_enforced", "wins", VS_KVZIP_ENFORCED, domain=COUNT),
    _t3(6, "losses_vs_kvzip_enforced", "losses", VS_KVZIP_ENFORCED, domain=COUNT),
    _t3(66, "wins", "wins", VS_KVZIP_ENFORCED, domain=COUNT),
    _t3(66, "losses", "losses", VS_KVZIP_ENFORCED, domain=COUNT),
    _t3(64, "wins", "wins", VS_KVZIP_UNENFORCED, domain=COUNT),
    _t3(64, "losses", "losses", VS_KVZIP_UNENFORCED, domain=COUNT),
    _t3(65, "conditions_lowered", "losses", EFFECT_RECON, domain=COUNT, note="enforcement lowers: the effect's L"),
    _t3(65, "conditions_raised", "wins", EFFECT_RECON, domain=COUNT),
    _t3(70, "wtl_vs_compactor", "count", VS_COMPACTOR, source="table3_outcomes", keys=_OUTCOME, domain=COUNT),
    _t3(71, "wtl_vs_snapkv", "count", REALLOCATION, source="table3_outcomes", keys=_OUTCOME, domain=COUNT),
    # the grid's size stands whatever the scores: every condition, silent ones included
    HeadlineValue(71, "n_conditions", "table3_margins", "n_conditions", _SETTING, {"comparison": REALLOCATION},
                  n_column="n_conditions", domain=COUNT),
    # Table 4: window-scored enforced ContourKV against SnapKV, per budget
    _at(67, "advantage_vs_snapkv", "table4_margins", "mean_delta", _SB, "n_conditions", POINTS, ci=True),
    _at(73, "contourkv_hit_rate", "table4_margins", "variant_hit", _SB, "n_conditions", SHARE),
    _at(73, "snapkv_hit_rate", "table4_margins", "opponent_hit", _SB, "n_conditions", SHARE),
    _at(75, "bytes_over_snapkv", "table4_margins", "bytes_ratio", _SB, "n_conditions", SHARE, None,
        note="enforced ContourKV caps every cell at s, SnapKV keeps s per cell: at most 1 by construction"),
    _at(75, "n_conditions", "table4_margins", "n_conditions", _SB, "n_conditions", COUNT, None),
    _at(75, "wtl_vs_snapkv", "table4_outcomes", "count", (*_SB, "outcome"), "n_speaking", COUNT),
    _at(120, "wtl_vs_snapkv", "table4_outcomes", "count", (*_SB, "outcome"), "n_speaking", COUNT,
        where={"budget": 64}),
    _at(117, "n_significant_losses", "significant_losses", "n_significant_losses", _SETTING, "n_conditions", COUNT),
    # claim 116: per condition, enforced reconstruction-scored ContourKV over KVzip
    _at(116, "margin_vs_kvzip", "kvzip_margins", "margin_vs_kvzip", _CELL, "n_items", POINTS, ci=True),
    _at(116, "ci_low", "kvzip_margins", "ci_low", _CELL, "n_items", POINTS),
    _at(116, "n_cells", "kvzip_cells", "n_cells", _SB, "n", COUNT, None),
    # Table 5: the decomposition of window-scored enforced ContourKV, pooled over budgets
    _at(76, "hit_rate_change", "decomposition_changes", "hit_rate_change", ("model", "variant"), "n_items", POINTS,
        ci=True, where={"variant": ("doc_rows_ranking", "doc_boundary_eviction")}),
    _at(76, "allocation_hit_rate_change", "decomposition_changes", "hit_rate_change", ("model", "variant"), "n_items",
        POINTS, ci=True, where={"variant": "allocation_swapped"}),
    _at(76, "main_costs_difference", "decomposition", "main_costs_difference", ("model",), "n_items", (0.0, 100.0),
        "difference_flag", note="|doc_rows - doc_boundary| hit-rate change"),
    _at(5, "retrieval_margin_question_visible", "decomposition", "retrieval_margin", ("model",), "n_boundary_items",
        POINTS, "margin_flag", ci=True, note="the doc_boundary change, negated"),
    _at(78, "question_rows_evicted", "decomposition", "question_rows_evicted", ("model",), "n_items", COUNT,
        "evicted_flag"),
    _at(78, "question_rows", "decomposition", "question_rows", ("model",), "n_items", COUNT, None),
)  # fmt: skip


# ---------------------------------------------------------------------------------------------- flags


def _is(x: float | None, edge: float) -> bool:
    return x is not None and abs(x - edge) < 1e-12


def _items(shown: int, n_items: int | None, n_conditions: int | None) -> str:
    """``0 of 6 items in 2 conditions`` (the counts a reason names; items unknown: the conditions only)."""
    items = f"{shown} of {n_items} items" if n_items else ""
    conditions = f"{n_conditions} conditions" if n_conditions and n_conditions > 1 else ""
    return " in ".join(p for p in (items, conditions) if p)


def floor_reason(
    arms: Sequence[tuple[str, float | None]], n_items: int | None = None, n_conditions: int | None = None
) -> str | None:
    """Why a comparison of two methods (name, hit rate as a fraction over the same items; the method under test
    first) says nothing: the method under test scores 0 on every item -- alone or with its opponent -- so the
    comparison measures the floor, or both score 1 on every item (the ceiling).  An opponent at the floor beside a
    method under test that scores is the comparison's result (the paper's SnapKV at 0.00-0.11 against ContourKV
    at 0.37-1.00, claim 73), not a floor."""
    zero = [name for name, hit in arms if _is(hit, 0.0)]
    if arms and _is(arms[0][1], 0.0):
        verb = "scores" if len(zero) == 1 else "score"
        counts = _items(0, n_items, n_conditions)
        counts = f" ({counts})" if counts else ""
        return f"{' and '.join(zero)} {verb} 0 on every item{counts}: the comparison measures the floor"
    if arms and all(_is(hit, 1.0) for _, hit in arms):
        counts = _items(n_items or 0, n_items, n_conditions)
        counts = f" ({counts})" if counts else ""
        return (
            f"{' and '.join(n for n, _ in arms)} score 100 on every item{counts}: the comparison measures the ceiling"
        )
    return None


def _silent_reason(n_silent: int, n_conditions: int) -> str | None:
    if n_conditions and n_silent == n_conditions:
        return (
            f"no condition can speak: in every one ({n_silent} of {n_conditions}) both methods score 0 on every item "
            "or both 100"
        )
    return None


def _comparison_reason(rec: Mapping) -> str | None:
    """A Table 3/4 row's flag: a method at the floor, both at the ceiling, or no speaking condition."""
    arms = [(rec["variant"], rec["variant_hit"]), (rec["opponent"], rec["opponent_hit"])]
    return floor_reason(arms, rec["n_items"], rec["n_conditions"]) or _silent_reason(
        rec["n_silent"], rec["n_conditions"]
    )


def _flagged(frame: pl.DataFrame) -> pl.DataFrame:
    """A W/T/L frame with its speaking counts, ``n_degenerate`` (= the silent conditions) and the flag."""
    if not frame.height:
        return frame
    flags = [_comparison_reason(r) for r in frame.iter_rows(named=True)]
    return wtl_mod.speaking(frame).with_columns(
        pl.Series(FLAG, flags, dtype=pl.Utf8), n_degenerate=pl.col("n_silent"), population=pl.lit(POPULATION)
    )


def _outcomes(counts: pl.DataFrame, keys: Sequence[str]) -> pl.DataFrame:
    """One row per outcome of each W/T/L row (``outcome``: win / tie / loss; ``count`` on the speaking conditions)."""
    cols = [*keys, "n_speaking", "n_degenerate", FLAG, "population"]
    return pl.concat([counts.select(*cols, outcome=pl.lit(name), count=pl.col(column)) for name, column in OUTCOMES])


# ---------------------------------------------------------------------------------------------- Tables 3 and 4


def _table3_setting(t3: pl.DataFrame) -> str:
    """The setting Table 3 is read in: the paper's Table 3 is its benchmark grid, so benchmark where the run has one."""
    return "benchmark" if t3.height and "benchmark" in set(t3["setting"].to_list()) else "retrieval"


def _neg(column: str) -> pl.Expr:
    return pl.lit(0.0) - pl.col(column)  # 0.0 - 0.0 is 0.0, not -0.0


def _table3_frames(t3: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """Table 3's rows in its setting: margins (``table3_margins``), counts (``table3_counts``), and per outcome."""
    if not t3.height:
        return {}
    mine = _flagged(t3.filter(pl.col("setting") == _table3_setting(t3)))
    margins = mine.drop("n_degenerate").with_columns(
        mean_delta_low=pl.col("delta_lo"),
        mean_delta_high=pl.col("delta_hi"),
        enforcement_cost=_neg("mean_delta"),
        enforcement_cost_low=_neg("delta_hi"),
        enforcement_cost_high=_neg("delta_lo"),
    )
    return {
        "table3_margins": margins,
        "table3_counts": mine,
        "table3_outcomes": _outcomes(mine, ("setting", "comparison")),
    }


def _table4_frames(t4: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """Table 4's rows against SnapKV per budget (the pooled row is no budget)."""
    if not t4.height:
        return {}
    snap = t4.filter((pl.col("opponent") == "snapkv") & (pl.col("budget") != "all"))
    if not snap.height:
        return {}
    mine = _flagged(snap.with_columns(pl.col("budget").cast(pl.Int64)))
    margins = mine.drop("n_degenerate").with_columns(
        mean_delta_low=pl.col("delta_lo"), mean_delta_high=pl.col("delta_hi")
    )
    return {"table4_margins": margins, "table4_outcomes": _outcomes(mine, ("setting", "budget"))}


def _pooled_level(t4: pl.DataFrame) -> pl.DataFrame:
    """Table 4's rows pooled over budgets (the one budget's where the run has one)."""
    return t4.filter(pl.col("budget") == "all") if "all" in set(t4["budget"].to_list()) else t4


#: the columns of a Table 3/4 row claim 117 sums and flags
_COUNTED = ("variant", "opponent", "losses_sig", "n_conditions", "n_silent", "n_items", "variant_hit", "opponent_hit")


def _significant_losses(t3: pl.DataFrame, t4: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """Claim 117: ContourKV's significant losses (the pair's "L sig.": conditions whose item-bootstrap interval lies
    below 0) against every baseline, in Table 3's setting: Table 3's rows against a baseline (not its own
    unenforced form), plus Table 4's rows (pooled over budgets) against the baselines Table 3 does not pair it with.
    Flagged when a comparison that counts a loss measures the floor (``counted`` names every comparison summed)."""
    setting = _table3_setting(t3)
    mine = t3.filter(pl.col("setting") == setting) if t3.height else t3
    mine = mine.filter(~pl.col("opponent").str.starts_with("contourkv")) if mine.height else mine
    extra = _pooled_level(t4.filter(pl.col("setting") == setting)) if t4.height else t4
    if extra.height:
        extra = extra.filter(~pl.col("opponent").str.starts_with("contourkv"))
        if mine.height:  # a pair Table 3 already counts
            extra = extra.join(mine.select("variant", "opponent"), on=["variant", "opponent"], how="anti")
    parts = [f for f in (mine, extra) if f.height]
    if not parts:
        return {}
    counted = pl.concat([f.select(_COUNTED) for f in parts], how="vertical_relaxed")
    reasons = [
        f"{r['variant']} vs {r['opponent']}: {reason}"
        for r in counted.filter(pl.col("losses_sig") > 0).iter_rows(named=True)
        if (reason := _comparison_reason(r))
    ]
    flag = f"a significant loss is counted from a comparison at the floor ({reasons[0]})" if reasons else None
    names = [f"{r['variant']} vs {r['opponent']}" for r in counted.iter_rows(named=True)]
    return {
        "significant_losses": pl.DataFrame(
            {
                "population": [POPULATION],
                "setting": [setting],
                "n_significant_losses": [int(counted["losses_sig"].sum())],
                "n_conditions": [int(counted["n_conditions"].sum())],
                "counted": ["; ".join(names)],
                FLAG: [flag],
            },
            schema_overrides={FLAG: pl.Utf8},
        )
    }


# ---------------------------------------------------------------------------------------------- claim 116


def kvzip_conditions(rows: pl.DataFrame, settings: StatisticsSettings) -> pl.DataFrame:
    """Claim 116's input: enforced reconstruction-scored ContourKV over KVzip per condition and setting
    (``deploy.wtl.conditions``: the margin with its interval, both methods' mean scores, ``silent``)."""
    main = main_rows(rows) if rows.height else rows
    if not main.height or not {RECON_ENFORCED, "kvzip"} <= set(main["method"].unique().to_list()):
        return pl.DataFrame()
    boot = dict(B=max(settings.bootstrap, 1), seed=settings.seed, level=settings.level)
    per = [
        wtl_mod.conditions(part, RECON_ENFORCED, "kvzip", **boot).with_columns(setting=pl.lit(setting))
        for setting, part in by_setting(main)
    ]
    per = [p for p in per if p.height]
    return pl.concat(per, how="diagonal_relaxed") if per else pl.DataFrame()


def _kvzip_frames(per: pl.DataFrame | None) -> dict[str, pl.DataFrame]:
    """Claim 116's margins per condition, each flagged on its own arms, and the (model, length) cells behind them."""
    if per is None or not per.height:
        return {}
    flags = [
        floor_reason(
            [(r["variant"], r["variant_points"] / 100.0), (r["opponent"], r["opponent_points"] / 100.0)], r["n_items"]
        )
        for r in per.iter_rows(named=True)
    ]
    margins = per.with_columns(
        pl.Series(FLAG, flags, dtype=pl.Utf8),
        population=pl.lit(POPULATION),
        margin_vs_kvzip=pl.col("delta"),
        margin_vs_kvzip_low=pl.col("delta_lo"),
        margin_vs_kvzip_high=pl.col("delta_hi"),
        ci_low=pl.col("delta_lo"),
    )
    cells = (
        per.group_by(["setting", "budget"])
        .agg(
            n_cells=pl.struct("model", "length").n_unique(),
            n=pl.len(),
            models=pl.col("model").unique().sort().str.join(","),
        )
        .with_columns(population=pl.lit(POPULATION))
    )
    return {"kvzip_margins": margins, "kvzip_cells": cells}


# ---------------------------------------------------------------------------------------------- Table 5


def _rate(name: str, rate: float, n: int | None) -> str:
    return f"{name} {round(rate * n)} of {n}" if n else name


def _degenerate(rates: Sequence[tuple[str, float | None, int | None]], zero: str, full: str) -> str | None:
    """Why a comparison of one method's runs (name, hit rate, items) says nothing: every one is 0 (``zero``) or
    every one is 1 (``full``); None otherwise, or when none is known."""
    known = [(name, r, n) for name, r, n in rates if r is not None]
    if not known:
        return None
    what = "both hit rates are" if len(known) == 2 else "every hit rate is"
    listed = ", ".join(_rate(name, r, n) for name, r, n in known)
    for edge, shown, tail in ((0.0, "0", zero), (1.0, "100", full)):
        if all(_is(r, edge) for _, r, _ in known):
            return f"{what} {shown} ({listed}): {tail}"
    return None


def _hits(pooled: Mapping, variants: Sequence[str]) -> list[tuple[str, float | None, int | None]]:
    return [(v, pooled[v]["hit_rate"], pooled[v]["n_items"]) for v in variants]


def _nothing_found(unmodified: Mapping) -> str | None:
    """The unmodified run finds nothing: no hit can be lost, so no change decomposes anything."""
    if _is(unmodified["hit_rate"], 0.0):
        return (
            f"the unmodified hit rate is 0 ({_rate('unmodified', 0.0, unmodified['n_items'])}): {NOTHING_TO_DECOMPOSE}"
        )
    return None


def _change_reason(pooled: Mapping, variant: str, method: str) -> str | None:
    """A Table 5 change's flag.  allocation_swapped compares two methods (the uniform twin against ``method``'s
    unmodified run): the cross-method rule.  doc_rows / doc_boundary are the method's own runs: both at 0 or both
    at 100, or the unmodified run at 0 (nothing to lose)."""
    if variant == "allocation_swapped":
        unmodified, swapped = pooled["unmodified"], pooled[variant]
        arms = [(method, unmodified["hit_rate"]), (UNIFORM_TWIN.get(method, variant), swapped["hit_rate"])]
        return floor_reason(arms, swapped["n_items"], swapped["n_conditions"])
    pair = _degenerate(_hits(pooled, ("unmodified", variant)), "no change can show", "no change can show")
    return pair or _nothing_found(pooled["unmodified"])


def _both_zero(changes: Sequence[float | None]) -> str | None:
    """Claim 76's difference of the two main costs says nothing when both are 0."""
    if all(c == 0 for c in changes):
        return "both hit-rate changes are 0 (doc_rows, doc_boundary): their difference is 0 by construction"
    return None


def _decomposition_frames(t5: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """Claims 5, 76, 78 from Table 5's pooled rows of window-scored enforced ContourKV (else the first method):
    ``decomposition_changes`` (a row per model and variant) and ``decomposition`` (a row per model)."""
    if not t5.height:
        return {}
    method = ENFORCED if ENFORCED in set(t5["method"].to_list()) else t5["method"][0]
    changes, models = [], []
    for model in sorted(set(t5["model"].to_list())):
        mine = t5.filter((pl.col("model") == model) & (pl.col("method") == method))
        level = "all" if "all" in set(mine["budget"].to_list()) else mine["budget"][0]  # one budget: no pooled row
        pooled = {r["variant"]: r for r in mine.filter(pl.col("budget") == level).iter_rows(named=True)}
        if not set(DECOMPOSED) <= set(pooled):
            continue
        unmodified, doc_rows, boundary = (pooled[v] for v in DECOMPOSED)
        n_items = doc_rows["n_items"]
        for variant, name in CLAIM76_NAMES.items():
            if variant in pooled:
                rec = pooled[variant]
                changes.append(
                    {
                        "model": model,
                        "variant": name,
                        "hit_rate_change": rec["hit_change_points"],
                        "hit_rate_change_low": rec["hit_change_lo"],
                        "hit_rate_change_high": rec["hit_change_hi"],
                        "n_items": n_items,
                        FLAG: _change_reason(pooled, variant, method),
                    }
                )
        whole = _degenerate(_hits(pooled, DECOMPOSED), NOTHING_TO_DECOMPOSE, NOTHING_TO_DECOMPOSE)
        nothing = whole or _nothing_found(unmodified)
        costs = (doc_rows["hit_change_points"], boundary["hit_change_points"])
        models.append(
            {
                "model": model,
                "main_costs_difference": None if None in costs else abs(costs[0] - costs[1]),
                "difference_flag": nothing or _both_zero(costs),
                "retrieval_margin": _negated(boundary["hit_change_points"]),
                "retrieval_margin_low": _negated(boundary["hit_change_hi"]),
                "retrieval_margin_high": _negated(boundary["hit_change_lo"]),
                "margin_flag": nothing,
                "question_rows_evicted": doc_rows["question_rows_evicted"],
                "evicted_flag": whole,
                "question_rows": doc_rows["question_rows"],
                "n_items": n_items,
                "n_boundary_items": boundary["n_items"],
            }
        )
    population = {"population": pl.lit(POPULATION)}
    flags = {c: pl.Utf8 for c in (FLAG, "difference_flag", "margin_flag", "evicted_flag")}
    out = {}
    for name, recs in (("decomposition_changes", changes), ("decomposition", models)):
        if recs:
            frame = pl.DataFrame(recs, schema_overrides={k: v for k, v in flags.items() if k in recs[0]}, strict=False)
            out[name] = frame.with_columns(**population)
    return out


def _negated(x: float | None) -> float | None:
    return None if x is None else 0.0 - x


# ---------------------------------------------------------------------------------------------- all


def comparison_frames(frames: Mapping[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """The claims frames :data:`COMPARISON_HEADLINE` reads, from ``table3``, ``table4``, ``table5`` and
    ``kvzip_conditions`` (:func:`kvzip_conditions`); a frame the run did not make gives none."""
    empty = pl.DataFrame()
    t3, t4, t5 = (frames.get(name, empty) for name in ("table3", "table4", "table5"))
    return {
        **_table3_frames(t3),
        **_table4_frames(t4),
        **_significant_losses(t3, t4),
        **_kvzip_frames(frames.get("kvzip_conditions")),
        **_decomposition_frames(t5),
    }
