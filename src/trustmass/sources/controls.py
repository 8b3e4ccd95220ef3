"""Sanity-check controls (Adebayo et al. 2018): the two randomisations a control arm applies.

``randomise_weights``
    A trained model's twin with random weights: every weight matrix (every floating tensor with two or
    more dimensions, the embeddings included) is re-drawn, the 1-D tensors (norm weights, biases) and
    the config and tokenizer are kept.  ``matched`` draws each matrix i.i.d. normal with that matrix's
    own mean and standard deviation (the scale the trained layer computes at, without its structure);
    ``permuted`` permutes the matrix's entries (the same multiset of values, bit for bit).
``shuffle_tokens``
    Each document's tokens permuted in place, so a shuffled document is exactly a permutation of the
    unshuffled one (the same chunk of text, the same length); positions the caller keeps (the special
    tokens the document wrapping added, a task context's planted spans and question) stay where they are.

Every draw is seeded by ``(seed, what it draws)`` through a stable hash (:func:`control_rng`), so a
result is bitwise reproducible and does not depend on the order tensors or documents come in.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable, Collection
from pathlib import Path

import numpy as np

from trustmass.sources.common import SOURCE_RECORD, SourceError

__all__ = ["METHODS", "control_rng", "randomise_weights", "shuffle_tokens"]

METHODS = ("matched", "permuted")
#: weights in formats other than safetensors: never copied into a twin (they would be the trained weights)
_OTHER_WEIGHTS = (".bin", ".pt", ".pth", ".ckpt", ".gguf", ".h5", ".msgpack", ".onnx")
_CHUNK = 1 << 22  # entries per block of the moments' float64 sums (fixed: the sums are the same bytes)

Log = Callable[[str], None]


def control_rng(seed: int, *parts: object) -> np.random.Generator:
    """A numpy generator seeded by sha256 of ``(seed, *parts)``: the same draw on every machine and run,
    whatever else is drawn before it."""
    text = json.dumps(["trustmass.controls", int(seed), *parts], separators=(",", ":"))
    return np.random.default_rng(int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little"))


# --------------------------------------------------------------------------------------------------
# randomised weights


def randomise_weights(
    trained_dir: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    seed: int,
    method: str = "matched",
    log: Log = print,
) -> dict:
    """Write into ``out_dir`` the randomised twin of the Hugging Face folder ``trained_dir``; return a summary.

    Every ``*.safetensors`` weight file is written again under its own name (a sharded checkpoint keeps
    its shards and index) with each floating tensor of ``ndim >= 2`` re-drawn by ``method`` in its own
    dtype; 1-D tensors (RMSNorm/LayerNorm weights, biases, rotary buffers) and non-floating tensors are
    kept as they are.  A checkpoint that stores a tied embedding once stays tied by construction (the
    LM head is the re-drawn embedding); one that stores both copies gets two independent draws, which
    transformers ties again on load when the config says so.  Every other file (config, tokenizer,
    generation config, chat template) is copied; weights in other formats (``.bin`` ...) are not.

    The draw of tensor ``name`` is seeded by ``(seed, "weights", method, name)`` alone.
    """
    from safetensors import safe_open
    from safetensors.torch import save_file

    from trustmass.plumbing.provenance import SIDECAR_SUFFIX

    if method not in METHODS:
        raise SourceError(f"randomisation {method!r} is not one of {', '.join(METHODS)}")
    trained, out = Path(trained_dir), Path(out_dir)
    weights = sorted(trained.glob("*.safetensors"))
    if not weights:
        raise SourceError(
            f"{trained} holds no *.safetensors weights, and only safetensors checkpoints can be randomised; "
            "fix: prepare the trained model from a folder with safetensors weights"
        )
    out.mkdir(parents=True, exist_ok=True)
    for path in sorted(trained.rglob("*")):
        relative = path.relative_to(trained)
        if (
            path.is_file()
            and path.suffix != ".safetensors"
            and path.suffix not in _OTHER_WEIGHTS
            and path.name != SOURCE_RECORD
            and not path.name.endswith(SIDECAR_SUFFIX)  # the trained rule's provenance sidecars
            and not any(part.startswith(".") for part in relative.parts)
        ):
            (out / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, out / relative)  # follows links: the twin is a folder of its own
    redrawn, kept = [], []
    for path in weights:
        tensors = {}
        with safe_open(str(path), framework="pt") as fh:
            metadata = fh.metadata()
            for name in fh.keys():
                tensor = fh.get_tensor(name)
                if tensor.ndim >= 2 and tensor.is_floating_point():
                    tensors[name] = _redraw(tensor, control_rng(seed, "weights", method, name), method)
                    redrawn.append(name)
                else:
                    tensors[name] = tensor
                    kept.append(name)
        save_file(tensors, str(out / path.name), metadata=metadata)
    log(
        f"randomised {trained.name}: {len(redrawn)} matrices re-drawn ({method}, seed {seed}), "
        f"{len(kept)} tensors kept; {out}"
    )
    return {
        "method": method,
        "seed": int(seed),
        "rng": 'numpy PCG64 per tensor, seeded by sha256(["trustmass.controls", seed, "weights", method, name])',
        "weight_files": [p.name for p in weights],
        "redrawn_tensors": len(redrawn),
        "kept_tensors": len(kept),
        "redrawn": sorted(redrawn),
        "kept": sorted(kept),
    }


def _redraw(tensor, rng: np.random.Generator, method: str):
    """``tensor`` re-drawn: i.i.d. normal at its own mean and std (``matched``), or its entries permuted."""
    import torch

    if method == "permuted":  # shuffle the raw bits: the multiset of values is kept exactly, in any dtype
        bits = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[tensor.element_size()]
        flat = tensor.contiguous().view(bits).reshape(-1).numpy().copy()
        rng.shuffle(flat)
        return torch.from_numpy(flat).view(tensor.dtype).reshape(tensor.shape)
    values = tensor.float().reshape(-1).numpy()
    mean, std = _moments(values)
    drawn = rng.standard_normal(values.size, dtype=np.float32)
    drawn *= np.float32(std)
    drawn += np.float32(mean)
    return torch.from_numpy(drawn).reshape(tensor.shape).to(tensor.dtype)


def _moments(values: np.ndarray) -> tuple[float, float]:
    """Mean and (population) standard deviation, summed in float64 over fixed blocks (no float64 copy of
    the whole tensor, the same result on every run)."""
    blocks = range(0, values.size, _CHUNK)
    mean = sum(float(np.sum(values[i : i + _CHUNK], dtype=np.float64)) for i in blocks) / values.size
    squares = sum(float(np.sum(np.square(values[i : i + _CHUNK] - mean))) for i in blocks)
    return mean, (squares / values.size) ** 0.5


# --------------------------------------------------------------------------------------------------
# shuffled text


def shuffle_tokens(ids: np.ndarray, *, seed: int, key: str, keep: Collection[int] | np.ndarray = ()) -> np.ndarray:
    """Each row of ``ids`` ``[n_docs, doc_tokens]`` with its tokens permuted, the kept positions in place.

    ``keep``: positions every row keeps (negative ones count from the end, as the suffix's do), or a
    boolean mask shaped like ``ids`` for positions per row.  Row ``i`` is permuted by the generator of
    ``(seed, "tokens", key, i)``: the key names the document set (e.g. ``documents/austen``), so two
    sets cut from the same text under the same key shuffle alike.  Returns a new array; lengths and
    each row's multiset of tokens are unchanged.
    """
    ids = np.asarray(ids)
    if ids.ndim != 2:
        raise ValueError(f"shuffle_tokens takes [n_docs, doc_tokens] ids, got shape {ids.shape}")
    if isinstance(keep, np.ndarray) and keep.dtype == bool:
        if keep.shape != ids.shape:
            raise ValueError(f"keep mask of shape {keep.shape} for ids of shape {ids.shape}")
        kept = keep
    else:
        kept = np.zeros(ids.shape, dtype=bool)
        positions = np.asarray(sorted(int(p) for p in keep), dtype=np.int64)
        if positions.size and (positions.min() < -ids.shape[1] or positions.max() >= ids.shape[1]):
            raise ValueError(f"keep positions {positions.tolist()} outside rows of {ids.shape[1]} tokens")
        kept[:, positions] = True
    out = ids.copy()
    for i in range(ids.shape[0]):
        free = np.flatnonzero(~kept[i])
        out[i, free] = ids[i, free[control_rng(seed, "tokens", key, i).permutation(free.size)]]
    return out
