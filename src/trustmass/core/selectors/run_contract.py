"""The fixed selector contract of one selector run, as a hashed record (related-methods §A.1).

002's Assumption 1: a comparison fixes, before any outcome is measured, the prefill attention (the
capture), the query domain, the causal mask, the observation window, the budget, the allocation,
the score-to-cache projection (with the block size), the tie break, the scored layers and their
weights, the head aggregation and the pooling.  Two runs compare like for like (a clean Stage II
comparison) only when their records differ in the ranking scalar alone; any other difference makes
the comparison a transfer / sensitivity check.

A :class:`RunContract` is frozen; its :attr:`~RunContract.sha256` hashes a canonical JSON (sorted
keys, no whitespace, ASCII, no NaN), so the same record hashes the same in every process.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, fields

#: the field that may differ between like-for-like runs
RANKING = "ranking"


@dataclass(frozen=True)
class RunContract:
    capture_id: str  # the captured prefill attention (model, corpus, document)
    query_domain: str  # which query rows the score reads, e.g. "own_row", "prefix_rows", "window_rows"
    causal_mask: str  # e.g. "causal", "sliding_window:4096"
    observation_window: str  # rows observed per score, e.g. "1", "16", "prefix"
    budget_rule: str  # e.g. "tokens:8" (s) or "ratio:0.05" (b)
    allocation: str  # layer/head budgets: "uniform" | "pyramid" | "ada" | "contour"
    projection: str  # "token_topk" | "strict:p=4" | "strict_then_fill:p=4" | "fit_then_fill:p=4", forced keys appended
    tie_break: str  # e.g. "descending_score_then_ascending_position"
    layer_set: tuple[int, ...]  # L*
    layer_weights: tuple[float, ...]  # beta_l, one per layer of layer_set
    head_aggregation: str  # "per_query_head" | "sum" | "mean" | "per_kv_head"
    pooling: str  # "none" or "kind:kernel", e.g. "max:7"
    ranking: str  # the ranking scalar, e.g. "accumulated_mass", "block_mii"

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("layer_set", "layer_weights"):
                if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
                    raise TypeError(f"RunContract.{f.name} must be a sequence; got {value!r}")
                cast = int if f.name == "layer_set" else float
                object.__setattr__(self, f.name, tuple(cast(v) for v in value))
            elif not isinstance(value, str) or not value:
                raise TypeError(f"RunContract.{f.name} must be a nonempty string; got {value!r}")
        if len(self.layer_weights) != len(self.layer_set):
            raise ValueError(f"RunContract: {len(self.layer_weights)} layer_weights for {len(self.layer_set)} layers; fix: one weight per layer")
        if not all(math.isfinite(w) for w in self.layer_weights):
            raise ValueError(f"RunContract.layer_weights must be finite; got {self.layer_weights}")

    def canonical_json(self) -> str:
        """The record as JSON with sorted keys and no whitespace: what the hash reads."""
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.canonical_json().encode("ascii")).hexdigest()


def differing_fields(a: RunContract, b: RunContract) -> tuple[str, ...]:
    """The contract fields in which a and b differ, in declaration order."""
    return tuple(f.name for f in fields(RunContract) if getattr(a, f.name) != getattr(b, f.name))


def comparable(a: RunContract, b: RunContract) -> bool:
    """Whether a and b compare like for like: every field but the ranking scalar equal (a run is
    trivially comparable with itself)."""
    return set(differing_fields(a, b)) <= {RANKING}
