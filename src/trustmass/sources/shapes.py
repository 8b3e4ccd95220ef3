"""Attention shapes of a decoder model, read from its configuration (never typed in per model).

:func:`model_shapes` takes a model folder, a ``config.json`` path, a config dict or a transformers
``PretrainedConfig`` and returns a JSON-ready dict: layers, query heads, KV heads, head dim, GQA group
size, per-layer attention type and sliding window, QK-norm, logit soft-capping, the attention scaling,
RoPE parameters per layer, vocabulary size and dtype.  Multimodal configs (e.g. ``gemma3``) are
reduced to their text decoder (``get_text_config()``).

Architectural facts that a config states only implicitly are read from the architecture itself: the
model class is instantiated on PyTorch's ``meta`` device (no memory, no weights) and its attention
modules are inspected: whether ``q_norm``/``k_norm`` exist (Qwen3, Gemma 3, OLMo 2), the ``scaling``
the module multiplies logits by, and each layer's ``sliding_window``.  When that is impossible
(custom code, no torch) the weight names in the folder's safetensors headers are used for QK-norm.

:func:`check_declared_shape` compares the shapes with what a configuration declares (the paper's
``L x H`` table) and raises a :class:`SourceError` naming every mismatch.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trustmass.sources.common import SourceError

__all__ = ["check_declared_shape", "load_config", "model_shapes"]

#: child modules of an attention block that normalise queries / keys before the dot product
_QK_NORM_NAMES = {
    "q": ("q_norm", "q_layernorm", "query_layernorm", "query_norm"),
    "k": ("k_norm", "k_layernorm", "key_layernorm", "key_norm"),
}
_ATTENTION_PATH = re.compile(r"(?:^|\.)layers\.(\d+)\.self_attn$")
FULL = "full_attention"
SLIDING = "sliding_attention"


# --------------------------------------------------------------------------------------------------
# reading the config


def load_config(model_dir_or_config: Any):
    """A transformers ``PretrainedConfig`` (the text decoder's, for multimodal models).

    Accepts a folder with ``config.json``, the path of a ``config.json``, a dict (with ``model_type``)
    or a ``PretrainedConfig``.
    """
    from transformers import AutoConfig, PretrainedConfig

    cfg = model_dir_or_config
    if isinstance(cfg, (str, os.PathLike)):
        path = Path(cfg)
        if path.is_dir():
            if not (path / "config.json").is_file():
                raise SourceError(f"{path} holds no config.json, so it is not a Hugging Face model folder")
            cfg = AutoConfig.from_pretrained(path, local_files_only=True)
        elif path.is_file():
            cfg = _config_from_dict(json.loads(path.read_text(encoding="utf-8")), where=str(path))
        else:
            raise SourceError(f"model config {path} does not exist")
    elif isinstance(cfg, Mapping):
        cfg = _config_from_dict(dict(cfg), where="the given config dict")
    elif not isinstance(cfg, PretrainedConfig):
        raise TypeError(
            f"model_shapes: expected a folder, config.json path, dict or PretrainedConfig, got {type(cfg).__name__}"
        )
    text = cfg.get_text_config(decoder=True) if hasattr(cfg, "get_text_config") else cfg
    return text if text is not None else cfg


def _config_from_dict(data: dict, where: str):
    from transformers import AutoConfig

    model_type = data.get("model_type")
    if not model_type:
        raise SourceError(f"{where} has no 'model_type', so the architecture cannot be told")
    try:
        return AutoConfig.for_model(**data)
    except (KeyError, ValueError) as exc:
        raise SourceError(f"{where}: transformers does not know model_type {model_type!r} ({exc})") from None


# --------------------------------------------------------------------------------------------------
# the shapes


def model_shapes(model_dir_or_config: Any) -> dict:
    """Attention geometry of a decoder model, from its config and its architecture (see module doc)."""
    cfg = load_config(model_dir_or_config)
    layers = _int(cfg, "num_hidden_layers")
    heads = _int(cfg, "num_attention_heads")
    kv_heads = getattr(cfg, "num_key_value_heads", None) or heads
    hidden = getattr(cfg, "hidden_size", None)
    head_dim = getattr(cfg, "head_dim", None) or (hidden // heads if hidden else None)
    if head_dim is None:
        raise SourceError(f"config of model_type {cfg.model_type!r} states neither head_dim nor hidden_size")
    if heads % kv_heads:
        raise SourceError(f"config: {heads} query heads are not a multiple of {kv_heads} KV heads")

    types, windows = _layer_windows(cfg, layers)
    pre_attn_scalar = getattr(cfg, "query_pre_attn_scalar", None)
    scaling = (pre_attn_scalar if pre_attn_scalar is not None else head_dim) ** -0.5
    arch = _architecture_facts(cfg, model_dir_or_config)
    if arch.get("scaling") is not None:
        scaling = arch["scaling"]
    if arch.get("sliding_window") is not None:  # the modules' own per-layer windows win
        windows = arch["sliding_window"]
        types = (
            [SLIDING if w is not None else FULL for w in windows] if not getattr(cfg, "layer_types", None) else types
        )

    return {
        "model_type": cfg.model_type,
        "architectures": list(getattr(cfg, "architectures", None) or []),
        "layers": layers,
        "heads": heads,
        "kv_heads": int(kv_heads),
        "head_dim": int(head_dim),
        "group": heads // int(kv_heads),
        "hidden_size": hidden,
        "attention_types": types,
        "sliding_window": windows,
        "qk_norm": arch["qk_norm"],
        "qk_norm_dim": arch.get("qk_norm_dim"),
        "qk_norm_source": arch["qk_norm_source"],
        "attn_logit_softcapping": _float_or_none(getattr(cfg, "attn_logit_softcapping", None)),
        "final_logit_softcapping": _float_or_none(getattr(cfg, "final_logit_softcapping", None)),
        "query_pre_attn_scalar": _float_or_none(pre_attn_scalar),
        "scaling": float(scaling),
        "rope": _rope(cfg, types),
        "vocab": _int(cfg, "vocab_size"),
        "max_position_embeddings": getattr(cfg, "max_position_embeddings", None),
        "tie_word_embeddings": bool(getattr(cfg, "tie_word_embeddings", False)),
        "dtype": _dtype_name(getattr(cfg, "dtype", None)),
    }


def _int(cfg, key: str) -> int:
    value = getattr(cfg, key, None)
    if value is None:
        raise SourceError(f"config of model_type {cfg.model_type!r} has no {key!r}")
    return int(value)


def _float_or_none(value) -> float | None:
    return None if value is None else float(value)


def _dtype_name(dtype) -> str | None:
    if dtype is None:
        return None
    return str(dtype).removeprefix("torch.")


def _layer_windows(cfg, layers: int) -> tuple[list[str], list[int | None]]:
    """Per-layer attention type and sliding window (None = full causal attention)."""
    window = getattr(cfg, "sliding_window", None)
    types = getattr(cfg, "layer_types", None)
    if types:
        types = [str(t) for t in types]
        if len(types) != layers:
            raise SourceError(f"config: layer_types lists {len(types)} layers, num_hidden_layers says {layers}")
    elif window is not None and getattr(cfg, "use_sliding_window", True):
        types = [SLIDING] * layers  # e.g. Mistral: one window on every layer
    else:
        types = [FULL] * layers
    windows = [int(window) if t == SLIDING and window is not None else None for t in types]
    return types, windows


def _rope(cfg, types: list[str]) -> dict:
    params = getattr(cfg, "rope_parameters", None) or getattr(cfg, "rope_scaling", None) or {}
    params = _jsonable(dict(params))
    by_type = {t: params[t] for t in set(types) if isinstance(params.get(t), dict)}
    theta, kind = [], []
    for t in types:
        p = by_type.get(t, params)
        theta.append(_float_or_none(p.get("rope_theta", getattr(cfg, "rope_theta", None))))
        kind.append(p.get("rope_type", p.get("type")))
    if by_type:  # per-type parameters: the top-level placeholders say nothing
        params = {k: v for k, v in params.items() if k in by_type}
    return {
        "theta": theta,
        "type": kind,
        "partial_rotary_factor": _float_or_none(getattr(cfg, "partial_rotary_factor", None)),
        "parameters": params,
    }


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


# --------------------------------------------------------------------------------------------------
# facts read from the architecture


def _architecture_facts(cfg, source) -> dict:
    try:
        return _facts_from_meta_model(cfg)
    except Exception as exc:  # custom code, unknown class, torch missing: fall back to weight names
        facts = {"qk_norm": None, "qk_norm_source": f"unknown (meta instantiation failed: {type(exc).__name__})"}
    if isinstance(source, (str, os.PathLike)) and Path(source).is_dir():
        names = _weight_names(Path(source))
        if names:
            q = any(re.search(rf"self_attn\.{n}\.weight$", w) for w in names for n in _QK_NORM_NAMES["q"])
            k = any(re.search(rf"self_attn\.{n}\.weight$", w) for w in names for n in _QK_NORM_NAMES["k"])
            facts = {"qk_norm": q and k, "qk_norm_source": "weight names"}
    return facts


def _facts_from_meta_model(cfg) -> dict:
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    attention: dict[int, Any] = {}
    for name, module in model.named_modules():
        match = _ATTENTION_PATH.search(name)
        if match:
            attention[int(match.group(1))] = module
    if not attention:
        raise LookupError("no layers.N.self_attn modules")
    layers = [attention[i] for i in sorted(attention)]
    first = layers[0]
    q_norm = next((getattr(first, n) for n in _QK_NORM_NAMES["q"] if hasattr(first, n)), None)
    k_norm = next((getattr(first, n) for n in _QK_NORM_NAMES["k"] if hasattr(first, n)), None)
    has_norm = q_norm is not None and k_norm is not None
    norm_dim = None
    if has_norm and getattr(q_norm, "weight", None) is not None:
        norm_dim = int(q_norm.weight.shape[-1])
    facts: dict[str, Any] = {
        "qk_norm": has_norm,
        "qk_norm_dim": norm_dim,
        "qk_norm_source": "architecture (attention modules instantiated on the meta device)",
    }
    scalings = {float(m.scaling) for m in layers if getattr(m, "scaling", None) is not None}
    if len(scalings) == 1:
        facts["scaling"] = scalings.pop()
    if all(hasattr(m, "sliding_window") for m in layers):
        facts["sliding_window"] = [int(m.sliding_window) if m.sliding_window is not None else None for m in layers]
    return facts


def _weight_names(folder: Path) -> list[str]:
    names: list[str] = []
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        return list(json.loads(index.read_text(encoding="utf-8")).get("weight_map", {}))
    for shard in sorted(folder.glob("*.safetensors")):
        with open(shard, "rb") as fh:
            size = int.from_bytes(fh.read(8), "little")
            header = json.loads(fh.read(size))
        names.extend(k for k in header if k != "__metadata__")
    return names


# --------------------------------------------------------------------------------------------------
# declared vs actual


def check_declared_shape(shapes: Mapping[str, Any], declared: Mapping[str, Any] | None, name: str = "model") -> None:
    """Raise :class:`SourceError` if any declared value (layers, heads, kv_heads, ...) differs from ``shapes``."""
    if not declared:
        return
    problems = []
    for key, want in declared.items():
        if key not in shapes:
            problems.append(f"'{key}' is not a shape the pipeline reads (known: {', '.join(sorted(shapes))})")
        elif shapes[key] != want:
            problems.append(f"{key}: declared {want!r}, the model's config says {shapes[key]!r}")
    if problems:
        raise SourceError(
            f"model {name!r} does not have the declared shape:\n"
            + "\n".join(f"  - {p}" for p in problems)
            + "\nfix: point the model entry at the checkpoint the paper used, or correct `declared:` in the config"
        )
