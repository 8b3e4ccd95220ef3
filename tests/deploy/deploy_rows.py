"""Hand-built deployment rows (one model, one task, budgets 64 and 128, the decomposition's variants) with known
W/T/L, hit rates and bytes: the deployment statistics tests' common input."""

import polars as pl

CELLS, ROW_BYTES, N = 6, 512, 1000  # (layer, KV head) cells, bytes per kept K+V row, cached tokens
DENSE = [100, 100, 100, 0]  # item 3: the dense model misses it, so it counts nowhere
#: (variant, budget) -> method -> per-item scores
SCORES = {
    ("unmodified", 128): {
        "snapkv": [0, 0, 0, 100],
        "snapkv_w32": [100, 0, 0, 0],
        "contourkv_enforced": [100, 100, 0, 100],
        "kvzip": [100, 0, 0, 0],
        "contourkv_recon_enforced": [0, 0, 0, 0],
        "contourkv_recon_unenforced": [100, 100, 0, 0],
        "contourkv_unenforced": [100, 100, 100, 0],
        "compactor": [100, 100, 0, 0],
    },
    ("unmodified", 64): {
        "snapkv": [0, 0, 0, 0],
        "snapkv_w32": [0, 0, 0, 0],
        "contourkv_enforced": [0, 0, 0, 100],
        "kvzip": [0, 0, 0, 0],
        "contourkv_recon_enforced": [0, 0, 0, 0],
        "contourkv_recon_unenforced": [0, 0, 0, 0],
        "contourkv_unenforced": [0, 0, 0, 0],
        "compactor": [0, 0, 0, 0],
    },
    ("doc_rows", 128): {"contourkv_enforced": [0, 0, 0, 0]},
    ("doc_rows", 64): {"contourkv_enforced": [0, 0, 0, 0]},
    ("doc_boundary", 128): {"contourkv_enforced": [100, 0, 0, 0]},
    ("doc_boundary", 64): {"contourkv_enforced": [0, 0, 0, 0]},
}
KIND = {"snapkv": "uniform", "snapkv_w32": "uniform", "compactor": "uniform", "kvzip": "kvzip", "dense": "dense"}
#: kept entries per cell over s: enforced ContourKV holds 0.9 of SnapKV's rows, unenforced pads to 4 s per layer
KEPT = {"contourkv_enforced": 0.9, "contourkv_recon_enforced": 0.8}


def make_row(variant, budget, method, item, score):
    kept = CELLS * N if method == "dense" else int(CELLS * budget * KEPT.get(method, 1.0))
    padded = CELLS * budget * 4 if method.endswith("unenforced") else kept
    cached = N - 20 if variant == "doc_boundary" else N
    return {
        "model": "m",
        "task": "niah_single",
        "length": 1024,
        "budget": budget,
        "item_id": f"i{item}",
        "method": method,
        "kind": KIND.get(method, "contourkv"),
        "variant": variant,
        "query_aware": True,
        "score": float(score),
        "dense_valid": DENSE[item] == 100,
        "kept_entries": kept,
        "kept_min_head": kept // CELLS,
        "kept_max_head": budget * 4 if method.endswith("unenforced") else kept // CELLS,
        "bytes_ragged": kept * ROW_BYTES,
        "bytes_layer_padded": padded * ROW_BYTES,
        "bytes_full": CELLS * cached * ROW_BYTES,
        "frac_full": kept / (CELLS * cached),
        "n_cached": cached,
        "question_in_cache": 0 if variant == "doc_boundary" else 20,
        "question_kept_mean": 0.0 if variant == "doc_boundary" else (20.0 if variant == "doc_rows" else 15.0),
        "block_tokens": 21 if variant == "doc_boundary" else 1,
        "prefill_s": 1.0,
        "score_s": 0.1,
        "decode_s": 0.5,
    }


def fixture_rows() -> pl.DataFrame:
    """Every (variant, budget, method, item) row of :data:`SCORES`, with the dense rows of the unmodified run."""
    out = []
    for (variant, budget), methods in SCORES.items():
        if variant == "unmodified":
            methods = {"dense": DENSE, **methods}
        for method, scores in methods.items():
            out += [make_row(variant, budget, method, i, s) for i, s in enumerate(scores)]
    return pl.DataFrame(out)
