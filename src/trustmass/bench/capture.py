"""Benchmark: capture wall time against the plain SDPA forward of the same model and document.

Each measurement runs in a fresh child process so its peak RSS is its own.  The model is a real
HF folder when given (e.g. resources/models/smollm2-135m), else a random-weight model with
SmolLM2-135M's shapes (timings do not depend on the weights).  Reported: the best of `repeats`
wall times for (a) the base model's SDPA forward and (b) the capture (the same forward with the
capture attention function, all side statistics and validation), their ratio, and peak RSS of
each; plus the memory a dense fp32 attention matrix of one layer would need.
"""

from __future__ import annotations

import multiprocessing as mp
import resource
import time

SMOLLM2_SHAPES = dict(
    vocab_size=49152,
    hidden_size=576,
    intermediate_size=1536,
    num_hidden_layers=30,
    num_attention_heads=9,
    num_key_value_heads=3,
    max_position_embeddings=8192,
    rope_theta=100000.0,
    tie_word_embeddings=True,
)


def _load(model_dir: str | None, attn: str):
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig

    if model_dir:
        return AutoModelForCausalLM.from_pretrained(model_dir, attn_implementation=attn, dtype=torch.float32).eval()
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(
        LlamaConfig(**SMOLLM2_SHAPES), attn_implementation=attn, dtype=torch.float32
    ).eval()


def _measure(kind: str, model_dir: str | None, n_tokens: int, repeats: int, queue) -> None:
    import torch

    from trustmass.capture import prefill as cap

    ids = torch.randint(
        0, 49152 if model_dir is None else 1000, (n_tokens,), generator=torch.Generator().manual_seed(0)
    )
    if kind == "capture":
        cap.register()
        model = _load(model_dir, cap.ATTENTION_NAME)
        options = cap.CaptureOptions(min_position=min(256, n_tokens // 2))

        def step():
            return cap.capture_document(model, ids, "bench", "doc", options).max_abs_deviation
    else:
        model = _load(model_dir, "sdpa")

        def step():
            with torch.inference_mode():
                model.model(input_ids=ids[None], use_cache=False)
            return None

    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = step()
        times.append(time.perf_counter() - start)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    queue.put({"seconds": min(times), "all_seconds": times, "peak_rss_mb": peak_mb, "max_abs_dev": result})


def _in_child(*args) -> dict:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_measure, args=(*args, queue))
    proc.start()
    out = queue.get()
    proc.join()
    return out


def run(n_keys: int = 4096, model_dir: str | None = None, repeats: int = 2) -> dict:
    import torch

    sdpa = _in_child("sdpa", model_dir, n_keys, repeats)
    capture = _in_child("capture", model_dir, n_keys, repeats)
    heads = SMOLLM2_SHAPES["num_attention_heads"]
    return {
        "benchmark": "capture",
        "model": model_dir or "random-weight SmolLM2-135M shapes (Llama, 30 layers, 9 query / 3 KV heads, d=64)",
        "n_tokens": n_keys,
        "torch_threads": torch.get_num_threads(),
        "sdpa_forward_s": sdpa["seconds"],
        "capture_s": capture["seconds"],
        "capture_over_sdpa": capture["seconds"] / sdpa["seconds"],
        "target_ratio": 1.25,
        "sdpa_peak_rss_mb": sdpa["peak_rss_mb"],
        "capture_peak_rss_mb": capture["peak_rss_mb"],
        "dense_fp32_attention_one_layer_mb": heads * n_keys * n_keys * 4 / 2**20,
        "capture_max_abs_dev": capture["max_abs_dev"],
        "all_seconds": {"sdpa": sdpa["all_seconds"], "capture": capture["all_seconds"]},
    }
