"""The byte ledger: what a cache really holds, and the counterfactual storage layouts.

``bytes_held`` is measured (every tensor reachable from the holders); the other sizes are computed
from the kept counts ``n_lh`` per (layer, KV head), head size ``d`` and the element size ``b``:

* ragged       = sum_{l,h} n_lh * d * 2 * b           (K and V of exactly the kept rows)
* layer-padded = sum_l max_h n_lh * H * d * 2 * b     (every head of a layer padded to its longest)
* full         = L * H * N * d * 2 * b                (the dense cache of N positions)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from torch import nn

__all__ = [
    "LedgerRow",
    "bytes_held",
    "full_bytes",
    "held_tensors",
    "layer_padded_bytes",
    "ledger_row",
    "ragged_bytes",
    "tensor_bytes",
]

Storage = Literal["as_shipped", "ragged"]
_LEAVES = (str, bytes, int, float, bool, type(None), torch.dtype, torch.device, type)


def held_tensors(*holders) -> list[torch.Tensor]:
    """Every distinct tensor reachable from the holders.

    Caches, cache layers and presses are walked through their attributes, lists, tuples and dicts
    (``DynamicCache`` layers' keys/values, ``RaggedLayer`` heads, a press's stored state).  A model
    (any ``nn.Module``) contributes only kvpress's ``masked_key_indices`` on its modules, where
    AdaKV, CriticalAdaKV, KVzip and DuoAttention store their head-wise masks -- never its weights.
    """
    found: dict[int, torch.Tensor] = {}
    seen: set[int] = set()
    stack = list(holders)
    while stack:
        obj = stack.pop()
        if isinstance(obj, _LEAVES) or id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, torch.Tensor):
            found[id(obj)] = obj
        elif isinstance(obj, nn.Module):
            stack.extend(getattr(m, "masked_key_indices", None) for m in obj.modules())
        elif isinstance(obj, dict):
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            stack.extend(obj)
        elif hasattr(obj, "__dict__"):
            stack.extend(vars(obj).values())
    return list(found.values())


def tensor_bytes(tensor: torch.Tensor) -> int:
    return tensor.numel() * tensor.element_size()


def bytes_held(*holders) -> int:
    """Sum of ``numel * element_size`` over :func:`held_tensors` (each distinct tensor once)."""
    return sum(tensor_bytes(t) for t in held_tensors(*holders))


def _element_size(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


def _counts(counts) -> np.ndarray:
    counts = np.asarray(counts, dtype=np.int64)
    if counts.ndim != 2 or (counts < 0).any():
        raise ValueError(
            f"kept counts must be a [layers, kv_heads] array of non-negative ints; got shape {counts.shape}"
        )
    return counts


def ragged_bytes(counts, head_dim: int, dtype: torch.dtype) -> int:
    """K and V bytes of exactly the kept rows: sum n_lh * d * 2 * b."""
    return int(_counts(counts).sum()) * head_dim * 2 * _element_size(dtype)


def layer_padded_bytes(counts, head_dim: int, dtype: torch.dtype) -> int:
    """Counterfactual: each layer stores all H heads at its longest head, sum_l max_h n_lh * H * d * 2 * b."""
    counts = _counts(counts)
    return int(counts.max(axis=1).sum()) * counts.shape[1] * head_dim * 2 * _element_size(dtype)


def full_bytes(n_tokens: int, n_layers: int, kv_heads: int, head_dim: int, dtype: torch.dtype) -> int:
    """The dense cache: L * H * N * d * 2 * b."""
    return n_layers * kv_heads * n_tokens * head_dim * 2 * _element_size(dtype)


@dataclass(frozen=True)
class LedgerRow:
    """One ledger row (the method, item and budget columns are added by the caller)."""

    bytes_measured: int
    storage: Storage
    kept_entries: int
    kept_min_head: int
    kept_max_head: int
    bytes_layer_padded: int
    bytes_full: int
    frac_full: float  # bytes_measured / bytes_full


def ledger_row(
    bytes_measured: int, storage: Storage, counts, n_tokens: int, head_dim: int, dtype: torch.dtype
) -> LedgerRow:
    """The ledger row of a cache holding `bytes_measured` with kept `counts` ``[L, H]`` of `n_tokens` positions."""
    if storage not in ("as_shipped", "ragged"):
        raise ValueError(f"storage must be 'as_shipped' or 'ragged'; got {storage!r}")
    counts = _counts(counts)
    full = full_bytes(n_tokens, counts.shape[0], counts.shape[1], head_dim, dtype)
    return LedgerRow(
        bytes_measured=int(bytes_measured),
        storage=storage,
        kept_entries=int(counts.sum()),
        kept_min_head=int(counts.min()),
        kept_max_head=int(counts.max()),
        bytes_layer_padded=layer_padded_bytes(counts, head_dim, dtype),
        bytes_full=full,
        frac_full=bytes_measured / full,
    )
