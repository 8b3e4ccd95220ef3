"""kvpress as it ships: its own prefill under a press, the head-wise masks it leaves, and KVzip's pass.

* :func:`press_prefill` is kvpress's recipe (``with press(model): model.model(...)``): uniform presses
  shrink the ``DynamicCache``; head-wise ones (AdaKV, CriticalAdaKV, KVzip, DuoAttention) keep every
  row and put ``masked_key_indices`` on the attention modules.
* :func:`kept_from_masks` turns those masks into per-(layer, KV head) kept positions, so a head-wise
  method's selection can be decoded from a physically ragged cache (``ragged.RaggedCache``).
* :class:`KVzipScores` is KVzip's context-reconstruction pass keeping its score: the same pass yields
  KVzip's own kept sets at any budget (kvpress's ``compress_post`` re-run on the saved score) and the
  reconstruction score ContourKV allocates with.  :func:`reconstruction_pass` runs it on a copy of a
  dense prefill cache already made (kvpress's own recipe would prefill the same ids once more).
* :class:`FastKVzipScores` and :class:`DuoAttentionMasks` are the two hub methods kvpress ships as masks
  (``Method.score == "masks"``): the shared dense prefill records FastKVzip's gate score like any scorer's
  (DuoAttention's placeholder), and ``kept_sets`` runs the press's own allocation on it -- FastKVzip's
  ``compress_post`` (bottom scores pruned across every layer and head), DuoAttention's ``compress`` (its
  streaming heads keep their sink and recent window) -- and reads the masks it leaves.
"""

from __future__ import annotations

import copy
import functools
import time
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from kvpress import DuoAttentionPress, FastKVzipPress, KVzipPress
from transformers import DynamicCache

from trustmass.deploy import ledger
from trustmass.deploy.rope import layer_typed_rope

__all__ = [
    "DuoAttentionMasks",
    "FastKVzipScores",
    "KVzipScores",
    "as_shipped",
    "clear_masks",
    "kept_from_masks",
    "press_prefill",
    "reconstruction_pass",
]


