"""Balancing, Frank-Wolfe/geometric, ridge leverage and the group vote."""

from itertools import combinations

import numpy as np
import pytest
from unit.instances import random_cases, random_instance

from trustmass.core import enumeration as en
from trustmass.core import operator as op
from trustmass.core.operator import Instance
from trustmass.core.selectors import (
    balancing,
    frank_wolfe_support,
    frank_wolfe_trace,
    geometric,
    group_vote,
    leverage,
    ridge_leverage_scores,
)


def exact_ef(inst: Instance, s: int) -> float:
    return min(op.ef(inst, A) for A in combinations(range(inst.n_keys), s))


def test_balancing_example_2_2():
    inst = Instance.from_arrays([0.45, 0.45, 0.10], [-1.0, 1.0, 5.0])
    bal = balancing(inst, 2, np.arange(3))
    assert bal.kept.tolist() == [0, 2] and bal.swaps == 1
    assert bal.es == pytest.approx(9 / 22, rel=1e-12)
    assert bal.es / en.pool_optimum(inst, 2, 1).es_pool == pytest.approx(1.0, rel=1e-12)  # kappa_hat_bal = 1


def test_balancing_takes_best_swap_each_round():
    for seed in range(20):
        inst = random_instance(700 + seed, n=12, d=3)
        s, pool = 4, en.candidate_pool(inst, 4, 5)
        one = balancing(inst, s, pool, max_swaps=1)
        if one.swaps == 0:
            continue
        top = op.top_mass(inst, s)
        swaps = [np.sort(np.r_[np.delete(top, i), j]) for i in range(s) for j in np.setdiff1d(pool, top)]
        assert one.es == pytest.approx(min(op.es(inst, A) for A in swaps), rel=1e-12)


def test_balancing_rejects_pool_without_top_mass():
    inst = random_instance(1, n=8, d=2)
    with pytest.raises(ValueError, match="must contain"):
        balancing(inst, 3, np.setdiff1d(np.arange(8), op.top_mass(inst, 3)[:1]))


@pytest.mark.parametrize("seed, d", random_cases(24, base=400))
def test_free_weight_bounds(seed, d):
    """EF <= ES, EF <= sigma/sqrt(s), EF_FW >= EF, EF non-increasing, EF(d+1) = 0."""
    inst = random_instance(seed, n=int(np.random.default_rng(seed).integers(4, 10)), d=d)
    scale = op.radius(inst)
    previous = np.inf
    for s in range(1, inst.n_keys):
        EF = exact_ef(inst, s)
        ES, _ = en.exact_optimum_bruteforce(inst, s)
        geo = geometric(inst, s)
        assert EF <= ES + 1e-12 * scale
        assert EF <= op.sigma(inst) / np.sqrt(s) + 1e-12 * scale
        assert geo.ef_fw >= EF - 1e-12 * scale
        assert EF <= previous + 1e-12 * scale
        previous = EF
        if s >= d + 1:
            assert EF <= 1e-9 * scale
        assert len(geo.kept) == s and set(geo.support) <= set(geo.kept)
        assert geo.es == pytest.approx(op.es(inst, geo.kept))


def test_geometric_padding_uses_mass_order():
    inst = Instance.from_arrays([0.5, 0.2, 0.2, 0.1], [[0.0], [1.0], [-1.0], [0.0]])
    # mu = 0 coincides with key 0 (and key 3): FW stops at once, support {0}; pad by mass: key 1
    geo = geometric(inst, 2)
    assert geo.support.tolist() == [0]
    assert geo.kept.tolist() == [0, 1]
    assert geo.ef_fw == pytest.approx(0.0, abs=1e-15)


def test_frank_wolfe_restricted_to_candidates():
    inst = random_instance(21, n=14, d=3)
    cand = en.candidate_pool(inst, 4, 3)
    support, _ = frank_wolfe_support(inst, 4, candidates=cand)
    assert set(support) <= set(cand)
    assert set(geometric(inst, 4, candidates=cand).support) <= set(cand)


