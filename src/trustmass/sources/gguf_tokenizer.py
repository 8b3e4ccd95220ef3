"""A Hugging Face tokenizer that follows a GGUF file's own tokenizer metadata.

transformers 5.2.0 builds tokenizers from GGUF files, but (observed on the three packaged models):

* for ``llama``-architecture GGUFs it swaps BOS and EOS, prepends BOS even when the GGUF says
  ``tokenizer.ggml.add_bos_token = false`` (SmolLM2 then starts every text with ``<|im_start|>``),
  and saves a CodeLlama tokenizer class that adds five fill-in-the-middle tokens *beyond* the model's
  vocabulary (ids 49152..49156 for a 49152-row embedding);
* for SentencePiece-type GGUFs (``tokenizer.ggml.model = llama``, e.g. Gemma 3) it builds a Unigram
  model from what are BPE merge scores (``Hello world`` -> ``Hello ▁w or ld``), does not add the BOS
  that the GGUF asks for, and the saved folder reloads as a character-level tokenizer;
* EOS is taken from the wrong id for Qwen2 (``<|endoftext|>`` instead of the GGUF's ``<|im_end|>``).

:func:`tokenizer_from_gguf` therefore builds the tokenizer from the GGUF metadata, the way llama.cpp
(the reference runtime for GGUF) reads it:

* ``tokenizer.ggml.model = llama`` (SentencePiece): a BPE model whose merges are ranked by the
  score of the merged piece (llama.cpp's SPM tokenizer merges the best-scoring bigram first), byte
  fallback over the ``<0xXX>`` tokens, spaces shown as ``▁``, a ``▁`` before every stretch of plain
  text only when ``add_space_prefix`` is true;
* any other model (``gpt2`` byte-level BPE with merges): the backend transformers built (its
  pre-tokenizer regex is architecture specific), minus added tokens outside the GGUF vocabulary;
* control tokens (type 3) are special tokens and user-defined tokens (type 4) are matched literally,
  as llama.cpp does; BOS/EOS/UNK/PAD come from the GGUF ids; BOS is prepended only if
  ``add_bos_token`` is true (and EOS appended only if ``add_eos_token`` is true).  When the GGUF does
  not state ``add_bos_token``, llama.cpp's default for the vocabulary type is used (SentencePiece:
  yes; byte-level BPE: no).

The result is a generic ``PreTrainedTokenizerFast`` (saved with ``tokenizer_class:
PreTrainedTokenizerFast``), so reloading the folder uses ``tokenizer.json`` as written.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from trustmass.sources.common import SourceError

__all__ = ["gguf_tokenizer_metadata", "tokenizer_from_gguf"]

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
_KEYS = {
    "model": "tokenizer.ggml.model",
    "pre": "tokenizer.ggml.pre",
    "tokens": "tokenizer.ggml.tokens",
    "scores": "tokenizer.ggml.scores",
    "token_type": "tokenizer.ggml.token_type",
    "merges": "tokenizer.ggml.merges",
    "bos_token_id": "tokenizer.ggml.bos_token_id",
    "eos_token_id": "tokenizer.ggml.eos_token_id",
    "unk_token_id": "tokenizer.ggml.unknown_token_id",
    "pad_token_id": "tokenizer.ggml.padding_token_id",
    "add_bos_token": "tokenizer.ggml.add_bos_token",
    "add_eos_token": "tokenizer.ggml.add_eos_token",
    "add_space_prefix": "tokenizer.ggml.add_space_prefix",
    "chat_template": "tokenizer.chat_template",
    "architecture": "general.architecture",
}


def gguf_tokenizer_metadata(path: str | os.PathLike) -> dict[str, Any]:
    """The tokenizer fields of a GGUF file (absent keys are left out)."""
    import gguf

    reader = gguf.GGUFReader(path)
    meta: dict[str, Any] = {}
    for name, key in _KEYS.items():
        field = reader.fields.get(key)
        if field is not None:
            meta[name] = field.contents()
    arch = meta.get("architecture")
    ctx = reader.fields.get(f"{arch}.context_length") if arch else None
    if ctx is not None:
        meta["context_length"] = int(ctx.contents())
    if "tokens" not in meta:
        raise SourceError(f"{path}: the GGUF holds no tokenizer (no {_KEYS['tokens']})")
    return meta


def tokenizer_from_gguf(path: str | os.PathLike, converted=None):
    """``(tokenizer, report)``: a ``PreTrainedTokenizerFast`` built from the GGUF metadata (see module doc).

    ``converted`` is the tokenizer transformers built from the same file; it supplies the backend for
    byte-level BPE vocabularies (loaded here if not given).  ``report`` records every decision.
    """
    from tokenizers import AddedToken, Tokenizer

    meta = gguf_tokenizer_metadata(path)
    tokens: list[str] = list(meta["tokens"])
    types: list[int] = list(meta.get("token_type") or [NORMAL] * len(tokens))
    kind = meta.get("model")
    report: dict[str, Any] = {"gguf_tokenizer_model": kind, "gguf_pre_tokenizer": meta.get("pre"), "vocab": len(tokens)}

    if kind == "llama":
        backend = _spm_bpe(tokens, meta.get("scores"), types, meta)
        report["backend"] = "SentencePiece BPE rebuilt from the GGUF scores (merges ranked by merged-piece score)"
        add_bos_default = True
    else:
        if converted is None:
            from transformers import AutoTokenizer

            converted = AutoTokenizer.from_pretrained(str(Path(path).parent), gguf_file=Path(path).name)
        data = json.loads(converted.backend_tokenizer.to_str())
        kept = [t for t in data.get("added_tokens", []) if t["id"] < len(tokens) and tokens[t["id"]] == t["content"]]
        dropped = [t["content"] for t in data.get("added_tokens", []) if t not in kept]
        data["added_tokens"] = []  # re-added below from the GGUF token types
        data["post_processor"] = None
        backend = Tokenizer.from_str(json.dumps(data))
        report["backend"] = f"transformers' GGUF converter ({data['model']['type']}, pre-tokenizer kept)"
        report["dropped_added_tokens"] = dropped
        add_bos_default = False

    special = [AddedToken(tokens[i], special=True, normalized=False) for i, t in enumerate(types) if t == CONTROL]
    literal = [AddedToken(tokens[i], special=False, normalized=False) for i, t in enumerate(types) if t == USER_DEFINED]
    backend.add_special_tokens(special)
    if literal:
        backend.add_tokens(literal)

    def token(key: str) -> str | None:
        i = meta.get(key)
        return tokens[int(i)] if i is not None and 0 <= int(i) < len(tokens) else None

    bos, eos, unk, pad = token("bos_token_id"), token("eos_token_id"), token("unk_token_id"), token("pad_token_id")
    add_bos = bool(meta.get("add_bos_token", add_bos_default)) and bos is not None
    add_eos = bool(meta.get("add_eos_token", False)) and eos is not None
    backend.post_processor = _template(backend, bos if add_bos else None, eos if add_eos else None)
    report.update(
        {
            "bos_token": bos,
            "eos_token": eos,
            "unk_token": unk,
            "pad_token": pad,
            "add_bos_token": add_bos,
            "add_eos_token": add_eos,
            "add_bos_token_stated": "add_bos_token" in meta,
            "control_tokens": len(special),
            "user_defined_tokens": len(literal),
        }
    )
    if backend.get_vocab_size(with_added_tokens=True) > len(tokens):
        raise SourceError(f"{path}: the rebuilt tokenizer has more tokens than the GGUF vocabulary ({len(tokens)})")

    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token=bos,
        eos_token=eos,
        unk_token=unk,
        pad_token=pad,
        add_bos_token=add_bos,
        add_eos_token=add_eos,
        model_max_length=meta.get("context_length", int(1e30)),
        clean_up_tokenization_spaces=False,
    )
    if meta.get("chat_template"):
        tok.chat_template = meta["chat_template"]
    return tok, report


def _template(backend, bos: str | None, eos: str | None):
    from tokenizers.processors import TemplateProcessing

    pre = [bos] if bos else []
    post = [eos] if eos else []
    ids = {t: backend.token_to_id(t) for t in {*pre, *post}}
    return TemplateProcessing(
        single=" ".join([*pre, "$A:0", *post]),
        pair=" ".join([*pre, "$A:0", *post, "$B:1", *post]),
        special_tokens=[(t, i) for t, i in ids.items()],
    )


def _spm_bpe(tokens: list[str], scores, types: list[int], meta: dict):
    """BPE over SentencePiece pieces: merges ranked by the merged piece's score, byte fallback."""
    from tokenizers import Tokenizer, decoders, normalizers
    from tokenizers.models import BPE

    if scores is None:
        raise SourceError("a SentencePiece GGUF vocabulary needs tokenizer.ggml.scores to rank its merges")
    vocab = {t: i for i, t in enumerate(tokens)}
    if len(vocab) != len(tokens):
        raise SourceError("the GGUF vocabulary repeats tokens; it cannot be turned into a BPE model")
    mergeable = {t: float(s) for t, s, k in zip(tokens, scores, types) if k == NORMAL}
    merges = []
    for piece, score in mergeable.items():
        for cut in range(1, len(piece)):
            left, right = piece[:cut], piece[cut:]
            if left in mergeable and right in mergeable:
                merges.append((score, -len(left), vocab[left], vocab[right], left, right))
    merges.sort(key=lambda m: (-m[0], m[1], m[2], m[3]))
    unk_id = meta.get("unk_token_id")
    has_bytes = any(k == BYTE for k in types)
    model = BPE(
        vocab=vocab,
        merges=[(m[4], m[5]) for m in merges],
        unk_token=tokens[int(unk_id)] if unk_id is not None else None,
        fuse_unk=True,
        byte_fallback=has_bytes,
    )
    backend = Tokenizer(model)
    # llama.cpp escapes spaces as ▁ and, with add_space_prefix, puts one ▁ before every stretch of plain
    # text (at the start and after each special or user-defined token): a Prepend normalizer does exactly
    # that, because added tokens cut the text into separately normalized stretches.  No pre-tokenizer:
    # merges run over a whole stretch, as in SentencePiece.
    prefix = bool(meta.get("add_space_prefix", True))
    replace = normalizers.Replace(" ", "▁")
    backend.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), replace]) if prefix else replace
    steps = [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]
    if prefix:
        steps.append(decoders.Strip(content=" ", left=1, right=0))
    backend.decoder = decoders.Sequence(steps)
    return backend
