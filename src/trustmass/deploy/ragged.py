"""A physically ragged KV cache (batch size 1) and the attention function that decodes over it.

Head-wise eviction keeps a different number of keys in every (layer, KV head) cell; kvpress
0.5.5 only masks such caches (it keeps every row).  Here every cell holds its own K and V tensor
``[n_lh, d]`` with only the kept rows, so the memory really shrinks:

* :meth:`RaggedCache.from_dense` copies the kept rows of a full-length dense prefill cache
  (``DynamicCache()`` built without the model config, so every layer holds all ``N`` positions);
* during decode, :meth:`RaggedLayer.update` appends the new block's K/V to every head and hands
  the attention function a :class:`RaggedHeads` per K and V;
* :meth:`RaggedCache.get_seq_length` is the *original* length (``N`` + appended tokens), so
  transformers gives new tokens their true positions (RoPE) and not the shrunk cache's length.

The attention function (:data:`ATTENTION_NAME`, :func:`register`) runs per KV head over
``[kept old keys ; new block keys]``, causal inside the block, with GQA (query head ``h`` reads KV
head ``h // group``), the module's scaling, the logit soft-cap if the model has one, and float32
logits, softmax and value products.  With any other cache (the dense prefill, kvpress's caches)
it defers to the model's own attention (SDPA, or eager when soft-capped); that path does not
apply kvpress's head-wise ``masked_key_indices`` (registering after ``import kvpress`` keeps
kvpress from wrapping it).

Sliding-window layers: pass ``windows`` (:func:`layer_windows` reads them from the config).  A
sliding layer also stores every kept key's absolute position (int64, counted by the ledger), and a
query at position ``i`` sees only kept keys ``j`` with ``i - W < j <= i`` (transformers' rule).
Kept keys that have left the window are masked, not dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from transformers.cache_utils import Cache, CacheLayerMixin

from trustmass.sources.attention import default_scaling, dense_attention, register_attention

ATTENTION_NAME = "trustmass_ragged"

__all__ = [
    "ATTENTION_NAME",
    "RaggedCache",
    "RaggedHeads",
    "RaggedLayer",
    "layer_windows",
    "ragged_attention",
    "register",
]


@dataclass(frozen=True)
class RaggedHeads:
    """What :meth:`RaggedLayer.update` returns (once for K, once for V): per KV head, all rows held."""

    rows: tuple[torch.Tensor, ...]  # per KV head [n_h + M, d]: the old kept rows, then the new block's M rows
    positions: tuple[torch.Tensor, ...] | None  # per KV head absolute key positions (sliding layers only)
    block: int  # M, the new block's length
    block_start: int  # absolute position of the block's first token
    window: int | None


class RaggedLayer(CacheLayerMixin):
    """One layer: a K and a V tensor ``[n_h, d]`` per KV head, and the original sequence length."""

    def __init__(self, keys, values, length: int, window: int | None = None, positions=None):
        super().__init__()
        self.keys, self.values = list(keys), list(values)
        self.positions = None if positions is None else list(positions)
        if (window is None) != (self.positions is None):
            raise ValueError("a sliding-window layer needs the kept positions, a full-attention layer none")
        self.length, self.window, self.is_sliding = int(length), window, window is not None
        self.dtype, self.device = self.keys[0].dtype, self.keys[0].device
        self.is_initialized = True

    def lazy_initialization(self, key_states, value_states) -> None:
        raise TypeError("a RaggedLayer is built from a dense prefill (RaggedCache.from_dense), not lazily")

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, cache_kwargs=None):
        """Append the block ``[1, Hkv, M, d]`` to every head; return the ragged K and V views."""
        if key_states.shape[0] != 1 or key_states.shape[1] != len(self.keys):
            raise ValueError(
                f"a ragged cache takes batch 1 and {len(self.keys)} KV heads; got key states {tuple(key_states.shape)}"
            )
        start, block = self.length, int(key_states.shape[2])
        for h in range(len(self.keys)):
            self.keys[h] = torch.cat([self.keys[h], key_states[0, h]])
            self.values[h] = torch.cat([self.values[h], value_states[0, h]])
        if self.positions is not None:
            new = torch.arange(start, start + block, device=self.device)
            self.positions = [torch.cat([p, new]) for p in self.positions]
        self.length += block
        positions = None if self.positions is None else tuple(self.positions)
        keys = RaggedHeads(tuple(self.keys), positions, block, start, self.window)
        values = RaggedHeads(tuple(self.values), positions, block, start, self.window)
        return keys, values

    def get_seq_length(self) -> int:
        """The original length: prefill tokens plus appended ones (not the rows held)."""
        return self.length

    def get_mask_sizes(self, cache_position: torch.Tensor) -> tuple[int, int]:
        # the mask transformers builds is not read by the ragged attention (causality is per head)
        return self.length + int(cache_position.shape[0]), 0

    def get_max_cache_shape(self) -> int:
        return -1

    def counts(self) -> list[int]:
        return [int(k.shape[0]) for k in self.keys]

    def tensors(self) -> list[torch.Tensor]:
        return [*self.keys, *self.values, *(self.positions or [])]

    def _unsupported(self, *args, **kwargs):
        raise NotImplementedError("a RaggedLayer supports decoding only (no crop, reset, offload, beam search)")

    crop = reset = offload = prefetch = reorder_cache = batch_repeat_interleave = batch_select_indices = _unsupported


class RaggedCache(Cache):
    """A transformers ``Cache`` of :class:`RaggedLayer` objects (one per model layer)."""

    def __init__(self, layers: list[RaggedLayer]):
        super().__init__(layers=layers)

    @classmethod
    def from_dense(cls, cache: Cache, kept, windows=None) -> RaggedCache:
        """Copy the kept rows of a dense prefill cache.

        ``kept[l][h]``: ascending, distinct int64 positions kept in layer ``l``, KV head ``h``.
        ``windows[l]``: layer ``l``'s sliding window, None for full attention (default: all full).
        """
        dense = list(cache.layers)
        n_layers = len(dense)
        if len(kept) != n_layers:
            raise ValueError(f"kept has {len(kept)} layers; the cache has {n_layers}")
        windows = [None] * n_layers if windows is None else list(windows)
        if len(windows) != n_layers:
            raise ValueError(f"windows has {len(windows)} entries; the cache has {n_layers} layers")
        length = _dense_length(dense)
        layers = []
        for l, (layer, heads, window) in enumerate(zip(dense, kept, windows)):
            if len(heads) != layer.keys.shape[1]:
                raise ValueError(
                    f"kept[{l}] has {len(heads)} index tensors; layer {l} has {layer.keys.shape[1]} KV heads"
                )
            index = [_check_kept(idx, length, f"kept[{l}][{h}]", layer.keys.device) for h, idx in enumerate(heads)]
            # index_select copies: the ragged rows share no storage with the dense cache
            keys = [layer.keys[0, h].index_select(0, i) for h, i in enumerate(index)]
            values = [layer.values[0, h].index_select(0, i) for h, i in enumerate(index)]
            layers.append(RaggedLayer(keys, values, length, window, None if window is None else index))
        return cls(layers)

    def kept_counts(self) -> np.ndarray:
        """Rows held per (layer, KV head), int64 ``[layers, kv_heads]`` (kept plus appended)."""
        return np.array([layer.counts() for layer in self.layers], dtype=np.int64)

    def tensors(self) -> list[torch.Tensor]:
        """Every tensor the cache holds (keys, values, and the positions of sliding layers)."""
        return [t for layer in self.layers for t in layer.tensors()]


def _dense_length(layers) -> int:
    """The prefill length every dense layer must hold in full (batch 1)."""
    if not layers or any(getattr(layer, "keys", None) is None or layer.keys.dim() != 4 for layer in layers):
        raise ValueError("the dense cache must be filled by a prefill (every layer's keys [1, Hkv, N, d])")
    lengths = {int(layer.keys.shape[2]) for layer in layers}
    seen = {int(getattr(layer, "cumulative_length", layer.keys.shape[2])) for layer in layers}
    if len(lengths) != 1 or lengths != seen:
        raise ValueError(
            f"the dense cache's layers hold {sorted(lengths)} positions of {sorted(seen)} seen; prefill into "
            "DynamicCache() built without the model config, so sliding-window layers keep every position"
        )
    if layers[0].keys.shape[0] != 1:
        raise ValueError(f"a ragged cache holds one sequence; the dense cache has batch {layers[0].keys.shape[0]}")
    return lengths.pop()


def _check_kept(index, length: int, name: str, device) -> torch.Tensor:
    """The kept positions as int64 on `device`; ValueError unless 1-D, in range, strictly ascending."""
    index = torch.as_tensor(index)
    if index.dim() != 1 or index.dtype.is_floating_point or index.dtype.is_complex or index.dtype == torch.bool:
        raise ValueError(f"{name} must be a 1-D integer tensor of positions; got {index.dtype} {tuple(index.shape)}")
    index = index.to(device=device, dtype=torch.int64)
    if index.numel() and (int(index.min()) < 0 or int(index.max()) >= length):
        raise ValueError(f"{name} holds positions outside [0, {length - 1}]: [{int(index.min())}, {int(index.max())}]")
    steps = index[1:] - index[:-1]
    if bool((steps == 0).any()):
        raise ValueError(f"{name} holds duplicated positions (position {int(index[1:][steps == 0][0])})")
    if bool((steps < 0).any()):
        raise ValueError(
            f"{name} must be sorted ascending (position {int(index[1:][steps < 0][0])} follows a larger one)"
        )
    return index


def layer_windows(config) -> list[int | None]:
    """Each layer's sliding window from a model config (None: full attention)."""
    text = config.get_text_config(decoder=True)
    window = getattr(text, "sliding_window", None)
    types = getattr(text, "layer_types", None)
    if types is None:
        types = ["sliding_attention" if window else "full_attention"] * text.num_hidden_layers
    unknown = sorted(set(types) - {"sliding_attention", "full_attention"})
    if unknown:
        raise ValueError(
            f"layer types {unknown} are not supported by the ragged cache (full and sliding attention only)"
        )
    return [int(window) if t == "sliding_attention" else None for t in types]


