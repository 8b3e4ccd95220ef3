"""ContourKV (spec §7.1): one importance score, one threshold shared by every (layer, KV head) cell.

:func:`contour_kept` is a pure function over torch score tensors (per layer ``[Hkv, N]``, higher =
keep).  Every cell keeps its recency floor ``F`` (the last ``min(floor, N)`` positions) plus the
non-floor positions whose score reaches a threshold ``tau``.  ``tau`` is not a number we search
for: the non-floor entries are ordered by (score descending, layer, head, position ascending) and
the first ``K`` are taken, which is "score >= tau" with ties broken by position so the count is
exact ([C] in the spec).  ``K = (s - F) * cells`` when the floor counts toward the budget ``s``
(the cells then average exactly ``s`` entries), ``s * cells`` when it does not (average ``s + F``).

Enforced mode (``caps``): the entries are taken in that same order, but a cell that already holds
``cap`` entries (floor included) takes no more.  What a capped cell refuses is *not* handed on to
the next entries in the order, so the cache then holds at most ``K`` non-floor entries, and at
most ``cap`` per cell (for ``caps = s``: at most SnapKV's ``s`` per head, never more bytes).

Scores: :func:`window_scores` records kvpress's own ``SnapKVPress.score`` (observation window)
on one dense prefill; ``shipped.KVzipScores`` keeps KVzip's context-reconstruction
score (its pass evicts nothing from the dense cache).  :func:`record_scores` works with any ``ScorerPress``, and
:func:`record_all` records several on the same prefill.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch
from kvpress import SnapKVPress
from kvpress.presses.base_press import BasePress
from kvpress.presses.scorer_press import ScorerPress
from transformers import DynamicCache

from trustmass.deploy.rope import layer_typed_rope
from trustmass.deploy.score_sharing import sharing_groups

__all__ = ["ScoreRecorder", "contour_kept", "record_all", "record_scores", "window_scores"]


def _check(scores, budget: int, floor: int, floor_counts_toward_budget: bool, scope: str):
    if scope not in ("global", "per_layer"):
        raise ValueError(f"scope={scope!r} is unknown: pass scope='global' (one tau) or scope='per_layer'")
    if not scores:
        raise ValueError("scores is empty: pass one [Hkv, N] tensor per layer")
    shape = tuple(scores[0].shape)
    for layer, s in enumerate(scores):
        if s.dim() != 2 or tuple(s.shape) != shape:
            raise ValueError(
                f"scores[{layer}] has shape {tuple(s.shape)}, scores[0] {shape}: every layer must be [Hkv, N]"
            )
        if torch.isnan(s).any():
            raise ValueError(f"scores[{layer}] holds NaN: replace NaN scores (e.g. with -inf) before allocating")
    n = shape[1]
    if floor < 0:
        raise ValueError(f"floor={floor} is negative: pass floor >= 0 (the paper uses 32)")
    f = min(floor, n)
    if not 1 <= budget <= n:
        raise ValueError(f"budget={budget} must lie in [1, N={n}]: pass a per-cell budget s no larger than the context")
    if floor_counts_toward_budget and budget < f:
        raise ValueError(
            f"budget={budget} is smaller than the floor {f} while floor_counts_toward_budget=True: the floor alone "
            "exceeds the budget; raise the budget, lower floor, or pass floor_counts_toward_budget=False (the other reading)"
        )
    if not floor_counts_toward_budget and budget + f > n:
        raise ValueError(
            f"budget={budget} plus floor {f} exceeds N={n} with floor_counts_toward_budget=False: lower the budget"
        )
    return shape, f


def _caps_array(caps, n_layers: int, kv_heads: int, f: int) -> np.ndarray:
    arr = (
        np.broadcast_to(np.asarray(caps, dtype=np.int64), (n_layers, kv_heads))
        if np.ndim(caps) == 0
        else np.asarray(caps)
    )
    if arr.shape != (n_layers, kv_heads):
        raise ValueError(f"caps has shape {arr.shape}: pass an int or an array [layers={n_layers}, Hkv={kv_heads}]")
    if (arr < f).any():
        raise ValueError(
            f"caps below the floor {f} (min {int(arr.min())}): every cap must hold the floor (cap >= floor)"
        )
    return arr.astype(np.int64)


def _top(flat: torch.Tensor, k: int) -> torch.Tensor:
    """Indices of the first ``k`` entries of ``flat`` in (score descending, index ascending) order.

    ``flat`` is laid out (layer, head, position) row-major, so index order is that lexicographic order;
    a stable descending sort keeps equal scores in index order.
    """
    return torch.sort(flat, descending=True, stable=True).indices[:k]


def contour_kept(
    scores, budget: int, *, floor: int = 32, floor_counts_toward_budget: bool = True, scope: str = "global", caps=None
) -> list[list[torch.Tensor]]:
    """Per layer and KV head, the ascending int64 positions ContourKV keeps (``RaggedCache.from_dense``'s ``kept``).

    ``scores``: per layer ``[Hkv, N]`` (torch).  ``budget``: the average per-cell count ``s``.
    ``scope``: ``"global"`` (one ordering over all cells of all layers) or ``"per_layer"`` (each
    layer averages ``s`` per cell on its own).  ``caps``: None (unenforced) or an int / ``[layers, Hkv]``
    array of per-cell maxima, floor included (enforced; see the module docstring).
    """
    (kv_heads, n), f = _check(scores, budget, floor, floor_counts_toward_budget, scope)
    n_layers, rest = len(scores), n - f  # `rest` non-floor positions per cell: 0 .. N-F-1
    per_cell = budget - f if floor_counts_toward_budget else budget
    # non-floor scores, [L, Hkv, N-F]; float64 so every score dtype converts exactly
    body = torch.stack([s[:, :rest].detach().to("cpu", torch.float64) for s in scores])
    if scope == "global":
        chosen = _top(body.reshape(-1), per_cell * kv_heads * n_layers)
    else:
        per_layer = kv_heads * rest
        # each layer's entries stay in priority order, which is all the caps below need
        chosen = torch.cat(
            [layer * per_layer + _top(body[layer].reshape(-1), per_cell * kv_heads) for layer in range(n_layers)]
        )
    chosen = chosen.numpy()
    cell, position = chosen // max(rest, 1), chosen % max(rest, 1)  # flat (layer * Hkv + head) and position
    if caps is not None:
        cap = _caps_array(caps, n_layers, kv_heads, f).reshape(-1) - f  # non-floor room per cell
        # rank of each chosen entry inside its cell, in the global order: a stable sort by cell keeps that order
        by_cell = np.argsort(cell, kind="stable")
        sorted_cells = cell[by_cell]
        first = np.searchsorted(sorted_cells, sorted_cells, side="left")
        rank = np.empty_like(by_cell)
        rank[by_cell] = np.arange(len(by_cell)) - first
        keep = rank < cap[cell]
        cell, position = cell[keep], position[keep]
    device = scores[0].device
    floor_positions = np.arange(rest, n)
    kept = []
    for layer in range(n_layers):
        heads = []
        for h in range(kv_heads):
            mine = position[cell == layer * kv_heads + h]
            heads.append(torch.from_numpy(np.sort(np.concatenate([mine, floor_positions]))).to(device, torch.int64))
        kept.append(heads)
    return kept


# ---- scores from kvpress presses, recorded on one dense prefill -------------------------------------------------


@dataclass
class ScoreRecorder(BasePress):
    """kvpress's ``BasePress`` hooks fanning one dense prefill out to several ``ScorerPress`` objects, evicting nothing.

    ``compress`` stores ``scorer.score(...)[0]`` (``[Hkv, N]``, batch 1) per scorer name and layer in
    ``scores[name][layer]``, adds the time each ``score`` call took to ``seconds[name]``, and returns
    the keys and values unchanged.  Every scorer sees the same layer inputs: nothing is evicted, so
    the next layer's input is the dense one, exactly as in a prefill of its own.  Scorers that compute the
    same score (``score_sharing``: the same window score at every budget, ...) are called once, under the
    first one's name; :meth:`per_layer` and :meth:`seconds_of` answer for every name (``share=False``: each
    scorer called on its own).
    """

    scorers: dict = field(default_factory=dict)  # name -> ScorerPress
    scores: dict = field(default_factory=dict)  # name of a called scorer -> {layer: [Hkv, N]}
    seconds: dict = field(default_factory=dict)  # name of a called scorer -> seconds spent in its score calls
    share: bool = True
    owner: dict = field(default_factory=dict)  # name -> the name whose score call it shares

    def post_init_from_model(self, model):
        self.owner = sharing_groups(self.scorers) if self.share else {name: name for name in self.scorers}
        for name, scorer in self.scorers.items():
            if self.owner[name] == name:
                scorer.post_init_from_model(model)

    def compress(self, module, hidden_states, keys, values, attentions, kwargs):
        for name, scorer in self.scorers.items():
            if self.owner.get(name, name) != name:
                continue
            start = time.perf_counter()
            score = scorer.score(module, hidden_states, keys, values, attentions, kwargs)[0]
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start
            self.scores.setdefault(name, {})[int(module.layer_idx)] = score
        return keys, values

    def per_layer(self, name: str) -> list[torch.Tensor]:
        layers = self.scores.get(self.owner.get(name, name), {})
        return [layers[i] for i in range(len(layers))]

    def seconds_of(self, name: str) -> float:
        """The seconds of ``name``'s score calls: its own, or those of the call it shares (as it would alone)."""
        return self.seconds.get(self.owner.get(name, name), 0.0)


