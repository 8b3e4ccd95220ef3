"""Every kept-set rule by name: ``REGISTRY`` maps a name to a configured rule.

The rules live in their own modules and declare their contracts there
(``trustmass.core.selectors.contract``), their part in the audit included; this module names them
and derives the audit's lists from those declarations.  Adding a rule: its class (with its
contract) in a rule module, one entry here.
"""

from __future__ import annotations

from collections.abc import Callable

from trustmass.core.selectors.ceiling_rules import Balancing, GeometricRule, GroupVote, Leverage, TopMass
from trustmass.core.selectors.contract import Contract, contract
from trustmass.core.selectors.deployed import H2O, TOVA, Quest, Recency, SnapKV, StreamingLLM
from trustmass.core.selectors.value_aware import BlockSelect, ValueAwareBlocks

REGISTRY: dict = {
    # the operator's own rules (the ceiling's)
    "top_mass": TopMass(),
    "balancing": Balancing(),
    "geometric": GeometricRule(),
    "leverage": Leverage(),
    "group_vote": GroupVote(),
    # the audited deployed rules (spec §5) and the positional control
    "snapkv": SnapKV(),
    "h2o": H2O(),
    "quest": Quest(),
    "quest_page16": Quest(page=16),
    "streaming_llm": StreamingLLM(),
    "tova": TOVA(),
    "recency": Recency(),
    # related methods: 002 count-debiased H2O (Stage I) and value-aware blocks, 004 block-select
    "h2o_debiased": H2O(exposure="count_debiased"),
    "value_aware_mass": ValueAwareBlocks(score="mass"),
    "value_aware_nolev": ValueAwareBlocks(score="nolev"),
    "value_aware_mii": ValueAwareBlocks(score="mii"),
    "block_select": BlockSelect(),
}


def names_where(declares: Callable[[Contract], bool]) -> tuple[str, ...]:
    """The registered rules whose contract satisfies `declares`, in registry order (read when
    called: a rule registered later is included)."""
    return tuple(name for name, rule in REGISTRY.items() if declares(contract(rule)))


def audit_rules() -> tuple[str, ...]:
    """The rules the audit scores: every rule declaring an audit role."""
    return names_where(lambda c: c.in_audit)


#: the paper's audited deployed rules (spec §5): SnapKV, H2O, Quest, StreamingLLM
AUDITED = names_where(lambda c: c.audit_role == "audited")
#: Figure 3's rules: the audited deployed rules and the positional control
FIG3_RULES = names_where(lambda c: c.drawn_in_figure3)

