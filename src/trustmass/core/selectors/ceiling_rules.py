"""The operator's own rules (the ceiling's selectors) behind the selector contract.

Top-mass, balancing, the Frank-Wolfe geometric rule, ridge leverage and the GQA group vote, as the
ceiling computes them (``trustmass.ceiling.records``), wrapped to choose positions of one captured
row: rules built on the operator work on the row's positive-mass keys and pad with zero-mass
positions (``SelectorInput.on_positions``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from trustmass.core.enumeration import PoolRule, candidate_pool
from trustmass.core.operator import descending_order
from trustmass.core.selectors.balancing import balancing
from trustmass.core.selectors.contract import TokenRule
from trustmass.core.selectors.geometric import geometric
from trustmass.core.selectors.group_vote import group_vote
from trustmass.core.selectors.leverage import leverage
from trustmass.core.selectors.selector_input import SelectorInput


@dataclass(frozen=True)
class TopMass(TokenRule):
    """A*_s: the s largest masses (descending mass, ties to the smaller position)."""

    evidence: ClassVar[frozenset] = frozenset({"mass"})
    audit_role: ClassVar[str] = "scored"  # the audit's reference: its excess is kappa_hat
    cache_faithful: ClassVar[str] = "frozen_prefill"
    registered: ClassVar[dict] = {"operator": {"top_mass": {}}}
    batched: ClassVar[str] = "trustmass.loss.selection:top_mass_mask"

    def select(self, x: SelectorInput, budget: int) -> np.ndarray:
        return np.sort(descending_order(np.asarray(x.p, dtype=np.float64))[: int(budget)])


@dataclass(frozen=True)
class Balancing(TokenRule):
    """Balancing swaps from A*_s inside the candidate pool C_s, with the ceiling's convention:
    e(s) extras at the enumerated budgets (``pool``: 24/12/6/4 at 4/8/16/32 by default),
    `native_extra` elsewhere."""

    enumerated: tuple[int, ...] = (4, 8, 16, 32)
    native_extra: int = 4
    pool: PoolRule = PoolRule()

    evidence: ClassVar[frozenset] = frozenset({"mass", "values"})
    reads_dense_output: ClassVar[bool] = True
    registered: ClassVar[dict] = {"operator": {"balancing": {}}}
    batched: ClassVar[str] = "trustmass.loss.selection:balancing_rule_mask"

    def extra(self, budget: int) -> int:
        return self.pool.extra(budget) if budget in self.enumerated else self.native_extra

    def select(self, x: SelectorInput, budget: int) -> np.ndarray:
        inst, s = x.instance, min(int(budget), x.instance.n_keys)
        kept = balancing(inst, s, candidate_pool(inst, s, self.extra(int(budget)))).kept
        return x.on_positions(kept, budget)


@dataclass(frozen=True)
class GeometricRule(TokenRule):
    """A^geo_s: the Frank-Wolfe support padded with top-mass keys (over all keys)."""

    evidence: ClassVar[frozenset] = frozenset({"mass", "values"})
    reads_dense_output: ClassVar[bool] = True
    registered: ClassVar[dict] = {"operator": {"geometric": {}}}

    def select(self, x: SelectorInput, budget: int) -> np.ndarray:
        inst = x.instance
        return x.on_positions(geometric(inst, min(int(budget), inst.n_keys), with_ef=False).kept, budget)


@dataclass(frozen=True)
class Leverage(TokenRule):
    """A^lev_s: the largest ridge leverages over the row's keys 0..i (all visible keys)."""

    ridge: float = 1e-3

    evidence: ClassVar[frozenset] = frozenset({"keys"})
    registered: ClassVar[dict] = {"operator": {"leverage": {}}}

    def select(self, x: SelectorInput, budget: int) -> np.ndarray:
        return leverage(np.asarray(x.keys, dtype=np.float64), int(budget), self.ridge)


@dataclass(frozen=True)
class GroupVote(TokenRule):
    """A_vote: top-s of the KV group's summed rows (spec §1.8); group size 1 is top-mass."""

    evidence: ClassVar[frozenset] = frozenset({"mass"})
    scope: ClassVar[str] = "shared_group"
    registered: ClassVar[dict] = {"operator": {"group_vote": {}}}

    def select(self, x: SelectorInput, budget: int) -> np.ndarray:
        rows = x.group_rows if x.group_rows is not None else np.asarray(x.p)[None, :]
        return group_vote(rows, int(budget))
