"""The deployment claim values read from the comparison tables (:mod:`trustmass.report.frames.deploy`): claims
4-6, 64-67, 70, 71, 73, 75, 76, 78, 116, 117 and 120 from Tables 3-5 and the per-condition margins over KVzip, as rows
of the one headline schema (:mod:`trustmass.report.headline`); :mod:`trustmass.report.frames.deploy_claims` joins
them to the bytes, roster, replay and timing claims.

- W/T/L counts are the tables' own, under the literal tie rule (tie iff the condition's Δ = 0), one count per
  row with ``n_instances`` the conditions behind it; a value stated per outcome gets one row per outcome
  (``outcome``: win / tie / loss).  Table 3 is read in the benchmark setting where the run has one, else in
  retrieval (the paper's Table 3 is its benchmark grid); Table 4 is retrieval.  ``setting`` is in every row
  read from either.
- ``uninformative`` (the claims report shows the row and judges nothing on it) where the hit rates behind a
  row are all 0 or all 100 (a margin, a W/T/L count or a hit-rate change is then 0 by construction), where
  the unmodified run of a decomposition finds nothing (nothing to decompose), and where the two costs a
  difference compares are both 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from trustmass.deploy import wtl as wtl_mod
from trustmass.report.engine import StatisticsSettings
from trustmass.report.frames.deploy import (
    EFFECT_RECON,
    EFFECT_WINDOW,
    ENFORCED,
    POPULATION,
    REALLOCATION,
    VS_COMPACTOR,
    VS_KVZIP_ENFORCED,
    VS_KVZIP_UNENFORCED,
    by_setting,
    main_rows,
)
from trustmass.report.headline import row

__all__ = ["decomposition_claims", "kvzip_margins", "significant_losses", "table3_claims", "table4_claims"]

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


# ---------------------------------------------------------------------------------------------- W/T/L


def table3_claims(t3: pl.DataFrame) -> list[dict]:
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


def table4_claims(t4: pl.DataFrame) -> list[dict]:
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


def significant_losses(t3: pl.DataFrame, t4: pl.DataFrame) -> list[dict]:
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


def kvzip_margins(rows: pl.DataFrame, settings: StatisticsSettings) -> list[dict]:
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


def decomposition_claims(t5: pl.DataFrame) -> list[dict]:
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
