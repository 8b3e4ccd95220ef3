"""Block projection (related-methods §A.4 Stage III): strict block TopK, its token-fill, the
greedy fit the registered block rules use, and the lattice slack each leaves."""

import dataclasses

import numpy as np
import pytest

from trustmass.core.operator import descending_order
from trustmass.core.selectors.contract import run
from trustmass.core.selectors.deployed import contiguous_units, select_units
from trustmass.core.selectors.projection import (
    FIT_THEN_FILL,
    PROJECTIONS,
    STRICT,
    STRICT_THEN_FILL,
    Slack,
    chosen_units,
    lattice_slack,
    lattice_slack_tokens,
)
from trustmass.core.selectors.registry import REGISTRY
from trustmass.core.selectors.selector_input import SelectorInput
from trustmass.core.selectors.value_aware import ValueAwareBlocks

BLOCK_RULES = [name for name, rule in REGISTRY.items() if rule.unit in ("block", "page")]


def project(projection, n, budget, block, unit_score, token_score):
    return select_units(n, budget, contiguous_units(0, n, block), unit_score, token_score, projection=projection)


def test_the_block_rules_of_the_registry_take_every_projection():
    assert set(BLOCK_RULES) == {
        "quest",
        "quest_page16",
        "value_aware_mass",
        "value_aware_nolev",
        "value_aware_mii",
        "block_select",
    }
    for name in BLOCK_RULES:
        assert REGISTRY[name].projection == FIT_THEN_FILL and REGISTRY[name].fills_budget
        assert not dataclasses.replace(REGISTRY[name], projection=STRICT).fills_budget
        with pytest.raises(ValueError, match="projection"):
            dataclasses.replace(REGISTRY[name], projection="token_fill")


def test_a_short_winning_block_separates_the_three_projections():
    """10 keys in blocks [0..3] [4..7] [8, 9]; block scores 1, 2, 3 rank the short block first.
    Budget 6: floor(6/4) = 1 block.  Strict keeps the short block only (slack 4 > eps_lat(6, 4) = 2);
    token-fill spends the 4 on the best single keys 0, 1, 7 and the tie 2..6 at 0 -> 2; the greedy
    fit lets the whole block [4..7] in after the short one."""
    units, tokens = np.array([1.0, 2.0, 3.0]), np.array([5, 4, 0, 0, 0, 0, 0, 3, 9, 9], dtype=float)
    assert project(STRICT, 10, 6, 4, units, tokens).tolist() == [8, 9]
    assert project(STRICT_THEN_FILL, 10, 6, 4, units, tokens).tolist() == [0, 1, 2, 7, 8, 9]
    assert project(FIT_THEN_FILL, 10, 6, 4, units, tokens).tolist() == [4, 5, 6, 7, 8, 9]
    assert lattice_slack_tokens(6, 4) == 2
    sizes = contiguous_units(0, 10, 4).sizes
    assert (
        chosen_units(units, sizes, 6, STRICT).tolist()
        == chosen_units(units, sizes, 6, STRICT_THEN_FILL).tolist()
        == [2]
    )
    assert chosen_units(units, sizes, 6, FIT_THEN_FILL).tolist() == [2, 1]


def random_projection_case(seed):
    rng = np.random.default_rng(seed)
    block = int(rng.integers(1, 7))
    n = int(rng.integers(1, 60))
    units = len(contiguous_units(0, n, block))
    unit_score = rng.integers(0, 4, units).astype(float)  # ties common: the lower unit must win
    token_score = rng.integers(0, 6, n).astype(float)
    return n, block, unit_score, token_score


