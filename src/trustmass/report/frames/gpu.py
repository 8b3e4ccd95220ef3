"""The paper's hardware claims (40, 102, 103, 115: H100 timings) from the committed GPU check.

``make gpu-check`` (``python -m trustmass.bench gpu``) writes ``benchmarks/gpu/gpu-check.json`` on a
lent GPU; this module turns its ``claims`` object into headline rows, judged as analogues on the GPU
the file names (``device.name``: the row's ``models``).  Only a measurement counts: a file written in
``cpu`` or ``dry-run`` mode, or a claim section that did not finish, gives no row (its values stay
"needs a GPU").  Without the file the statistics rule is off (trustmass.plan.Study.statistics_enabled).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from trustmass.report.catalog import GPU_CHECK
from trustmass.report.headline import headline_frame, row
from trustmass.report.statistics import Frames, Inputs, one

__all__ = ["GPU_CHECK", "MEASURED_MODE", "headline", "statistics"]

#: the only mode whose timings are a measurement of a GPU
MEASURED_MODE = "gpu"
POPULATION = "all"
#: (claim, value in data/claims.yaml, key in the check's claim section); a list value is one row per n_keys
_VALUES = (
    (40, "dropped_mass_cost_over_dense_layer", "dropped_mass_cost_over_dense_layer"),
    (40, "dropped_mass_time_per_layer", "dropped_mass_time_per_layer_ms"),
    (102, "swap_round_cost_share", "swap_round_cost_share_percent"),
    (103, "prefill_mask_cost_over_dense", "prefill_mask_cost_over_dense"),
    (103, "mu_cost_over_dense", "mu_cost_over_dense"),
    (115, "snapkv_compresskv_cost_over_prefill", "snapkv_compresskv_cost_over_prefill"),
    (115, "reconstruction_cost_over_prefill", "reconstruction_cost_over_prefill"),
)
#: the check writes percents as percents; the headline schema holds fractions (the report scales)
_PERCENT_KEYS = {"swap_round_cost_share_percent"}


def _lengths(section: Mapping[str, Any], key: str, n: int) -> list[int | None]:
    """The n_keys each entry of a list value was measured at (claim 40: one per N; 103: one per shape)."""
    if key == "dropped_mass_cost_over_dense_layer":
        return list(section.get("n_keys") or [None] * n)
    shapes = section.get("shapes") or []
    return [s.get("n_keys") for s in shapes] if len(shapes) == n else [None] * n


def headline(check: Mapping[str, Any]) -> pl.DataFrame:
    """Headline rows for claims 40, 102, 103 and 115 from a GPU check's JSON (none unless measured on a GPU)."""
    if check.get("mode") != MEASURED_MODE:
        return headline_frame([])
    device = (check.get("device") or {}).get("name") or "an unnamed GPU"
    out = []
    for claim, value, key in _VALUES:
        section = (check.get("claims") or {}).get(str(claim)) or {}
        if section.get("status") != "ok" or section.get(key) is None:
            continue
        got = section[key]
        scale = 0.01 if key in _PERCENT_KEYS else 1.0
        source = f"{GPU_CHECK}: claims.{claim}.{key} ({section.get('definition', '')})"
        if isinstance(got, list):
            for n, x in zip(_lengths(section, key, len(got)), got):
                if x is not None:
                    out.append(
                        row(
                            claim,
                            value,
                            x * scale,
                            POPULATION,
                            by={"length": n} if n else None,
                            models=device,
                            source=source,
                        )
                    )
        else:
            length = section.get("dropped_mass_time_per_layer_n_keys") or section.get("n_keys")
            by = {"length": length} if isinstance(length, int) else None
            out.append(row(claim, value, got * scale, POPULATION, by=by, models=device, source=source))
    return headline_frame(out)


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
