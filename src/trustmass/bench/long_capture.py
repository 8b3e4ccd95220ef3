"""A capture of consecutive documents as one long prefill: the N ~ 4,096 rows the certification
benchmark measures (the study's own documents give N <= 2,048).

`capture_concatenated` joins documents of a tokenized document set (by default 0 and 1 of 2,048
tokens: 4,096 consecutive corpus tokens), runs one capture prefill of a prepared model with the
study's capture options except ``min_position`` (by default 3,968: every sampled row sees 3,969 to
4,096 keys), validates every row, and writes the shard (plus its validation report) where asked --
a scratch path, not ``results/``.  Deterministic: the same inputs give the same shard bytes.

    python -m trustmass.bench certify --capture /tmp/n4096/smollm2-austen.safetensors \\
        --model-dir resources/models/smollm2-135m \\
        --documents resources/documents/smollm2-135m/austen.safetensors
"""

from __future__ import annotations

import time
from pathlib import Path

#: the capture of benchmarks/results.md ("Certification at N ~ 4,096")
DEFAULT_DOCS = (0, 1)
DEFAULT_MIN_POSITION = 3968


def capture_concatenated(
    model_dir: str,
    documents: str,
    out: str,
    docs=DEFAULT_DOCS,
    min_position: int = DEFAULT_MIN_POSITION,
    rows_per_head: int = 6,
    seed: int = 0,
    threads: int = 1,
) -> dict:
    """Capture documents ``docs`` of ``documents`` concatenated; writes ``out`` and returns a summary."""
    import numpy as np
    import torch

    from trustmass.capture import prefill as cap
    from trustmass.capture import shards
    from trustmass.sources.documents import load_documents
    from trustmass.sources.loading import load_prepared_model

    ids, manifest = load_documents(documents)
    tokens = np.concatenate([ids[int(i)] for i in docs])
    torch.set_num_threads(int(threads))
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.manual_seed(seed)
    options = cap.CaptureOptions(rows_per_head=rows_per_head, min_position=min_position, seed=seed)
    cap.register()
    model = load_prepared_model(model_dir, cap.ATTENTION_NAME, "cpu")
    name = manifest.get("model", Path(model_dir).name)
    doc = "+".join(manifest["documents"][int(i)]["id"] for i in docs)
    t0 = time.perf_counter()
    result = cap.capture_document(model, torch.as_tensor(tokens), name, doc, options)
    seconds = time.perf_counter() - t0
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    digest = shards.write_shard(result, out)
    report = shards.write_validation_report(result, Path(out).with_suffix(".validation.parquet"))
    return {
        "shard": str(out),
        "sha256": digest,
        "model": name,
        "doc": doc,
        "n_tokens": int(tokens.shape[0]),
        "min_position": min_position,
        "rows": report["rows"],
        "max_abs_dev": report["max_abs_dev"],
        "mean_abs_dev": report["mean_abs_dev"],
        "capture_seconds": seconds,
        "torch_threads": int(threads),
    }
