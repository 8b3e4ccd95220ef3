"""The forced-weight operator: worked examples with exact values and Lemma 2.1 identities."""

from fractions import Fraction
from itertools import combinations

import numpy as np
import pytest
from unit.instances import random_cases, random_instance

from trustmass.core import operator as op
from trustmass.core.operator import Instance

EX22 = Instance.from_arrays([0.45, 0.45, 0.10], [-1.0, 1.0, 5.0])


def close(a, b, tol=1e-12):
    return abs(float(a) - float(b)) <= tol * max(1.0, abs(float(b)))


class TestExample22:
    def test_instance_quantities(self):
        assert close(EX22.mu[0], 0.5)
        assert np.allclose(EX22.w[:, 0], [-0.675, 0.225, 0.45], atol=1e-15)
        assert close(EX22.w.sum(), 0.0)
        assert close(op.radius(EX22), 4.5)
        assert close(op.sigma(EX22) ** 2, 3.15)
        assert close(op.least_dropped_mass(EX22, 2), 0.1)

    @pytest.mark.parametrize(
        "kept, value", [((0, 1), Fraction(1, 2)), ((0, 2), Fraction(9, 22)), ((1, 2), Fraction(27, 22))]
    )
    def test_pair_errors(self, kept, value):
        assert close(op.es(EX22, kept), value)
        assert (
            op.es_squared_rational([Fraction(45, 100), Fraction(45, 100), Fraction(1, 10)], [[-1], [1], [5]], kept)
            == value**2
        )

    def test_top_mass_phi_and_bounds(self):
        top = op.top_mass(EX22, 2)
        assert top.tolist() == [0, 1]
        assert close(op.phi(EX22, 2), 0.45)
        assert close(op.mass_cap_bound(EX22, 2), 0.9)
        assert close(op.variance_bound(EX22, top), np.sqrt(0.1 / 0.9) * np.sqrt(3.15))
        assert close(op.variance_bound(EX22, top), 0.5916079783099616)

    def test_free_weight_error_is_zero(self):
        assert op.ef(EX22, [0, 1]) == pytest.approx(0.0, abs=1e-15)
        assert op.ef(EX22, [0, 2]) == pytest.approx(0.0, abs=1e-15)
        assert close(op.ef(EX22, [1, 2]), 0.5)  # hull [1, 5] is at distance 1/2 from mu = 1/2

    def test_ratios(self):
        assert close(op.ratio_kappa(0.5, 9 / 22, 4.5), Fraction(11, 9))
        assert close(op.closable_share(0.5, 9 / 22, 4.5), Fraction(2, 11))
        assert op.ratio_penalty(9 / 22, 0.0, 4.5) == float("inf")


class TestExampleA2:
    inst = Instance.from_arrays([0.25] * 4, [0.0, 1.0, 2.0, 3.0])

    @pytest.mark.parametrize(
        "kept, value",
        [
            ((2,), "1/2"),
            ((0, 2), "1/2"),
            ((1, 2), "0"),
            ((0, 1, 2), "1/2"),
            ((1,), "1/2"),
            ((0, 1), "1"),
            ((1, 3), "1/2"),
            ((0, 1, 3), "1/6"),
        ],
    )
    def test_values(self, kept, value):
        assert close(op.es(self.inst, kept), Fraction(value))
        assert op.es_squared_rational([Fraction(1, 4)] * 4, [[0], [1], [2], [3]], kept) == Fraction(value) ** 2

    def test_neither_submodular_nor_supermodular(self):
        e = lambda A: op.es(self.inst, A)  # noqa: E731
        # adding point 0 helps {2} not at all but hurts the superset {1,2}: not submodular
        assert e([0, 2]) - e([2]) < e([0, 1, 2]) - e([1, 2])
        # adding point 0 hurts {1} but helps the superset {1,3}: not supermodular
        assert e([0, 1]) - e([1]) > e([0, 1, 3]) - e([1, 3])


