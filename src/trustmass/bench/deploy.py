"""Benchmark: decoding over the ragged cache against the dense cache, and the bytes each method holds.

One context of `n_keys` random tokens through a model with SmolLM2-135M's shapes (random weights:
timings and byte counts do not depend on them) or a real HF folder (`model_dir`).  One dense prefill
scores every method (``deploy.runner.score_all``); then per method:

* ``decode_tokens_per_s``: greedy decode steps over its ``RaggedCache`` at budget s, and its ratio to
  the same number of steps over the full dense ``DynamicCache`` with the model's own attention;
* ``bytes_ragged``: every tensor the ragged cache holds (``ledger.bytes_held``), over SnapKV's;
* ``bytes_as_shipped``: every tensor kvpress's own prefill with the method's press leaves behind (its
  cache, plus the ``masked_key_indices`` head-wise presses put on the attention modules), over
  SnapKV's; ContourKV has no kvpress form: its row holds the layer-padded counterfactual instead
  (one tensor per layer with as many slots as its widest head), labelled as such.
"""

from __future__ import annotations

import copy
import platform
import time

import torch
from transformers import DynamicCache

from trustmass.bench.capture import SMOLLM2_SHAPES
from trustmass.deploy import ledger, ragged
from trustmass.deploy.methods import method, ratio_for, shipped_press
from trustmass.deploy.runner import greedy_answer, kept_sets, pyramid_budgets, score_all
from trustmass.deploy.shipped import as_shipped

METHODS = (
    "snapkv",
    "streaming_llm",
    "knorm",
    "tova",
    "h2o",
    "pyramidkv",
    "adakv",
    "contourkv_enforced",
    "contourkv_unenforced",
)


def _model(model_dir: str | None, seed: int):
    from transformers import AutoModelForCausalLM, LlamaConfig

    name = ragged.register()
    if model_dir:
        return AutoModelForCausalLM.from_pretrained(model_dir, attn_implementation=name, dtype=torch.float32).eval()
    torch.manual_seed(seed)
    return AutoModelForCausalLM.from_config(
        LlamaConfig(**SMOLLM2_SHAPES), attn_implementation=name, dtype=torch.float32
    ).eval()


def _decode_s(model, cache, steps: int) -> float:
    """Seconds for `steps` greedy steps from one token over `cache` (which grows by `steps` rows)."""
    start = time.perf_counter()
    greedy_answer(model, cache, [0], steps)
    return time.perf_counter() - start


def _dense_decode_s(model, dense: DynamicCache, steps: int) -> float:
    cache = copy.deepcopy(dense)
    start = time.perf_counter()
    with torch.inference_mode():
        token = torch.zeros((1, 1), dtype=torch.long)
        for _ in range(steps):
            token = model(input_ids=token, past_key_values=cache).logits[:, -1:].argmax(-1)
    return time.perf_counter() - start


def run(
    n_keys: int = 2048,
    budget: int = 64,
    methods: tuple[str, ...] = METHODS,
    decode_tokens: int = 16,
    model_dir: str | None = None,
    seed: int = 0,
    threads: int | None = None,
) -> dict:
    if threads:
        torch.set_num_threads(int(threads))
    if "snapkv" not in methods:
        raise ValueError("methods must include snapkv: bytes are reported over SnapKV's")
    model = _model(model_dir, seed)
    ids = torch.randint(0, model.config.vocab_size, (1, n_keys), generator=torch.Generator().manual_seed(seed))
    ratio, roster = ratio_for(budget, n_keys), [method(name) for name in methods]
    presses = {m.name: m.press_factory(ratio) for m in roster}
    pre = score_all(model, ids[0], presses, seed)
    keys = pre.cache.layers[0].keys
    dense_s = _dense_decode_s(model, pre.cache, decode_tokens)
    windows, rows = ragged.layer_windows(model.config), {}
    for m in roster:
        layer_budgets = pyramid_budgets(presses[m.name], model.config, n_keys) if m.kind == "pyramid" else None
        kept = kept_sets(m.kind, pre.scores[m.name], budget, mode=m.mode, layer_budgets=layer_budgets)
        cache = ragged.RaggedCache.from_dense(pre.cache, kept, windows)
        row = ledger.ledger_row(
            ledger.bytes_held(cache), "ragged", cache.kept_counts(), n_keys, keys.shape[-1], keys.dtype
        )
        contour = m.kind == "contourkv"
        shipped = row.bytes_layer_padded if contour else as_shipped(model, ids, shipped_press(m, ratio))[0]
        seconds = _decode_s(model, cache, decode_tokens)
        rows[m.name] = {
            "kept_min_head": row.kept_min_head,
            "kept_max_head": row.kept_max_head,
            "bytes_ragged": row.bytes_measured,
            "bytes_as_shipped": shipped,
            "as_shipped_is": "layer-padded counterfactual" if contour else "kvpress's own cache",
            "decode_tokens_per_s": decode_tokens / seconds,
        }
    snap = rows["snapkv"]
    for r in rows.values():
        r["decode_vs_dense"] = r["decode_tokens_per_s"] / (decode_tokens / dense_s)
        r["ragged_vs_snapkv"] = r["bytes_ragged"] / snap["bytes_ragged"]
        r["as_shipped_vs_snapkv"] = r["bytes_as_shipped"] / snap["bytes_as_shipped"]
    return {
        "benchmark": "deploy",
        "model": model_dir or "random SmolLM2-135M shapes",
        "n_keys": n_keys,
        "budget": budget,
        "decode_tokens": decode_tokens,
        "threads": torch.get_num_threads(),
        "prefill_s": pre.prefill_s,
        "score_s": pre.score_s,
        "dense_decode_tokens_per_s": decode_tokens / dense_s,
        "bytes_full": ledger.full_bytes(n_keys, len(pre.cache.layers), keys.shape[1], keys.shape[-1], keys.dtype),
        "methods": rows,
        "torch": torch.__version__,
        "machine": platform.machine(),
    }
