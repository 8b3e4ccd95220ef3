"""Writing capture shards: one safetensors file per (model, document) plus a validation report.

The format (tensor names, header, report columns) is the contract in :mod:`trustmass.contracts.shards`,
which also reads shards, without torch.  Files are written atomically, and nothing time-dependent
goes into them, so a re-capture reproduces the shard bit for bit.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
from safetensors.torch import save_file

from trustmass.capture.prefill import Capture
from trustmass.contracts.shards import DEVIATION_COLUMNS, METADATA_KEY
from trustmass.plumbing.provenance import atomic_write, sha256_path


def shard_metadata(capture: Capture) -> dict[str, str]:
    """safetensors header metadata (string values only)."""
    return {METADATA_KEY: json.dumps(capture.metadata, sort_keys=True)}


def write_shard(capture: Capture, path: str | Path) -> str:
    """Write the shard atomically; returns its sha256."""
    tensors = {k: v.contiguous() for k, v in sorted(capture.tensors.items())}
    with atomic_write(path) as tmp:
        save_file(tensors, str(tmp), metadata=shard_metadata(capture))
    return sha256_path(path)


def deviation_frame(capture: Capture) -> pl.DataFrame:
    return pl.DataFrame(capture.deviations, schema=DEVIATION_COLUMNS, orient="row")


def write_validation_report(capture: Capture, path: str | Path) -> dict:
    """Per-row deviations as parquet; returns the summary (also stored in provenance): ``threshold`` is the
    configured floor, ``max_bound`` the largest per-row bound applied (``prefill.deviation_bound``; the
    floor itself unless some row's dtype rounding at its magnitude exceeds it, never for float32)."""
    frame = deviation_frame(capture)
    with atomic_write(path) as tmp:
        frame.write_parquet(tmp)
    return {
        "rows": frame.height,
        "max_abs_dev": float(frame["max_abs_dev"].max()),
        "mean_abs_dev": float(frame["mean_abs_dev"].mean()),
        "threshold": capture.metadata["options"]["max_abs_deviation"],
        "max_bound": max(capture.bounds, default=capture.metadata["options"]["max_abs_deviation"]),
    }
