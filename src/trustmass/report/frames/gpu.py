"""The paper's hardware claims (40, 102, 103, 115: H100 timings) from the committed GPU check.

``make gpu-check`` (``python -m trustmass.bench gpu``) writes ``benchmarks/gpu/gpu-check.json`` on a
lent GPU; this module turns its ``claims`` object into headline rows, judged as analogues on the GPU
the file names (``device.name``: the row's ``models``).  Only a measurement counts: a file written in
``cpu`` or ``dry-run`` mode, or a claim section that did not finish, gives no row (its values stay
"needs a GPU").  Without the file the statistics rule is off (trustmass.plan.Study.statistics_enabled).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from trustmass.plumbing.errors import CleanError
from trustmass.report.catalog import GPU_CHECK
from trustmass.report.engine import POPULATIONS
from trustmass.report.headline import HeadlineValue, declared_rows, headline_frame
from trustmass.report.statistics import Frames, Inputs, one

__all__ = ["GPU_CHECK", "HEADLINE", "MEASURED_MODE", "claim_frames", "headline", "statistics"]

#: the only mode whose timings are a measurement of a GPU
MEASURED_MODE = "gpu"
#: (claim, value in data/claims.yaml, key in the check's claim section, measured per length); a list value is one
#: row per n_keys; claim 115 times whole prefills of one model, at no key count
_VALUES = (
    (40, "dropped_mass_cost_over_dense_layer", "dropped_mass_cost_over_dense_layer", True),
    (40, "dropped_mass_time_per_layer", "dropped_mass_time_per_layer_ms", True),
    (102, "swap_round_cost_share", "swap_round_cost_share_percent", True),
    (103, "prefill_mask_cost_over_dense", "prefill_mask_cost_over_dense", True),
    (103, "mu_cost_over_dense", "mu_cost_over_dense", True),
    (115, "snapkv_compresskv_cost_over_prefill", "snapkv_compresskv_cost_over_prefill", False),
    (115, "reconstruction_cost_over_prefill", "reconstruction_cost_over_prefill", False),
)
#: the check writes percents as percents; the headline schema holds fractions (the report scales)
_PERCENT_KEYS = {"swap_round_cost_share_percent"}
#: every timing is one measurement on the named GPU (the frame's ``models``) at its length; a wall time and a cost
#: ratio are positive, with no upper bound a GPU guarantees
HEADLINE: tuple[HeadlineValue, ...] = tuple(
    HeadlineValue(
        claim, value, "gpu_timings", value, (*(("length",) if placed else ()), "device"), domain=(0.0, math.inf)
    )
    for claim, value, _, placed in _VALUES
)


def _lengths(section: Mapping[str, Any], key: str, n: int) -> list[int | None]:
    """The n_keys each entry of a list value was measured at (claim 40: one per N; 103: one per shape)."""
    if key == "dropped_mass_cost_over_dense_layer":
        return list(section.get("n_keys") or [None] * n)
    shapes = section.get("shapes") or []
    return [s.get("n_keys") for s in shapes] if len(shapes) == n else [None] * n


def _length(section: Mapping[str, Any]) -> int | None:
    """The n_keys a single value was measured at (claim 40's time per layer names its own)."""
    length = section.get("dropped_mass_time_per_layer_n_keys") or section.get("n_keys")
    return length if isinstance(length, int) else None


def claim_frames(check: Mapping[str, Any]) -> dict[str, pl.DataFrame]:
    """``gpu_timings``: one row per measured timing and population (a timing is no sample of documents: both
    populations carry it), a column per claim value, its ``length`` (n_keys) where it was measured at one and the
    GPU as ``models`` and as the ``device`` every timing claim is judged on (``cuda (<name>)``); no frame unless
    the check ran on a GPU.  A section that did not finish gives no row."""
    if check.get("mode") != MEASURED_MODE:
        return {}
    device = (check.get("device") or {}).get("name") or "an unnamed GPU"
    rows = []
    for claim, value, key, placed in _VALUES:
        section = (check.get("claims") or {}).get(str(claim)) or {}
        if section.get("status") != "ok" or section.get(key) is None:
            continue
        got = section[key]
        scale = 0.01 if key in _PERCENT_KEYS else 1.0
        measured = zip(_lengths(section, key, len(got)), got) if isinstance(got, list) else [(_length(section), got)]
        for length, x in measured:
            if x is None:
                continue
            if placed and length is None:
                raise CleanError(
                    f"{GPU_CHECK}: claims.{claim}.{key} has a timing without the n_keys it was measured at; fix: "
                    "rerun make gpu-check (python -m trustmass.bench gpu), which records n_keys (or shapes) beside it"
                )
            rows += [
                {
                    "population": population,
                    "models": device,
                    "device": f"cuda ({device})",
                    "length": length,
                    value: x * scale,
                }
                for population in POPULATIONS
            ]
    return {"gpu_timings": pl.from_dicts(rows, infer_schema_length=None)} if rows else {}


def headline(check: Mapping[str, Any]) -> pl.DataFrame:
    """Headline rows for claims 40, 102, 103 and 115 from a GPU check's JSON (none unless measured on a GPU)."""
    return headline_frame(declared_rows(HEADLINE, claim_frames(check)))


def statistics(inputs: Inputs, config: Mapping[str, Any]) -> Frames:
    """Rule ``gpu_statistics``: the committed GPU check (``check``) -> ``headline_gpu``."""
    check = json.loads(Path(one(inputs, "check")).read_text(encoding="utf-8"))
    frame = headline(check)
    device = (check.get("device") or {}).get("name")
    return Frames(
        {"headline_gpu": frame},
        summary={"rows": frame.height, "device": device, "mode": check.get("mode")},
        notes=[f"{check.get('mode')} check on {device}: {frame.height} claim rows"],
    )