def test_ridge_leverage_matches_explicit_inverse():
    rng = np.random.default_rng(3)
    K = rng.standard_normal((30, 6))
    lam = 1e-3 * np.trace(K.T @ K) / 6
    M = np.linalg.inv(K.T @ K + lam * np.eye(6))
    expected = np.array([k @ M @ k for k in K])
    assert np.allclose(ridge_leverage_scores(K, 1e-3), expected, rtol=1e-10)
    kept = leverage(K, 5)
    assert kept.tolist() == sorted(np.argsort(-expected, kind="stable")[:5].tolist())
    assert set(leverage(K, 3, candidates=np.arange(10))) <= set(range(10))


def test_group_vote_single_head_is_top_mass():
    for seed in range(20):
        inst = random_instance(seed, d=2)
        for s in range(1, inst.n_keys + 1):
            assert group_vote(inst.p[None, :], s).tolist() == op.top_mass(inst, s).tolist()


def test_group_vote_sums_rows():
    rows = np.array([[0.6, 0.3, 0.1], [0.1, 0.3, 0.6], [0.2, 0.5, 0.3]])
    assert group_vote(rows, 1).tolist() == [1]  # column sums 0.9, 1.1, 1.0
    assert group_vote(rows, 2).tolist() == [1, 2]


def test_one_frank_wolfe_trace_serves_every_budget():
    for seed in range(15):
        inst = random_instance(900 + seed, n=40, d=int(np.random.default_rng(seed).choice([2, 3, 8])))
        trace = frank_wolfe_trace(inst, 16)
        for s in (1, 2, 4, 8, 16):
            alone = geometric(inst, s)
            shared = geometric(inst, s, trace=trace)
            assert shared.support.tolist() == alone.support.tolist() and shared.iterations == alone.iterations
            assert shared.kept.tolist() == alone.kept.tolist() and shared.ef_fw == alone.ef_fw
        if trace.gap_stop is None:  # cut short at s = 16: a larger budget needs a longer run
            with pytest.raises(ValueError, match="trace too short"):
                trace.support(32)


def interpreted_frank_wolfe(inst: Instance, s_max: int, candidates=None, gap_tol=1e-12, iter_factor=50):
    """The numpy loop the compiled Frank-Wolfe replaces: (order, sizes, gap stop)."""
    keys = np.arange(inst.n_keys) if candidates is None else np.sort(np.asarray(candidates, dtype=np.int64))
    V, mu = inst.v[keys], inst.mu
    scale2 = max(float(inst.deviation_norms[keys].max()) ** 2, np.finfo(float).tiny)
    start = int(np.argmin(inst.deviation_norms[keys]))
    x, support, sizes, gap_stop = V[start].copy(), [start], [], None
    for t in range(1, iter_factor * s_max + 2):
        sizes.append(len(support))
        if len(support) >= s_max or t > iter_factor * s_max:
            break
        grad = x - mu
        dots = V @ grad
        j = int(np.argmin(dots))
        gap = float(grad @ x - dots[j])
        step = V[j] - x
        denom = float(step @ step)
        if gap <= gap_tol * scale2 or denom == 0.0:
            gap_stop = t
            break
        gamma = min(max(float((mu - x) @ step) / denom, 0.0), 1.0)
        x = x + gamma * step
        if gamma > 0.0 and j not in support:
            support.append(j)
    return keys[np.array(support)].tolist(), sizes, gap_stop


@pytest.mark.parametrize("seed", range(12))
def test_compiled_frank_wolfe_follows_the_interpreted_path_bit_for_bit(seed):
    """Same vertices, same support sizes, same stop, on full rows and on candidate pools."""
    rng = np.random.default_rng(seed)
    inst = random_instance(1200 + seed, n=int(rng.integers(30, 300)), d=int(rng.choice([3, 16, 64])))
    for s, extra in ((16, None), (8, 12), (16, 24)):
        candidates = None if extra is None else en.candidate_pool(inst, s, extra)
        trace = frank_wolfe_trace(inst, s, candidates)
        order, sizes, gap_stop = interpreted_frank_wolfe(inst, s, candidates)
        assert trace.order.tolist() == order and trace.size_at_start.tolist() == sizes and trace.gap_stop == gap_stop