def _visible(heads: RaggedHeads, h: int, n_keys: int, device) -> torch.Tensor:
    """``[M, n_keys]`` bool: which held keys each block query sees."""
    m = heads.block
    if heads.positions is None:  # full attention: every old kept key precedes the block; causal inside it
        visible = torch.ones(m, n_keys, dtype=torch.bool, device=device)
        visible[:, n_keys - m :] = torch.ones(m, m, dtype=torch.bool, device=device).tril()
        return visible
    q_pos = torch.arange(heads.block_start, heads.block_start + m, device=device)[:, None]
    k_pos = heads.positions[h][None, :]
    return (k_pos <= q_pos) & (k_pos > q_pos - heads.window)


def ragged_attention(
    query: torch.Tensor, keys: RaggedHeads, values: RaggedHeads, scaling: float, softcap=None
) -> torch.Tensor:
    """Head outputs ``[1, M, Hq, d]`` (query's dtype) of the block's queries ``[1, Hq, M, d]``, float32 inside."""
    n_q, n_kv = query.shape[1], len(keys.rows)
    if query.shape[0] != 1 or n_q % n_kv:
        raise ValueError(f"query {tuple(query.shape)} must be batch 1 with a multiple of the {n_kv} KV heads")
    group = n_q // n_kv
    outputs = []
    for h in range(n_kv):
        k, v = keys.rows[h].float(), values.rows[h].float()
        q = query[0, h * group : (h + 1) * group].float()  # [G, M, d]: the query heads reading KV head h
        logits = torch.matmul(q, k.T) * scaling  # [G, M, n_h + M]
        if softcap is not None:
            logits = torch.tanh(logits / softcap) * softcap
        logits = logits.masked_fill(~_visible(keys, h, k.shape[0], query.device), float("-inf"))
        outputs.append(torch.matmul(torch.softmax(logits, dim=-1), v))
    return torch.cat(outputs).transpose(0, 1).unsqueeze(0).to(query.dtype)


def ragged_attention_function(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    """The registered function: ragged attention over a RaggedCache, else the model's own attention."""
    scaling, softcap = default_scaling(query, scaling), kwargs.get("softcap")
    if not isinstance(key, RaggedHeads):
        return dense_attention(module, query, key, value, attention_mask, scaling, softcap, dropout), None
    window = kwargs.get("sliding_window")
    if window != key.window:
        raise ValueError(
            f"layer {getattr(module, 'layer_idx', '?')} attends with sliding window {window} but its ragged cache "
            f"was built with {key.window}; build it with windows=layer_windows(model.config)"
        )
    return ragged_attention(query, key, value, scaling, softcap), None


def register() -> str:
    """Register :data:`ATTENTION_NAME` (after ``import kvpress``, so kvpress does not wrap it)."""
    try:
        import kvpress  # noqa: F401  (kvpress patches every attention function registered before its import)
    except ImportError:
        pass
    return register_attention(ATTENTION_NAME, ragged_attention_function)
