"""The deployment runner (spec part B): one dense prefill per item, every method decoded from a ragged cache.

For one item (at every budget ``s``, :func:`run_item`):

1. :func:`score_all` runs ONE dense prefill of the compressed prefix (:func:`layout`) that records every method's kvpress score on
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

from trustmass.core.config_conflict import ConfigConflict
from trustmass.deploy import ledger, ragged, tasks
from trustmass.deploy.contourkv import contour_kept, record_all
from trustmass.deploy.contracts import contract_sha256
from trustmass.deploy.methods import Method, method, ratio_for
from trustmass.deploy.shipped import KVzipScores, clear_masks, reconstruction_pass

__all__ = ["VARIANTS", "Prefill", "greedy_answer", "kept_sets", "layout", "pyramid_budgets", "run_item", "score_all"]


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


def score_all(model, context_ids, presses: dict, seed: int = 0, share: bool = True) -> Prefill:
    """One dense prefill of ``context_ids`` recording every ``ScorerPress`` in ``presses`` (name -> press).

    Compactor's leverage score draws a random sketch from torch's global generator; the prefill runs under
    ``torch.manual_seed(seed)`` in a forked RNG state, so scores are reproducible and the caller's RNG is untouched.
    Presses that compute one score (``score_sharing``) share one call (``share=False``: each its own); each
    name's ``score_s`` is that call's seconds, ``prefill_s`` the wall time less the calls made.
    """
    ids = _ids(context_ids, model.device)
    text = model.config.get_text_config(decoder=True)
    if getattr(text, "head_dim", None) is None:  # CriticalKV reads config.head_dim; Qwen2 configs lack it
        text.head_dim = text.hidden_size // text.num_attention_heads
    cache, start = DynamicCache(), time.perf_counter()  # no config: sliding layers keep every position too
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        recorder = record_all(model, ids, presses, cache=cache, share=share)
    wall = time.perf_counter() - start
    scores = {name: recorder.per_layer(name) for name in presses}
    score_s = {name: recorder.seconds_of(name) for name in presses}
    return Prefill(scores, cache, score_s, wall - sum(recorder.seconds.values()))


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


def kept_sets(
    kind: str,
    scores,
    budget: int,
    *,
    mode: str | None = None,
    layer_budgets=None,
    alpha_safeguard: float = 0.20,
    **contour,
) -> list[list[torch.Tensor]]:
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
    if kind == "kvzip":
        raise ValueError("kind 'kvzip' keeps KVzip's own sets: shipped.KVzipScores.kept_sets, not kept_sets")
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


def greedy_answer(
    model, cache: ragged.RaggedCache, question_ids, max_new_tokens: int, eos_ids=(), stop=None
) -> list[int]:
    """Append ``question_ids`` to the ragged ``cache`` and decode greedily; the new tokens (an eos one included).

    ``stop(tokens) -> bool``: end early once it holds (the runner stops when every gold string is in the answer,
    where more tokens cannot change a containment score)."""
    if model.config._attn_implementation != ragged.ATTENTION_NAME:
        raise ValueError(
            f"the model runs {model.config._attn_implementation!r} attention; a ragged cache needs "
            f"{ragged.ATTENTION_NAME!r}: load it with attn_implementation=ragged.register()"
        )
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens={max_new_tokens} must be >= 1")
    eos = {int(e) for e in eos_ids}
    block = _ids(question_ids, model.device)
    tokens: list[int] = []
    with torch.inference_mode():
        while True:
            token = int(model(input_ids=block, past_key_values=cache).logits[0, -1].argmax())
            tokens.append(token)
            if token in eos or len(tokens) == max_new_tokens or (stop is not None and stop(tokens)):
                return tokens
            block = torch.tensor([[token]], device=model.device)


VARIANTS = ("unmodified", "doc_rows", "doc_boundary")


def layout(item: tasks.Item, query_aware: bool) -> tuple[np.ndarray, np.ndarray]:
    """(the prefix the methods compress, the block decoded first).

    Question-visible (``query_aware``, the paper's harness: "evicts after the question enters the cache"): the
    context and all but the last question token are prefilled and compressed together, the last token
    starts the decode.  Otherwise the context alone is compressed and the whole question follows it.
    """
    context, question = np.asarray(item.context_ids), np.asarray(item.question_ids)
    if not query_aware:
        return context, question
    if question.size < 2:
        raise ValueError(f"item {item.item_id}: a question-visible run needs a question of >= 2 tokens")
    return np.concatenate([context, question[:-1]]), question[-1:]


def _key(name: str, budget: int) -> str:
    return f"{name}@{budget}"


@dataclass
class _Scored:
    """Every method's score on one prefix (one prefill, plus KVzip's pass when a method needs it)."""

    prefix: np.ndarray
    pre: Prefill
    presses: dict  # _key(name, budget) -> press
    recon: KVzipScores | None = None
    recon_s: float = 0.0


def _score_prefix(model, prefix, roster, budgets, seed: int) -> _Scored:
    n = int(prefix.size)
    presses = {_key(m.name, b): m.press_factory(ratio_for(b, n)) for m in roster if m.press_factory for b in budgets}
    scored = _Scored(prefix, score_all(model, prefix, presses, seed), presses)
    if any(m.score == "reconstruction" for m in roster):
        # KVzip's pass on the prefill above (not a second prefill of the same ids); its seconds count that
        # prefill, as KVzip's own run would
        scored.recon = KVzipScores()
        pass_s = reconstruction_pass(model, _ids(prefix, model.device), scored.recon, scored.pre.cache)
        scored.recon_s = scored.pre.prefill_s + pass_s
        clear_masks(model)
    return scored


def _padded(scores, extra: int) -> list[torch.Tensor]:
    """Per layer ``[Hkv, N + extra]``: the question positions appended with the highest score (always kept)."""
    top = torch.finfo(scores[0].dtype).max
    return [torch.cat([s, torch.full((s.shape[0], extra), top, dtype=s.dtype, device=s.device)], dim=1) for s in scores]


def _kept(model, m: Method, scored: _Scored, budget: int, pad: int, alpha_safeguard: float, contour: dict):
    """Per layer and KV head kept positions of ``m`` at ``budget`` over ``scored``'s prefix (+ ``pad`` kept positions)."""
    n = int(scored.prefix.size)
    if m.kind == "kvzip":
        return scored.recon.kept_sets(model, ratio_for(budget, n))
    if m.score == "masks":  # the press's own allocation at this budget's ratio (shipped.FastKVzipScores, ...)
        key = _key(m.name, budget)
        return scored.presses[key].kept_sets(model, scored.pre.scores[key], scored.pre.cache)
    if m.kind == "dense":  # no scorer: any [Hkv, N] tensors per layer give kept_sets the shape
        scores = [layer.keys[0, :, :, 0] for layer in scored.pre.cache.layers]
    else:
        scores = scored.recon.scores if m.score == "reconstruction" else scored.pre.scores[_key(m.name, budget)]
    if pad:
        scores = _padded(scores, pad)
    press = scored.presses.get(_key(m.name, budget))
    layer_budgets = pyramid_budgets(press, model.config, n + pad) if m.kind == "pyramid" else None
    return kept_sets(
        m.kind,
        scores,
        budget,
        mode=m.mode,
        layer_budgets=layer_budgets,
        alpha_safeguard=alpha_safeguard,
        **{**contour, **dict(m.options)},
    )


