"""The attention regime of captured rows (issue 37): normalised entropy, max weight, weight on token 0."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from safetensors.numpy import save_file

from trustmass.capture.regime import regime_frame, row_regime, shard_regime
from trustmass.contracts.shards import METADATA_KEY, tensor_name

N = 16


def shard(path, rows: list[tuple[int, np.ndarray]], window=None):
    """A hand-built shard: one layer, one KV head of two query heads, the given (position, row) pairs for both."""
    positions = np.asarray([[pos for pos, _ in rows]], dtype=np.int64)
    p = np.stack([np.stack([row for _, row in rows])] * 2).astype(np.float32)  # [Hq=2, R, N]
    layers = {"0": {"group_size": 2, "window": window, "softcap": None, "scaling": 0.25}}
    tensors = {tensor_name(0, "positions"): positions, tensor_name(0, "p"): p}
    save_file(tensors, str(path), metadata={METADATA_KEY: json.dumps({"layers": layers, "n_tokens": N})})
    return path


def uniform(pos: int, width: int | None = None) -> np.ndarray:
    row = np.zeros(N)
    first = 0 if width is None else pos + 1 - width
    row[first : pos + 1] = 1 / (pos + 1 - first)
    return row


def test_a_uniform_row_has_entropy_one_and_max_one_over_n(tmp_path):
    path = shard(tmp_path / "u.safetensors", [(7, uniform(7))])
    got = shard_regime(path)
    assert got["n_rows"] == 2 and got["entropy"] == pytest.approx(1.0)
    assert got["max_weight"] == pytest.approx(1 / 8) and got["token0_weight"] == pytest.approx(1 / 8)


def test_a_one_hot_row_has_entropy_zero_and_a_sink_row_puts_its_weight_on_token_zero(tmp_path):
    sink = np.zeros(N)
    sink[0] = 1.0
    half = np.zeros(N)
    half[[0, 9]] = 0.5
    got = shard_regime(shard(tmp_path / "s.safetensors", [(11, sink), (9, half)]))
    assert got["n_rows"] == 4
    assert got["entropy"] == pytest.approx((0 + math.log(2) / math.log(10)) / 2)
    assert got["max_weight"] == pytest.approx(0.75) and got["token0_weight"] == pytest.approx(0.75)


def test_a_sliding_window_bounds_the_keys_a_row_sees(tmp_path):
    got = shard_regime(shard(tmp_path / "w.safetensors", [(12, uniform(12, width=4))], window=4))
    assert got["entropy"] == pytest.approx(1.0) and got["max_weight"] == pytest.approx(0.25)
    assert got["token0_weight"] == 0.0
    assert row_regime(np.ones((1, 1)), np.ones(1))["entropy"][0] == 0.0  # one key: no spread at all


def test_the_frame_pools_documents_by_rows_per_arm_model_and_corpus(tmp_path):
    a = shard(tmp_path / "a.safetensors", [(7, uniform(7))])  # 2 rows, entropy 1
    b = shard(tmp_path / "b.safetensors", [(3, np.eye(N)[0])] * 2)  # 4 rows on token 0: entropy 0
    entries = [
        {"arm": "trained", "model": "m", "corpus": "c", "doc": "0000", "path": a},
        {"arm": "trained", "model": "m", "corpus": "c", "doc": "0001", "path": b},
        {"arm": "randomised", "model": "m.randomised", "corpus": "c", "doc": "0000", "path": a},
    ]
    frame = regime_frame(entries)
    assert frame.columns == ["arm", "model", "corpus", "n_rows", "entropy", "max_weight", "token0_weight"]
    rows = {r["arm"]: r for r in frame.iter_rows(named=True)}
    assert rows["trained"]["n_rows"] == 6 and rows["trained"]["entropy"] == pytest.approx(2 / 6)
    assert rows["trained"]["token0_weight"] == pytest.approx((2 / 8 + 4) / 6)
    assert rows["randomised"]["n_rows"] == 2 and rows["randomised"]["max_weight"] == pytest.approx(1 / 8)
    with pytest.raises(ValueError, match="has no path"):
        regime_frame([{"arm": "x", "model": "m", "corpus": "c", "doc": "0"}])
