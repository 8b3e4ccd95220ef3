"""Access-law math (related-methods A.4 Stage I) on hand-built attention: TV, the laws, r_eff, Prop. 3."""

import math

import numpy as np
import pytest

from trustmass.core.access_law import count_debiased, mean_position, normalised, participation_ratio, total_variation

#: a causal 4 x 4 attention matrix (rows sum to one): C = column sums = [2.25, 1, 0.5, 0.25], T = 4
A = np.array(
    [
        [1.0, 0.0, 0.0, 0.0],
        [0.5, 0.5, 0.0, 0.0],
        [0.5, 0.25, 0.25, 0.0],
        [0.25, 0.25, 0.25, 0.25],
    ]
)
C = A.sum(axis=0)


def test_total_variation_worked_values_and_zero_extension():
    assert total_variation([0.5, 0.5, 0.0], [0.0, 0.5, 0.5]) == pytest.approx(0.5)
    assert total_variation([0.2, 0.8], [0.2, 0.8]) == 0.0
    # p* over T + 1 keys against a prefill law over T keys: the prefill law is 0 on the new key
    assert total_variation([0.5, 0.25, 0.25], [1.0, 0.0]) == pytest.approx(0.5)
    assert total_variation([1.0, 0.0], [0.5, 0.25, 0.25]) == pytest.approx(0.5)
    batch = total_variation(np.array([[1.0, 0.0], [0.5, 0.5]]), np.array([[0.0, 1.0], [0.5, 0.5]]))
    assert batch.tolist() == [1.0, 0.0]


def test_the_laws_of_a_hand_built_matrix():
    assert C.tolist() == [2.25, 1.0, 0.5, 0.25] and C.sum() == 4.0  # every row sums to one: sum C = T
    full_mixture = normalised(C)
    assert full_mixture.tolist() == [0.5625, 0.25, 0.125, 0.0625]  # normalised C is the mean of the rows
    assert np.allclose(full_mixture, A.mean(axis=0))
    # count-debiased: C_i / (T - i) = [2.25/4, 1/3, 0.5/2, 0.25/1], normalised
    raw = np.array([2.25 / 4, 1 / 3, 0.25, 0.25])
    assert np.allclose(count_debiased(C), raw / raw.sum())
    p_last, tail2 = A[-1], A[-2:].mean(axis=0)
    assert tail2.tolist() == [0.375, 0.25, 0.25, 0.125]
    assert total_variation(p_last, tail2) == pytest.approx(0.125)
    assert total_variation(p_last, full_mixture) == pytest.approx(0.3125)
    # exposure bias: the full mixture's mean key position sits early, p_T's (uniform) in the middle
    assert mean_position(p_last) == pytest.approx(0.5)
    assert mean_position(full_mixture) == pytest.approx((0.25 + 2 * 0.125 + 3 * 0.0625) / 3)
    assert mean_position(count_debiased(C)) > mean_position(full_mixture)  # debiasing moves it later


def test_normalised_keeps_an_empty_row_empty():
    assert normalised(np.array([[0.0, 0.0], [1.0, 3.0]])).tolist() == [[0.0, 0.0], [0.25, 0.75]]


def test_participation_ratio_counts_the_heads_that_carry_the_mass():
    assert participation_ratio([1.0, 1.0, 1.0]) == pytest.approx(3.0)  # every head alike: H
    assert participation_ratio([0.0, 5.0, 0.0]) == pytest.approx(1.0)  # one head
    assert participation_ratio([2.0, 1.0, 1.0]) == pytest.approx(16 / 6)
    assert participation_ratio([3.0, 3.0, 0.0, 0.0]) == pytest.approx(2.0)
    assert participation_ratio(np.full(9, 0.7)) == pytest.approx(9.0)  # scale-free
    assert math.isnan(participation_ratio([0.0, 0.0]))
    with pytest.raises(ValueError, match="non-negative"):
        participation_ratio([1.0, -0.1])
    rng = np.random.default_rng(0)
    for _ in range(200):
        m = rng.exponential(size=rng.integers(1, 16)) * rng.integers(0, 2, size=1)[0]
        r = participation_ratio(m)
        assert math.isnan(r) or 1.0 - 1e-12 <= r <= m.size + 1e-12


def test_prop3_triangle_on_random_laws():
    rng = np.random.default_rng(1)
    for _ in range(500):
        n = int(rng.integers(2, 40))
        rows = rng.dirichlet(np.full(n, 0.3), size=int(rng.integers(1, n + 1)))
        p_star, p_last, tail = rng.dirichlet(np.full(n + 1, 0.3)), rows[-1], rows.mean(axis=0)
        assert total_variation(p_star, tail) <= total_variation(p_star, p_last) + total_variation(p_last, tail) + 1e-12
