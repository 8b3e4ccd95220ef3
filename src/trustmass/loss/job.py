"""What every held-out-document job of the loss stage starts from: the document, the model loaded
with the restricted attention, the map's flat cells and the configured balancing rule.

Shared by the rules ``loss_document`` and ``loss_curvature`` (their scripts are glue around it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import polars as pl
import torch

from trustmass.core.enumeration import PoolRule
from trustmass.core.selectors.ceiling_rules import Balancing
from trustmass.loss import forward
from trustmass.loss.cell_map import flat_cells
from trustmass.loss.heldout import heldout_document
from trustmass.sources.loading import load_prepared_model, resolve_device


@dataclass(frozen=True)
class HeldoutJob:
    ids: torch.Tensor  # int64 [T]: the held-out document
    record: dict  # its manifest record (id, corpus token range, sha256)
    model: Any  # the causal LM, attention = trustmass_restricted
    device: str
    flat: np.ndarray  # bool [layers, query heads]: the map's flat cells
    balancing: Balancing  # the balancing rule with the config's pool rule

    @property
    def cells(self) -> tuple[int, int]:
        return self.flat.shape


def open_job(
    cfg: Mapping[str, Any],
    model_config: str | os.PathLike,
    heldout: str | os.PathLike,
    capture_manifest: str | os.PathLike,
    map_path: str | os.PathLike,
    doc: str,
    threads: int,
) -> HeldoutJob:
    """Read held-out document `doc` (refusing one that overlaps the capture text: ValueError), load
    the prepared model next to `model_config` with the restricted attention, read the map."""
    torch.set_num_threads(int(threads))
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.manual_seed(int(cfg["seed"]))
    ids, record = heldout_document(heldout, capture_manifest, doc)
    device = resolve_device(cfg["capture"]["device"])
    forward.register()
    model = load_prepared_model(Path(model_config).parent, forward.ATTENTION_NAME, device)
    flat = flat_cells(pl.read_parquet(map_path), model.config.num_hidden_layers, model.config.num_attention_heads)
    balancing = Balancing(
        tuple(cfg["budgets"]["enumerated"]), int(cfg["balancing"]["native_extra"]), PoolRule.from_config(cfg)
    )
    return HeldoutJob(torch.as_tensor(ids), record, model, device, flat, balancing)
