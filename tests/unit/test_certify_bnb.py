"""The branch-and-bound certifier (trustmass.certification.bnb): every bound and the certifier
against brute force over all subsets of small random rows (N = 12-18)."""

from itertools import combinations

import numpy as np
import pytest
from unit.instances import random_instance

from trustmass.certification import bnb
from trustmass.certification import bnb_kernels as K
from trustmass.certification import misocp as cert
from trustmass.core.enumeration import exact_optimum_bruteforce, pool_optimum
from trustmass.core.operator import Instance, es

CASES = [
    (seed, n, s, d)
    for seed, (n, s, d) in enumerate(
        [(12, 3, 1), (12, 4, 2), (14, 5, 3), (16, 4, 8), (16, 6, 2), (13, 2, 3), (18, 3, 4), (15, 7, 2)]
    )
]


def _light_tail(seed: int) -> Instance:
    """Six heavy keys and 12 keys of mass 1e-13 whose values surround mu (the rows SCIP misreads)."""
    rng = np.random.default_rng(seed)
    p = np.concatenate([rng.dirichlet(np.ones(6)), np.full(12, 1e-13)])
    p = p / p.sum()
    v = rng.standard_normal((18, 6))
    v[6:] = p @ v + np.concatenate([np.eye(6), -np.eye(6)])
    return Instance.from_arrays(p, v)


def _node_min(prep, F, lo, r, tau, u):
    """min over B in [lo, N), |B| = r of u.(g_F + g_B) - tau (p_F + p_B), and of es over those sets."""
    gF, pF = prep.W[F].sum(axis=0), prep.P[F].sum()
    lin, es_min = np.inf, np.inf
    for B in combinations(range(lo, prep.P.shape[0]), r):
        g, p = gF + prep.W[list(B)].sum(axis=0), pF + prep.P[list(B)].sum()
        lin = min(lin, float(u @ g - tau * p))
        es_min = min(es_min, float(np.linalg.norm(g) / p))
    return lin, es_min


