"""Small random-weight models of the paper's architectures, one per hub id the configurations name.

What is kept of the real checkpoint (its public ``config.json`` [R], :data:`PUBLIC`): the model class
(``model_type``), the attention geometry (query heads, KV heads, head dim, QK-norm as the architecture has
it, logit soft-capping, the scaling, RoPE type and base, the per-layer pattern of sliding and full
attention), the context window (``max_position_embeddings``), tied or untied embeddings, and the special
tokens of the family's tokenizer (:mod:`trustmass.rehearsal.tokenizers`).

What is not: the layers (:data:`LAYERS`, enough for each attention type the architecture mixes) and the
width (hidden size :data:`HIDDEN`, MLP :data:`INTERMEDIATE`).  Qwen2 and OLMo 2 state no ``head_dim`` (it is
``hidden_size / heads`` there), so their small models state it.  Sliding windows shrink with the documents
(``window_scale``: the rehearsal's document length over the paper's), so that a window that covers a whole
paper document (Gemma 2's 4,096) covers a whole rehearsal document, and one that does not (Gemma 3's 512)
does not.  Weights are drawn from transformers' own initialisation, seeded by the repository id; the query
and key projections of the architectures without QK-norm are scaled up so that attention is not flat.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["HIDDEN", "INTERMEDIATE", "LAYERS", "PUBLIC", "public_config", "write_model"]

HIDDEN = 64
INTERMEDIATE = 128
LAYERS = 2
#: query/key projection scale where no QK-norm sets the logits' size (tests/workflow/tiny_study.py uses 6)
QK_SCALE = 8.0

_LLAMA3_ROPE = {
    "rope_type": "llama3",
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
}

#: the attention-relevant part of each checkpoint's public config.json [R] (tests/workflow/test_paper_config.py
#: holds the shapes of the same configs), by hub id
PUBLIC: dict[str, dict[str, Any]] = {
    "Qwen/Qwen2.5-1.5B": dict(
        model_type="qwen2",
        heads=12,
        kv_heads=2,
        head_dim=128,
        layers=28,
        max_position_embeddings=131072,
        tie_word_embeddings=True,
        rope_theta=1e6,
    ),
    "Qwen/Qwen2.5-7B": dict(
        model_type="qwen2",
        heads=28,
        kv_heads=4,
        head_dim=128,
        layers=28,
        max_position_embeddings=131072,
        tie_word_embeddings=False,
        rope_theta=1e6,
    ),
    "Qwen/Qwen2.5-7B-Instruct": dict(
        model_type="qwen2",
        heads=28,
        kv_heads=4,
        head_dim=128,
        layers=28,
        max_position_embeddings=32768,
        tie_word_embeddings=False,
        rope_theta=1e6,
    ),
    "meta-llama/Llama-3.2-1B": dict(
        model_type="llama",
        heads=32,
        kv_heads=8,
        head_dim=64,
        layers=16,
        max_position_embeddings=131072,
        tie_word_embeddings=True,
        rope_theta=500000.0,
        rope_scaling={**_LLAMA3_ROPE, "factor": 32.0},
    ),
    "meta-llama/Llama-3.1-8B-Instruct": dict(
        model_type="llama",
        heads=32,
        kv_heads=8,
        head_dim=128,
        layers=32,
        max_position_embeddings=131072,
        tie_word_embeddings=False,
        rope_theta=500000.0,
        rope_scaling={**_LLAMA3_ROPE, "factor": 8.0},
    ),
    "allenai/OLMo-2-0425-1B": dict(
        model_type="olmo2",
        heads=16,
        kv_heads=16,
        head_dim=128,
        layers=16,
        max_position_embeddings=4096,
        tie_word_embeddings=False,
        rope_theta=500000.0,
    ),
    **{
        f"Qwen/Qwen3-{size}": dict(
            model_type="qwen3",
            heads=heads,
            kv_heads=8,
            head_dim=128,
            layers=layers,
            max_position_embeddings=40960,
            tie_word_embeddings=tied,
            rope_theta=1e6,
        )
        for size, heads, layers, tied in [
            ("0.6B", 16, 28, True),
            ("1.7B", 16, 28, True),
            ("4B", 32, 36, True),
            ("8B", 32, 36, False),
            ("14B", 40, 40, False),
        ]
    },
    "google/gemma-2-2b": dict(
        model_type="gemma2",
        heads=8,
        kv_heads=4,
        head_dim=256,
        layers=26,
        max_position_embeddings=8192,
        tie_word_embeddings=True,
        sliding_window=4096,
        query_pre_attn_scalar=256,
        attn_logit_softcapping=50.0,
        final_logit_softcapping=30.0,
        rope_theta=10000.0,
        pattern=["sliding_attention", "full_attention"],
    ),
    "google/gemma-3-1b-pt": dict(
        model_type="gemma3_text",
        heads=4,
        kv_heads=1,
        head_dim=256,
        layers=26,
        max_position_embeddings=32768,
        tie_word_embeddings=True,
        sliding_window=512,
        query_pre_attn_scalar=256,
        pattern=["sliding_attention"] * 5 + ["full_attention"],
    ),
}
_QK_NORM = {"qwen3", "olmo2", "gemma3_text"}


def public_config(repo_id: str, declared: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The public facts of ``repo_id``; for an id not in :data:`PUBLIC`, the configuration's ``declared`` shape
    and transformers' defaults for its ``model_type`` (which ``declared`` must then name)."""
    if repo_id in PUBLIC:
        return copy.deepcopy(PUBLIC[repo_id])
    declared = dict(declared or {})
    if "model_type" not in declared:
        raise ValueError(
            f"the rehearsal has no architecture for {repo_id!r}: add its public config to "
            "trustmass.rehearsal.architectures.PUBLIC"
        )
    return declared