@functools.cache
def _tokenizer(name: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(name)


class _LoadedOnce:
    """``AutoTokenizer`` for kvpress's KVzip: each name read from disk once per process (:func:`_tokenizer_once`)."""

    @staticmethod
    def from_pretrained(name, *args, **kwargs):
        if args or kwargs:
            from transformers import AutoTokenizer

            return AutoTokenizer.from_pretrained(name, *args, **kwargs)
        return _tokenizer(str(name))


@contextmanager
def _tokenizer_once():
    """KVzip's pass loads the model's tokenizer (``AutoTokenizer.from_pretrained(name_or_path)``) every time it runs:
    twice per item in the deployment runner (its own prefix and the decomposition's), once per item and budget in
    the replay -- a 150,000-token vocabulary read from disk each time, seconds apiece.  It only encodes its
    prompt with it, so the one loaded first serves every pass of the job."""
    import kvpress.presses.kvzip_press as kvzip

    saved = kvzip.AutoTokenizer
    kvzip.AutoTokenizer = _LoadedOnce
    try:
        yield
    finally:
        kvzip.AutoTokenizer = saved


def clear_masks(model) -> None:
    """Drop kvpress's head-wise masks from every attention module (they belong to one prefill)."""
    for module in model.modules():
        if getattr(module, "masked_key_indices", None) is not None:
            module.masked_key_indices = None


def press_prefill(model, ids: torch.Tensor, press) -> tuple[DynamicCache, float]:
    """kvpress's own prefill of ``ids`` [1, N] under ``press`` (None: plain); the cache and its seconds."""
    clear_masks(model)
    cache = DynamicCache()
    start = time.perf_counter()
    with torch.inference_mode():
        if press is None:
            model.model(input_ids=ids, past_key_values=cache)
        else:
            with _tokenizer_once(), press(model), layer_typed_rope(model):
                model.model(input_ids=ids, past_key_values=cache)
    return cache, time.perf_counter() - start


def reconstruction_pass(model, ids: torch.Tensor, press: KVzipPress, cache: DynamicCache) -> float:
    """KVzip's pass under ``press`` on a copy of ``cache``, the dense prefill of ``ids`` [1, N]; its seconds.

    The same as :func:`press_prefill` (``ids``, ``press``) without its prefill: under KVzip that prefill is a
    plain forward whose ids and cache the press records (``KVzipPress.__call__``'s wrapped forward); here
    they are handed over directly, the cache copied because the reconstruction passes rewrite it.  Needs
    the cache of a prefill of exactly ``ids`` into ``DynamicCache()`` (the runner's ``score_all``: its
    recording hooks keep every key and value).  ``cache`` itself is left as it was.
    """
    clear_masks(model)
    start = time.perf_counter()
    with torch.inference_mode(), _tokenizer_once(), press(model):
        press._context_ids, press._cache = ids, copy.deepcopy(cache)  # what kvpress's wrapped forward records
    return time.perf_counter() - start


def kept_from_masks(model, kv_heads: int, n: int) -> list[list[torch.Tensor]]:
    """Per layer and KV head, the positions kvpress's ``masked_key_indices`` leave visible (all when unmasked)."""
    kept = []
    for layer in model.model.layers:
        visible = torch.ones(kv_heads, n, dtype=torch.bool)
        masked = getattr(layer.self_attn, "masked_key_indices", None)
        if masked is not None:
            _, heads, positions = masked
            visible[heads.cpu(), positions.cpu()] = False
        kept.append([visible[h].nonzero()[:, 0] for h in range(kv_heads)])
    return kept


def as_shipped(model, ids: torch.Tensor, press) -> tuple[int, float, int]:
    """(bytes held, prefill seconds, cache rows per layer) of kvpress's own prefill under ``press``.

    Bytes: every tensor of the cache plus the head-wise masks on the model (``ledger.bytes_held``); the
    masks are cleared afterwards.
    """
    cache, seconds = press_prefill(model, ids, press)
    held = ledger.bytes_held(cache, model)
    rows = int(cache.layers[0].keys.shape[-2])
    clear_masks(model)
    return held, seconds, rows


@dataclass
class KVzipScores(KVzipPress):
    """KVzip's reconstruction pass, keeping the score it allocates with.

    After :func:`press_prefill` under this press, ``scores`` is the per-layer ``[Hkv, N]`` reconstruction
    score (before KVzip boosts its sink positions), and :meth:`kept_sets` gives KVzip's own kept
    positions at another compression ratio by re-running kvpress's ``compress_post`` on that score.
    ``compression_ratio`` must be > 0 for KVzip to score at all.  KVzip loads a tokenizer from
    ``model.config.name_or_path``.
    """

    compression_ratio: float = 0.5
    scores: list | None = None

    def compress_post(self, model):
        self.scores = list(self.score_val[:, 0].detach().clone())  # [L] x [Hkv, N]; batch 1
        super().compress_post(model)

    def kept_sets(self, model, compression_ratio: float) -> list[list[torch.Tensor]]:
        """KVzip's kept positions at ``compression_ratio`` (kvpress's allocation on the saved score)."""
        if self.scores is None:
            raise ValueError("KVzipScores.kept_sets before its pass: run press_prefill(model, ids, press) first")
        saved = self.compression_ratio
        self.score_val = torch.stack(self.scores).unsqueeze(1).clone()
        self.compression_ratio = compression_ratio
        try:
            KVzipPress.compress_post(self, model)
            heads, n = self.scores[0].shape
            return kept_from_masks(model, heads, n)
        finally:
            self.compression_ratio = saved
            clear_masks(model)


def _attention_modules(model) -> list:
    return [layer.self_attn for layer in model.model.layers]


@dataclass
class FastKVzipScores(FastKVzipPress):
    """FastKVzip (kvpress ``FastKVzipPress``, gates downloaded from the hub) as a scorer of the shared prefill.

    ``score`` is the gate score of the layer's input, with FastKVzip's sink and recent window set to 1
    (``_score_fast``), as its own prefill hook computes it; :meth:`kept_sets` is its own allocation
    (``compress_post``: at ``compression_ratio``, the lowest scores pruned across every layer and KV head)
    read back from the masks it leaves.  Used as shipped (``with press(model)``) it is ``FastKVzipPress``.
    """

    def score(self, module, hidden_states, keys, values, attentions, kwargs) -> torch.Tensor:
        layers = len(self.gates)
        if not isinstance(self.score_val, list) or len(self.score_val) != layers:
            self.score_val = [None] * layers
        self._score_fast(module, hidden_states)
        return self.score_val[int(module.layer_idx)]

    def kept_sets(self, model, scores, cache=None) -> list[list[torch.Tensor]]:
        """Per layer and KV head, the positions FastKVzip keeps given its per-layer ``[Hkv, N]`` ``scores``."""
        clear_masks(model)
        self.score_val = [s.unsqueeze(0) for s in scores]  # batch 1; compress_post stacks them
        try:
            self.compress_post(model)
            heads, n = scores[0].shape
            return kept_from_masks(model, heads, n)
        finally:
            self.score_val = None
            clear_masks(model)


@dataclass
class DuoAttentionMasks(DuoAttentionPress):
    """DuoAttention (kvpress ``DuoAttentionPress``) with its kept sets read from the masks its ``compress`` leaves.

    Its head scores come from ``post_init_from_model`` (on-the-fly, from BookSum, for the roster: kvpress's
    published patterns cover none of the paper's models); at ``head_compression_ratio`` the lowest-scored
    heads are streaming heads, which keep ``sink_size`` first and ``recent_size`` last positions, the others
    keep every position.  The placeholder ``score`` lets the shared prefill record it like any scorer.
    """

    def score(self, module, hidden_states, keys, values, attentions, kwargs) -> torch.Tensor:
        return torch.zeros(keys.shape[:3], dtype=keys.dtype, device=keys.device)

    def kept_sets(self, model, scores, cache) -> list[list[torch.Tensor]]:
        """Per layer and KV head, the positions DuoAttention keeps over the dense prefill ``cache``."""
        if self.streaming_mask is None:
            self.post_init_from_model(model)
        clear_masks(model)
        try:
            for module, layer in zip(_attention_modules(model), cache.layers):
                self.compress(module, None, layer.keys, layer.values, None, {})
            heads, n = scores[0].shape
            return kept_from_masks(model, heads, n)
        finally:
            clear_masks(model)