def run_item(
    model,
    tokenizer,
    item: tasks.Item,
    methods,
    budgets,
    *,
    max_new_tokens: int,
    query_aware: bool = False,
    decomposition=(),
    eos_ids=None,
    contour: dict | None = None,
    alpha_safeguard: float = 0.20,
    seed: int = 0,
) -> list[dict]:
    """One row per (variant, budget, method) for ``item``; ``budgets`` an int or a list (per-cell budgets).

    The main rows are variant ``unmodified`` when ``query_aware`` (question-visible eviction, see
    :func:`layout`), else ``doc_boundary`` (the context compressed before the question).  ``decomposition``:
    methods also run in the question-visible decomposition (Table 5; needs ``query_aware``): ``doc_rows``
    (the same eviction point, ranking by the document rows only: the score of a prefill of the context,
    every question position kept and counted in the budget) and ``doc_boundary`` (the context compressed at
    its boundary, the question entering uncompressed).  One prefill per prefix serves every method and
    budget (kvpress's ``compression_ratio`` differs per budget, so scorers are recorded once per budget).

    ``prefill_s`` is the shared dense prefill (less every score call); ``score_s`` the method's own score
    calls (plus KVzip's pass for reconstruction-scored methods) and its kept-set selection; ``decode_s`` the
    first block and the decode (under a string-match metric it stops once the answer holds every gold string;
    ``item.max_new_tokens``, when the data set one, overrides ``max_new_tokens``).  ``contour``: ContourKV's
    ``contour_kept`` options (a method's own ``options``,
    its floor reading and scope, override them).
    """
    budgets = [int(budgets)] if np.isscalar(budgets) else [int(b) for b in budgets]
    roster = [m if isinstance(m, Method) else method(m) for m in methods]
    extra = [m if isinstance(m, Method) else method(m) for m in decomposition]
    if extra and not query_aware:
        raise ConfigConflict(
            "decomposition needs query_aware: it decomposes question-visible eviction; fix: set "
            "deploy.query_aware: true or deploy.decomposition.methods: []",
            fields=("deploy.decomposition.methods", "deploy.query_aware"),
        )
    if any(m.score != "press" or m.kind == "dense" for m in extra):
        raise ConfigConflict(
            "deploy.decomposition.methods must rank with a press score (not dense, KVzip or its "
            "score); fix: use window-scored methods (snapkv, contourkv_enforced, ...)",
            fields=("deploy.decomposition.methods",),
        )
    prefix, block = layout(item, query_aware)
    for b in budgets:
        if not 1 <= b <= prefix.size:
            raise ValueError(
                f"budget={b} must lie in [1, context length {prefix.size}] (item {item.item_id}): lower the budget"
            )
    main = _score_prefix(model, prefix, roster, budgets, seed)
    runs = [("unmodified" if query_aware else "doc_boundary", main, 0, block, roster)]
    if extra:
        context = _score_prefix(model, np.asarray(item.context_ids), extra, budgets, seed)
        runs += [
            ("doc_rows", context, prefix.size - context.prefix.size, block, extra),
            ("doc_boundary", context, 0, np.asarray(item.question_ids), extra),
        ]
    windows, eos = ragged.layer_windows(model.config), _eos(model, tokenizer, eos_ids)
    n_context = int(np.asarray(item.context_ids).size)

    def answered(tokens):  # a full score that more tokens cannot change (string matches): stop decoding
        return item.monotone and item.score(tokenizer.decode(tokens, skip_special_tokens=True)) == 100.0

    max_new_tokens = int(item.max_new_tokens or max_new_tokens)  # benchmark data carry their own answer length

    rows = []
    for variant, scored, pad, first, chosen in runs:
        # doc_rows ranks the context's positions by the context prefill's score, decodes from the full prefix's cache
        cache_of = main.pre.cache if pad else scored.pre.cache
        n = int(scored.prefix.size) + pad
        keys = cache_of.layers[0].keys
        dense_row = None
        for budget in budgets:
            for m in chosen:
                if m.kind == "dense" and dense_row is not None:  # the same answer at every budget
                    rows.append(
                        {
                            **dense_row,
                            "budget": budget,
                            "contract_sha256": contract_sha256(m.name, budget, item.item_id, variant, query_aware),
                        }
                    )
                    continue
                start = time.perf_counter()
                kept = _kept(model, m, scored, budget, pad, alpha_safeguard, contour or {})
                cache = ragged.RaggedCache.from_dense(cache_of, kept, windows)
                score_s = scored.pre.score_s.get(_key(m.name, budget), 0.0) + time.perf_counter() - start
                score_s += scored.recon_s if m.score == "reconstruction" else 0.0
                held = ledger.bytes_held(cache)
                row = ledger.ledger_row(held, "ragged", cache.kept_counts(), n, keys.shape[-1], keys.dtype)
                start = time.perf_counter()
                tokens = greedy_answer(model, cache, first, max_new_tokens, eos, stop=answered)
                decode_s = time.perf_counter() - start
                answer = tokenizer.decode(tokens, skip_special_tokens=True)
                in_question = [int((k >= n_context).sum()) for heads in kept for k in heads]
                rows.append(
                    {
                        "item_id": item.item_id,
                        "method": m.name,
                        "kind": m.kind,
                        "mode": m.mode,
                        "score_source": m.score,
                        "variant": variant,
                        "query_aware": query_aware,
                        "budget": budget,
                        "n_cached": n,
                        "question_in_cache": n - n_context,
                        "question_kept_mean": float(np.mean(in_question)),
                        "block_tokens": int(np.asarray(first).size),
                        "answer": answer,
                        "score": item.score(answer),
                        "kept_entries": row.kept_entries,
                        "kept_min_head": row.kept_min_head,
                        "kept_max_head": row.kept_max_head,
                        "bytes_ragged": held,
                        "bytes_layer_padded": row.bytes_layer_padded,
                        "bytes_full": row.bytes_full,
                        "frac_full": row.frac_full,
                        "prefill_s": scored.pre.prefill_s,
                        "score_s": score_s,
                        "decode_s": decode_s,
                        "contract_sha256": contract_sha256(m.name, budget, item.item_id, variant, query_aware),
                    }
                )
                if m.kind == "dense":
                    dense_row = rows[-1]
    return rows
