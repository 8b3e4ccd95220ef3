"""The method roster of the deployment runner (spec part B): which kvpress scorer, and how its score becomes kept sets.

Kinds (what :func:`trustmass.deploy.runner.kept_sets` does with a method's recorded score):

``dense``      every position kept (no scorer): the ragged path's dense reference.
``uniform``    a kvpress ``ScorerPress``: the top ``s`` positions of its score per (layer, KV head), kvpress's own
               ``scores.topk`` (``ScorerPress.compress``), so every head keeps exactly ``s``.  ``snapkv_w32`` is
               SnapKV with ContourKV's 32-row window: the same score under the uniform allocation.
``pyramid``    PyramidKV: SnapKV's score, top ``n_l`` per head with kvpress's per-layer budget
               (``PyramidKVPress.get_layer_budget``); layers differ, so the cells do not average exactly ``s``.
               With its 64-query window kvpress falls back to SnapKV's uniform ``s`` below ``s = beta * 64 = 1,280``.
``headwise``   AdaKV's allocation over the inner scorer's score (safeguard top ``alpha * s`` per head, then the
               bottom scores pruned across the layer's heads), kvpress ships it as masks; here it is ragged.
``contourkv``  ContourKV (spec §7.1) on SnapKV's window score (window 32), or (``score="reconstruction"``) on
               KVzip's context-reconstruction score: ``unenforced`` (one global threshold) or ``enforced``
               (each cell capped at ``s``, SnapKV's count).
``kvzip``      KVzip's own kept sets: kvpress's ``compress_post`` on its reconstruction score
               (``shipped.KVzipScores``); kvpress ships them as masks, here they are ragged.

A press factory takes kvpress's ``compression_ratio`` for the item (:func:`ratio_for`), because several
scores depend on it: StreamingLLM's pruned span, H2O's recency window, CriticalKV's stage-1 selection,
Compactor's blending.  ``needs_hub`` methods download weights or masks (KVzap's scorer models, DuoAttention's
head patterns, FastKVzip's gates); :func:`method` refuses them unless ``hub=True``.  KVzip's reconstruction pass
is not a ``ScorerPress``: its methods have no factory, the runner runs the pass once per item.

The entries themselves (name, kind, contract, press, hub status, default) are :data:`trustmass.deploy.roster.ROSTER`.
"""

from __future__ import annotations

from dataclasses import replace

import kvpress
import numpy as np
from kvpress.utils import compute_n_kept

from trustmass.core.config_conflict import ConfigConflict
from trustmass.deploy.roster import CONTOUR_WINDOW, KINDS, ROSTER, Method

__all__ = [
    "CONTOUR_WINDOW",
    "FLOOR_READINGS",
    "KINDS",
    "METHODS",
    "SCOPES",
    "Method",
    "method",
    "ratio_for",
    "refused_on",
    "roster",
    "shipped_press",
]

#: the roster (:mod:`trustmass.deploy.roster`, one entry per method) by name
METHODS: dict[str, Method] = {m.name: m for m in ROSTER}


def method(name: str, *, hub: bool = False) -> Method:
    """The roster entry ``name``; ValueError for an unknown name, or a ``needs_hub`` one without ``hub=True``."""
    if name not in METHODS:
        raise ConfigConflict(
            f"unknown method {name!r}; known methods: {', '.join(METHODS)}; fix: name those in deploy.methods",
            fields=("deploy.methods",),
        )
    found = METHODS[name]
    if found.status == "needs_hub" and not hub:
        raise ConfigConflict(
            f"method {name!r} needs hub access (kvpress downloads its weights); enable it by listing it in "
            "deploy.methods with hub access (a config such as config/paper-deploy.yaml, or method(name, hub=True))",
            fields=("deploy.methods", "deploy.hub"),
        )
    return found


def refused_on(model, methods) -> list[str]:
    """The names among ``methods`` that kvpress will not run on ``model``: KVzip's context-reconstruction
    pass (``kvzip``, ``contourkv_recon_*``) on Gemma 3 models, which kvpress 0.5.5's ``KVzipPress`` refuses
    ("KVzipPress is not supported for Gemma3ForCausalLM") -- after a minute of other methods' work."""
    from transformers.models.gemma3.modeling_gemma3 import Gemma3PreTrainedModel

    if not isinstance(model, Gemma3PreTrainedModel):
        return []
    return [m.name for m in methods if m.score == "reconstruction"]


#: ContourKV's floor readings and scopes (spec §7.1 [A]) -> (contour_kept options, method-name suffix)
FLOOR_READINGS = {
    "counts": ({"floor_counts_toward_budget": True}, ""),
    "extra": ({"floor_counts_toward_budget": False}, "_floor_extra"),
}
SCOPES = {"global": ({"scope": "global"}, ""), "per_layer": ({"scope": "per_layer"}, "_per_layer")}


def roster(names, floor_readings=("counts",), scopes=("global",), *, hub: bool = False) -> list[Method]:
    """The methods ``names`` in order; every ContourKV method expanded into each floor reading and scope
    (the default reading ``counts`` and scope ``global`` keep the plain name)."""
    out = []
    for name in names:
        found = method(name, hub=hub)
        if found.kind != "contourkv":
            out.append(found)
            continue
        for reading in floor_readings:
            for scope in scopes:
                (a, sa), (b, sb) = FLOOR_READINGS[reading], SCOPES[scope]
                out.append(replace(found, name=found.name + sa + sb, options=tuple(sorted({**a, **b}.items()))))
    return out


def shipped_press(found: Method, ratio: float):
    """The press as kvpress ships ``found`` at ``compression_ratio = ratio`` (for the as-shipped byte ledger):
    head-wise methods wrap their scorer in ``AdaKVPress``, KVzip is ``KVzipPress`` (both mask a full-size
    cache); the others are their scorer; ContourKV and dense have none (None)."""
    if found.kind in ("dense", "contourkv"):
        return None
    if found.kind == "kvzip":
        return kvpress.KVzipPress(compression_ratio=ratio)
    scorer = found.press_factory(ratio)
    return kvpress.AdaKVPress(scorer) if found.name == "adakv" else scorer


def ratio_for(budget: int, n_tokens: int) -> float:
    """kvpress's ``compression_ratio`` that keeps exactly ``budget`` of ``n_tokens`` (``compute_n_kept``).

    ``1 - budget / n`` can round so that ``int(n * (1 - ratio))`` is ``budget - 1``; the ratio is nudged down
    one float step at a time until kvpress keeps ``budget``.
    """
    if not 1 <= budget <= n_tokens:
        raise ValueError(f"budget={budget} must lie in [1, context length {n_tokens}]")
    ratio = 1.0 - budget / n_tokens
    while compute_n_kept(n_tokens, ratio) < budget:
        ratio = float(np.nextafter(ratio, -1.0))
    return max(ratio, 0.0)
