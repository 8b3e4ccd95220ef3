"""Loading a prepared model folder (capture, and later the loss and deployment stages): the record
:func:`~trustmass.sources.models.prepare_model` writes beside it, the device, the causal LM."""

from __future__ import annotations

import json
import os
from pathlib import Path

from trustmass.sources.common import SourceError, quiet_progress_bars
from trustmass.sources.models import DTYPES, SOURCE_RECORD

__all__ = ["check_prepared_files", "load_prepared_model", "prepared_shapes", "resolve_device", "source_record"]


def source_record(model_dir: str | os.PathLike) -> dict:
    """The ``trustmass_source.json`` of a prepared folder."""
    path = Path(model_dir) / SOURCE_RECORD
    if not path.is_file():
        raise SourceError(f"{model_dir} has no {SOURCE_RECORD}; prepare it with the prepare_model rule")
    return json.loads(path.read_text(encoding="utf-8"))


def prepared_shapes(model_dir: str | os.PathLike) -> dict:
    """The attention shapes prepare_model read from this folder (:func:`trustmass.sources.shapes.model_shapes`,
    kept in its source record): read back, not recomputed, since instantiating the architecture on the meta
    device costs a capture job about 3 s."""
    shapes = source_record(model_dir).get("shapes")
    if shapes is None:
        raise SourceError(
            f"{Path(model_dir) / SOURCE_RECORD} records no shapes (written by an older trustmass); prepare the model "
            f"again: delete the folder (rm -r {model_dir}) and rerun, the prepare_model rule rebuilds it"
        )
    return shapes


def check_prepared_files(model_dir: str | os.PathLike, record: dict | None = None) -> None:
    """Every file ``trustmass_source.json`` lists, checked against the sha256 recorded when the model
    was prepared (an :class:`~trustmass.plumbing.errors.IntegrityError` naming the file and the fix)."""
    from trustmass.plumbing.integrity import verify_files

    record = source_record(model_dir) if record is None else record
    folder = Path(model_dir)
    origin = (
        f" (a local model's files link into {record['path']}: restore the file there, or prepare again to take the new one)"
        if record.get("source") == "local" and record.get("path")
        else ""
    )
    verify_files(
        folder,
        record.get("files") or {},
        where=f"{folder / SOURCE_RECORD} (written when the model was prepared)",
        fix=f"prepare the model again: delete the folder (rm -r {folder}) and rerun, the prepare_model rule rebuilds it{origin}",
    )


def resolve_device(requested: str = "auto") -> str:
    """``auto`` is ``cuda`` when torch sees a GPU, else ``cpu``; any other name is returned as given."""
    if requested != "auto":
        return requested
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def load_prepared_model(model_dir: str | os.PathLike, attn_implementation: str, device: str = "cpu"):
    """The causal LM of a folder prepared by :func:`prepare_model`, in eval mode on ``device``.

    The weights load in the dtype the folder's ``trustmass_source.json`` records (the configured
    one).  ``attn_implementation`` names the transformers attention function the forward runs
    ("sdpa", "eager", or one the caller registered first, such as the capture's).

    A hub model is named by its hub id (``config.name_or_path``), not by the folder it was loaded from:
    kvpress's hub-only presses find their weights by that name (KVzap's ``nvidia/KVzap-mlp-<name>``,
    FastKVzip's ``Jang-Hyun/Fast-KVzip`` ``<name>/...`` gates), and KVzip and DuoAttention load its tokenizer
    by it.  The folder's name (``resources/models/qwen3-8b``) would send them to repositories that do not exist.
    """
    import torch
    from transformers import AutoModelForCausalLM

    record = source_record(model_dir)
    check_prepared_files(model_dir, record)
    dtype = record.get("dtype", "auto")
    if dtype != "auto" and dtype not in DTYPES:
        raise SourceError(
            f"{Path(model_dir) / SOURCE_RECORD}: dtype {dtype!r} is not one of auto, {', '.join(DTYPES)}; "
            "prepare the model again (the prepare_model rule writes this record)"
        )
    with quiet_progress_bars():
        model = AutoModelForCausalLM.from_pretrained(
            model_dir,
            attn_implementation=attn_implementation,
            dtype="auto" if dtype == "auto" else getattr(torch, dtype),
        )
    if record.get("source") == "hub" and record.get("id"):
        model.config.name_or_path = record["id"]
    return model.to(device).eval()
