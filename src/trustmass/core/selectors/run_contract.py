"""The fixed selector contract of one selector run, as a hashed record (related-methods §A.1).

002's Assumption 1: a comparison fixes, before any outcome is measured, the prefill attention (the
capture), the query domain, the causal mask, the observation window, the budget, the allocation,
the score-to-cache projection (with the block size), the tie break, the scored layers and their
weights, the head aggregation and the pooling.  Two runs compare like for like (a clean Stage II
comparison) only when their records differ in the ranking scalar alone; any other difference makes
the comparison a transfer / sensitivity check.

A :class:`RunContract` is frozen; its :attr:`~RunContract.sha256` hashes a canonical JSON (sorted
keys, no whitespace, ASCII, no NaN), so the same record hashes the same in every process.

:func:`selector_run` writes the record of a registered rule at one budget: the capture, mask,
allocation and layers from the caller; the query domain, observation window, head aggregation and
a first reading of the rest from the rule's declared contract (``selectors.contract``); and what
the rule's configuration sets -- its ranking scalar, window, pooling, projection and forced keys --
from its ``run_terms(budget)`` where it declares one.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, fields

from trustmass.core.selectors.contract import contract

#: the field that may differ between like-for-like runs
RANKING = "ranking"
#: the project's tie rule everywhere (operator.descending_order)
TIE_BREAK = "descending_score_then_ascending_position"
#: the query rows each kind of evidence reads (positional rules read none)
EVIDENCE_ROWS = {"mass": "row_i", "accumulated_mass": "rows_0..i", "window": "last_w_rows", "query": "query_i"}


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
            raise ValueError(
                f"RunContract: {len(self.layer_weights)} layer_weights for {len(self.layer_set)} layers; fix: one weight per layer"
            )
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


def rule_terms(rule, budget: int) -> dict[str, str]:
    """The contract terms a rule fixes at `budget`: read from its declared contract, then replaced
    by the rule's own ``run_terms(budget)`` where it declares one."""
    c = contract(rule)
    rows = sorted(EVIDENCE_ROWS[e] for e in c.evidence if e in EVIDENCE_ROWS)
    terms = {
        "query_domain": "+".join(rows) or "none",
        "observation_window": "prefix" if "accumulated_mass" in c.evidence else "1" if rows else "0",
        "projection": f"{c.unit}_topk",
        "pooling": "none",
        "head_aggregation": "per_query_head" if c.scope == "per_row" else "sum_over_kv_group",
        RANKING: type(rule).__name__,
    }
    terms.update(getattr(rule, "run_terms", lambda s: {})(int(budget)))
    return terms


def selector_run(
    rule,
    budget: int,
    capture_id: str,
    layer_set: tuple[int, ...],
    layer_weights: tuple[float, ...] | None = None,
    causal_mask: str = "causal",
    allocation: str = "uniform",
) -> RunContract:
    """The record of `rule` run at token budget `budget` on the capture `capture_id`, scoring the
    layers `layer_set` (weights: equal, summing to 1, unless given); every head gets the budget
    (``uniform``) unless an allocation is named."""
    layers = tuple(layer_set)
    weights = tuple(layer_weights) if layer_weights is not None else tuple(1.0 / len(layers) for _ in layers)
    return RunContract(
        capture_id=capture_id,
        causal_mask=causal_mask,
        budget_rule=f"tokens:{int(budget)}",
        allocation=allocation,
        tie_break=TIE_BREAK,
        layer_set=layers,
        layer_weights=weights,
        **rule_terms(rule, budget),
    )


def contrast(rule_a, rule_b, budget: int) -> str:
    """``like_for_like`` when two rules run at `budget` on one capture differ in the ranking scalar
    alone (a Stage II comparison), else ``crosses: <fields>`` (a transfer check)."""
    a, b = (selector_run(rule, budget, "capture", (0,)) for rule in (rule_a, rule_b))
    crossed = [f for f in differing_fields(a, b) if f != RANKING]
    return "like_for_like" if not crossed else "crosses: " + ", ".join(crossed)
