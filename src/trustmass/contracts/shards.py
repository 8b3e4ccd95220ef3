"""The capture shard: one safetensors file per (model, document), read without torch.

Written by :mod:`trustmass.capture.shards`; read by the ceiling, audit and certification stages.
Tensors are named ``layerLLL.<field>`` (:func:`tensor_name`), float32 except ``positions`` (int64):

=============  ==================  ==========================================================
field          shape               what it holds
=============  ==================  ==========================================================
positions      [Hkv, R]            sampled query positions, shared by the KV group's heads
p              [Hq, R, N]          the exact attention row P[i, :] of each sampled row
acc_mass       [Hq, R, N]          H2O accumulated column mass sum_{t<=i} P[t, :]
window_sums    [Hq, R, W, N]       SnapKV window sums, one per configured window
keys, values   [Hkv, N, d]         the layer's keys and values per KV head
query          [Hq, R, d]          the query vector of each sampled row
output         [Hq, R, d]          the model's own head output of each sampled row
=============  ==================  ==========================================================

The header metadata holds the capture description as JSON under :data:`METADATA_KEY`.  The
validation report beside each shard is a parquet frame with :data:`DEVIATION_COLUMNS`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable

import numpy as np
from safetensors import safe_open

__all__ = ["DEVIATION_COLUMNS", "FIELDS", "METADATA_KEY", "layer_prefix", "read_layer", "read_metadata", "tensor_name"]

FIELDS = ("positions", "p", "acc_mass", "window_sums", "keys", "values", "query", "output")
#: the safetensors header key whose value is the capture description (JSON)
METADATA_KEY = "trustmass"
#: columns of the validation report: one row per sampled (layer, head, row)
DEVIATION_COLUMNS = ["layer", "head", "kv_head", "query_pos", "max_abs_dev", "mean_abs_dev"]


def layer_prefix(layer: int) -> str:
    """``layer007.``: the prefix of every tensor of one layer."""
    return f"layer{int(layer):03d}."


def tensor_name(layer: int, field: str) -> str:
    """``layer007.p``: the name of one field of one layer in the shard."""
    return layer_prefix(layer) + field


def read_metadata(path: str | os.PathLike) -> dict:
    """The capture description stored in the shard's header."""
    with safe_open(os.fspath(path), framework="numpy") as fh:
        header = fh.metadata() or {}
    if METADATA_KEY not in header:
        raise ValueError(
            f"{os.fspath(path)}: the safetensors header has no {METADATA_KEY!r} entry, so it is not a capture "
            "shard; point the reader at a file the capture rule wrote (results/capture/...)"
        )
    return json.loads(header[METADATA_KEY])


def read_layer(path: str | os.PathLike, layer: int, fields: Iterable[str] | None = None) -> dict[str, np.ndarray]:
    """The arrays of one layer, keyed by field: all fields, or the named ones."""
    prefix = layer_prefix(layer)
    with safe_open(os.fspath(path), framework="numpy") as fh:
        present = {name[len(prefix) :] for name in fh.keys() if name.startswith(prefix)}
        wanted = sorted(present) if fields is None else list(fields)
        missing = [f for f in wanted if f not in present]
        if missing or not present:
            raise ValueError(
                f"{os.fspath(path)}: layer {layer} has no field(s) {', '.join(missing) or '(none at all)'} "
                f"(the shard holds {', '.join(sorted(present)) or 'nothing'} for this layer; its layers are "
                "listed in read_metadata(path)['layers']); re-capture the document or ask for fields it holds"
            )
        return {f: fh.get_tensor(prefix + f) for f in wanted}