@pytest.mark.parametrize("seed", range(12))
def test_directional_bound_is_exact_per_direction_and_sound(seed):
    """beta_tau(u) (one ascent step from u) equals the brute-force minimum over the node's sets, and
    beta > 0 only when every set of the node has es > tau."""
    rng = np.random.default_rng(seed)
    inst = random_instance(300 + seed, n=int(rng.integers(10, 15)), d=int(rng.choice([1, 2, 3, 8])))
    prep = bnb.Prepared.of(inst)
    n, d = prep.V.shape
    s = int(rng.integers(2, 5))
    t = int(rng.integers(0, s))
    F = sorted(rng.choice(n // 2, size=t, replace=False).tolist())
    lo = (max(F) + 1) if F else int(rng.integers(0, n - s))
    r = s - t
    if n - lo < r:
        return
    tau = float(rng.uniform(0.2, 2.0)) * pool_optimum(inst, s, 2).es_pool
    u = rng.standard_normal(d)
    u /= np.linalg.norm(u)
    gF, pF = prep.W[F].sum(axis=0), float(prep.P[F].sum())
    ub, tail, y = np.empty(d), prep.tail(tau), np.empty(n)
    scratch = (np.empty(d), np.empty(d))
    beta, _ = K.ascent(
        prep.V,
        prep.P,
        gF,
        pF,
        lo,
        r,
        tau,
        u,
        1,
        np.inf,
        tail,
        y,
        np.empty(r + 1, np.int64),
        np.empty(r + 1),
        ub,
        *scratch,
    )
    lin, es_min = _node_min(prep, F, lo, r, tau, u)
    assert beta == pytest.approx(lin, rel=1e-9, abs=1e-12 * (1 + abs(lin)))
    more, _ = K.ascent(
        prep.V,
        prep.P,
        gF,
        pF,
        lo,
        r,
        tau,
        u,
        30,
        np.inf,
        tail,
        y,
        np.empty(r + 1, np.int64),
        np.empty(r + 1),
        ub,
        *scratch,
    )
    assert more >= beta  # the ascent keeps the best iterate
    if more > 0:
        assert es_min > tau


@pytest.mark.parametrize("seed", range(12))
def test_suffix_cut_matches_brute_force(seed):
    """Exact where y is known everywhere; with y known on [0, hi) only (the rest counted as r values
    -tail[hi]) never a cut the full values do not give."""
    rng = np.random.default_rng(seed)
    n, r = int(rng.integers(5, 14)), int(rng.integers(1, 4))
    y, base = rng.standard_normal(n), float(rng.standard_normal())
    tail = np.maximum.accumulate(np.abs(y)[::-1])[::-1] + 0.01  # y_i >= -tail[k] for i >= k, nonincreasing
    got = K.suffix_cut(y, 0, n, r, base, tail, 0.05, 0.0, 0.0, tail, np.empty(r + 1))
    pruned = [k for k in range(n - r + 1) if base + np.sort(y[k:])[:r].sum() > 0.05]
    # the value only grows with k: pruned ranks form a suffix, and the cut is its start
    assert not pruned or pruned == list(range(pruned[0], n - r + 1))
    assert got == (pruned[0] if pruned else n - r + 1)
    hi = int(rng.integers(0, n + 1))
    partial = K.suffix_cut(y, 0, hi, r, base, tail, 0.05, 0.0, 0.0, tail, np.empty(r + 1))
    assert partial >= got


def _search(inst, s, tau, ascent_iters):
    prep = bnb.Prepared.of(inst)
    probe = bnb._Probe(prep, s, tau, ascent_iters)
    found = []
    while True:
        out, ranks = probe.run(1 << 62)
        if out != K.FOUND:
            return out, found
        found.append(es(inst, np.sort(prep.order[ranks])))


@pytest.mark.parametrize("seed,n,s,d", CASES)
@pytest.mark.parametrize("ascent_iters", [0, 6])
def test_search_is_exact_against_brute_force(seed, n, s, d, ascent_iters):
    """At tau below the optimum the search proves emptiness; above it, it finds the sets at or below
    tau (it never prunes one), each a genuine es <= tau."""
    inst = random_instance(500 + seed, n=n, d=d)
    exact, _ = exact_optimum_bruteforce(inst, s)
    out, found = _search(inst, s, exact * (1 - 1e-6), ascent_iters)
    assert out == K.INFEASIBLE and not found
    tau = exact * 1.05
    out, found = _search(inst, s, tau, ascent_iters)
    every = [es(inst, np.array(A)) for A in combinations(range(n), s)]
    assert out == K.INFEASIBLE and len(found) == sum(e <= tau for e in every)
    assert all(f <= tau * (1 + 1e-9) for f in found) and min(found) == pytest.approx(exact, rel=1e-12)


def test_swap_descent_never_worsens_and_reports_the_direct_value():
    inst = random_instance(11, n=40, d=8)
    prep = bnb.Prepared.of(inst)
    A = np.arange(5, 10, dtype=np.int64)
    start = es(inst, prep.order[A])
    value, rounds = K.swap_descent(prep.G, prep.P, A, 100)
    assert 1 <= rounds <= 100
    assert len(set(A.tolist())) == 5 and value <= start * (1 + 1e-12)
    assert value == pytest.approx(es(inst, prep.order[A]), rel=1e-9)


@pytest.mark.parametrize("seed,n,s,d", CASES)
def test_certify_bnb_brackets_bruteforce(seed, n, s, d):
    inst = random_instance(100 + seed, n=n, d=d)
    exact, _ = exact_optimum_bruteforce(inst, s)
    po = pool_optimum(inst, s, 1)  # a deliberately small pool: the incumbent is often suboptimal
    c = bnb.certify_bnb(inst, s, po.kept, po.es_pool, starts=4)
    assert c.status in (cert.CONFIRMED_OPTIMAL, cert.IMPROVED, cert.WITHIN_1PCT)
    assert c.lower_bound <= exact * (1 + 1e-9) and c.es_cert >= exact * (1 - 1e-12)
    assert c.es_cert == es(inst, c.best) and len(np.unique(c.best)) == s
    assert c.lower_bound >= (1 - 1e-6) * c.es_cert * (1 - 1e-12)  # both probes proved: gap 1e-6
    if exact < 0.99 * po.es_pool:
        assert c.status == cert.IMPROVED
    if c.status == cert.CONFIRMED_OPTIMAL:
        assert exact >= po.es_pool * (1 - 1e-6) and c.es_cert == po.es_pool


@pytest.mark.parametrize("seed", range(3))
def test_light_tail_around_mu_is_searched_not_trusted(seed):
    """Keys of mass 1e-13 surrounding mu (where SCIP's program reads 0 <= 0): the search scores them
    in float64 and finds the better light set, or proves there is none -- brute force agrees."""
    inst = _light_tail(seed)
    po = pool_optimum(inst, 4, 4)
    c = bnb.certify_bnb(inst, 4, po.kept, po.es_pool)
    exact, _ = exact_optimum_bruteforce(inst, 4)
    assert c.lower_bound <= exact * (1 + 1e-9) and c.es_cert == pytest.approx(exact, rel=1e-6)
    assert (c.status == cert.IMPROVED) == (exact < 0.99 * po.es_pool)


def test_work_limit_gives_undecided_with_valid_bounds():
    """A probe stopped by its work budget proves nothing: undecided, lower bound 0, es_cert a real set."""
    rng = np.random.default_rng(0)
    n = 600
    p = rng.dirichlet(np.full(n, 0.3))
    inst = Instance.from_arrays(p, rng.standard_normal((n, 16)))
    po = pool_optimum(inst, 8, 12)
    c = bnb.certify_bnb(inst, 8, po.kept, po.es_pool, work_limit=1000, starts=0)
    assert c.solves[-1].outcome == cert.WORKLIMIT and c.solves[0].scip_status == "local_search"
    assert c.status in (cert.UNDECIDED, cert.IMPROVED) and c.lower_bound == 0.0
    assert c.es_cert == es(inst, c.best) <= po.es_pool


def test_runner_dispatches_on_the_certifier_and_records_it():
    from trustmass.certification import runner as R

    inst = random_instance(3, n=60, d=16)
    row = R.certify_one(inst, 4, 2, R.CertificationSettings(certifier="bnb"))
    assert row["certifier"] == "bnb" and row["status"] in cert.STATUSES and row["status"] != cert.UNDECIDED
    assert row["es_cert"] == pytest.approx(es(inst, row["best"]), rel=1e-12) and row["es_cert"] <= row["es_pool"]
    assert row["lower_bound"] <= exact_optimum_bruteforce(inst, 4)[0] * (1 + 1e-9)
    assert R.certify_one(inst, 4, 2, R.CertificationSettings(time_limit_s=5))["certifier"] == "paper"
    with pytest.raises(ValueError, match="certification.certifier"):
        R.CertificationSettings(certifier="gurobi")


def test_table7_names_its_certifier():
    import polars as pl

    from trustmass.report.frames import certification as F

    man = pl.DataFrame(
        {
            "instance": [0, 1],
            "budget": [4, 8],
            "es_pool": [1.0, 1.0],
            "es_top": [1.2, 1.2],
            "es_bal": [1.0, 1.0],
            "D": [2.0, 2.0],
            "c_hat": [0.1, 0.1],
            "kappa_hat_bal": [1.0, 1.0],
        }
    )
    certified = pl.DataFrame(
        {
            "instance": [0, 1],
            "status": [cert.CONFIRMED_OPTIMAL] * 2,
            "es_pool": [1.0, 1.0],
            "es_cert": [1.0, 1.0],
            "improvement": [0.0, 0.0],
            "seconds": [0.1, 0.2],
            "certifier": ["bnb", "paper"],
        }
    )
    records = pl.DataFrame(
        {
            "model": ["m"] * 2,
            "corpus": ["c"] * 2,
            "doc": ["0"] * 2,
            "budget": [4, 8],
            "c_hat": [0.1, 0.1],
            "kappa_hat_bal": [1.0, 1.0],
        }
    )
    t7 = F.table7(records, man, certified)
    assert t7["certifier"].to_list() == ["branch-and-bound", "SCIP bisection (paper)"]
