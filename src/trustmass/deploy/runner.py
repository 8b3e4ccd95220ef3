"""The deployment runner (spec part B): one dense prefill per item, every method decoded from a ragged cache.

For one item and budget ``s``:

1. :func:`score_all` runs ONE dense prefill of the context that records every method's kvpress score on
   the same layer inputs (``contourkv.record_all``) and keeps the full-length dense ``DynamicCache``;
2. :func:`kept_sets` turns each score into per-(layer, KV head) kept positions (see ``methods.KINDS``);
3. ``RaggedCache.from_dense`` copies those rows out of the dense cache (which stays intact for the next
   method), and :func:`greedy_answer` appends the question and decodes greedily over the ragged cache.

The model must run the ragged attention (``from_config(..., attn_implementation=ragged.register())``);
on the dense prefill it defers to the model's own attention.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import torch
from transformers import DynamicCache

from trustmass.deploy import ledger, ragged, tasks
from trustmass.deploy.contourkv import contour_kept, record_all
from trustmass.deploy.methods import Method, method, ratio_for

__all__ = ["Prefill", "greedy_answer", "kept_sets", "pyramid_budgets", "run_item", "score_all"]


@dataclass(frozen=True)
class Prefill:
    """What :func:`score_all` returns."""

    scores: dict  # name -> per layer [Hkv, N]
    cache: DynamicCache  # the dense, full-length prefill cache (every layer holds all N positions)
    score_s: dict  # name -> seconds in its score calls
    prefill_s: float  # the prefill's own seconds (wall time less every score call)


def _ids(ids, device) -> torch.Tensor:
    """Token ids (tensor, array or list) as a ``[1, n]`` long tensor; arrays are copied (items hold read-only ones)."""
    if isinstance(ids, torch.Tensor):
        return ids.to(device=device, dtype=torch.long).reshape(1, -1)
    return torch.from_numpy(np.array(ids, dtype=np.int64)).to(device).reshape(1, -1)


def score_all(model, context_ids, presses: dict, seed: int = 0) -> Prefill:
    """One dense prefill of ``context_ids`` recording every ``ScorerPress`` in ``presses`` (name -> press).

    Compactor's leverage score draws a random sketch from torch's global generator; the prefill runs under
    ``torch.manual_seed(seed)`` in a forked RNG state, so scores are reproducible and the caller's RNG is untouched.
    """
    ids = _ids(context_ids, model.device)
    text = model.config.get_text_config(decoder=True)
    if getattr(text, "head_dim", None) is None:  # CriticalKV reads config.head_dim; Qwen2 configs lack it
        text.head_dim = text.hidden_size // text.num_attention_heads
    cache, start = DynamicCache(), time.perf_counter()  # no config: sliding layers keep every position too
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        recorder = record_all(model, ids, presses, cache=cache)
    wall = time.perf_counter() - start
    scores = {name: recorder.per_layer(name) for name in presses}
    return Prefill(scores, cache, dict(recorder.seconds), wall - sum(recorder.seconds.values()))


def _top(score: torch.Tensor, k: int) -> torch.Tensor:
    """kvpress's ``ScorerPress.compress`` selection (``scores.topk(k, dim=-1)``, ties as torch breaks them), sorted."""
    return score.unsqueeze(0).topk(k, dim=-1).indices[0].sort(dim=-1).values


def _adakv(score: torch.Tensor, budget: int, alpha_safeguard: float) -> list[torch.Tensor]:
    """AdaKV's kept positions per KV head (``AdaKVPress.compress``, masks turned into kept sets)."""
    scores = score.unsqueeze(0).clone()  # AdaKV scatters into its scores
    heads, n = score.shape
    n_safe = int(budget * alpha_safeguard)
    if alpha_safeguard > 0:
        n_safe = max(1, n_safe)
    scores.scatter_(-1, torch.topk(scores, n_safe, dim=-1).indices, torch.finfo(scores.dtype).max)
    pruned = torch.topk(-scores.reshape(1, -1), heads * (n - budget), dim=1).indices.flatten()
    keep = torch.ones(heads * n, dtype=torch.bool, device=score.device)
    keep[pruned] = False
    return [row.nonzero()[:, 0] for row in keep.reshape(heads, n)]


def kept_sets(kind: str, scores, budget: int, *, mode: str | None = None, layer_budgets=None,
              alpha_safeguard: float = 0.20, **contour) -> list[list[torch.Tensor]]:
    """Per layer and KV head, the ascending int64 positions a method of ``kind`` keeps at per-cell budget ``budget``.

    ``layer_budgets``: PyramidKV's per-layer counts (:func:`pyramid_budgets`).  ``mode`` and ``**contour``
    (``floor``, ``floor_counts_toward_budget``, ``scope``): ContourKV's options (:func:`contourkv.contour_kept`).
    """
    n = int(scores[0].shape[-1])
    if not 1 <= budget <= n:
        raise ValueError(f"budget={budget} must lie in [1, context length {n}]")
    if kind == "dense":
        return [[torch.arange(n, device=s.device) for _ in range(s.shape[0])] for s in scores]
    if kind == "uniform":
        return [list(_top(s, budget)) for s in scores]
    if kind == "pyramid":
        if layer_budgets is None or len(layer_budgets) != len(scores):
            raise ValueError(f"kind 'pyramid' needs layer_budgets, one per layer ({len(scores)}): use pyramid_budgets")
        return [list(_top(s, int(k))) for s, k in zip(scores, layer_budgets)]
    if kind == "headwise":
        return [_adakv(s, budget, alpha_safeguard) for s in scores]
    if kind == "contourkv":
        if mode not in ("enforced", "unenforced"):
            raise ValueError(f"ContourKV mode={mode!r} must be 'enforced' or 'unenforced'")
        return contour_kept(scores, budget, caps=budget if mode == "enforced" else None, **contour)
    raise ValueError(f"kind={kind!r} is unknown: pass one of dense, uniform, pyramid, headwise, contourkv")