def record_all(model, input_ids: torch.Tensor, scorers: dict, cache=None, share: bool = True) -> ScoreRecorder:
    """Run ONE dense prefill of ``input_ids`` [1, N] into ``cache`` (default a fresh ``DynamicCache()``),
    recording every scorer's per-layer ``[Hkv, N]`` score (``recorder.per_layer(name)``); scorers of one
    score identity share one call unless ``share`` is False (:class:`ScoreRecorder`)."""
    recorder = ScoreRecorder(scorers=dict(scorers), share=share)
    with torch.inference_mode(), recorder(model), layer_typed_rope(model):
        model.model(input_ids=input_ids, past_key_values=DynamicCache() if cache is None else cache)
    return recorder


def record_scores(model, input_ids: torch.Tensor, scorer: ScorerPress) -> list[torch.Tensor]:
    """Per layer ``[Hkv, N]`` scores of ``scorer`` (a kvpress ``ScorerPress``) on one dense prefill of ``input_ids`` [1, N]."""
    return record_all(model, input_ids, {"scorer": scorer}).per_layer("scorer")


def window_scores(model, input_ids: torch.Tensor, window_size: int = 32, kernel_size: int = 5) -> list[torch.Tensor]:
    """SnapKV's observation-window score (kvpress's ``SnapKVPress.score``), per layer ``[Hkv, N]``.

    kvpress gives the last ``window_size`` positions ``max + 1``; with ``window_size <= floor`` they
    lie inside ContourKV's floor anyway.  Needs ``N > window_size`` (kvpress asserts it).
    """
    return record_scores(model, input_ids, SnapKVPress(window_size=window_size, kernel_size=kernel_size))
