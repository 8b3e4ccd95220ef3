"""The model's own attention output, and registering an attention function with transformers.

Capture and the loss stage both run a model with an attention function of their own, registered
through transformers' attention interface.  Both need the layer's unmodified output (SDPA, or eager
when the model soft-caps its logits, which SDPA cannot do) and the same registration (the mask
function must be registered beside it, else transformers silently passes ``attention_mask=None``
and the causal mask is lost).
"""

from __future__ import annotations

import math

import torch

from trustmass import kernels

__all__ = ["default_scaling", "dense_attention", "register_attention", "trailing_row_probs"]


def default_scaling(query: torch.Tensor, scaling: float | None) -> float:
    """The model's scaling, or 1/sqrt(d) when the layer passes none."""
    return 1.0 / math.sqrt(query.shape[-1]) if scaling is None else float(scaling)


def dense_attention(
    module, query, key, value, attention_mask, scaling: float, softcap: float | None, dropout: float = 0.0
):
    """The layer's own output ``[B, M, Hq, d]``: SDPA, or eager with logit soft-capping."""
    if softcap is None:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        output, _ = sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling)
        return output
    return _eager_softcapped(module, query, key, value, attention_mask, scaling, softcap)


def _eager_softcapped(module, query, key, value, attention_mask, scaling, softcap):
    """Gemma-2 style eager attention with logit soft-capping (SDPA has no soft-capping)."""
    group = module.num_key_value_groups
    k = key.repeat_interleave(group, dim=1)
    v = value.repeat_interleave(group, dim=1)
    logits = torch.matmul(query, k.transpose(2, 3)) * scaling
    logits = torch.tanh(logits / softcap) * softcap
    n_q, n_k = query.shape[2], key.shape[2]
    if attention_mask is None:
        causal = torch.ones(n_q, n_k, dtype=torch.bool, device=query.device).tril(diagonal=n_k - n_q)
        logits = logits.masked_fill(~causal, float("-inf"))
    elif attention_mask.dtype == torch.bool:
        logits = logits.masked_fill(~attention_mask, float("-inf"))
    else:
        logits = logits + attention_mask
    probs = torch.softmax(logits, dim=-1, dtype=torch.float32).to(query.dtype)
    return torch.matmul(probs, v).transpose(1, 2).contiguous()


def trailing_row_probs(
    query: torch.Tensor,
    keys: torch.Tensor,
    scaling: float,
    softcap: float | None,
    window: int | None,
    logits_dtype: torch.dtype | None,
) -> torch.Tensor:
    """Exact rows of queries that sit at the *last* M of N key positions, float32 ``[Hq, M, N]``.

    ``query`` ``[Hq, M, d]`` (a continuation or a decode step, whose keys the cache holds), ``keys``
    ``[Hkv, N, d]`` (query head ``h`` reads KV head ``h // (Hq // Hkv)``).  The capture kernels index
    query rows inside a query tensor as long as the keys, so the rows are placed at positions
    ``N - M .. N - 1`` of one (the other positions are never read).
    """
    n_q, n_rows, d = query.shape
    n_keys = keys.shape[1]
    queries = query.new_zeros(n_q, n_keys, d)
    queries[:, n_keys - n_rows :] = query
    positions = torch.arange(n_keys - n_rows, n_keys, device=query.device).unsqueeze(0).expand(n_q, -1).contiguous()
    keys_per_head = keys.repeat_interleave(n_q // keys.shape[0], dim=0)
    return kernels.sampled_row_probs(queries, keys_per_head, positions, scaling, softcap, window, logits_dtype)


def register_attention(name: str, function) -> str:
    """Register `function` under `name` with transformers, with SDPA's mask function beside it."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(name, function)
    AttentionMaskInterface.register(name, sdpa_mask)
    return name