def _layer_types(facts: Mapping[str, Any], layers: int) -> list[str] | None:
    pattern = facts.get("pattern")
    if not pattern:
        return None
    if len(pattern) <= layers:
        return [pattern[i % len(pattern)] for i in range(layers)]
    # fewer layers than the pattern: each attention type once, in the pattern's order of first appearance
    kinds = list(dict.fromkeys(pattern))
    return [kinds[i % len(kinds)] for i in range(layers)]


def _config(facts: Mapping[str, Any], tokenizer, window_scale: float, layers: int):
    from transformers import AutoConfig

    layer_types = _layer_types(facts, layers)
    kwargs: dict[str, Any] = dict(
        vocab_size=len(tokenizer),
        hidden_size=HIDDEN,
        intermediate_size=INTERMEDIATE,
        num_hidden_layers=layers,
        num_attention_heads=facts["heads"],
        num_key_value_heads=facts["kv_heads"],
        head_dim=facts["head_dim"],
        max_position_embeddings=facts["max_position_embeddings"],
        tie_word_embeddings=facts["tie_word_embeddings"],
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    rope = {"rope_type": "default", "rope_theta": facts["rope_theta"]} if "rope_theta" in facts else None
    if facts.get("rope_scaling"):
        rope = {**facts["rope_scaling"], "rope_theta": facts["rope_theta"]}
    if rope is not None and facts["model_type"] != "gemma3_text":
        kwargs["rope_parameters"] = rope
    for key in ("query_pre_attn_scalar", "attn_logit_softcapping", "final_logit_softcapping"):
        if key in facts:
            kwargs[key] = facts[key]
    if facts.get("sliding_window"):
        kwargs["sliding_window"] = max(8, int(round(facts["sliding_window"] * window_scale)))
    if layer_types:
        kwargs["layer_types"] = layer_types
    return AutoConfig.for_model(facts["model_type"], **kwargs)


def _seed(repo_id: str) -> int:
    return int.from_bytes(hashlib.sha256(repo_id.encode("utf-8")).digest()[:4], "little")


def write_model(
    repo_id: str,
    folder: Path,
    tokenizer_folder: Path,
    *,
    declared: Mapping[str, Any] | None = None,
    window_scale: float = 1.0,
    layers: int = LAYERS,
    dtype: str = "bfloat16",
) -> dict[str, Any]:
    """A small random-weight model of ``repo_id`` with the tokenizer in ``tokenizer_folder``, saved (weights in
    ``dtype``, as the configurations load them) into ``folder``; what was kept and what was shrunk."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    facts = public_config(repo_id, declared)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_folder)
    config = _config(facts, tokenizer, window_scale, layers)
    torch.manual_seed(_seed(repo_id))
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    if facts["model_type"] not in _QK_NORM:
        with torch.no_grad():
            for layer in model.model.layers:
                layer.self_attn.q_proj.weight.mul_(QK_SCALE)
                layer.self_attn.k_proj.weight.mul_(QK_SCALE)
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id
    )
    model.to(getattr(torch, dtype)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return {
        "model_type": facts["model_type"],
        "layers": {"paper": facts.get("layers"), "rehearsal": layers},
        "hidden_size": HIDDEN,
        "sliding_window": getattr(config, "sliding_window", None),
        "vocab": len(tokenizer),
        "parameters": sum(p.numel() for p in model.parameters()),
    }
