"""Every kept-set rule by name: ``REGISTRY`` maps a name to a configured rule.

The rules live in their own modules and declare their contracts there
(``trustmass.core.selectors.contract``); this module only names them.  Adding a rule: its class
(with its contract) in a rule module, one entry here.
"""

from __future__ import annotations

from trustmass.core.selectors.ceiling_rules import Balancing, GeometricRule, GroupVote, Leverage, TopMass
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
    # related methods: 002 value-aware blocks, 004 block-select
    "value_aware_mass": ValueAwareBlocks(score="mass"),
    "value_aware_nolev": ValueAwareBlocks(score="nolev"),
    "value_aware_mii": ValueAwareBlocks(score="mii"),
    "block_select": BlockSelect(),
}

#: the four rules the audit scores against ES_pool (TOVA is top-mass; Figure 3's mass rules)
AUDITED = ("snapkv", "h2o", "quest", "streaming_llm")

