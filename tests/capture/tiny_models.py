"""Tiny random-weight decoder models built from config (no downloads), one per attention style."""

import torch
from transformers import AutoModelForCausalLM, Gemma2Config, Gemma3TextConfig, LlamaConfig, Qwen2Config

COMMON = dict(vocab_size=96, hidden_size=64, intermediate_size=96, num_hidden_layers=2, max_position_embeddings=512)


def tiny_config(kind: str):
    if kind == "llama":  # GQA 4:2
        return LlamaConfig(**COMMON, num_attention_heads=4, num_key_value_heads=2)
    if kind == "qwen2":  # GQA 4:1, qkv bias
        return Qwen2Config(**COMMON, num_attention_heads=4, num_key_value_heads=1)
    if kind == "gemma3":  # QK-norm, sliding window 8 on layer 0, full attention on layer 1
        return Gemma3TextConfig(
            **COMMON,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=16,
            sliding_window=8,
            layer_types=["sliding_attention", "full_attention"],
            query_pre_attn_scalar=16,
        )
    if kind == "gemma2":  # soft-capped logits, window 16 on layer 0
        return Gemma2Config(
            **COMMON,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=16,
            sliding_window=16,
            attn_logit_softcapping=5.0,
            layer_types=["sliding_attention", "full_attention"],
            query_pre_attn_scalar=16,
        )
    raise ValueError(kind)


def tiny_model(kind: str, attn_implementation: str, dtype=torch.float32, seed: int = 0):
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(tiny_config(kind), attn_implementation=attn_implementation, dtype=dtype)
    with torch.no_grad():  # larger random weights give peaked, non-uniform attention rows
        for layer in model.model.layers:
            layer.self_attn.q_proj.weight.mul_(4.0)
            layer.self_attn.k_proj.weight.mul_(4.0)
    return model.eval()


def tiny_shard(folder, n_tokens: int = 80, rows_per_head: int = 2, min_position: int = 30, seed: int = 1) -> str:
    """Capture one random-token document with the tiny Llama and write its shard; returns the path."""
    from trustmass.capture import prefill as cap
    from trustmass.capture import shards

    cap.register()
    model = tiny_model("llama", cap.ATTENTION_NAME)
    ids = torch.randint(0, 96, (n_tokens,), generator=torch.Generator().manual_seed(seed))
    result = cap.capture_document(
        model, ids, "tiny", "d0", cap.CaptureOptions(rows_per_head=rows_per_head, min_position=min_position)
    )
    path = folder / "s.safetensors"
    shards.write_shard(result, path)
    return str(path)
