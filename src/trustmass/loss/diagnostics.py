"""The fixed-contract diagnostics on one held-out document (related-methods A.2, A.5): model-level
outcomes of boundary swaps and of the signed reference margin split.

The prefix runs once; then the dense continuation and every configuration's restricted one.  Each
target token gets two outcomes: its NLL (nats) and the KL divergence of the configuration's
next-token distribution from the dense model's, ``KL(dense || config)`` (nats).

* swaps (``loss.swaps``): per selector pair X -> Y at the swap budget, X, the boundary swaps of
  each fraction and the random controls;
* projection: each block rule at the swap budget under strict block TopK and under its token-fill
  (A.4 Stage III; ``kind`` names the projection, the block size is configured);
* margin: the host rule and each value-aware rule alone at every margin budget (A.5: the host is
  the identity selector of the contract, the rules differ from it in the ranking scalar alone).

Frame ``TOKEN_SCHEMA``: one row per (configuration, target token).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np
import polars as pl
import torch

from trustmass.core.selectors.projection import STRICT, STRICT_THEN_FILL
from trustmass.core.selectors.registry import REGISTRY
from trustmass.loss.configurations import Configuration
from trustmass.loss.document import run_contract_sha256
from trustmass.loss.forward import RestrictedForward
from trustmass.loss.policy import CellRecorder, SelectionPolicy, needs
from trustmass.loss.swaps import SwapConfiguration, SwapPolicy

DENSE, SWAP, PROJECTION, MARGIN = "dense", "swap", "projection", "margin"
TOKEN_SCHEMA = {
    "family": pl.Utf8,
    "config": pl.Utf8,
    "rule": pl.Utf8,
    "pair": pl.Utf8,
    "kind": pl.Utf8,
    "fraction": pl.Float64,
    "seed": pl.Int64,
    "budget": pl.Int64,
    "position": pl.Int64,
    "nll": pl.Float64,
    "kl": pl.Float64,
    "mean_es": pl.Float64,
    "contract_sha256": pl.Utf8,
}


def token_outcomes(
    logits: torch.Tensor, dense_logp: torch.Tensor, targets: torch.Tensor
) -> tuple[np.ndarray, np.ndarray]:
    """(NLL, KL(dense || this)) per target, float64 (logits [M, V] of the M targets)."""
    logp = torch.log_softmax(logits.double(), dim=-1)
    nll = -logp.gather(1, targets[:, None])[:, 0]
    kl = (dense_logp.exp() * (dense_logp - logp)).sum(dim=-1).clamp(min=0.0)
    return nll.cpu().numpy(), kl.cpu().numpy()


def run_diagnostics(
    model,
    token_ids: torch.Tensor,
    continuation: int,
    swaps: Sequence[SwapConfiguration],
    swap_budget: int,
    margin_rules: Sequence[str],
    margin_budgets: Sequence[int],
    master_seed: int = 0,
    rules: dict | None = None,
    log: Callable[[str], None] = print,
    capture_id: str = "heldout",
    projection_rules: Sequence[str] = (),
    projection_block: int = 5,
) -> tuple[pl.DataFrame, dict]:
    """(token frame, seconds per configuration) of one held-out document; the margin rules' rows carry
    the hash of their run contract on `capture_id` (``contract_sha256``)."""
    names = sorted({c.x for c in swaps} | {c.y for c in swaps} | set(margin_rules) | set(projection_rules))
    budgets = [int(swap_budget)] * bool(swaps or projection_rules) + [int(b) for b in margin_budgets] * bool(
        margin_rules
    )
    forward = RestrictedForward(model, token_ids, continuation, **needs(names, max(budgets, default=1)))
    started = time.time()
    forward.prefill()
    seconds = {"prefix": time.time() - started}
    positions = forward.continuation_positions[1:]
    targets = forward.ids[forward.n_prefix + 1 :]
    started = time.time()
    with torch.inference_mode():  # the dense continuation, run once: the reference of every KL and the dense row
        dense_logits = forward.logits(None)[:-1]
        dense_logp = torch.log_softmax(dense_logits.double(), dim=-1)
    dense_s = time.time() - started
    frames = []

    def run(family: str, name: str, policy, recorder: CellRecorder | None, **labels) -> None:
        started = time.time()
        with torch.inference_mode():
            logits = dense_logits if policy is None else forward.logits(policy)[:-1]
            nll, kl = token_outcomes(logits, dense_logp, targets)
        seconds[name] = time.time() - started + (dense_s if policy is None else 0.0)
        mean_es = None if recorder is None else float(recorder.means()["mean_es"].mean())
        log(f"  {name:>40}: CE {nll.mean():.4f} nats, KL {kl.mean():.4f} ({seconds[name]:.1f} s)")
        n = len(nll)
        row = {"family": family, "config": name, "mean_es": mean_es, **labels}
        frames.append(
            pl.DataFrame(
                {
                    **{k: [row.get(k)] * n for k in TOKEN_SCHEMA if k not in ("position", "nll", "kl")},
                    "position": positions.astype(np.int64),
                    "nll": nll,
                    "kl": kl,
                },
                schema=TOKEN_SCHEMA,
            )
        )

    shape = (model.config.num_hidden_layers, model.config.num_attention_heads)
    run(DENSE, DENSE, None, None)
    for swap in swaps:
        recorder = CellRecorder(shape)
        policy = SwapPolicy(swap, swap_budget, recorder, master_seed, rules)
        run(
            SWAP,
            swap.name,
            policy,
            recorder,
            pair=swap.pair,
            kind=swap.kind,
            fraction=swap.fraction,
            seed=swap.seed,
            budget=int(swap_budget),
        )
    for rule in projection_rules:
        for projection in (STRICT, STRICT_THEN_FILL):
            configured = replace(REGISTRY[rule], block=int(projection_block), projection=projection)
            config = Configuration(f"{rule}[{projection}]@{int(swap_budget)}", rule)
            recorder = CellRecorder(shape)
            policy = SelectionPolicy(
                config, np.zeros(shape, dtype=bool), int(swap_budget), recorder, rules={rule: configured}
            )
            run(PROJECTION, config.name, policy, recorder, rule=rule, kind=projection, budget=int(swap_budget))
    for budget in margin_budgets:
        for rule in margin_rules:
            recorder = CellRecorder(shape)
            config = Configuration(f"{rule}@{int(budget)}", rule)
            policy = SelectionPolicy(config, np.zeros(shape, dtype=bool), int(budget), recorder, rules=rules)
            contract = run_contract_sha256(rule, int(budget), capture_id, shape[0])
            run(MARGIN, config.name, policy, recorder, rule=rule, budget=int(budget), contract_sha256=contract)
    return pl.concat(frames), seconds
