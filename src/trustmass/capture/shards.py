"""Capture shards on disk: one safetensors file per (model, document) plus a validation report.

Tensors are named ``layerLLL.<field>`` (see `trustmass.capture.prefill`); the header metadata carries the
capture description as JSON.  Files are written atomically, and nothing time-dependent goes into
them, so a re-capture reproduces the shard bit for bit.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
from safetensors import safe_open
from safetensors.torch import save_file

from trustmass.capture.prefill import Capture, shard_metadata
from trustmass.plumbing.provenance import atomic_write, sha256_path

DEVIATION_COLUMNS = ["layer", "head", "kv_head", "query_pos", "max_abs_dev", "mean_abs_dev"]


def write_shard(capture: Capture, path: str | Path) -> str:
    """Write the shard atomically; returns its sha256."""
    tensors = {k: v.contiguous() for k, v in sorted(capture.tensors.items())}
    with atomic_write(path) as tmp:
        save_file(tensors, str(tmp), metadata=shard_metadata(capture))
    return sha256_path(path)


def deviation_frame(capture: Capture) -> pl.DataFrame:
    return pl.DataFrame(capture.deviations, schema=DEVIATION_COLUMNS, orient="row")


def write_validation_report(capture: Capture, path: str | Path) -> dict:
    """Per-row deviations as parquet; returns the summary (also stored in provenance)."""
    frame = deviation_frame(capture)
    with atomic_write(path) as tmp:
        frame.write_parquet(tmp)
    return {
        "rows": frame.height,
        "max_abs_dev": float(frame["max_abs_dev"].max()),
        "mean_abs_dev": float(frame["mean_abs_dev"].mean()),
        "threshold": capture.metadata["options"]["max_abs_deviation"],
    }


def read_metadata(path: str | Path) -> dict:
    with safe_open(str(path), framework="pt") as fh:
        return json.loads(fh.metadata()["trustmass"])


def read_layer(path: str | Path, layer: int, fields=None) -> dict:
    """The tensors of one layer (all fields, or the named ones)."""
    prefix = f"layer{layer:03d}."
    with safe_open(str(path), framework="pt") as fh:
        names = [k for k in fh.keys() if k.startswith(prefix)]
        if fields is not None:
            names = [prefix + f for f in fields]
        return {name[len(prefix) :]: fh.get_tensor(name) for name in names}
