"""Helpers for the deploy tests: tiny models, greedy decoding, and a masked dense reference.

The reference is written independently of the ragged attention: it keeps the dense cache (every
position) and gives evicted positions a logit of -inf, besides the causal mask and any window.
"""

from __future__ import annotations

import torch
from capture.tiny_models import tiny_model
from transformers import DynamicCache

from trustmass.deploy import ragged
from trustmass.sources.attention import register_attention

MASKED_NAME = "test_masked_dense"
#: the masked reference's keep masks, per layer [Hkv, N] bool (positions >= N are always kept)
KEEP: dict[int, torch.Tensor] = {}


def masked_dense_attention(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    """Eager attention over the full dense cache with evicted positions at -inf (float32)."""
    group = query.shape[1] // key.shape[1]
    n_keys, n_rows = key.shape[2], query.shape[2]
    logits = torch.matmul(query.float(), key.repeat_interleave(group, dim=1).float().transpose(2, 3)) * scaling
    if kwargs.get("softcap") is not None:
        logits = torch.tanh(logits / kwargs["softcap"]) * kwargs["softcap"]
    q_pos = torch.arange(n_keys - n_rows, n_keys)[:, None]
    k_pos = torch.arange(n_keys)[None, :]
    visible = k_pos <= q_pos
    if kwargs.get("sliding_window") is not None:
        visible &= k_pos > q_pos - kwargs["sliding_window"]
    keep = KEEP.get(module.layer_idx)
    if keep is not None:
        full = torch.ones(key.shape[1], n_keys, dtype=torch.bool)
        full[:, : keep.shape[1]] = keep
        visible = visible[None] & full.repeat_interleave(group, dim=0)[:, None, :]  # [Hq, M, N]
    probs = torch.softmax(logits.masked_fill(~visible, float("-inf")), dim=-1)
    out = torch.matmul(probs, value.repeat_interleave(group, dim=1).float())
    return out.transpose(1, 2).to(query.dtype), None


def models(kind: str):
    """The same tiny random model twice: with the ragged attention and with the masked reference."""
    ragged.register()
    register_attention(MASKED_NAME, masked_dense_attention)
    model = tiny_model(kind, ragged.ATTENTION_NAME)
    reference = tiny_model(kind, MASKED_NAME)
    reference.load_state_dict(model.state_dict())
    return model, reference


def random_ids(n: int, vocab: int, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, vocab, (1, n), generator=torch.Generator().manual_seed(seed))


def prefill(model, ids: torch.Tensor) -> tuple[DynamicCache, torch.Tensor]:
    """A full-length dense cache of `ids` and the first greedy token."""
    cache = DynamicCache()
    with torch.inference_mode():
        logits = model(input_ids=ids, past_key_values=cache).logits
    return cache, logits[:, -1:].argmax(-1)


def greedy(model, cache, token: torch.Tensor, steps: int, positions: int | None = None):
    """Greedy decode `steps` tokens one at a time; logits [steps, V] and tokens [steps].

    ``positions``: pass explicit position ids from there on (kvpress's shrunk caches report the
    shrunk length, so its pipeline does this); None lets the model take them from the cache.
    """
    logits, tokens = [], []
    with torch.inference_mode():
        for i in range(steps):
            kw = {} if positions is None else {"position_ids": torch.tensor([[positions + i]])}
            step = model(input_ids=token, past_key_values=cache, **kw).logits[0, -1].float()
            token = step.argmax().reshape(1, 1)
            logits.append(step)
            tokens.append(int(token))
    return torch.stack(logits), tokens


def extend(model, cache, block: torch.Tensor) -> torch.Tensor:
    """Forward a block ``[1, M]`` of new tokens at once (a question); its logits ``[M, V]``."""
    with torch.inference_mode():
        return model(input_ids=block, past_key_values=cache).logits[0].float()


def random_kept(n_layers: int, kv_heads: int, n: int, seed: int) -> list[list[torch.Tensor]]:
    """Per-head kept sets of different sizes (between n/8 and n/2), always keeping position n-1."""
    g = torch.Generator().manual_seed(seed)
    kept = []
    for _ in range(n_layers):
        heads = []
        for _ in range(kv_heads):
            size = int(torch.randint(n // 8, n // 2, (1,), generator=g))
            chosen = torch.randperm(n - 1, generator=g)[: size - 1]
            heads.append(torch.cat([chosen, torch.tensor([n - 1])]).sort().values)
        kept.append(heads)
    return kept


def keep_masks(kept, n: int) -> dict[int, torch.Tensor]:
    masks = {}
    for layer, heads in enumerate(kept):
        mask = torch.zeros(len(heads), n, dtype=torch.bool)
        for h, idx in enumerate(heads):
            mask[h, idx] = True
        masks[layer] = mask
    return masks
