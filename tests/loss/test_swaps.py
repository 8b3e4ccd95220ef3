"""The swap configurations of the restricted forward (trustmass.loss.swaps): the batched swap is the
core's row by row, fraction 0 is X and 1 is Y, the random controls are seeded, the plan is complete."""

import numpy as np
import pytest
import torch

from trustmass.core.selectors.boundary_swaps import swap_at_fraction
from trustmass.loss.swaps import SwapConfiguration, kept_mask, layer_generator, swap_plan, swapped_mask


def random_sets(seed, rows=40, n=30, s=6):
    rng = np.random.default_rng(seed)
    p = rng.random((rows, n)) ** 3
    p[:, -3:] = 0.0  # keys without mass: never drawn in
    x = np.stack([np.sort(rng.choice(n - 3, s, replace=False)) for _ in range(rows)])
    # Y keeps one key fewer on odd rows (a rule keeping a key without mass), padded with -1
    y = np.stack(
        [
            np.pad(np.sort(rng.choice(n - 3, s - r % 2, replace=False)), (0, r % 2), constant_values=-1)
            for r in range(rows)
        ]
    )
    return torch.as_tensor(p), torch.as_tensor(x), torch.as_tensor(y)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("fraction", [0.0, 0.25, 0.5, 0.75, 1.0])
def test_the_batched_boundary_swap_is_the_core_swap_on_every_row(seed, fraction):
    p, x, y = random_sets(seed)
    n = p.shape[1]
    mask = swapped_mask(kept_mask(x, n), kept_mask(y, n), p, p > 0, SwapConfiguration("a", "b", "boundary", fraction))
    for r in range(p.shape[0]):
        kx, ky = x[r][x[r] >= 0].numpy(), y[r][y[r] >= 0].numpy()
        want = swap_at_fraction(kx, ky, fraction, p[r].numpy())
        assert np.flatnonzero(mask[r].numpy()).tolist() == want.tolist(), (r, fraction)
    if fraction == 0.0:
        assert torch.equal(mask, kept_mask(x, n))
    if fraction == 1.0:
        assert torch.equal(mask, kept_mask(y, n))


@pytest.mark.parametrize("kind", ["random", "random_restricted"])
def test_random_swaps_move_the_boundary_count_from_their_pools_and_are_seeded(kind):
    p, x, y = random_sets(7)
    n = p.shape[1]
    in_x, in_y = kept_mask(x, n), kept_mask(y, n)
    config = SwapConfiguration("a", "b", kind, 0.5, seed=0)
    first = swapped_mask(in_x, in_y, p, p > 0, config, layer_generator(0, 0, 3))
    again = swapped_mask(in_x, in_y, p, p > 0, config, layer_generator(0, 0, 3))
    other = swapped_mask(in_x, in_y, p, p > 0, config, layer_generator(0, 1, 3))
    assert torch.equal(first, again) and not torch.equal(first, other)
    boundary = swapped_mask(in_x, in_y, p, p > 0, SwapConfiguration("a", "b", "boundary", 0.5))
    assert torch.equal(first.sum(1), boundary.sum(1))  # same sizes as the boundary swap
    left, entered = in_x & ~first, first & ~in_x
    assert not (entered & (p == 0)).any()
    if kind == "random_restricted":
        assert not (left & in_y).any() and not (entered & ~in_y).any()
        full = swapped_mask(in_x, in_y, p, p > 0, SwapConfiguration("a", "b", kind, 1.0, 0), layer_generator(0, 0, 3))
        assert torch.equal(full, in_y)
    with pytest.raises(ValueError, match="generator"):
        swapped_mask(in_x, in_y, p, p > 0, config)


def test_the_plan_runs_x_the_boundary_fractions_and_the_controls():
    plan = swap_plan([("h2o", "snapkv")], [0.5, 1.0, 0.0], seeds=2)
    names = [c.name for c in plan]
    assert names[:3] == ["h2o>snapkv:boundary@0", "h2o>snapkv:boundary@0.5", "h2o>snapkv:boundary@1"]
    assert "h2o>snapkv:random@1#1" in names and "h2o>snapkv:random_restricted@0.5#1" in names
    assert "h2o>snapkv:random_restricted@1#0" not in names  # it is Y's set: the boundary swap at 1
    assert len(names) == len(set(names)) == 3 + 2 * (2 + 1)
    with pytest.raises(ValueError, match="kind"):
        SwapConfiguration("a", "b", "sideways", 0.5)
