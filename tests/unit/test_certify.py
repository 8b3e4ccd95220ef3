"""MISOCP certifier (spec §3.3-3.4): exactness on small rows, the ZeroES reduction, statuses."""

from fractions import Fraction

import numpy as np
import pytest

pytest.importorskip("pyscipopt")

from unit.instances import random_instance

from trustmass.certification import misocp as cert
from trustmass.core.enumeration import candidate_pool, exact_optimum_bruteforce, pool_optimum
from trustmass.core.operator import Instance, es, es_squared_rational
from trustmass.selfcheck.worked_examples import partition_decision, partition_instance

CASES = [
    (seed, n, s, d)
    for seed, (n, s, d) in enumerate([(10, 3, 1), (12, 4, 2), (14, 5, 3), (16, 4, 8), (16, 6, 2), (13, 2, 3)])
]


def _partition_row(u):
    p, v, s = partition_instance(u)
    return Instance.from_arrays([float(x) for x in p], np.array(v, dtype=float)), p, v, s


@pytest.mark.parametrize("seed,n,s,d", CASES)
def test_minimise_matches_bruteforce(seed, n, s, d):
    inst = random_instance(100 + seed, n=n, d=d)
    exact, _ = exact_optimum_bruteforce(inst, s)
    po = pool_optimum(inst, s, 1)  # a deliberately small pool: the incumbent is often suboptimal
    res = cert.minimise(inst, s, po.kept)
    assert res.status == "optimal"
    assert res.es == pytest.approx(exact, rel=1e-6, abs=1e-15)
    assert res.es == es(inst, res.best)  # the reported value is the direct float64 es
    assert len(res.best) == s == len(np.unique(res.best))


@pytest.mark.parametrize("seed,n,s,d", CASES)
def test_certify_brackets_bruteforce(seed, n, s, d):
    inst = random_instance(100 + seed, n=n, d=d)
    exact, _ = exact_optimum_bruteforce(inst, s)
    po = pool_optimum(inst, s, 1)
    c = cert.certify(inst, s, po.kept, rel_gap=1e-7, time_limit=20)
    assert c.status in (cert.CONFIRMED_OPTIMAL, cert.IMPROVED, cert.WITHIN_1PCT)
    assert c.es_cert == pytest.approx(exact, rel=1e-6, abs=1e-15)
    assert c.lower_bound <= exact * (1 + 1e-9)  # a valid lower bound
    assert c.es_cert == es(inst, c.best) and len(c.best) == s
    assert c.improvement == pytest.approx(1 - c.es_cert / c.es_pool)
    if exact < 0.99 * po.es_pool:
        assert c.status == cert.IMPROVED
    if c.status == cert.CONFIRMED_OPTIMAL:
        assert exact >= po.es_pool * (1 - 1e-6) and c.n_solves == 1
    for r in c.solves:  # every feasible answer is a genuine es <= tau, never above ES_pool
        if r.outcome == cert.FEASIBLE:
            assert r.es_found <= r.tau * (1 + cert.ACCEPT_REL) and r.es_found < c.es_pool


def test_confirmed_optimal_when_pool_is_exact():
    inst = random_instance(7, n=12, d=3)
    s = 4
    po = pool_optimum(inst, s, 24)  # pool = all keys: ES_pool = ES
    assert len(candidate_pool(inst, s, 24)) == inst.n_keys
    c = cert.certify(inst, s, po.kept, time_limit=20)
    assert c.status == cert.CONFIRMED_OPTIMAL
    assert c.lower_bound == pytest.approx((1 - 1e-6) * po.es_pool)
    assert c.es_cert == po.es_pool and c.improvement == 0.0
    assert [r.outcome for r in c.solves] == [cert.INFEASIBLE]


def test_default_incumbent_is_pool_optimum():
    inst = random_instance(8, n=12, d=2)
    c = cert.certify(inst, 3, time_limit=20)
    assert c.es_pool == pool_optimum(inst, 3, 24).es_pool


@pytest.mark.parametrize(
    "u",
    [
        (3, 1, 1, 2, 2, 1),
        (1, 1, 4),
        (1, 2, 3, 4, 5, 7),
        (2, 3, 7, 1),
        (5, 5, 6, 1, 2),
        (4, 9, 2, 8),
        (1, 2, 5, 9),
        (3, 3, 3, 3, 1),
    ],
)
def test_partition_reduction(u):
    inst, p, v, s = _partition_row(u)
    n = inst.n_keys
    yes = partition_decision(u)
    # incumbent: the first s keys (a bad pool, so the solver has to search the full key set)
    z0 = np.arange(s)
    res = cert.minimise(inst, s, z0)
    assert res.status == "optimal"
    exact_sq = es_squared_rational(p, v, res.best)
    assert (exact_sq == 0) == yes
    gap = Fraction(2, n * n)
    assert exact_sq == 0 or exact_sq >= gap**2  # ES in {0} u [2/N^2, inf)
    c = cert.certify(inst, s, z0, rel_gap=1e-4, time_limit=20)
    if yes:
        assert es_squared_rational(p, v, c.best) == 0 and c.es_cert <= 1e-12
        assert c.status == cert.IMPROVED  # the first-s-keys incumbent never balances here
    else:
        assert c.lower_bound >= 2 / n**2 * (1 - 1e-3)
        assert c.es_cert >= 2 / n**2 * (1 - 1e-9)
        assert c.status in (cert.CONFIRMED_OPTIMAL, cert.IMPROVED, cert.WITHIN_1PCT)


