"""Candidate pools and the exact pool search, against brute force and a plain-numpy reference."""

import math
from fractions import Fraction

import numpy as np
import pytest
from unit.instances import random_cases, random_instance

from trustmass.core import enumeration as en
from trustmass.core import operator as op
from trustmass.core.operator import Instance
from trustmass.core.selectors import balancing
from trustmass.selfcheck.worked_examples import partition_decision, partition_instance


def test_cap_rule_reproduces_paper_extras():
    assert [en.extras_for_budget(s) for s in (4, 8, 16, 32)] == [24, 12, 6, 4]
    assert [math.comb(s + en.extras_for_budget(s), s) for s in (4, 8, 16, 32)] == [20475, 125970, 74613, 58905]
    # one more key would break the cap where the cap (not max_extra) binds
    assert [math.comb(s + en.extras_for_budget(s) + 1, s) for s in (8, 16, 32)] == [203490, 245157, 435897]
    # the 25x cap-widening sweep admits e = 6 at s = 32
    assert en.extras_for_budget(32, subset_cap=5_000_000) == 6


def test_cap_rule_errors():
    with pytest.raises(ValueError, match="subset_cap"):
        en.extras_for_budget(8, subset_cap=5)
    with pytest.raises(ValueError, match="budget"):
        en.extras_for_budget(0)


@pytest.mark.parametrize("override", [{}, {8: 5, 32: 6}])
def test_pool_rule_is_the_cap_rule_with_the_configs_overrides(override):
    """PoolRule.from_config equals the formula the ceiling and the audit each wrote before
    (override.get(s, extras_for_budget(s, subset_cap, max_extra))) at the default config's budgets."""
    from conftest import REPO
    from trustmass.plumbing.config import validate_config

    cfg = validate_config(
        {"enumeration": {"extra_override": override}}, REPO / "workflow" / "schemas" / "config.schema.yaml"
    )
    rule = en.PoolRule.from_config(cfg)
    cap, most = cfg["enumeration"]["subset_cap"], cfg["enumeration"]["max_extra"]
    budgets = [*cfg["budgets"]["enumerated"], *cfg["budgets"]["native"]]
    assert [rule.extra(s) for s in budgets] == [override.get(s, en.extras_for_budget(s, cap, most)) for s in budgets]
    assert [rule.extra(s) for s in cfg["budgets"]["enumerated"]] == [24, 5 if override else 12, 6, 6 if override else 4]
    assert rule == en.PoolRule(extra_override=override) and hash(rule) == hash(en.PoolRule(extra_override=override))


def test_pool_rule_reads_the_cap_and_the_largest_extra():
    assert en.PoolRule(subset_cap=5_000_000).extra(32) == 6  # the 25x cap-widening sweep
    assert en.PoolRule(max_extra=3).extra(4) == 3
    assert en.PoolRule(extra_override={4: 2}).extra_override == ((4, 2),)
    with pytest.raises(ValueError, match="subset_cap"):
        en.PoolRule(subset_cap=5).extra(8)


def test_candidate_pool_definition():
    inst = random_instance(4, n=40, d=8)
    for s, e in [(4, 6), (8, 3), (1, 0), (10, 12)]:
        pool = en.candidate_pool(inst, s, e)
        top = op.top_mass(inst, s)
        assert np.all(np.diff(pool) > 0) and len(pool) == s + e
        assert set(top) <= set(pool)
        outside = np.setdiff1d(np.arange(40), top)
        ske = inst.single_key_errors
        extras = np.setdiff1d(pool, top)
        rest = np.setdiff1d(outside, extras)
        if len(rest) and len(extras):
            assert ske[extras].min() >= ske[rest].max()
    assert en.candidate_pool(inst, 30, 20).tolist() == list(range(40))  # short row: all keys


@pytest.mark.parametrize("seed, d", random_cases(40, base=100))
def test_pool_search_equals_numpy_and_direct(seed, d):
    inst = random_instance(seed, d=d)
    rng = np.random.default_rng(seed)
    s = int(rng.integers(1, inst.n_keys))
    e = int(rng.integers(0, inst.n_keys - s + 1))
    ref_es, ref_kept, ref_count = en.pool_optimum_numpy(inst, s, e)
    for complement in (False, True, None):
        res = en.pool_optimum(inst, s, e, use_complement=complement)
        assert res.es_pool == pytest.approx(ref_es, rel=1e-10, abs=1e-14)
        assert res.es_pool == pytest.approx(op.es(inst, res.kept), rel=1e-15, abs=0)  # direct value
        # the kernel's Gram / complement value agrees with the direct one up to cancellation
        W = inst.w_of(res.pool)
        tolerance = 1e-12 * np.abs(W @ W.T).sum() / op.kept_mass(inst, res.kept) ** 2
        if len(res.pool) > s:
            assert abs(res.es_fast**2 - res.es_pool**2) <= tolerance
        assert len(res.kept) == s and set(res.kept) <= set(res.pool)
        if len(res.pool) > s:
            assert res.n_subsets == ref_count == math.comb(len(res.pool), s)


