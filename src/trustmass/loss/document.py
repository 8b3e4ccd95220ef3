"""One held-out document through every configuration: the per-token and per-cell frames.

The prefix runs once; each configuration forwards the continuation under its policy.  Frames:

* tokens: ``config, base_rule, switch_rule, cells, seed, budget, n_cells_switched, accounting,
  position, token_id, nll, contract_sha256`` (one row per configuration and target token; the hash of
  the base rule's run contract, ``core.selectors.run_contract``);
* cells: ``config, layer, head, switched, mean_dropped_mass, mean_es, mean_swaps`` (restricted
  configurations only).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
import torch

from trustmass.core.selectors.registry import REGISTRY
from trustmass.core.selectors.run_contract import selector_run
from trustmass.loss.configurations import Configuration, switched_cells
from trustmass.loss.forward import RestrictedForward
from trustmass.loss.policy import CellRecorder, ProbeSelector, SelectionPolicy, needs

TOKEN_SCHEMA = {
    "config": pl.Utf8,
    "base_rule": pl.Utf8,
    "switch_rule": pl.Utf8,
    "cells": pl.Utf8,
    "seed": pl.Int64,
    "alpha": pl.Float64,
    "budget": pl.Int64,
    "n_cells_switched": pl.Int64,
    "accounting": pl.Utf8,
    "position": pl.Int64,
    "token_id": pl.Int64,
    "nll": pl.Float64,
    "contract_sha256": pl.Utf8,
}
CELL_SCHEMA = {
    "config": pl.Utf8,
    "layer": pl.Int64,
    "head": pl.Int64,
    "switched": pl.Boolean,
    "mean_dropped_mass": pl.Float64,
    "mean_es": pl.Float64,
    "mean_swaps": pl.Float64,
}


@dataclass(frozen=True)
class DocumentResult:
    tokens: pl.DataFrame
    cells: pl.DataFrame
    seconds: dict  # configuration -> wall seconds (the prefix under "prefix")


def run_document(
    model,
    token_ids: torch.Tensor,
    configs: Sequence[Configuration],
    flat: np.ndarray,
    budget: int,
    continuation: int,
    master_seed: int = 0,
    probe=None,
    rules: dict | None = None,
    log: Callable[[str], None] = print,
    capture_id: str = "heldout",
) -> DocumentResult:
    """Every configuration on one document; `flat` is the map's bool grid [layers, query heads];
    `probe` the trained probe's parameters (for the ``probe@alpha`` configurations); `rules` the
    configured rule instances by name (the config's balancing pool rule); `capture_id` names the
    document in the run contracts (``contract_sha256``: the base rule's run on every layer)."""
    names = sorted({c.base_rule for c in configs} | {c.switch_rule for c in configs if c.switch_rule})
    forward = RestrictedForward(model, token_ids, continuation, **needs(names, budget))
    seconds = {}
    started = time.time()
    forward.prefill()
    seconds["prefix"] = time.time() - started
    positions = forward.continuation_positions[1:]
    targets = forward.ids[forward.n_prefix + 1 :].cpu().numpy()
    token_frames, cell_frames = [], []
    for config in configs:
        started = time.time()
        switched = switched_cells(config, flat, master_seed)
        recorder = CellRecorder(flat.shape)
        selector = ProbeSelector(probe, config.alpha) if config.base_rule == "probe" else None
        policy = SelectionPolicy(config, switched, budget, recorder, selector, rules) if config.restricted else None
        nll = forward.nll(policy)
        seconds[config.name] = time.time() - started
        log(
            f"  {config.name:>24}: CE {nll.mean():.4f} nats ({seconds[config.name]:.1f} s, {int(switched.sum())} cells switched)"
        )
        contract = run_contract_sha256(config.base_rule, budget, capture_id, flat.shape[0])
        token_frames.append(_token_frame(config, budget, int(switched.sum()), positions, targets, nll, contract))
        if config.restricted:
            cell_frames.append(_cell_frame(config, switched, recorder))
    tokens = pl.concat(token_frames) if token_frames else pl.DataFrame(schema=TOKEN_SCHEMA)
    cells = pl.concat(cell_frames) if cell_frames else pl.DataFrame(schema=CELL_SCHEMA)
    return DocumentResult(tokens, cells, seconds)


def run_contract_sha256(rule: str, budget: int, capture_id: str, n_layers: int) -> str | None:
    """The hash of the run contract of a registry rule on every layer of the document (None for the
    dense model, keep-all and the probe, which are not registry selectors)."""
    if rule not in REGISTRY:
        return None
    return selector_run(REGISTRY[rule], budget, capture_id, tuple(range(n_layers))).sha256


def _token_frame(
    config: Configuration, budget: int, n_switched: int, positions, targets, nll, contract
) -> pl.DataFrame:
    n = len(nll)
    return pl.DataFrame(
        {
            "config": [config.name] * n,
            "base_rule": [config.base_rule] * n,
            "switch_rule": [config.switch_rule] * n,
            "cells": [config.cells] * n,
            "seed": [config.seed] * n,
            "alpha": [config.alpha] * n,
            "budget": [budget] * n,
            "n_cells_switched": [n_switched] * n,
            "accounting": [config.accounting] * n,
            "position": positions.astype(np.int64),
            "token_id": targets.astype(np.int64),
            "nll": nll,
            "contract_sha256": [contract] * n,
        },
        schema=TOKEN_SCHEMA,
    )


def _cell_frame(config: Configuration, switched: np.ndarray, recorder: CellRecorder) -> pl.DataFrame:
    layers, heads = np.indices(switched.shape)
    means = recorder.means()
    return pl.DataFrame(
        {
            "config": [config.name] * switched.size,
            "layer": layers.ravel(),
            "head": heads.ravel(),
            "switched": switched.ravel(),
            **{k: v.ravel() for k, v in means.items()},
        },
        schema=CELL_SCHEMA,
    )