def test_a_spent_work_budget_is_undecided_and_the_safety_net_its_own_status():
    """The LP-iteration budget stops a solve at the same point on any machine (outcome worklimit:
    the bisection stops, as the paper's time limit stopped it); the seconds limit is the safety net
    and its hit is status safety_stop, never undecided."""
    inst = random_instance(3, n=60, d=16)
    s = 8
    po = pool_optimum(inst, s, 2)
    runs = [cert.certify(inst, s, po.kept, lp_iteration_limit=1) for _ in range(2)]
    c = runs[0]
    assert c.solves[0].outcome == cert.WORKLIMIT and c.solves[0].scip_status == "userinterrupt"
    assert c.status in (cert.UNDECIDED, cert.WITHIN_1PCT) and c.lower_bound < (1 - 1e-6) * c.es_pool
    assert [(r.outcome, r.nodes, r.work, r.tau) for r in runs[0].solves] == [
        (r.outcome, r.nodes, r.work, r.tau) for r in runs[1].solves
    ]
    c = cert.certify(inst, s, po.kept, time_limit=0.01)
    assert c.status == cert.SAFETY_STOP and cert.TIMELIMIT in [r.outcome for r in c.solves]
    assert c.es_cert <= c.es_pool


def test_node_limit_stops_a_solve_as_work():
    assert cert._classify("totalnodelimit") == cert._classify("nodelimit") == cert.WORKLIMIT
    assert cert._classify("userinterrupt", budget_hit=True) == cert.WORKLIMIT
    assert cert._classify("userinterrupt") == "" and cert._classify("timelimit") == cert.TIMELIMIT


def test_memory_limit_and_crash_are_unsolved(monkeypatch):
    inst = random_instance(4, n=40, d=4)
    po = pool_optimum(inst, 6, 1)
    c = cert.certify(inst, 6, po.kept, memory_limit_mb=0.0, time_limit=5)
    assert c.status == cert.UNSOLVED
    assert c.solves[0].outcome in (cert.MEMLIMIT, cert.ERROR)

    def boom(*a, **k):
        raise RuntimeError("solver crashed")

    monkeypatch.setattr(cert, "_build", boom)
    c = cert.certify(inst, 6, po.kept)
    assert c.status == cert.UNSOLVED and "solver crashed" in c.solves[0].message
    assert c.es_cert == po.es_pool and c.lower_bound == 0.0


def test_warm_start_accepted_iff_feasible():
    inst = random_instance(5, n=14, d=3)
    s = 4
    po = pool_optimum(inst, s, 1)
    opts = cert.SolverOptions(time_limit=20)
    # at tau >= ES_pool the incumbent is feasible: SCIP takes it and stops at once
    rec, keys = cert.solve_feasibility(inst, s, po.es_pool * (1 + 1e-6), po.kept, opts)
    assert rec.warm_start_accepted and rec.outcome == cert.FEASIBLE and rec.es_found <= po.es_pool
    # just below ES_pool it is (correctly) declined; whatever SCIP returns is strictly better
    rec, keys = cert.solve_feasibility(inst, s, po.es_pool * (1 - 1e-6), po.kept, opts)
    assert not rec.warm_start_accepted
    assert rec.outcome in (cert.FEASIBLE, cert.INFEASIBLE)
    if keys is not None:
        assert es(inst, keys) < po.es_pool
    # minimise: the incumbent is SCIP's starting primal solution (one iteration when optimal)
    exact, argmin = exact_optimum_bruteforce(inst, s)
    res = cert.minimise(inst, s, argmin)
    assert res.status == "optimal" and res.iterations == 1 and res.es == exact


def test_solver_values_are_not_trusted(monkeypatch):
    """A subset SCIP calls feasible is re-scored with operator.es; a wrong one is rejected."""
    inst = random_instance(6, n=14, d=2)
    s = 4
    po = pool_optimum(inst, s, 1)
    worst = np.argsort(-inst.single_key_errors)[:s]  # a poor subset
    assert es(inst, worst) > po.es_pool
    monkeypatch.setattr(cert, "_read_subset", lambda m, z: np.sort(worst))
    c = cert.certify(inst, s, po.kept, time_limit=20)
    assert all(r.outcome in (cert.NUMERICAL, cert.INFEASIBLE, cert.TIMELIMIT) for r in c.solves)
    assert c.es_cert == po.es_pool and np.array_equal(c.best, np.sort(po.kept))
    assert c.status != cert.IMPROVED