@pytest.mark.parametrize("seed, d", random_cases(40, base=200))
def test_ordering_of_optima(seed, d):
    """ES <= ES_pool <= es(A_bal) <= es(A*), kappa_hat <= kappa, EF-free parts."""
    inst = random_instance(seed, d=d)
    scale = op.radius(inst)
    for s in range(1, min(inst.n_keys, 8)):
        e = min(3, inst.n_keys - s)
        ES, _ = en.exact_optimum_bruteforce(inst, s)
        pooled = en.pool_optimum(inst, s, e)
        bal = balancing(inst, s, pooled.pool)
        es_top = op.es(inst, op.top_mass(inst, s))
        slack = 1e-12 * scale
        assert ES <= pooled.es_pool + slack
        assert pooled.es_pool <= bal.es + slack
        assert bal.es <= es_top + slack
        kappa = op.ratio_kappa(es_top, ES, scale)
        kappa_hat = op.ratio_kappa(es_top, pooled.es_pool, scale)
        assert kappa_hat <= kappa * (1 + 1e-9)
        c_hat = op.closable_share(es_top, pooled.es_pool, scale)
        if np.isfinite(kappa_hat):
            assert c_hat == pytest.approx(1 - 1 / kappa_hat, abs=1e-12)


def test_full_pool_equals_exact_optimum():
    for seed in range(10):
        inst = random_instance(300 + seed, n=12, d=3)
        for s in (2, 5, 9):
            assert en.pool_optimum(inst, s, 12 - s).es_pool == pytest.approx(
                en.exact_optimum_bruteforce(inst, s)[0], rel=1e-12
            )


def test_cap_widening_counts():
    inst = random_instance(9, n=64, d=16)
    counts = [en.pool_optimum(inst, 32, e).n_subsets for e in (4, 5, 6)]
    assert counts == [58905, 435897, 2760681]
    values = [en.pool_optimum(inst, 32, e).es_pool for e in (4, 5, 6)]
    assert values[0] >= values[1] >= values[2]  # a wider pool can only help


def test_lexicographic_tie_break():
    # keys 0 and 1 identical, key 2 far: {0} and {1} tie at s = 1; the smaller index wins
    inst = Instance.from_arrays([0.4, 0.4, 0.2], [[1.0], [1.0], [-5.0]])
    res = en.pool_optimum(inst, 1, 2)
    assert res.kept.tolist() == [0]
    assert en.exact_optimum_bruteforce(inst, 1)[1].tolist() == [0]


@pytest.mark.parametrize(
    "u, yes, value",
    [
        ((3, 1, 1, 2, 2, 1), True, Fraction(0)),
        ((1, 1, 4), False, Fraction(1, 3)),
        ((1, 2, 3, 4, 5, 7), True, Fraction(0)),
    ],
)
def test_partition_reduction_exact(u, yes, value):
    p, v, s = partition_instance(u)
    n = len(p)
    inst = Instance.from_arrays([float(x) for x in p], np.array(v, dtype=float))
    assert partition_decision(u) is yes
    res = en.pool_optimum(inst, s, n - s)  # the pool is every key: ES_pool = ES
    exact = op.es_squared_rational(p, v, res.kept)
    assert exact == value**2
    assert (exact == 0) == yes
    assert exact == 0 or exact >= Fraction(2, n * n) ** 2
    # Lemma A.4: at |A| = m/2, m^2 g_A is an integer and es = 2|g_A|
    W = sum(u)
    g = Fraction(n * sum(v[j][0] for j in res.kept) - s * W, n * n)
    assert (g * n * n).denominator == 1 and 4 * g * g == exact


@pytest.mark.parametrize("seed", range(25))
def test_random_partition_instances(seed):
    rng = np.random.default_rng(seed)
    u = tuple(int(x) for x in rng.integers(0, 9, size=int(rng.integers(2, 7))))
    p, v, s = partition_instance(u)
    n = len(p)
    inst = Instance.from_arrays([float(x) for x in p], np.array(v, dtype=float))
    exact = op.es_squared_rational(p, v, en.pool_optimum(inst, s, n - s).kept)
    assert (exact == 0) == partition_decision(u)
    assert exact == 0 or exact >= Fraction(2, n * n) ** 2


def test_budget_at_least_row_length():
    inst = random_instance(5, n=6, d=2)
    res = en.pool_optimum(inst, 8, 4)
    assert res.kept.tolist() == list(range(6)) and res.es_pool <= 1e-14 * op.radius(inst)
