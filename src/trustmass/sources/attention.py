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

__all__ = ["default_scaling", "dense_attention", "register_attention"]


def default_scaling(query: torch.Tensor, scaling: float | None) -> float:
    """The model's scaling, or 1/sqrt(d) when the layer passes none."""
    return 1.0 / math.sqrt(query.shape[-1]) if scaling is None else float(scaling)


def dense_attention(module, query, key, value, attention_mask, scaling: float, softcap: float | None, dropout: float = 0.0):
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


def register_attention(name: str, function) -> str:
    """Register `function` under `name` with transformers, with SDPA's mask function beside it."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(name, function)
    AttentionMaskInterface.register(name, sdpa_mask)
    return name