@pytest.mark.parametrize("seed, d", random_cases(40))
def test_lemma_identities(seed, d):
    inst = random_instance(seed, d=d)
    rng = np.random.default_rng(seed + 1000)
    n = inst.n_keys
    assert np.allclose(inst.w.sum(axis=0), 0.0, atol=1e-12 * max(1.0, np.abs(inst.v).max()))  # identity 4
    for _ in range(10):
        size = int(rng.integers(1, n))
        A = np.sort(rng.choice(n, size=size, replace=False))
        Ac = np.setdiff1d(np.arange(n), A)
        pA, pbar = op.kept_mass(inst, A), op.dropped_mass(inst, A)
        mA, mAc = op.renormalized_mean(inst, A), op.renormalized_mean(inst, Ac)
        scale = max(1.0, op.radius(inst))
        assert np.allclose(inst.mu, pA * mA + pbar * mAc, atol=1e-12 * scale)  # identity 1
        e = op.es(inst, A)
        assert e == pytest.approx(pbar * np.linalg.norm(mAc - mA), rel=1e-9, abs=1e-14 * scale)  # identity 2
        assert e == pytest.approx(np.linalg.norm(op.residual(inst, A)) / pA, rel=1e-9, abs=1e-14 * scale)  # 3
        assert np.allclose(op.residual(inst, A), -op.residual(inst, Ac), atol=1e-12 * scale)  # g_A = -g_{A^c}
        assert op.ef(inst, A) <= e + 1e-12 * scale  # identity 5
        assert e <= op.variance_bound(inst, A) * (1 + 1e-12) + 1e-15  # variance refinement
    for s in range(1, n):
        top = op.top_mass(inst, s)
        assert op.es(inst, top) <= op.mass_cap_bound(inst, s) * (1 + 1e-12) + 1e-15  # identity 6
        assert op.phi(inst, s) == pytest.approx(np.linalg.norm(op.residual(inst, top)))


@pytest.mark.parametrize("seed, d", random_cases(12, base=500))
def test_single_key_drop(seed, d):
    inst = random_instance(seed, d=d)
    for j in range(inst.n_keys):
        A = np.delete(np.arange(inst.n_keys), j)
        pj = inst.p[j]
        expected = pj * np.linalg.norm(inst.v[j] - inst.mu) / (1 - pj)
        assert op.es(inst, A) == pytest.approx(expected, rel=1e-9)
        assert op.es(inst, A) == pytest.approx(pj * np.linalg.norm(inst.v[j] - op.renormalized_mean(inst, A)), rel=1e-9)


@pytest.mark.parametrize("seed, d", random_cases(16, base=700))
def test_drop_distortion_is_the_forced_weight_error_of_the_complement(seed, d):
    """related-methods §0: 002's d(c) = es([N] minus c)^2 for every dropped set c (blocks or not),
    to 1e-12 of the instance scale (operator.REL_TOL; es itself is ill-conditioned when c holds
    almost no mass, so a relative comparison with the float es is not meaningful there)."""
    inst = random_instance(seed, d=d)
    n, scale = inst.n_keys, op.radius(inst)
    rng = np.random.default_rng(seed)
    for c in [[j] for j in range(n)] + [rng.choice(n, int(rng.integers(1, n)), replace=False) for _ in range(30)]:
        rest = np.setdiff1d(np.arange(n), c)
        assert abs(np.sqrt(op.drop_distortion(inst, c)) - op.es(inst, rest)) <= op.REL_TOL * scale
    with pytest.raises(ValueError, match="keep at least one"):
        op.drop_distortion(inst, np.arange(n))


