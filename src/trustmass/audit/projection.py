"""Block projection and token-fill on captured rows (related-methods A.4, Stage III).

Strict block TopK keeps the ``floor(s / b)`` best blocks and leaves the lattice slack
``s - b floor(s / b)`` unspent (more where the row's short last block is among them); token-fill
spends the slack on single keys by the rule's own token score without changing the blocks
(``selectors.projection``).  For every sampled row of a capture shard, every budget and every block
rule (block-select and the value-aware rules, at one configured block size so that slack exists:
the registry's token-scaled sizes divide most budgets), one record: the slack before and after
token-fill and the es of the strict, token-filled and default (``fit_then_fill``) kept sets, on the
row's positive-mass keys.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

import numpy as np
import polars as pl

from trustmass.core import operator as op
from trustmass.core.config_conflict import ConfigConflict
from trustmass.core.selectors.contract import run
from trustmass.core.selectors.projection import FIT_THEN_FILL, STRICT, STRICT_THEN_FILL
from trustmass.core.selectors.registry import REGISTRY
from trustmass.core.selectors.selector_input import SelectorInput
from trustmass.plumbing.config import embedded_default

COLUMNS = [
    "model",
    "corpus",
    "doc",
    "layer",
    "head",
    "query_pos",
    "budget",
    "rule",
    "block",
    "slack_strict",
    "slack_fill",
    "es_strict",
    "es_fill",
    "es_fit",
]
PROJECTED = (STRICT, STRICT_THEN_FILL, FIT_THEN_FILL)


_DEFAULT = embedded_default()  # config.yaml: the defaults below are its values, not copies
_PROJECTION = _DEFAULT["diagnostics"]["projection"]


@dataclass(frozen=True)
class ProjectionSettings:
    rules: tuple[str, ...] = tuple(_PROJECTION["rules"])
    budgets: tuple[int, ...] = tuple(_PROJECTION["budgets"])
    block: int = _PROJECTION["block"]
    windows: tuple[int, ...] = tuple(_DEFAULT["capture"]["windows"])

    def __post_init__(self):
        for name in self.rules:
            if name not in REGISTRY or not hasattr(REGISTRY[name], "projection"):
                raise ConfigConflict(
                    f"diagnostics.projection.rules: {name!r} is not a block rule of the registry; "
                    "fix: block_select or value_aware_mass / _nolev / _mii",
                    fields=("diagnostics.projection.rules",),
                )

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> ProjectionSettings:
        """From the config keys diagnostics/projection and capture/windows."""
        projection = cfg["diagnostics"]["projection"]
        return cls(
            rules=tuple(projection["rules"]),
            budgets=tuple(int(b) for b in projection["budgets"]),
            block=int(projection["block"]),
            windows=tuple(cfg["capture"]["windows"]),
        )


def _es(x: SelectorInput, kept: np.ndarray) -> float | None:
    idx = x.instance_index[np.asarray(kept, dtype=np.int64)]
    idx = idx[idx >= 0]
    return op.es(x.instance, np.sort(idx)) if idx.size else None


def row_projection(x: SelectorInput, settings: ProjectionSettings) -> list[dict]:
    """One record per (budget, rule) of one row."""
    out = []
    for s in settings.budgets:
        want = min(s, x.n_keys)
        for name in settings.rules:
            rule = replace(REGISTRY[name], block=settings.block)
            if s < rule.min_budget:
                continue
            strict, filled, fit = (run(replace(rule, projection=p), x, s) for p in PROJECTED)
            out.append(
                {
                    "budget": s,
                    "rule": name,
                    "block": settings.block,
                    "slack_strict": want - strict.size,
                    "slack_fill": want - filled.size,
                    "es_strict": _es(x, strict),
                    "es_fill": _es(x, filled),
                    "es_fit": _es(x, fit),
                }
            )
    return out


def shard_projection(shard_path: str, model: str, corpus: str, doc: str, settings: ProjectionSettings) -> pl.DataFrame:
    """Every projection record of one capture shard (:data:`COLUMNS`)."""
    from trustmass.contracts.shards import read_layer, read_metadata

    rows = []
    for layer in sorted(int(k) for k in read_metadata(shard_path)["layers"]):
        t = read_layer(shard_path, layer)
        n_q, n_kv = t["p"].shape[0], t["values"].shape[0]
        for h in range(n_q):
            for r, pos in enumerate(t["positions"][h // (n_q // n_kv)].tolist()):
                for rec in row_projection(SelectorInput.from_layer(t, h, r, settings.windows), settings):
                    rows.append({**rec, "layer": layer, "head": h, "query_pos": int(pos)})
    frame = pl.DataFrame(
        rows,
        schema_overrides={"es_strict": pl.Float64, "es_fill": pl.Float64, "es_fit": pl.Float64},
        infer_schema_length=None,
    )
    return frame.with_columns(model=pl.lit(model), corpus=pl.lit(corpus), doc=pl.lit(doc)).select(COLUMNS)
