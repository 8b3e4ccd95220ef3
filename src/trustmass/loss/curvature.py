"""Curvature (paper spec §6, App E; claim 126): a second-order prediction of the flat switch's
loss change from gradients and Hessian-vector products at every head's ``o_proj`` input.

The point is top-mass everywhere at budget ``s``.  Every layer ``l`` gets an additive
perturbation ``eps_l [Hq, M, d]`` of its head outputs (the ``o_proj`` input of the continuation
rows): the policy returns ``m_top,l + eps_l`` and the layers downstream recompute.  ``L(eps)`` is
the mean continuation NLL (nats) of targets ``T-C+1 .. T-1``.  The kept sets are *frozen*: chosen
once at ``eps = 0`` (selection is discrete, so ``L`` is not differentiable through it) and reused
for every ``eps``; with fixed sets ``L`` is smooth in ``eps``.

The switch direction of a cell set ``S`` (bool grid ``[layers, query heads]``)::

    delta_S[l, h, m] = (m_bal - m_top)[l, h, m]   for (l, h) in S,   0 elsewhere

with ``m_bal``, ``m_top`` the restricted outputs of the balancing and top-mass sets on the
top-mass point's own (unperturbed) queries, keys and values.  The prediction::

    dL(S) ~ g^T delta_S + 1/2 delta_S^T H delta_S,   g = dL/deps,  H = d^2L/deps^2 at eps = 0
    share(S) = dL(S) / dL(all cells)

``g`` comes from one backward with ``create_graph``; each ``H delta_S`` from one more backward of
``g . delta_S`` (double backward).  What the expansion leaves out: the switched outputs of a real
switch are recomputed on the perturbed upstream (``delta`` itself moves at second order) and the
downstream kept sets may change; both are in the measured CE change, neither in the prediction.

The restricted output is differentiable here (the kernel twin is not: it writes into ``out=``
buffers and takes a sparse product)::

    m_A[h, m] = sum_{j in A} e^{z_j} v_j / sum_{j in A} e^{z_j}
              = sum_{j in A} P_j v_j / sum_{j in A} P_j          (the twin's definition)

with ``z`` the scaled (soft-capped) logits; ``m_A = 0`` for an empty set.  The logits are taken in
float32 (float64 models: float64); a bf16 model's logit roundings are not emulated on this path
(they choose the kept sets, which are read from the exact rows, but have no derivative).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping

import numpy as np
import polars as pl
import torch

from trustmass.loss.configurations import (
    ALL_CELL,
    ALL_CELLS,
    BALANCING,
    FLAT_SWITCH,
    TOP_MASS,
    Configuration,
    random_cells,
)
from trustmass.loss.forward import LayerCall, PrefixLayer, RestrictedForward
from trustmass.loss.policy import SelectionPolicy, needs

ALL = ALL_CELL  # the all-cell set, named as the loss configuration it predicts
CURVATURE_SCHEMA = {
    "cell_set": pl.Utf8,
    "n_cells": pl.Int64,
    "budget": pl.Int64,
    "loss_top_mass": pl.Float64,
    "first_order": pl.Float64,
    "second_order": pl.Float64,
    "predicted": pl.Float64,
    "predicted_share": pl.Float64,
    "replayed": pl.Float64,
    "replayed_share": pl.Float64,
}


def restricted_output(call: LayerCall, kept: torch.Tensor) -> torch.Tensor:
    """Differentiable ``m_A [Hq, M, d]`` of the kept sets ``kept [Hq, M, s]`` (-1 padded)."""
    dtype = torch.promote_types(call.query.dtype, torch.float32)
    n_q = call.query.shape[0]
    kv = (torch.arange(n_q, device=kept.device) // call.group)[:, None, None]
    idx = kept.clamp(min=0)
    keys, values = call.keys.to(dtype)[kv, idx], call.values.to(dtype)[kv, idx]  # [Hq, M, s, d]
    z = torch.einsum("hmd,hmsd->hms", call.query.to(dtype), keys) * call.scaling
    if call.softcap is not None:
        z = torch.tanh(z / call.softcap) * call.softcap
    present = kept >= 0
    some = present.any(-1, keepdim=True)
    z = torch.where(present, z, float("-inf"))
    w = torch.softmax(torch.where(some, z, 0.0), dim=-1) * present  # an empty set: w = 0, out = 0
    return torch.einsum("hms,hmsd->hmd", w, values)


class CurvaturePolicy:
    """Top-mass at every layer plus ``eps_l``, kept sets frozen at their first choice.

    The first call at a layer chooses the top-mass and balancing sets (no grad) and stores
    ``delta[l] = m_bal - m_top`` (detached); later calls reuse the sets.  ``eps``: the perturbation
    by layer (absent: 0); with ``make_leaves`` each call creates a zero leaf ``eps[l]`` that
    requires grad (the point at which ``g`` and ``H`` are taken).
    """

    def __init__(self, budget: int, balancing_rule=None):
        config = Configuration("curvature", TOP_MASS, BALANCING, ALL_CELLS)
        rules = {BALANCING: balancing_rule} if balancing_rule is not None else None
        self.selector = SelectionPolicy(config, None, budget, None, rules=rules)
        self.kept: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        self.delta: dict[int, torch.Tensor] = {}
        self.eps: dict[int, torch.Tensor] = {}
        self.make_leaves = False

    def __call__(self, call: LayerCall, prefix: PrefixLayer) -> torch.Tensor:
        layer = call.layer
        if layer not in self.kept:
            with torch.no_grad():
                exact = _float32(call)  # the rows and rules read float32 (a float64 model's too)
                top, bal = self.selector.kept_sets(exact, prefix, exact.probabilities(), [TOP_MASS, BALANCING])
                self.kept[layer] = (top, bal)
                frozen = _detached(call)
                self.delta[layer] = restricted_output(frozen, bal) - restricted_output(frozen, top)
        out = restricted_output(call, self.kept[layer][0])
        if self.make_leaves:
            self.eps[layer] = torch.zeros_like(out, requires_grad=True)
        eps = self.eps.get(layer)
        return out if eps is None else out + eps


def _float32(call: LayerCall) -> LayerCall:
    def f(t):
        return t.detach().float()

    logits_dtype = None if call.logits_dtype == torch.float64 else call.logits_dtype
    return dataclasses.replace(
        call, query=f(call.query), keys=f(call.keys), values=f(call.values), logits_dtype=logits_dtype
    )


def _detached(call: LayerCall) -> LayerCall:
    return dataclasses.replace(call, query=call.query.detach(), keys=call.keys.detach(), values=call.values.detach())


class Curvature:
    """``L(eps)`` at the top-mass point of one document, its gradient, HVPs and switch directions.

    ``gradient()`` runs the one differentiable forward (choosing and freezing the kept sets,
    recording ``delta``) and the backward with ``create_graph``; ``hvp(v)`` is one double backward.
    """

    def __init__(self, model, token_ids, continuation: int, budget: int, balancing_rule=None):
        self.forward = RestrictedForward(model, token_ids, continuation, **needs([TOP_MASS, BALANCING], budget))
        self.forward.prefill(grad_safe=True)
        self.policy = CurvaturePolicy(budget, balancing_rule)
        self.budget = int(budget)
        self.targets = self.forward.ids[self.forward.n_prefix + 1 :]
        self._grad: tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]] | None = None

    @property
    def layers(self) -> list[int]:
        return sorted(self.policy.kept)

    def loss(self, eps: Mapping[int, torch.Tensor] | None = None, grad: bool = False) -> torch.Tensor:
        """``L(eps)`` (a scalar tensor, float64; frozen kept sets once chosen); ``grad``: keep its graph."""
        self.policy.eps, self.policy.make_leaves = dict(eps or {}), False
        with torch.enable_grad() if grad else torch.no_grad():
            return self._mean_nll()

    def gradient(self) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """``(L(0), g)``: ``g[i] = dL/deps_l`` for ``l = layers[i]``, with its graph kept for HVPs."""
        if self._grad is None:
            self.policy.eps, self.policy.make_leaves = {}, True
            try:
                with torch.enable_grad():
                    loss = self._mean_nll()
                    leaves = [self.policy.eps[layer] for layer in self.layers]
                    g = list(torch.autograd.grad(loss, leaves, create_graph=True))
            finally:
                self.policy.make_leaves = False
            self._grad = (loss.detach(), leaves, g)
        loss, _, g = self._grad
        return loss, [x.detach() for x in g]

    def hvp(self, v: list[torch.Tensor]) -> list[torch.Tensor]:
        """``H v`` at ``eps = 0`` (``v`` by ``layers``), by double backward of ``g . v``."""
        self.gradient()
        _, leaves, g = self._grad
        with torch.enable_grad():
            gv = sum((gi * vi).sum() for gi, vi in zip(g, v, strict=True))
            return [x.detach() for x in torch.autograd.grad(gv, leaves, retain_graph=True)]

    def direction(self, cells: np.ndarray) -> list[torch.Tensor]:
        """``delta_S`` by ``layers``: ``m_bal - m_top`` on the heads of `cells` ``[L, Hq]``, 0 elsewhere."""
        self.gradient()
        out = []
        for layer in self.layers:
            heads = torch.as_tensor(np.asarray(cells[layer], dtype=bool), device=self.policy.delta[layer].device)
            out.append(self.policy.delta[layer] * heads[:, None, None])
        return out

    def predict(self, cells: np.ndarray) -> tuple[float, float]:
        """``(g^T delta_S, 1/2 delta_S^T H delta_S)``."""
        _, g = self.gradient()
        v = self.direction(cells)
        hv = self.hvp(v)
        first = sum(float((gi.double() * vi.double()).sum()) for gi, vi in zip(g, v, strict=True))
        second = 0.5 * sum(float((hi.double() * vi.double()).sum()) for hi, vi in zip(hv, v, strict=True))
        return first, second

    def _mean_nll(self) -> torch.Tensor:
        logits = self.forward.logits(self.policy)[:-1]
        logp = torch.log_softmax(logits.double(), dim=-1)
        return -logp.gather(1, self.targets.unsqueeze(1)).mean()


def curvature_cell_sets(flat: np.ndarray, random_seeds: int, master_seed: int = 0) -> dict[str, np.ndarray]:
    """The switches the loss stage measures, by their configuration names: ``flat_switch`` (the map's
    flat cells) and ``random_<seed>`` (the random-cell controls' cells, drawn as the loss draws them)."""
    flat = np.asarray(flat, dtype=bool)
    sets = {FLAT_SWITCH: flat}
    for seed in range(int(random_seeds)):
        sets[f"random_{seed}"] = random_cells(flat.shape, int(flat.sum()), seed, master_seed)
    return sets


def curvature(
    model,
    token_ids,
    continuation: int,
    budget: int,
    cell_sets: Mapping[str, np.ndarray],
    balancing_rule=None,
    replay: bool = True,
    log: Callable[[str], None] = print,
) -> pl.DataFrame:
    """One row per cell set (``[layers, query heads]`` bool grids) and the all-cell row ``"all"``:
    ``first_order = g^T delta_S``, ``second_order = 1/2 delta_S^T H delta_S``, their sum
    ``predicted`` and ``predicted_share = predicted / predicted(all)``; with `replay` also
    ``replayed = L(delta_S) - L(0)`` (the exact loss along the frozen-set expansion's own path, one
    forward without grad: what the quadratic approximates) and its share (columns: CURVATURE_SCHEMA)."""
    started = time.time()
    point = Curvature(model, token_ids, continuation, budget, balancing_rule)
    loss, _ = point.gradient()
    log(f"  curvature: L(top_mass) = {float(loss):.4f} nats; forward + backward {time.time() - started:.1f} s")
    shape = (len(point.layers), point.policy.delta[point.layers[0]].shape[0])
    sets = {ALL: np.ones(shape, dtype=bool)} | {
        name: np.asarray(g, dtype=bool) for name, g in cell_sets.items() if name != ALL
    }
    rows = []
    for name, cells in sets.items():
        if cells.shape != shape:
            raise ValueError(f"cell set {name!r} has shape {cells.shape}; the model's cells are {shape}")
        t0 = time.time()
        first, second = point.predict(cells)
        replayed = (
            float(point.loss(dict(zip(point.layers, point.direction(cells), strict=True)))) - float(loss)
            if replay
            else None
        )
        log(
            f"  curvature {name:>12}: g.d {first:+.5f}  d.Hd/2 {second:+.5f}  L(d)-L(0) {replayed} nats ({time.time() - t0:.1f} s)"
        )
        rows.append(
            {
                "cell_set": name,
                "n_cells": int(cells.sum()),
                "budget": point.budget,
                "loss_top_mass": float(loss),
                "first_order": first,
                "second_order": second,
                "predicted": first + second,
                "replayed": replayed,
            }
        )
    for key in ("predicted", "replayed"):
        total = rows[0][key]
        for row in rows:
            row[f"{key}_share"] = row[key] / total if total else None
    return pl.DataFrame(rows, schema=CURVATURE_SCHEMA)
