"""Held-out documents: read one, and refuse it when its text overlaps the capture documents'.

The map is computed on the capture documents; a held-out document must lie in the corpus after
their text (spec §6 [C]: held-out documents disjoint from the map documents).  Both manifests
record each document's token range in the tokenized corpus (``corpus_tokens``); tokenize_heldout
aligns its chunking to start after the capture text's end, and `heldout_document` checks it did.
Under the shuffled-text control (``documents.shuffle``) both sets are shuffled when tokenized
(:func:`trustmass.sources.documents.tokenize_documents`); `heldout_document` refuses a pair of which
only one is.
"""

from __future__ import annotations

import json
import os

import numpy as np

from trustmass.sources.documents import load_documents, text_end


def heldout_document(
    heldout: str | os.PathLike, capture_manifest: str | os.PathLike, doc: str
) -> tuple[np.ndarray, dict]:
    """``(token ids, manifest record)`` of held-out document `doc` (its index in the held-out chunking)."""
    ids, manifest = load_documents(heldout)
    index = int(doc)
    if index >= ids.shape[0]:
        raise ValueError(f"{heldout} holds {ids.shape[0]} held-out chunks; document {doc} requested (loss.heldout)")
    record = manifest["documents"][index]
    capture = json.loads(open(capture_manifest, encoding="utf-8").read())
    capture_end = text_end(capture_manifest)
    if record["corpus_tokens"][0] < capture_end:
        # tokenize_heldout aligns its chunking after the capture text; a chunking cut without it does not
        raise ValueError(
            f"held-out document {record['id']} starts at corpus token {record['corpus_tokens'][0]}, inside the capture "
            f"documents' text (tokens 0..{capture_end}) whose map the loss switches on; fix: re-run tokenize_heldout "
            f"({heldout}) so that its chunking starts after them"
        )
    if bool(manifest.get("shuffled")) != bool(capture.get("shuffled")):  # the shuffled-text control: both or neither
        state = {True: "shuffled", False: "not shuffled"}
        raise ValueError(
            f"{heldout} is {state[bool(manifest.get('shuffled'))]} but the capture documents ({capture_manifest}) are "
            f"{state[bool(capture.get('shuffled'))]}; fix: re-run tokenize_documents and tokenize_heldout, which read "
            "the same documents.shuffle"
        )
    if manifest["corpus_sha256"] != capture["corpus_sha256"]:
        raise ValueError(
            f"{heldout} and {capture_manifest} were cut from different corpus texts; re-run tokenize_heldout"
        )
    return ids[index], record
