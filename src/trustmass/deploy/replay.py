"""The prefill-only byte replay (spec §7.2, claims 3, 59, 61, 63, 113-115; rule ``deploy_replay``).

Each replayed context is prefilled through kvpress's own pipeline under each method's press as kvpress ships it
(``methods.shipped_press``: uniform presses shrink the cache, head-wise ones and KVzip mask a full-size one),
at every budget, plus one plain prefill.  A row holds the bytes every tensor of the resulting cache and the
model's masks hold (``ledger.bytes_held``), the full cache's bytes, the rows per layer, and the prefill's
seconds over the plain prefill's (KVzip's reconstruction cost, claim 69).  No score is touched.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import torch

from trustmass.deploy import ledger
from trustmass.deploy.methods import method, ratio_for, shipped_press
from trustmass.deploy.runner import layout
from trustmass.deploy.shipped import as_shipped

__all__ = ["replay_rows"]


def replay_rows(model, items, names, budgets, *, query_aware: bool, hub: bool = False) -> pl.DataFrame:
    """One row per (item, budget, method) plus each item's ``dense`` row (budget = the context length)."""
    text = model.config.get_text_config(decoder=True)
    rows = []
    for item in items:
        ids = torch.from_numpy(np.array(layout(item, query_aware)[0], dtype=np.int64)).reshape(1, -1).to(model.device)
        n = int(ids.shape[1])
        as_shipped(model, ids, None)  # warm-up: the first prefill pays for allocations
        dense_bytes, dense_s, _ = as_shipped(model, ids, None)
        keys_dtype = next(model.parameters()).dtype
        head_dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
        full = ledger.full_bytes(n, text.num_hidden_layers, text.num_key_value_heads, head_dim, keys_dtype)
        base = {
            "item_id": item.item_id,
            "task": item.task,
            "length": item.length,
            "n_cached": n,
            "bytes_full": full,
            "dense_prefill_s": dense_s,
            "storage": "as_shipped",
        }
        rows.append(
            {
                **base,
                "method": "dense",
                "budget": n,
                "bytes_measured": dense_bytes,
                "cache_rows": n,
                "kept_min_head": n,
                "kept_max_head": n,
                "prefill_s": dense_s,
            }
        )
        for budget in budgets:
            for name in names:
                press = shipped_press(method(name, hub=hub), ratio_for(int(budget), n))
                held, seconds, cache_rows = as_shipped(model, ids, press)
                rows.append(
                    {
                        **base,
                        "method": name,
                        "budget": int(budget),
                        "bytes_measured": held,
                        "cache_rows": cache_rows,
                        "kept_min_head": cache_rows,
                        "kept_max_head": cache_rows,
                        "prefill_s": seconds,
                    }
                )
    frame = pl.DataFrame(rows)
    return frame.with_columns(
        frac_full=pl.col("bytes_measured") / pl.col("bytes_full"),
        cost_over_dense=pl.col("prefill_s") / pl.col("dense_prefill_s"),
    )
