"""A selector is one class: its registry names (``registered``) and its batched mask (``batched``) are
declared on it, and the registry and ``loss.selection.BATCHED`` are collected from the classes."""

from __future__ import annotations

import subprocess
import sys
import types
from dataclasses import dataclass
from typing import ClassVar

import pytest

from trustmass.core.selectors import registry as R
from trustmass.core.selectors.contract import TokenRule, contract

#: the registry as it was written out by hand before the classes declared it: names, configurations, order
#: (the order feeds AUDITED, FIG3_RULES and the audit's output order)
REGISTRY_BEFORE = (
    ("top_mass", "TopMass()"),
    (
        "balancing",
        "Balancing(enumerated=(4, 8, 16, 32), native_extra=4, "
        "pool=PoolRule(subset_cap=200000, max_extra=24, extra_override=()))",
    ),
    ("geometric", "GeometricRule()"),
    ("leverage", "Leverage(ridge=0.001)"),
    ("group_vote", "GroupVote()"),
    ("snapkv", "SnapKV(max_window=32, kernel=7, pooling='max')"),
    ("h2o", "H2O(recent_fraction=0.5, exposure='cumulative')"),
    ("quest", "Quest(page=None, projection='fit_then_fill')"),
    ("quest_page16", "Quest(page=16, projection='fit_then_fill')"),
    ("streaming_llm", "StreamingLLM(max_sinks=4)"),
    ("tova", "TOVA()"),
    ("recency", "Recency()"),
    ("h2o_debiased", "H2O(recent_fraction=0.5, exposure='count_debiased')"),
    ("value_aware_mass", "ValueAwareBlocks(score='mass', block=None, eps_a=1e-12, projection='fit_then_fill')"),
    ("value_aware_nolev", "ValueAwareBlocks(score='nolev', block=None, eps_a=1e-12, projection='fit_then_fill')"),
    ("value_aware_mii", "ValueAwareBlocks(score='mii', block=None, eps_a=1e-12, projection='fit_then_fill')"),
    ("block_select", "BlockSelect(recent_fraction=0.5, block=None, projection='fit_then_fill')"),
)


def test_the_collected_registry_is_the_hand_written_one():
    assert tuple((name, repr(rule)) for name, rule in R.REGISTRY.items()) == REGISTRY_BEFORE
    assert R.AUDITED == ("snapkv", "h2o", "quest", "streaming_llm")
    assert R.FIG3_RULES == (*R.AUDITED, "recency")


def _module(*classes: type) -> types.ModuleType:
    """A scratch rule module defining `classes`."""
    module = types.ModuleType("scratch_rules")
    for cls in classes:
        cls.__module__ = module.__name__
        setattr(module, cls.__name__, cls)
    return module


@dataclass(frozen=True)
class Early(TokenRule):
    evidence: ClassVar[frozenset] = frozenset()
    registered: ClassVar[dict] = {"related": {"early_related": {"k": 2}}, "operator": {"early": {}}}
    k: int = 1

    def select(self, x, budget):  # pragma: no cover - never run
        raise NotImplementedError


@dataclass(frozen=True)
class Late(Early):
    registered: ClassVar[dict] = {"operator": {"late": {}}}


def test_names_are_collected_by_section_then_class_order_and_subclasses_do_not_inherit_them():
    assert R.registered_classes((_module(Early, Late),)) == [Early, Late]
    collected = R.collect((_module(Early, Late),))
    assert list(collected) == ["early", "late", "early_related"]
    assert collected["early_related"] == Early(k=2) and type(collected["late"]) is Late

    @dataclass(frozen=True)
    class Unregistered(Early):  # nothing of its own: Early's names stay Early's
        pass

    assert R.registered_classes((_module(Unregistered),)) == []


def test_a_bad_section_or_a_taken_name_is_refused_naming_the_class():
    @dataclass(frozen=True)
    class Misplaced(Early):
        registered: ClassVar[dict] = {"elsewhere": {"x": {}}}

    with pytest.raises(ValueError, match=r"Misplaced.registered names section 'elsewhere'; fix: use one of"):
        R.collect((_module(Misplaced),))

    @dataclass(frozen=True)
    class Twin(Early):
        registered: ClassVar[dict] = {"operator": {"early": {}}}

    with pytest.raises(ValueError, match=r"Twin.registered: 'early' is already Early\(k=1\); fix: pick another name"):
        R.collect((_module(Early, Twin),))


def test_loss_batched_follows_the_named_mask_and_needs_one():
    @dataclass(frozen=True)
    class Named(Early):
        batched: ClassVar[str] = "trustmass.loss.selection:recency_mask"

    @dataclass(frozen=True)
    class Claims(Early):
        loss_batched: ClassVar[bool] = True

    @dataclass(frozen=True)
    class Garbled(Early):
        batched: ClassVar[str] = "trustmass.loss.selection.recency_mask"

    assert contract(Named()).loss_batched and contract(Named()).batched == "trustmass.loss.selection:recency_mask"
    assert not contract(Early()).loss_batched and contract(Early()).batched is None
    with pytest.raises(
        ValueError, match=r"Claims.loss_batched is True but it names no batched mask; fix: declare batched"
    ):
        contract(Claims())
    with pytest.raises(
        ValueError, match=r"Garbled.batched = .*; fix: name its batched mask as 'package.module:function'"
    ):
        contract(Garbled())


def test_batched_is_derived_from_the_classes_and_a_bad_name_is_refused():
    pytest.importorskip("torch")
    from trustmass.loss import block_rules, selection

    assert selection.BATCHED == {
        type(R.REGISTRY[n]): getattr(selection if n != "value_aware_mii" else block_rules, f)
        for n, f in (
            ("top_mass", "top_mass_mask"),
            ("balancing", "balancing_rule_mask"),
            ("snapkv", "snapkv_mask"),
            ("h2o", "h2o_mask"),
            ("quest", "quest_mask"),
            ("streaming_llm", "streaming_llm_mask"),
            ("recency", "recency_mask"),
            ("value_aware_mii", "value_aware_mask"),
        )
    }

    @dataclass(frozen=True)
    class Missing(Early):
        batched: ClassVar[str] = "trustmass.loss.selection:no_such_mask"

    with pytest.raises(ValueError, match=r"Missing.batched = 'trustmass.loss.selection:no_such_mask' does not resolve"):
        selection.batched_mask(Missing)


def test_the_registry_and_contracts_need_no_torch():
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from trustmass.core.selectors.contract import contract\n"
        "from trustmass.core.selectors.registry import REGISTRY\n"
        "from trustmass.loss.configurations import BATCHED_RULES\n"
        "assert [contract(r) for r in REGISTRY.values()] and 'h2o' in BATCHED_RULES\n"
        "assert 'torch' not in {m.split('.')[0] for m in sys.modules if sys.modules[m] is not None}\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
