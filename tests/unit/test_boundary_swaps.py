"""Boundary swaps and the random-swap control (related-methods A.2): size 0 changes nothing, the full
swap of the disagreement turns X's kept set into Y's, budgets hold, ranking and seeds decide."""

from __future__ import annotations

import numpy as np
import pytest
from unit.instances import random_instance

from trustmass.core.operator import es, top_mass
from trustmass.core.selectors.balancing import balancing
from trustmass.core.selectors.boundary_swaps import boundary_swap, disagreement, gap_recovered, random_swap, swap_curve


def pair(seed=0, n=40, s=8):
    """top-mass (X) and the s keys of lowest single-key error (Y): two genuinely different sets."""
    inst = random_instance(seed, n=n, d=4)
    kept_x = top_mass(inst, s)
    kept_y = np.sort(np.argsort(np.linalg.norm(inst.v - inst.mu, axis=1), kind="stable")[:s])
    return inst, kept_x, kept_y


@pytest.mark.parametrize("seed", range(5))
def test_size_zero_is_x_and_the_full_swap_is_y(seed):
    inst, kept_x, kept_y = pair(seed)
    d_out, d_in = disagreement(kept_x, kept_y)
    assert d_in.size == d_out.size > 0
    assert np.array_equal(boundary_swap(kept_x, kept_y, 0, inst.p), kept_x)
    assert np.array_equal(boundary_swap(kept_x, kept_y, d_in.size, inst.p), kept_y)
    rng = np.random.default_rng(seed)
    assert np.array_equal(random_swap(kept_x, kept_y, 0, inst.n_keys, rng, restricted=False), kept_x)
    assert np.array_equal(random_swap(kept_x, kept_y, d_in.size, inst.n_keys, rng, restricted=True), kept_y)
    for m in range(d_in.size + 1):  # every swap keeps the budget and only moves disagreement keys
        swapped = boundary_swap(kept_x, kept_y, m, inst.p)
        assert swapped.size == kept_x.size and np.unique(swapped).size == swapped.size
        assert np.setdiff1d(kept_x, swapped).size == m and set(np.setdiff1d(swapped, kept_x)) <= set(d_in)


def test_the_swap_is_rank_to_rank_by_the_named_score():
    inst, kept_x, kept_y = pair(1)
    d_out, d_in = disagreement(kept_x, kept_y)
    swapped = boundary_swap(kept_x, kept_y, 1, inst.p)
    assert np.setdiff1d(kept_x, swapped)[0] == d_out[np.argmin(inst.p[d_out])]  # X's weakest kept key leaves
    assert np.setdiff1d(swapped, kept_x)[0] == d_in[np.argmax(inst.p[d_in])]  # Y's strongest enters
    flipped = boundary_swap(kept_x, kept_y, 1, -inst.p)
    assert not np.array_equal(flipped, swapped) or d_in.size == 1


def test_random_controls_are_seeded_and_the_unrestricted_one_leaves_the_disagreement():
    inst, kept_x, kept_y = pair(2, n=200)
    a = random_swap(kept_x, kept_y, 3, inst.n_keys, np.random.default_rng(7), restricted=False)
    b = random_swap(kept_x, kept_y, 3, inst.n_keys, np.random.default_rng(7), restricted=False)
    assert np.array_equal(a, b)
    entered = [
        set(
            np.setdiff1d(
                random_swap(kept_x, kept_y, 3, inst.n_keys, np.random.default_rng(k), restricted=False), kept_x
            )
        )
        for k in range(20)
    ]
    _, d_in = disagreement(kept_x, kept_y)
    assert any(not e <= set(d_in) for e in entered)  # 200 keys: the unrestricted draw reaches beyond D_in


