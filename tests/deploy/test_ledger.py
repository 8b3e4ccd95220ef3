"""The byte ledger on worked examples."""

import pytest
import torch
from torch import nn
from transformers import DynamicCache

from trustmass.deploy import ledger

COUNTS = [[3, 5], [2, 2]]  # two layers, two KV heads


def test_counterfactual_sizes():
    assert ledger.ragged_bytes(COUNTS, 16, torch.float32) == 12 * 16 * 2 * 4 == 1536
    assert ledger.layer_padded_bytes(COUNTS, 16, torch.float32) == (5 + 2) * 2 * 16 * 2 * 4 == 1792
    assert ledger.full_bytes(10, 2, 2, 16, torch.float32) == 2 * 2 * 10 * 16 * 2 * 4 == 5120
    assert ledger.ragged_bytes(COUNTS, 16, torch.bfloat16) == 768


def test_bytes_held_by_a_dynamic_cache():
    cache = DynamicCache()
    for layer in range(2):
        cache.update(torch.zeros(1, 2, 7, 16), torch.zeros(1, 2, 7, 16), layer)
    assert ledger.bytes_held(cache) == 2 * 2 * (2 * 7 * 16 * 4) == 3584


def test_masks_on_modules_count_but_weights_do_not():
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))
    model[1].masked_key_indices = tuple(torch.zeros(5, dtype=torch.int64) for _ in range(3))
    assert ledger.bytes_held(model) == 3 * 5 * 8
    shared = torch.zeros(10)
    holder = type("Press", (), {})()
    holder.a, holder.b, holder.nested = shared, shared, {"x": [torch.zeros(3, dtype=torch.float16)]}
    assert ledger.bytes_held(holder) == 10 * 4 + 3 * 2  # a tensor referenced twice counts once


def test_ledger_row():
    row = ledger.ledger_row(1536, "ragged", COUNTS, 10, 16, torch.float32)
    assert row == ledger.LedgerRow(
        bytes_measured=1536,
        storage="ragged",
        kept_entries=12,
        kept_min_head=2,
        kept_max_head=5,
        bytes_layer_padded=1792,
        bytes_full=5120,
        frac_full=1536 / 5120,
    )


@pytest.mark.parametrize(
    "storage, counts, message",
    [
        ("packed", COUNTS, "storage must be 'as_shipped' or 'ragged'"),
        ("ragged", [3, 5], r"\[layers, kv_heads\]"),
        ("ragged", [[3, -1]], "non-negative"),
    ],
)
def test_ledger_row_rejects_bad_input(storage, counts, message):
    with pytest.raises(ValueError, match=message):
        ledger.ledger_row(1, storage, counts, 10, 16, torch.float32)