@pytest.mark.parametrize("seed", range(40))
def test_token_fill_keeps_strict_block_topk_and_spends_the_slack_on_the_best_tokens(seed):
    n, block, unit_score, token_score = random_projection_case(seed)
    units = contiguous_units(0, n, block)
    whole = units.sizes == block
    p = int(units.sizes.max())  # the unit size (a row shorter than `block` is one unit of n keys)
    for budget in range(1, n + 3):
        strict = project(STRICT, n, budget, block, unit_score, token_score)
        filled = project(STRICT_THEN_FILL, n, budget, block, unit_score, token_score)
        # strict block TopK: the floor(k/p) best units by (descending score, ascending unit), whole
        top = descending_order(unit_score)[: min(budget, n) // p]
        assert strict.tolist() == sorted(j for u in top for j in units[u])
        # token-fill keeps those units (never drops or swaps one) and leaves no slack
        assert set(strict.tolist()) <= set(filled.tolist())
        assert filled.shape[0] == min(budget, n)
        # the fill is the best single keys outside the blocks (ties to the lower position)
        added = np.setdiff1d(filled, strict)
        rest = np.setdiff1d(np.arange(n), strict)
        assert added.tolist() == sorted(rest[descending_order(token_score[rest])][: added.shape[0]].tolist())
        if whole[top].all():  # no short unit among the winners: the slack is exactly eps_lat
            assert min(budget, n) - strict.shape[0] == lattice_slack_tokens(min(budget, n), block)
        if min(budget, n) % block == 0 and whole.all():  # k a multiple of p, every unit whole
            fit = project(FIT_THEN_FILL, n, budget, block, unit_score, token_score)
            assert filled.tolist() == strict.tolist() == fit.tolist()


def captured_row(seed: int, n: int, d: int = 4) -> SelectorInput:
    """Row n - 1 of a causal softmax over random queries and keys, with what every block rule reads."""
    rng = np.random.default_rng(seed)
    keys, values, queries = (
        rng.standard_normal((n, d)) * 1.5,
        rng.standard_normal((n, d)),
        rng.standard_normal((n, d)) * 1.5,
    )
    logits = np.where(np.tril(np.ones((n, n), dtype=bool)), queries @ keys.T / np.sqrt(d), -np.inf)
    P = np.exp(logits - logits.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    return SelectorInput(p=P[-1], values=values, keys=keys, query=queries[-1], acc_mass=P.sum(axis=0))


@pytest.mark.parametrize("name", BLOCK_RULES)
def test_registered_block_rules_under_strict_topk_and_token_fill(name):
    rule = REGISTRY[name]
    for seed, n in enumerate((23, 64, 101)):
        x = captured_row(seed, n)
        for budget in (4, 5, 8, 13, 16, 30, 32, 64):
            if budget < rule.min_budget:
                continue
            strict = run(dataclasses.replace(rule, projection=STRICT), x, budget)
            filled = run(dataclasses.replace(rule, projection=STRICT_THEN_FILL), x, budget)
            default = run(rule, x, budget)
            assert set(strict.tolist()) <= set(filled.tolist()) and set(strict.tolist()) <= set(default.tolist())
            slack = lattice_slack(rule, x, budget)
            assert slack == Slack(before=min(budget, n) - strict.shape[0], after=0)
            if slack.before == 0:  # nothing to fill: the three projections agree
                assert filled.tolist() == strict.tolist() == default.tolist()


def test_slack_before_and_after_token_fill_on_whole_blocks():
    """Value-aware blocks of 4 on 32 keys: budget 13 leaves eps_lat = 1, budget 16 none."""
    x = captured_row(7, 32)
    rule = ValueAwareBlocks(score="mii", block=4)
    assert lattice_slack(rule, x, 13) == Slack(before=1, after=0)
    assert lattice_slack(rule, x, 16) == Slack(before=0, after=0)
    assert lattice_slack(rule, x, 40) == Slack(before=0, after=0)  # the whole row fits
    assert run(dataclasses.replace(rule, projection=STRICT_THEN_FILL), x, 16).tolist() == run(rule, x, 16).tolist()


def test_a_strict_rule_may_keep_fewer_keys_but_no_more():
    x = captured_row(3, 30)
    strict = dataclasses.replace(ValueAwareBlocks(block=4), projection=STRICT)
    assert run(strict, x, 10).shape[0] == 8

    class Overfull(type(strict)):
        def select(self, x, budget):
            return np.arange(budget + 1)

    with pytest.raises(AssertionError, match="bad kept set"):
        run(Overfull(block=4, projection=STRICT), x, 10)
    assert set(PROJECTIONS) == {STRICT, STRICT_THEN_FILL, FIT_THEN_FILL}
