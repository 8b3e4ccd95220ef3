"""H2O (Heavy-Hitter Oracle) as a kvpress press: accumulated attention mass plus a recency window.

The score of key ``j`` is the attention mass it accumulates over the whole prefill,
``sum_i softmax_i(j)`` over every query ``i >= j`` (causal), summed over the query heads of each
KV head's GQA group.  The recency half of H2O's budget is expressed through kvpress's
``compression_ratio``: kvpress keeps ``n_kept = compute_n_kept(N, compression_ratio)`` keys
(``ScorerPress.compress``'s top-k), and the last ``int(n_kept * recent_ratio)`` positions score
``+inf``, so they are always among those kept (``recent_ratio = 0.5``: the s/2 recency window).
The other ``n_kept - n_recent`` keys are the heaviest hitters among the rest.

Attention weights: the ones the layer returned when it ran eager attention (``attentions``),
otherwise recomputed from the layer's hidden states with kvpress's helpers (pre-RoPE queries,
RoPE with the layer's position embeddings, ``repeat_kv``), at the module's own scaling, float32
softmax, in blocks of queries to bound memory.  The recomputation does not apply logit soft-caps
or sliding windows (Llama / Qwen-style layers).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from kvpress.presses.scorer_press import ScorerPress
from kvpress.utils import compute_n_kept, get_prerope_query_states
from transformers.models.llama.modeling_llama import repeat_kv, rotate_half

__all__ = ["H2OPress", "accumulated_attention"]


def accumulated_attention(
    module, hidden_states: torch.Tensor, keys: torch.Tensor, position_embeddings, block: int = 256
):
    """Column sums ``[B, Hq, N]`` of the causal softmax of every prefill query over the keys ``[B, Hkv, N, d]``."""
    n = keys.shape[2]
    groups = module.config.num_attention_heads // keys.shape[1]
    scaling = getattr(module, "scaling", module.head_dim**-0.5)
    cos, sin = position_embeddings
    key_states = repeat_kv(keys, groups).float()
    mass = torch.zeros(keys.shape[0], module.config.num_attention_heads, n, dtype=torch.float32, device=keys.device)
    for start in range(0, n, block):
        stop = min(start + block, n)
        q = get_prerope_query_states(module, hidden_states[:, start:stop])
        c, s = cos[:, start:stop].unsqueeze(1), sin[:, start:stop].unsqueeze(1)
        q = (q * c + rotate_half(q) * s).float()
        # queries start..stop-1 see keys 0..stop-1 only: the later keys are never computed (causal)
        logits = torch.matmul(q, key_states[:, :, :stop].transpose(2, 3)) * scaling  # [B, Hq, rows, stop]
        future = (
            torch.arange(stop, device=keys.device)[None, :] > torch.arange(start, stop, device=keys.device)[:, None]
        )
        mass[..., :stop] += torch.softmax(logits.masked_fill(future, float("-inf")), dim=-1).sum(dim=-2)
    return mass


@dataclass
class H2OPress(ScorerPress):
    """H2O (https://arxiv.org/abs/2306.14048) in kvpress's ``ScorerPress`` form.

    Parameters
    ----------
    compression_ratio : float, default=0.0
        Fraction of key-value pairs to remove (kvpress's convention); ``n_kept = compute_n_kept(N, ratio)``.
    recent_ratio : float, default=0.5
        Share of ``n_kept`` given to the most recent positions unconditionally (H2O's s/2).
    query_block : int, default=256
        Queries per block when the attention weights are recomputed (each block reads only the keys it can see).
    """

    compression_ratio: float = 0.0
    recent_ratio: float = 0.5
    query_block: int = 256

    def __post_init__(self):
        super().__post_init__()
        if not 0 <= self.recent_ratio <= 1:
            raise ValueError(f"recent_ratio={self.recent_ratio} must lie in [0, 1] (0.5 is H2O's s/2 recency window)")
        if self.query_block < 1:
            raise ValueError(f"query_block={self.query_block} must be >= 1")

    def n_recent(self, k_len: int) -> int:
        return int(compute_n_kept(k_len, self.compression_ratio) * self.recent_ratio)

    def score(self, module, hidden_states, keys, values, attentions, kwargs) -> torch.Tensor:
        bsz, kv_heads, k_len, _ = keys.shape
        if attentions is not None:  # eager attention's own weights [B, Hq, N, N]
            mass = attentions.float().sum(dim=-2)
        else:
            mass = accumulated_attention(module, hidden_states, keys, kwargs["position_embeddings"], self.query_block)
        scores = mass.view(bsz, kv_heads, -1, k_len).sum(dim=2)  # sum over each KV head's query-head group
        recent = self.n_recent(k_len)
        if recent:
            scores[..., k_len - recent :] = float("inf")
        return scores
