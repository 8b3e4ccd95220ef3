"""Documents: a corpus tokenized once per model tokenizer and cut into equal, non-overlapping chunks.

The whole ``corpus.txt`` is tokenized once with the model's own tokenizer, with no special tokens and
with special-token text left as plain text (``split_special_tokens=True``: a literal ``<|endoftext|>``
in the Python stdlib stays characters, as llama.cpp's ``parse_special=false`` does).  The token stream
is cut into consecutive chunks from the start; chunk ``i`` is document ``i``; the first ``n_docs``
are kept.  How each document begins and ends is the ``bos`` policy:

``tokenizer-default`` (the paper's choice, §2.2: "use the tokenizer's default special tokens")
    each document is wrapped the way the tokenizer wraps any single text: what ``tokenizer(text)``
    adds around ``tokenizer(text, add_special_tokens=False)`` (e.g. ``<bos>`` for Gemma and Llama 3,
    nothing for Qwen2 and SmolLM2).  Every document then looks like a text fed to the model on its own.
``prepend-bos``
    every document starts with the tokenizer's BOS token (an error if it has none).
``none``
    no special tokens at all.

``doc_tokens`` counts every token, special ones included, so each row of the output has exactly
``doc_tokens`` ids.

``shuffle`` (the shuffled-text control, ``documents.shuffle``): after cutting, each document's text
tokens are permuted (:func:`trustmass.sources.controls.shuffle_tokens`, seeded by the master seed and
``shuffle_key``), its special prefix and suffix in place: a shuffled document is exactly a permutation
of the unshuffled one, the same chunk of text (its ``corpus_tokens`` and ``chars`` spans still hold).
The manifest then says ``shuffled: true`` with the seed and key, and every document's record keeps
the sha256 of its unshuffled ids.  Output: ``<out>.safetensors`` (``input_ids``, int64, ``[n_docs, doc_tokens]``) and
``<out>.json``, a manifest listing every document (index, id ``<corpus>-0003``, sha256 of its ids, its
token and character span in the corpus) with the policy, the special tokens used and the sha256 of
the tokenizer files and of the corpus.  Both are byte-identical on rerun.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from trustmass.sources.common import SourceError, sha256_bytes, sha256_file

__all__ = [
    "BOS_POLICIES",
    "TOKENIZER_FILES",
    "cut_documents",
    "encode_corpus",
    "finish_document_set",
    "load_documents",
    "manifest_summary",
    "shuffle_record",
    "special_tokens_for",
    "tokenize_documents",
    "tokenizer_fingerprint",
    "write_document_set",
]

BOS_POLICIES = ("tokenizer-default", "prepend-bos", "none")
#: files that define a tokenizer (their sha256 goes into the manifest)
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "tokenizer.model",
    "vocab.json",
    "merges.txt",
    "spiece.model",
)
FORMAT = "trustmass.documents/1"
_PROBE = "Hello world. A probe text, 123."

Log = Callable[[str], None]


def special_tokens_for(tokenizer, policy: str) -> tuple[list[int], list[int]]:
    """``(prefix, suffix)`` ids that wrap every document under ``policy``."""
    if policy == "none":
        return [], []
    if policy == "prepend-bos":
        if tokenizer.bos_token_id is None:
            raise SourceError(
                f"bos: prepend-bos, but the tokenizer ({type(tokenizer).__name__}) has no BOS token; "
                "fix: use `bos: tokenizer-default` or `bos: none`"
            )
        return [int(tokenizer.bos_token_id)], []
    if policy == "tokenizer-default":
        plain = tokenizer(_PROBE, add_special_tokens=False)["input_ids"]
        wrapped = tokenizer(_PROBE, add_special_tokens=True)["input_ids"]
        for start in range(len(wrapped) - len(plain) + 1):
            if wrapped[start : start + len(plain)] == plain:
                return [int(i) for i in wrapped[:start]], [int(i) for i in wrapped[start + len(plain) :]]
        raise SourceError(
            "bos: tokenizer-default, but the tokenizer's special tokens are not a plain prefix/suffix of the text "
            f"({wrapped} vs {plain}); fix: use `bos: prepend-bos` or `bos: none`"
        )
    raise SourceError(f"bos: {policy!r} is not one of {', '.join(BOS_POLICIES)}")


def cut_documents(
    ids: np.ndarray, doc_tokens: int, n_docs: int, prefix: list[int], suffix: list[int]
) -> tuple[np.ndarray, int]:
    """``(docs, content)``: ``n_docs`` rows of ``prefix + ids[i*content:(i+1)*content] + suffix``."""
    content = doc_tokens - len(prefix) - len(suffix)
    if content <= 0:
        raise SourceError(
            f"doc_tokens = {doc_tokens} leaves no room for text after {len(prefix) + len(suffix)} special tokens"
        )
    if n_docs * content > len(ids):
        raise ValueError("too short")  # callers report with names
    body = np.asarray(ids[: n_docs * content], dtype=np.int64).reshape(n_docs, content)
    docs = np.empty((n_docs, doc_tokens), dtype=np.int64)
    docs[:, : len(prefix)] = np.asarray(prefix, dtype=np.int64)
    docs[:, len(prefix) : len(prefix) + content] = body
    if suffix:
        docs[:, len(prefix) + content :] = np.asarray(suffix, dtype=np.int64)
    return docs, content


def encode_corpus(tokenizer, text: str) -> tuple[np.ndarray, list]:
    """The whole text as one token stream (int64) and each token's character span: no special tokens
    added, special-token text kept as characters (the module's rule)."""
    encoded = tokenizer(
        text,
        add_special_tokens=False,
        split_special_tokens=True,
        return_offsets_mapping=True,
        return_attention_mask=False,
        verbose=False,
    )
    return np.asarray(encoded["input_ids"], dtype=np.int64), encoded["offset_mapping"]


def tokenize_documents(
    model_dir: str | os.PathLike,
    corpus_txt: str | os.PathLike,
    out_path: str | os.PathLike,
    *,
    doc_tokens: int,
    n_docs: int,
    bos: str = "tokenizer-default",
    model: str | None = None,
    corpus: str | None = None,
    align: tuple[int, int] | None = None,
    cache_dir: str | os.PathLike | None = None,
    shuffle: bool = False,
    seed: int | None = None,
    shuffle_key: str | None = None,
    log: Log = print,
) -> dict:
    """Write ``out_path`` (.safetensors) and its manifest (same name, .json); return the manifest.

    ``align = (index, token)``: document ``index`` must start at or after corpus token ``token``; the
    chunking then starts ``lead_tokens = max(0, token - index * text_tokens_per_doc)`` tokens into the
    text.  The held-out documents use it to follow the capture documents' text whatever special
    tokens the tokenizer adds (a <bos> takes one text token from every chunk, more of them from
    shorter ones).

    ``cache_dir``: where the corpus's token stream is kept for the next job cutting the same corpus
    with the same tokenizer (:mod:`~trustmass.sources.token_streams`; None: encode, keep nothing).

    ``shuffle``: permute each document's text tokens after cutting, seeded by ``seed`` (required then)
    and ``shuffle_key`` (default ``documents/<corpus>``; the held-out chunking passes ``heldout/<corpus>``)."""
    from transformers import AutoTokenizer

    from trustmass.sources.token_streams import cached_stream, stream_key

    model_dir, corpus_txt, out_path = Path(model_dir), Path(corpus_txt), Path(out_path)
    model = model or model_dir.name
    corpus = corpus or corpus_txt.parent.name
    if doc_tokens < 1 or n_docs < 1:
        raise SourceError(f"documents: doc_tokens ({doc_tokens}) and n_docs ({n_docs}) must be positive")
    if shuffle and seed is None:
        raise SourceError("shuffled documents need the master seed; fix: pass the config's seed to the rule's params")
    started = time.time()
    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    prefix, suffix = special_tokens_for(tokenizer, bos)
    text = corpus_txt.read_text(encoding="utf-8")
    corpus_sha, fingerprint = sha256_file(corpus_txt), tokenizer_fingerprint(tokenizer, model_dir)

    def encode() -> tuple[np.ndarray, np.ndarray]:
        ids, offsets = encode_corpus(tokenizer, text)
        return ids, np.asarray(offsets, dtype=np.int64).reshape(len(ids), 2)

    ids, offsets = cached_stream(encode, stream_key(fingerprint, corpus_sha), cache_dir, log)
    log(f"documents {model}/{corpus}: {len(text):,} characters -> {len(ids):,} tokens in {time.time() - started:.1f} s")
    content = doc_tokens - len(prefix) - len(suffix)
    lead = max(0, align[1] - align[0] * content) if align and content > 0 else 0
    try:
        docs, content = cut_documents(ids[lead:], doc_tokens, n_docs, prefix, suffix)
    except ValueError:
        available = (len(ids) - lead) // content if content > 0 else 0
        after_lead = f" after {lead:,} lead tokens" if lead else ""
        raise SourceError(
            f"corpus {corpus!r} is too short for model {model!r}: its tokenizer makes {len(ids):,} tokens of text, "
            f"{n_docs} documents x {content} text tokens (doc_tokens {doc_tokens} minus {doc_tokens - content} special) "
            f"need {n_docs * content:,}{after_lead}; {available} document(s) fit. fix: lower documents.n_docs or doc_tokens, "
            "or use a longer corpus"
        ) from None
    vocab = len(tokenizer)
    if ids.size and (ids.min() < 0 or ids.max() >= vocab):
        raise SourceError(f"documents {model}/{corpus}: token ids outside the tokenizer's {vocab} tokens")
    unshuffled = docs
    if shuffle:
        from trustmass.sources.controls import shuffle_tokens

        shuffle_key = shuffle_key or f"documents/{corpus}"
        specials = [*range(len(prefix)), *range(doc_tokens - len(suffix), doc_tokens)]
        docs = shuffle_tokens(unshuffled, seed=int(seed), key=shuffle_key, keep=specials)

    records = []
    for i in range(n_docs):
        first, last = lead + i * content, lead + (i + 1) * content - 1
        records.append(
            {
                "index": i,
                "id": f"{corpus}-{i:04d}",
                "tokens_sha256": sha256_bytes(docs[i].astype("<i8").tobytes()),
                "corpus_tokens": [int(first), int(last) + 1],
                "chars": [int(offsets[first][0]), int(offsets[last][1])],
            }
        )
        if shuffle:
            records[-1]["unshuffled_tokens_sha256"] = sha256_bytes(unshuffled[i].astype("<i8").tobytes())
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "model": model,
        "corpus": corpus,
        "doc_tokens": doc_tokens,
        "n_docs": n_docs,
        "bos": bos,
        "special_prefix": prefix,
        "special_suffix": suffix,
        "special_prefix_tokens": tokenizer.convert_ids_to_tokens(prefix),
        "special_suffix_tokens": tokenizer.convert_ids_to_tokens(suffix),
        "text_tokens_per_doc": content,
        "lead_tokens": int(lead),
        "split_special_tokens": True,
        "corpus_tokens": int(len(ids)),
        "docs_available": int((len(ids) - lead) // content),
        "corpus_sha256": corpus_sha,
        "corpus_chars": len(text),
        **fingerprint,
        "input_ids_sha256": sha256_bytes(docs.astype("<i8").tobytes()),
        **(shuffle_record(unshuffled, seed, shuffle_key, "the special prefix and suffix") if shuffle else {}),
        "documents": records,
    }
    header = {"bos": bos, "corpus_sha256": corpus_sha, **({"shuffled": True, "seed": int(seed)} if shuffle else {})}
    write_document_set(out_path, docs, manifest, header)
    log(
        f"documents {model}/{corpus}: {n_docs} x {doc_tokens} tokens (bos: {bos}, prefix {manifest['special_prefix_tokens']}), "
        f"{manifest['docs_available']} available{f', shuffled (seed {seed})' if shuffle else ''}; {out_path}"
    )
    return manifest


def shuffle_record(unshuffled: np.ndarray, seed: int, key: str, kept: str) -> dict[str, Any]:
    """The manifest fields of a shuffled document set (the shuffled-text control): only a shuffled set has them,
    so an unshuffled manifest is the same bytes as before the control existed."""
    return {
        "shuffled": True,
        "shuffle": {
            "seed": int(seed),
            "key": key,
            "kept_in_place": kept,
            "what": "each document's other tokens permuted after cutting (trustmass.sources.controls.shuffle_tokens)",
            "unshuffled_input_ids_sha256": sha256_bytes(np.ascontiguousarray(unshuffled).astype("<i8").tobytes()),
        },
    }


def write_document_set(
    out_path: str | os.PathLike, docs: np.ndarray, manifest: Mapping[str, Any], extra: Mapping[str, Any]
) -> None:
    """``out_path`` (.safetensors, ``input_ids``) and its manifest (same name, .json), each written atomically."""
    from safetensors.numpy import save_file

    from trustmass.plumbing.provenance import atomic_write

    out_path = Path(out_path)
    # one metadata key: safetensors keeps metadata in a hash map, so several keys come out in random order
    header = {"format": FORMAT, "model": manifest["model"], "corpus": manifest["corpus"], **extra}
    metadata = {"trustmass": json.dumps(header, sort_keys=True)}
    with atomic_write(out_path) as tmp:
        save_file({"input_ids": np.ascontiguousarray(docs)}, str(tmp), metadata=metadata)
    with atomic_write(out_path.with_suffix(".json")) as tmp:
        tmp.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def tokenizer_fingerprint(tokenizer, model_dir: Path) -> dict[str, Any]:
    """What identifies the tokenizer in a manifest: class, vocabulary size, sha256 of its files."""
    return {
        "tokenizer_class": type(tokenizer).__name__,
        "tokenizer_vocab": len(tokenizer),
        "tokenizer_files": {
            name: sha256_file(model_dir / name) for name in TOKENIZER_FILES if (model_dir / name).is_file()
        },
    }


def finish_document_set(
    smk, manifest: Mapping[str, Any], text: str | os.PathLike, config: Mapping[str, Any], started: float, **extra: Any
) -> None:
    """The sidecars of a rule that wrote a document set (``smk.output.ids`` + ``smk.output.manifest``, one each):
    their inputs are the source text, the tokenizer files the manifest fingerprints, the library code
    and the manifest (so the ids' sidecar also vouches for the manifest beside them); ``extra`` adds the rule's
    own summary fields."""
    from trustmass.plumbing.rule_io import finish

    model_dir = Path(smk.input.model).parent
    tokenizer_files = [str(model_dir / name) for name in manifest["tokenizer_files"]]
    finish(
        smk,
        [smk.output.ids, smk.output.manifest],
        [str(text), *tokenizer_files, *smk.input.code, smk.output.manifest],
        config,
        started,
        input_ids_sha256=manifest["input_ids_sha256"],
        **extra,
    )


def text_end(manifest_path: str | os.PathLike) -> int:
    """The corpus token after the last document's text, from a document set's manifest (.json)."""
    manifest = json.loads(Path(manifest_path).read_text(encoding="utf-8"))
    return max(d["corpus_tokens"][1] for d in manifest["documents"])


def load_documents(path: str | os.PathLike) -> tuple[np.ndarray, dict]:
    """``(input_ids [n_docs, doc_tokens] int64, manifest)`` of a tokenized document set."""
    from safetensors.numpy import load_file

    path = Path(path)
    manifest = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    return load_file(str(path))["input_ids"], manifest


def manifest_summary(manifest: Mapping[str, Any]) -> str:
    return (
        f"{manifest['model']}/{manifest['corpus']}: {manifest['n_docs']} x {manifest['doc_tokens']} "
        f"(bos {manifest['bos']}), sha256 {manifest['input_ids_sha256'][:16]}"
    )
