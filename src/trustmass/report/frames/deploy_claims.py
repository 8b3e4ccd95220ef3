"""The deployment claim values (claims 3-6, 59-78, 113-117, 120) from Tables 3-5, the bytes table, timing and the
replay (:mod:`trustmass.report.frames.deploy`), as rows of the one headline schema
(:mod:`trustmass.report.headline`).  Those read from Tables 3-5 (W/T/L counts, margins, the decomposition) and their
``uninformative`` rules are :mod:`trustmass.report.frames.deploy_comparison_claims`'s; here are the bytes, roster,
replay and timing ones, and the headline that joins them all.

- Every row carries the dimensions its claim value's ``where`` filters on (budget, storage), so a filter
  matches it.

:func:`statistics` is the rule ``deploy_statistics``: the tables and the claims from the rows and the replay.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from trustmass.deploy import wtl as wtl_mod
from trustmass.plumbing.errors import CleanError
from trustmass.plumbing.rule_io import read_parquets
from trustmass.report.engine import StatisticsSettings
from trustmass.report.frames.deploy import (
    PER_HEAD_KINDS,
    POPULATION,
    UNIFORM_KINDS,
    bytes_rows,
    decomposition_table,
    table3,
    table4,
    timing_table,
)
from trustmass.report.frames.deploy_comparison_claims import (
    decomposition_claims,
    kvzip_margins,
    significant_losses,
    table3_claims,
    table4_claims,
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


# ---------------------------------------------------------------------------------------------- helpers


def _models(frame: pl.DataFrame) -> str:
    return ",".join(sorted(set(frame["model"].to_list()))) if "model" in frame.columns and frame.height else ""


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
    out = _bytes_claims(table) + table3_claims(t3) + table4_claims(t4) + significant_losses(t3, t4)
    out += kvzip_margins(rows, settings) + decomposition_claims(t5) + _roster_claims(rows) + _replay_claims(replay)
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
