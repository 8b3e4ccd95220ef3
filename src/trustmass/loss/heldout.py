"""Held-out documents: read one, and refuse it when its text overlaps the capture documents'.

The map is computed on the capture documents; a held-out document must lie in the corpus after
their text (spec §6 [C]: held-out documents disjoint from the map documents).  Both manifests
record each document's token range in the tokenized corpus (``corpus_tokens``).
"""

from __future__ import annotations

import json
import os

import numpy as np

from trustmass.sources.documents import load_documents


def heldout_document(heldout: str | os.PathLike, capture_manifest: str | os.PathLike, doc: str) -> tuple[np.ndarray, dict]:
    """``(token ids, manifest record)`` of held-out document `doc` (its index in the held-out chunking)."""
    ids, manifest = load_documents(heldout)
    index = int(doc)
    if index >= ids.shape[0]:
        raise ValueError(f"{heldout} holds {ids.shape[0]} held-out chunks; document {doc} requested (loss.heldout)")
    record = manifest["documents"][index]
    capture = json.loads(open(capture_manifest, encoding="utf-8").read())
    capture_end = max(d["corpus_tokens"][1] for d in capture["documents"])
    if record["corpus_tokens"][0] < capture_end:
        # the default first chunk counts doc_tokens of text per document; a tokenizer that adds a <bos>
        # (Gemma, Llama 3) puts fewer corpus tokens in each, most of all in the shorter held-out chunks
        stride = max(1, record["corpus_tokens"][1] - record["corpus_tokens"][0])
        raise ValueError(
            f"held-out document {record['id']} starts at corpus token {record['corpus_tokens'][0]}, inside the capture "
            f"documents' text (tokens 0..{capture_end}) whose map the loss switches on; fix: "
            f"loss.heldout.first_doc: {-(-capture_end // stride)} or more"
        )
    if manifest["corpus_sha256"] != capture["corpus_sha256"]:
        raise ValueError(f"{heldout} and {capture_manifest} were cut from different corpus texts; re-run tokenize_heldout")
    return ids[index], record
