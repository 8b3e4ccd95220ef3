"""A corpus's token stream, encoded once per (tokenizer, corpus text) and reused.

Two jobs per (model, corpus) cut documents from the same stream: ``tokenize_documents`` (the capture
documents) and ``tokenize_heldout`` (the held-out ones).  Encoding the whole corpus is most of their
work (a 4.7 MB corpus is about 1.2 M tokens), so the first job stores the stream -- the ids and each
token's character span -- under the cache directory, and the second reads it back instead of
encoding again.  Outputs do not depend on the cache: a missing, stale or damaged entry is encoded
again (and rewritten).

An entry is named by the sha256 of everything the stream depends on: the tokenizer's fingerprint
(class, vocabulary, sha256 of its files), the corpus sha256, the encoding rule's version and the
``transformers`` / ``tokenizers`` versions.  It holds its own key and the sha256 of its arrays, checked
on every read.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["STREAM_FORMAT", "cached_stream", "stream_key"]

#: bump when :func:`trustmass.sources.documents.encode_corpus` changes what it encodes
STREAM_FORMAT = "trustmass.token-stream/1"
SUBDIR = "token-streams"


def stream_key(fingerprint: Mapping[str, Any], corpus_sha256: str) -> str:
    """The entry name: sha256 of the tokenizer fingerprint, the corpus, the format and library versions."""
    import tokenizers
    import transformers

    what = {
        "format": STREAM_FORMAT,
        "tokenizer": dict(fingerprint),
        "corpus_sha256": corpus_sha256,
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
    }
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()


def _arrays_sha256(ids: np.ndarray, offsets: np.ndarray) -> str:
    digest = hashlib.sha256(np.ascontiguousarray(ids, dtype="<i8").tobytes())
    digest.update(np.ascontiguousarray(offsets, dtype="<i8").tobytes())
    return digest.hexdigest()


def _read(path: Path, key: str) -> tuple[np.ndarray, np.ndarray] | None:
    """The entry's (ids, offsets), or None when it is absent, unreadable or does not check out."""
    try:
        with np.load(path, allow_pickle=False) as entry:
            ids, offsets = entry["ids"].astype(np.int64), entry["offsets"].astype(np.int64)
            stored_key, stored_sha = str(entry["key"]), str(entry["sha256"])
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None
    if stored_key != key or offsets.shape != (ids.shape[0], 2) or _arrays_sha256(ids, offsets) != stored_sha:
        return None
    return ids, offsets


def _write(path: Path, key: str, ids: np.ndarray, offsets: np.ndarray) -> None:
    from trustmass.plumbing.provenance import atomic_write

    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as tmp, open(tmp, "wb") as handle:  # a file object: np.savez adds no ".npz" to it
        np.savez(handle, ids=ids, offsets=offsets, key=np.asarray(key), sha256=np.asarray(_arrays_sha256(ids, offsets)))


def cached_stream(
    encode: Callable[[], tuple[np.ndarray, np.ndarray]],
    key: str,
    cache_dir: str | os.PathLike | None,
    log: Callable[[str], None] = print,
) -> tuple[np.ndarray, np.ndarray]:
    """``(ids int64 [n], offsets int64 [n, 2])``: the cache entry ``key`` if it checks out, else ``encode()``
    (stored for the next job).  ``cache_dir`` None: always ``encode()``, nothing stored."""
    if cache_dir is None:
        return encode()
    path = Path(cache_dir) / SUBDIR / f"{key}.npz"
    found = _read(path, key) if path.is_file() else None
    if found is not None:
        log(f"token stream read back from {path} (encoded by an earlier job)")
        return found
    if path.exists():
        log(f"token stream cache {path} does not check out (damaged or stale): encoding again")
    from trustmass.plumbing.errors import DiskError

    ids, offsets = encode()
    try:
        _write(path, key, ids, offsets)
    except (OSError, DiskError) as error:  # a cache only: a full or read-only disk costs the next job an encoding
        log(f"token stream not cached ({error}); the next job encodes again")
    return ids, offsets