def test_the_curve_ends_at_a_full_recovery_and_names_the_gap():
    inst, kept_x, kept_y = pair(3)
    curve = swap_curve(inst, kept_x, kept_y, inst.p, seeds=[0, 1, 2])
    assert curve.es_boundary[0] == pytest.approx(es(inst, kept_x)) and curve.es_boundary[-1] == pytest.approx(
        es(inst, kept_y)
    )
    rec = curve.recovered("boundary")
    assert rec[0] == pytest.approx(0.0) and rec[-1] == pytest.approx(1.0)
    assert curve.recovered("random_restricted")[-1] == pytest.approx(1.0)  # the full restricted swap is Y as well
    assert curve.swap_improves == (es(inst, kept_y) < es(inst, kept_x))
    assert gap_recovered(1.0, 0.5, 1.0) is None and gap_recovered(2.0, 1.5, 1.0) == pytest.approx(0.5)


def test_balancing_is_an_es_driven_boundary_swap_from_top_mass():
    """Balancing's set differs from top-mass's in a few keys; the full boundary swap reaches it and
    every partial swap ranked by es improvement lies between (its swaps are one-for-one exchanges)."""
    inst = random_instance(4, n=30, d=3)
    kept_x = top_mass(inst, 6)
    bal = balancing(inst, 6, np.arange(inst.n_keys))
    if bal.swaps == 0:
        pytest.skip("balancing made no swap on this row")
    d_out, d_in = disagreement(kept_x, bal.kept)
    assert 0 < d_in.size <= bal.swaps
    assert np.array_equal(boundary_swap(kept_x, bal.kept, d_in.size, inst.p), bal.kept)
    assert es(inst, bal.kept) < es(inst, kept_x)


def test_sets_of_different_budgets_are_refused():
    with pytest.raises(ValueError, match="compare selectors at one budget"):
        disagreement(np.arange(4), np.arange(5))
    with pytest.raises(ValueError, match="swap size m = 9 outside"):
        boundary_swap(np.arange(4), np.arange(2, 6), 9, np.ones(10))


# -- swaps at a fraction of the disagreement (the swap stage's sizing) ----------------------------


@pytest.mark.parametrize("seed", range(5))
def test_a_fraction_swap_is_the_rank_to_rank_swap_of_its_size(seed):
    from trustmass.core.selectors.boundary_swaps import fraction_sizes, swap_at_fraction

    inst, kept_x, kept_y = pair(seed)
    d_out, d_in = disagreement(kept_x, kept_y)
    for f in (0.0, 0.25, 0.5, 0.75, 1.0):
        m, _ = fraction_sizes(d_out.size, d_in.size, f)
        assert m == int(np.floor(f * d_in.size + 0.5))
        assert np.array_equal(swap_at_fraction(kept_x, kept_y, f, inst.p), boundary_swap(kept_x, kept_y, m, inst.p))
    rng = np.random.default_rng(seed)
    assert np.array_equal(swap_at_fraction(kept_x, kept_y, 1.0, inst.p, "random_restricted", rng), kept_y)
    assert np.array_equal(swap_at_fraction(kept_x, kept_y, 0.0, inst.p, "random", rng), kept_x)


def test_a_fraction_swap_between_sets_of_different_sizes_ends_at_y():
    from trustmass.core.selectors.boundary_swaps import fraction_sizes, swap_at_fraction

    p = np.array([0.3, 0.05, 0.2, 0.1, 0.15, 0.08, 0.12])
    kept_x, kept_y = np.array([0, 1, 2, 3]), np.array([0, 4, 5])  # D_out = {1, 2, 3}, D_in = {4, 5}
    assert fraction_sizes(3, 2, 0.5) == (2, 1)  # 1.5 rounds half up
    assert swap_at_fraction(kept_x, kept_y, 0.5, p).tolist() == [0, 2, 4]  # 1 and 3 (least mass) out, 4 in
    assert np.array_equal(swap_at_fraction(kept_x, kept_y, 1.0, p), kept_y)
    with pytest.raises(ValueError, match="fraction"):
        fraction_sizes(3, 2, 1.5)
    with pytest.raises(ValueError, match="kind"):
        swap_at_fraction(kept_x, kept_y, 0.5, p, "sideways", np.random.default_rng(0))
