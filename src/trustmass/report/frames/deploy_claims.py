"""The deployment claim values (claims 3-6, 59-78, 113-117, 120) as rows of the one headline schema
(:mod:`trustmass.report.headline`), each declared as data in :data:`HEADLINE`: the claims frame and column it is
read from.  Those read from Tables 3-5 (W/T/L counts, margins, the decomposition) and their ``uninformative``
rules are :mod:`trustmass.report.frames.deploy_comparison_claims`'s; here are the bytes, roster, replay and timing
ones, and the headline that joins them all: :func:`headline` is frames -> claims frames -> declared rows.

- Every row carries the dimensions its claim value's ``where`` filters on (budget, storage), so a filter
  matches it; a timing row carries the ``device`` it was measured on (read from the replay's provenance), so
  the claims judge a time only where it was measured on a CUDA device.
- Domains: a share of the cache lies in [0, 1]; enforced ContourKV's bytes over SnapKV's too
  (``deploy.runner.kept_sets`` passes ``caps = s`` in enforced mode: no cell keeps more than s rows, floor
  included, and SnapKV keeps exactly s per cell); unenforced ContourKV's padded bytes over SnapKV's, its widest
  cell over s and KVzip's shipped (full, masked) cache over SnapKV's are at least 1.

:func:`statistics` is the rule ``deploy_statistics``: the tables and the claims from the rows and the replay.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from trustmass.deploy import wtl as wtl_mod
from trustmass.plumbing.errors import CleanError
from trustmass.plumbing.provenance import sidecar_path
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
from trustmass.report.frames.deploy_comparison_claims import COMPARISON_HEADLINE, comparison_frames, kvzip_conditions
from trustmass.report.headline import HeadlineValue, declared_rows, headline_frame
from trustmass.report.statistics import Frames, Inputs, bootstrap_seeds

__all__ = ["HEADLINE", "claim_frames", "headline", "row_inputs", "statistics", "timed_on"]

UNENFORCED = ("contourkv_unenforced", "contourkv_recon_unenforced")
ENFORCING = ("contourkv_enforced", "contourkv_recon_enforced")
#: the storage unenforced ContourKV's bytes are read in (claims 60, 64, 114): a ragged cache holds exactly the
#: enforcing methods' rows (one global threshold over the same total), the shared pipeline pads every layer to
#: its widest head, which is what the paper's unenforced run held
UNENFORCED_HELD = "layer_padded"
#: uniform-allocation methods that are not kvpress library baselines (claim 62): H2O is this project's own press
#: (the paper: "plus H2O"), snapkv_w32 is SnapKV at ContourKV's window (the reallocation's twin)
NOT_LIBRARY = ("h2o", "snapkv_w32")
#: the device of a timing whose provenance does not say
UNRECORDED = "unrecorded"
SHARE, COUNT, AT_LEAST_1 = (0.0, 1.0), (0.0, math.inf), (1.0, math.inf)
_MLB = ("model", "length", "budget")
_MLBM = (*_MLB, "method")
_RAGGED, _SHIPPED, _HELD = {"storage": "ragged"}, {"storage": "as_shipped"}, {"storage": UNENFORCED_HELD}


def _bytes(claim, value, column, keys, where, domain=SHARE, **kw) -> HeadlineValue:
    return HeadlineValue(claim, value, "deploy_bytes", column, keys, where, n_column="n_items", domain=domain, **kw)


def _count(claim, value, source="roster", keys=(), **kw) -> HeadlineValue:
    return HeadlineValue(claim, value, source, value, keys, domain=COUNT, **kw)


def _timing(claim, value, method) -> HeadlineValue:
    return HeadlineValue(
        claim,
        value,
        "deploy_timing",
        "replay_cost_over_dense",
        ("model", "length", "device"),
        {"method": method},
        n_column="replay_n",
        domain=(0.0, math.inf),
    )


#: claim value -> the claims frame and column it is read from (the comparison values first)
HEADLINE: tuple[HeadlineValue, ...] = COMPARISON_HEADLINE + (
    # the bytes table: fractions of the full cache, ratios to SnapKV's bytes
    _bytes(59, "uniform_methods_cache_share", "frac_full_median", _MLBM, {**_RAGGED, "kind": UNIFORM_KINDS}),
    _bytes(63, "kept_cache_share", "frac_full_median", _MLBM, {**_RAGGED, "method": "snapkv"}),
    # claims 3, 59, 61 speak of the K/V rows held; the head-wise masks' index tensors come on top (bytes table)
    _bytes(59, "per_head_methods_cache_share", "kv_rows_share_median", _MLBM, {**_SHIPPED, "kind": PER_HEAD_KINDS}),
    _bytes(3, "held_cache_share", "kv_rows_share_median", (*_MLBM, "storage"), {**_SHIPPED, "kind": PER_HEAD_KINDS}),
    _bytes(
        61,
        "snapkv_compactor_cache_share",
        "kv_rows_share_median",
        _MLBM,
        {**_SHIPPED, "method": ("snapkv", "compactor")},
    ),
    _bytes(61, "kvzip_cache_share", "kv_rows_share_median", _MLB, {**_SHIPPED, "method": "kvzip"}),
    _bytes(113, "kvzip_bytes_over_snapkv", "ratio_to_snapkv_median", _MLB, {**_SHIPPED, "method": "kvzip"}, AT_LEAST_1),
    _bytes(60, "contourkv_cache_share_enforced", "frac_full_median", _MLBM, {**_RAGGED, "method": ENFORCING}),
    _bytes(
        60,
        "contourkv_bytes_over_snapkv_enforced",
        "ratio_to_snapkv_median",
        _MLBM,
        {**_RAGGED, "method": ENFORCING},
        note="each cell capped at s (deploy.runner.kept_sets, caps = s): at most SnapKV's bytes",
    ),
    _bytes(60, "contourkv_cache_share_unenforced", "frac_full_median", _MLBM, {**_HELD, "method": UNENFORCED}),
    _bytes(
        114, "median_bytes_over_snapkv", "ratio_to_snapkv_median", _MLBM, {**_HELD, "method": UNENFORCED}, AT_LEAST_1
    ),
    _bytes(64, "contourkv_cache_share", "frac_full_median", _MLB, {**_HELD, "method": "contourkv_recon_unenforced"}),
    _bytes(
        114,
        "overkeep_over_nominal",
        "overkeep_over_nominal",
        _MLBM,
        {**_RAGGED, "method": UNENFORCED},
        AT_LEAST_1,
        note="the widest cell over s",
    ),
    HeadlineValue(
        114,
        "bytes_over_enforcing_methods",
        "bytes_over_enforcing",
        "bytes_over_enforcing_methods",
        (*_MLBM, "opponent", "storage"),
        n_column="n_items",
        domain=(0.0, math.inf),
    ),
    # the roster and the replay: counts the configuration sets
    _count(59, "n_uniform_methods"),
    _count(59, "n_per_head_methods"),
    _count(62, "n_uniform"),
    _count(62, "n_per_head"),
    _count(62, "n_library_baselines"),
    _count(61, "replay_measurements_per_model", "replay_per_model", ("model",)),
    _count(61, "n_conditions", "replay_conditions"),
    # timing: each press's prefill in the replay over the plain prefill, on the device it ran on
    _timing(69, "reconstruction_score_cost_over_prefill", "kvzip"),
    _timing(115, "reconstruction_cost_over_prefill", "kvzip"),
    _timing(115, "snapkv_compresskv_cost_over_prefill", "snapkv"),
)


# ---------------------------------------------------------------------------------------------- claims frames


def _population(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(population=pl.lit(POPULATION))


def _bytes_frames(table: pl.DataFrame | None) -> dict[str, pl.DataFrame]:
    """The bytes table with the widest cell over s (claim 114's over-keep), and unenforced ContourKV's bytes over
    each enforcing (uniform-allocation) method's at the same model, length and budget, both in the storage
    unenforced ContourKV is held in (their medians over items of the bytes over SnapKV's, divided)."""
    if table is None or not table.height:
        return {}
    out = {
        "deploy_bytes": _population(
            table.with_columns(overkeep_over_nominal=pl.col("kept_max_head") / pl.col("budget"))
        )
    }
    if "kind" not in table.columns:
        return out
    held = table.filter(pl.col("storage") == UNENFORCED_HELD)
    enforcing = held.filter(pl.col("kind").is_in(UNIFORM_KINDS)).select(
        *_MLB, opponent=pl.col("method"), opponent_ratio=pl.col("ratio_to_snapkv_median")
    )
    pairs = held.filter(pl.col("method").is_in(UNENFORCED)).join(enforcing, on=list(_MLB))
    if pairs.height:
        out["bytes_over_enforcing"] = _population(
            pairs.with_columns(
                bytes_over_enforcing_methods=pl.col("ratio_to_snapkv_median") / pl.col("opponent_ratio"),
                storage=pl.lit(UNENFORCED_HELD),
            )
        )
    return out


def _timing_frames(timing: pl.DataFrame | None) -> dict[str, pl.DataFrame]:
    """The timing table's replay rows, each with the device it was timed on (``unrecorded`` where it is not)."""
    if timing is None or "replay_cost_over_dense" not in timing.columns:
        return {}
    timed = timing.filter(pl.col("replay_cost_over_dense").is_not_null())
    if "device" not in timed.columns:
        timed = timed.with_columns(device=pl.lit(UNRECORDED))
    return {"deploy_timing": _population(timed.with_columns(pl.col("device").fill_null(UNRECORDED)))}


def _run_models(frames: Mapping[str, pl.DataFrame]) -> str:
    """The run's models: every model a frame of the stage names."""
    models = set()
    for frame in frames.values():
        if frame is not None and "model" in frame.columns:
            models |= {m for m in frame["model"].to_list() if m is not None}
    return ",".join(sorted(models))


def claim_frames(frames: Mapping[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """Every claims frame :data:`HEADLINE` reads, from the stage's frames (``table3``-``table5``, ``deploy_bytes``,
    ``deploy_timing``) and the row inputs (:func:`row_inputs`); a frame without a model column names the run's."""
    models = _run_models(frames)
    out = {
        **comparison_frames(frames),
        **_bytes_frames(frames.get("deploy_bytes")),
        **_timing_frames(frames.get("deploy_timing")),
        **{k: frames[k] for k in ("roster", "replay_per_model", "replay_conditions") if k in frames},
    }
    return {
        name: f if "model" in f.columns or "models" in f.columns else f.with_columns(models=pl.lit(models))
        for name, f in out.items()
    }


# ---------------------------------------------------------------------------------------------- row inputs


def _roster(rows: pl.DataFrame) -> pl.DataFrame:
    """Claims 59 and 62: how many methods of each kind the run deployed (59: every uniform-allocation method, the
    ones claim 59's cache shares cover; 62: the kvpress library baselines, without H2O and snapkv_w32)."""
    if not rows.height or "kind" not in rows.columns:
        return pl.DataFrame()
    kinds = dict(rows.select("method", "kind").unique("method").iter_rows())
    uniform = sorted(m for m, k in kinds.items() if k in UNIFORM_KINDS)
    per_head = sorted(m for m, k in kinds.items() if k in PER_HEAD_KINDS)
    library = [m for m in uniform if m not in NOT_LIBRARY]
    counts = {
        "n_uniform_methods": len(uniform),
        "n_per_head_methods": len(per_head),
        "n_uniform": len(library),
        "n_per_head": len(per_head),
        "n_library_baselines": len(library) + len(per_head),
    }
    listed = {"uniform": ", ".join(uniform), "per_head": ", ".join(per_head), "library": ", ".join(library)}
    return _population(pl.DataFrame([{**counts, **listed}]))


def _replay_counts(replay: pl.DataFrame | None) -> dict[str, pl.DataFrame]:
    """Claim 61: the replay's measurements per model (a press's prefill; each item's plain prefill is not one) and
    its conditions (model, task, length, budget)."""
    if replay is None or not replay.height:
        return {}
    pressed = replay.filter(pl.col("method") != "dense")
    per_model = pressed.group_by("model").agg(replay_measurements_per_model=pl.len()).sort("model")
    keys = [k for k in wtl_mod.CONDITION if k in pressed.columns]
    conditions = pl.DataFrame(
        {
            "n_conditions": [pressed.select(keys).unique().height],
            "n": [pressed.height],
            "models": [",".join(sorted(set(pressed["model"].to_list())))],
        }
    )
    return {
        "replay_per_model": _population(per_model.with_columns(n=pl.col("replay_measurements_per_model"))),
        "replay_conditions": _population(conditions),
    }


def row_inputs(
    rows: pl.DataFrame, replay: pl.DataFrame | None, settings: StatisticsSettings
) -> dict[str, pl.DataFrame]:
    """The claims frames read from the rows and the replay themselves (no table holds them): claim 116's conditions,
    the method roster, the replay's counts."""
    out = {"kvzip_conditions": kvzip_conditions(rows, settings), "roster": _roster(rows), **_replay_counts(replay)}
    return {k: v for k, v in out.items() if v.height}


def headline(frames: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """Every deployment claim value this run measures, from the stage's frames and :func:`row_inputs`.  Counts the
    run's configuration sets (conditions, methods, W/T/L) are shown beside what the configuration implies, not
    judged."""
    return headline_frame(declared_rows(HEADLINE, claim_frames(frames)))


# ---------------------------------------------------------------------------------------------- the rule


def timed_on(path: str) -> str:
    """The device a deployment job ran on, from its output's provenance (``extra.device``, with the GPU's name where
    it is a CUDA device); ``unrecorded`` without a sidecar that says."""
    sidecar = sidecar_path(path)
    if not Path(sidecar).is_file():
        return UNRECORDED
    prov = json.loads(Path(sidecar).read_text(encoding="utf-8"))
    device = (prov.get("extra") or {}).get("device")
    if not device:
        return UNRECORDED
    gpu = (prov.get("device") or {}).get("cuda_device")
    name = f"{device} ({gpu})" if str(device).startswith("cuda") and gpu else str(device)
    return name.replace(",", ";")  # a group's values are comma-separated


def _read(paths: list[str]) -> pl.DataFrame:
    """Every file's rows, each with the ``device`` its job ran on (unless the rows record it themselves)."""
    frames = [pl.read_parquet(p) for p in paths]
    frames = [f if "device" in f.columns else f.with_columns(device=pl.lit(timed_on(p))) for f, p in zip(frames, paths)]
    return pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()


def statistics(inputs: Inputs, config: Mapping[str, Any]) -> Frames:
    """Rule ``deploy_statistics``: the deployment rows (``rows``) and the byte replay (``replay``) -> Tables 3-5,
    the bytes table, timing and ``headline_deploy``."""
    settings = StatisticsSettings.from_config(config)
    files, replays = list(inputs["rows"]), list(inputs["replay"])
    if not files:  # only asked for by name: `all` and the claims leave the stage out when deploy.enabled is false
        raise CleanError("deploy_statistics: no deployment rows: deploy.enabled is false; fix: set it true")
    rows, replay = _read(files), _read(replays)
    frames = {
        "table3": table3(rows, settings),
        "table4": table4(rows, settings),
        "table5": decomposition_table(rows, settings),
        "deploy_bytes": bytes_rows(rows, replay),
        "deploy_timing": timing_table(rows, replay),
    }
    frames["headline_deploy"] = headline({**frames, **row_inputs(rows, replay, settings)})
    return Frames(
        frames,
        seeds=bootstrap_seeds(settings),
        notes=[f"{rows.height} rows from {len(files)} conditions, {replay.height} replay measurements; {settings}"],
    )