def _light_tail_instance(seed: int, tail_around_mu: bool) -> Instance:
    """Six heavy keys and 18 keys of mass 1e-13 (as on real rows at N ~ 4,096)."""
    rng = np.random.default_rng(seed)
    p = np.concatenate([rng.dirichlet(np.ones(6)), np.full(18, 1e-13)])
    p = p / p.sum()
    v = rng.standard_normal((24, 8))
    if tail_around_mu:  # the light keys' hull contains mu: the split is not sound, B_low = 0
        mu = p @ v
        v[6:] = mu + np.concatenate([np.eye(8), -np.eye(8), np.zeros((2, 8))])[:18]
    return Instance.from_arrays(p, v)


@pytest.mark.parametrize("seed", range(3))
def test_mass_floor_split_certifies_rows_with_a_light_tail(seed):
    """Keys of mass 1e-13 sit below SCIP's absolute tolerances; with the split (B_low > tau) the
    program only searches p(A) >= phi and "infeasible" is a proof: confirmed against brute force."""
    inst = _light_tail_instance(seed, tail_around_mu=False)
    po = pool_optimum(inst, 4, 4)
    c = cert.certify(inst, 4, po.kept, es_pool=po.es_pool, time_limit=20)
    truth = exact_optimum_bruteforce(inst, 4)[0]
    assert c.low_mass_bound > po.es_pool and c.mass_floor > 0 and c.solves[0].mass_floor == c.mass_floor
    assert c.status == cert.CONFIRMED_OPTIMAL and truth >= po.es_pool * (1 - 1e-9)


def test_near_zero_mass_keys_fool_scip_but_not_the_certificate():
    """Without a sound split (the light keys' hull contains mu), SCIP returns a kept set of light
    keys as feasible; float64 rescoring rejects it (`numerical`), the instance is not confirmed,
    and the message says why.  Here the light tail really holds a better set (four keys averaging
    to mu), invisible to SCIP: a false `confirmed_optimal` is exactly what must not happen."""
    inst = _light_tail_instance(0, tail_around_mu=True)
    po = pool_optimum(inst, 4, 4)
    c = cert.certify(inst, 4, po.kept, es_pool=po.es_pool, time_limit=20)
    assert c.low_mass_bound == pytest.approx(0.0, abs=1e-12) and c.solves[0].mass_floor == 0.0
    numerical = [r for r in c.solves if r.outcome == cert.NUMERICAL]
    assert numerical and numerical[0].es_found > po.es_pool and "kept mass" in numerical[0].message
    assert exact_optimum_bruteforce(inst, 4)[0] < 1e-6 * po.es_pool  # the invisible better set
    assert c.status not in (cert.CONFIRMED_OPTIMAL, cert.WITHIN_1PCT) and c.lower_bound < po.es_pool


def test_low_mass_bound_is_a_lower_bound():
    """es(A) >= B_low for every kept set lighter than the floor (brute force), exact in 1-D."""
    from itertools import combinations

    for seed in range(4):
        inst = random_instance(seed, n=10, d=3)
        floor = float(np.sort(inst.p)[5])  # five keys lighter than the floor
        bound = cert.low_mass_bound(inst, floor)
        light = [A for k in (1, 2, 3) for A in combinations(range(10), k) if inst.p[list(A)].sum() < floor]
        assert light and all(es(inst, np.array(A)) >= bound * (1 - 1e-9) for A in light)
    one_d = Instance.from_arrays(np.array([0.5, 0.3, 0.1, 0.1]), np.array([[-1.0], [0.0], [2.0], [3.0]]))
    mu = float(one_d.mu[0])
    assert cert.low_mass_bound(one_d, 0.2) == pytest.approx(2.0 - mu)
    assert cert.low_mass_bound(one_d, 0.05) == float("inf")


def test_quadratic_cone_agrees():
    inst = random_instance(9, n=12, d=3)
    s = 4
    exact, _ = exact_optimum_bruteforce(inst, s)
    po = pool_optimum(inst, s, 1)
    res = cert.minimise(inst, s, po.kept, cone="quad")
    assert res.status == "optimal" and res.es == pytest.approx(exact, rel=1e-6)
    c = cert.certify(inst, s, po.kept, cone="quad", rel_gap=1e-7, time_limit=20)
    assert c.es_cert == pytest.approx(exact, rel=1e-6)


def test_incumbent_validation():
    inst = random_instance(10, n=10, d=2)
    with pytest.raises(ValueError):
        cert.certify(inst, 3, [0, 0, 1])
    with pytest.raises(ValueError):
        cert.certify(inst, 3, [0, 1, 2], es_pool=123.0)
    c = cert.certify(inst, 10, np.arange(10))  # everything kept: trivially optimal, no solve
    assert c.status == cert.CONFIRMED_OPTIMAL and c.n_solves == 0 and c.es_cert == es(inst, np.arange(10))