def pyramid_budgets(press, config, n: int) -> list[int]:
    """PyramidKV's per-layer kept counts (``PyramidKVPress.get_layer_budget``) for ``n`` context tokens."""
    text = config.get_text_config(decoder=True)
    return [press.get_layer_budget(SimpleNamespace(config=text, layer_idx=l), n) for l in range(text.num_hidden_layers)]


def _eos(model, tokenizer, eos_ids) -> set[int]:
    if eos_ids is None:
        eos_ids = getattr(model.generation_config, "eos_token_id", None)
        eos_ids = getattr(tokenizer, "eos_token_id", None) if eos_ids is None else eos_ids
    if eos_ids is None:
        return set()
    return {int(eos_ids)} if isinstance(eos_ids, int) else {int(e) for e in eos_ids}


def greedy_answer(model, cache: ragged.RaggedCache, question_ids, max_new_tokens: int, eos_ids=()) -> list[int]:
    """Append ``question_ids`` to the ragged ``cache`` and decode greedily; the new tokens (an eos one included)."""
    if model.config._attn_implementation != ragged.ATTENTION_NAME:
        raise ValueError(f"the model runs {model.config._attn_implementation!r} attention; a ragged cache needs "
                         f"{ragged.ATTENTION_NAME!r}: load it with attn_implementation=ragged.register()")
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens={max_new_tokens} must be >= 1")
    eos = {int(e) for e in eos_ids}
    block = _ids(question_ids, model.device)
    tokens: list[int] = []
    with torch.inference_mode():
        while True:
            token = int(model(input_ids=block, past_key_values=cache).logits[0, -1].argmax())
            tokens.append(token)
            if token in eos or len(tokens) == max_new_tokens:
                return tokens
            block = torch.tensor([[token]], device=model.device)


def run_item(model, tokenizer, item: tasks.Item, methods, budget: int, *, max_new_tokens: int, eos_ids=None,
             contour: dict | None = None, alpha_safeguard: float = 0.20, seed: int = 0) -> list[dict]:
    """One row per method (``Method`` objects or roster names) for ``item`` at per-cell budget ``budget``.

    ``prefill_s`` is the shared dense prefill (less every score call), the same in every row; ``score_s`` the
    method's own score calls plus its kept-set selection; ``decode_s`` the question block and the decode.
    ``contour``: ContourKV's ``contour_kept`` options (default: floor 32, floor counts toward the budget, global).
    """
    n = int(item.context_ids.size)
    if not 1 <= budget <= n:
        raise ValueError(f"budget={budget} must lie in [1, context length {n}] (item {item.item_id}): lower the budget")
    roster = [m if isinstance(m, Method) else method(m) for m in methods]
    ratio = ratio_for(budget, n)
    presses = {m.name: m.press_factory(ratio) for m in roster if m.kind != "dense"}
    pre = score_all(model, item.context_ids, presses, seed)
    windows, eos = ragged.layer_windows(model.config), _eos(model, tokenizer, eos_ids)
    keys = pre.cache.layers[0].keys
    rows = []
    for m in roster:
        start = time.perf_counter()
        # dense has no scorer: any [Hkv, N] tensors per layer give kept_sets the shape
        scores = pre.scores.get(m.name) or [layer.keys[0, :, :, 0] for layer in pre.cache.layers]
        layer_budgets = pyramid_budgets(presses[m.name], model.config, n) if m.kind == "pyramid" else None
        kept = kept_sets(m.kind, scores, budget, mode=m.mode, layer_budgets=layer_budgets,
                         alpha_safeguard=alpha_safeguard, **(contour or {}))
        cache = ragged.RaggedCache.from_dense(pre.cache, kept, windows)
        score_s = pre.score_s.get(m.name, 0.0) + time.perf_counter() - start
        held = ledger.bytes_held(cache)
        row = ledger.ledger_row(held, "ragged", cache.kept_counts(), n, keys.shape[-1], keys.dtype)
        start = time.perf_counter()
        tokens = greedy_answer(model, cache, item.question_ids, max_new_tokens, eos)
        decode_s = time.perf_counter() - start
        answer = tokenizer.decode(tokens, skip_special_tokens=True)
        rows.append({
            "item_id": item.item_id, "method": m.name, "kind": m.kind, "mode": m.mode, "budget": budget,
            "answer": answer, "score": tasks.score(answer, item.gold), "kept_entries": row.kept_entries,
            "kept_min_head": row.kept_min_head, "kept_max_head": row.kept_max_head, "bytes_ragged": held,
            "bytes_layer_padded": row.bytes_layer_padded, "bytes_full": row.bytes_full, "frac_full": row.frac_full,
            "prefill_s": pre.prefill_s, "score_s": score_s, "decode_s": decode_s,
        })
    return rows