@pytest.mark.parametrize("seed", range(8))
def test_drop_distortion_matches_exact_rational_es_to_1e12(seed):
    """On rows whose float masses sum to exactly 1 (multiples of 2^-20, some of them 2^-20 itself)
    es_squared_rational is exact, and d(c) agrees to a relative 1e-12 for every c -- including the
    c that hold all but a few 2^-20 of the mass, where the centroid form (a/(1-a))^2 ||mu_c - mu||^2
    misses by ~1e-10."""
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(4, 9)), int(rng.integers(1, 4))
    units = rng.integers(1, 2**16, n)
    units[rng.choice(n, 2, replace=False)] = 1  # two keys of mass 2^-20
    units[0] += 2**20 - units.sum()  # the masses sum to 1 exactly
    assert units[0] > 0
    p, v = units / 2.0**20, rng.standard_normal((n, d))
    inst = Instance.from_arrays(p, v)
    assert inst.p.sum() == 1.0
    for size in range(1, n):
        for c in combinations(range(n), size):
            rest = np.setdiff1d(np.arange(n), c)
            exact = float(op.es_squared_rational(inst.p, inst.v, rest))
            assert op.drop_distortion(inst, c) == pytest.approx(exact, rel=1e-12, abs=0)


def test_top_mass_tie_rule():
    inst = Instance.from_arrays([0.2, 0.3, 0.2, 0.3], np.eye(4))
    assert op.top_mass(inst, 1).tolist() == [1]
    assert op.top_mass(inst, 3).tolist() == [0, 1, 3]  # ties at 0.2 go to the smaller index
    assert op.top_k(inst.p, 3).tolist() == [1, 3, 0]
    assert op.top_mass(inst, 10).tolist() == [0, 1, 2, 3]


def test_top_k_matches_full_sort_with_ties():
    rng = np.random.default_rng(7)
    score = rng.integers(0, 5, size=200).astype(float)
    full = op.descending_order(score)
    for k in (1, 5, 37, 199, 200, 300):
        assert op.top_k(score, k).tolist() == full[:k].tolist()
    exclude = rng.random(200) < 0.3
    expected = [j for j in full if not exclude[j]][:20]
    assert op.top_k(score, 20, exclude=exclude).tolist() == expected


def test_degenerate_ratios():
    assert op.ratio_kappa(0.0, 0.0, 1.0) == 1.0 and op.closable_share(0.0, 0.0, 1.0) == 0.0
    assert op.ratio_kappa(0.3, 0.0, 1.0) == float("inf") and op.closable_share(0.3, 0.0, 1.0) == 1.0
    assert op.ratio_kappa(0.3, 1e-14, 1.0) == float("inf")  # zero to relative 1e-12 of the scale
    assert op.ratio_penalty(0.2, 0.1, 1.0) == pytest.approx(2.0)


def test_whole_row_kept_has_zero_error():
    inst = random_instance(3, d=8)
    everything = np.arange(inst.n_keys)
    assert op.es(inst, everything) <= 1e-14 * op.radius(inst)
    assert op.dropped_mass(inst, everything) == 0.0


@pytest.mark.parametrize(
    "p, v, message",
    [
        ([0.5, 0.5], [[1.0], [2.0], [3.0]], "values must be"),
        ([0.5, 0.0, 0.5], [1.0, 2.0, 3.0], "strictly positive"),
        ([0.5, 0.6], [1.0, 2.0], "sum to 1"),
        ([0.5, np.nan], [1.0, 2.0], "finite"),
        ([], [], "at least one key"),
    ],
)
def test_bad_instances_are_rejected(p, v, message):
    with pytest.raises(ValueError, match=message):
        Instance.from_arrays(p, v)


def test_empty_kept_set_rejected():
    with pytest.raises(ValueError, match="nonempty"):
        op.es(EX22, [])


def test_rational_matches_float_on_random_subsets():
    inst = random_instance(11, d=3)
    for A in combinations(range(inst.n_keys), 2):
        exact = op.es_squared_rational(inst.p.tolist(), inst.v.tolist(), A)
        assert float(exact) == pytest.approx(op.es(inst, A) ** 2, rel=1e-9, abs=1e-18)
