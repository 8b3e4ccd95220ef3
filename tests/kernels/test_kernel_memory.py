"""The streaming paths never allocate an N x N tensor (checked on every aten op's outputs)."""

import pytest
import torch
from kernel_oracle import random_case
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from trustmass.kernels import column_mass_and_window_sums, sampled_row_probs


def _storages(tree) -> set[int]:
    return {t.untyped_storage().data_ptr() for t in tree_flatten(tree)[0] if isinstance(t, torch.Tensor)}


class LargestTensor(TorchDispatchMode):
    """Largest new storage (in elements) any aten op allocates while active.

    Views and out= results share an input's storage and are not allocations; every fresh buffer
    (``empty``, ``matmul``, ``softmax``, ...) is measured by its storage size.
    """

    def __init__(self):
        super().__init__()
        self.largest = 0
        self.op = None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        existing = _storages((args, kwargs))
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() not in existing:
                elements = t.untyped_storage().nbytes() // t.element_size()
                if elements > self.largest:
                    self.largest, self.op = elements, func
        return out


N, H, D, R, BLOCK = 2048, 2, 16, 4, 64


@pytest.fixture(scope="module")
def case():
    q, k, positions = random_case(0, H, N, D, R)
    positions[:, 0] = N - 1  # the sweep has to reach the last row
    return q, k, positions


def test_column_sweep_holds_one_block_of_rows(case):
    q, k, positions = case
    with LargestTensor() as probe:
        acc, wsum = column_mass_and_window_sums(q, k, positions, D**-0.5, block_rows=BLOCK, backend="torch")
    assert acc.shape == (H, R, N) and wsum.shape == (H, R, 5, N)
    # the biggest buffer is one block of P per head (+ a zero row): O(block_rows N), never O(N^2)
    assert probe.largest <= H * BLOCK * N + N, (probe.op, probe.largest)
    assert probe.largest < N * N // 8


def test_column_sweep_memory_scales_with_block_rows(case):
    q, k, positions = case
    sizes = []
    for block in (32, 128):
        with LargestTensor() as probe:
            column_mass_and_window_sums(q, k, positions, D**-0.5, block_rows=block, backend="torch")
        sizes.append(probe.largest)
    assert sizes[1] == pytest.approx(4 * sizes[0], rel=0.05)


def test_sampled_rows_hold_rows_times_keys(case):
    q, k, positions = case
    with LargestTensor() as probe:
        p = sampled_row_probs(q, k, positions, D**-0.5, backend="torch")
    assert p.shape == (H, R, N)
    assert probe.largest <= H * R * N, (probe.op, probe.largest)
