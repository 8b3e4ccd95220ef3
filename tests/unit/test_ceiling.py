"""Ceiling records: the contract columns, their internal consistency, degenerate rows."""

import math

import numpy as np
import pytest
import torch

from trustmass.capture import prefill as cap
from trustmass.capture import shards
from trustmass.ceiling.records import (
    COLUMNS,
    DIAGNOSTICS,
    CeilingSettings,
    Row,
    instance_of,
    row_records,
    shard_records,
)
from trustmass.core import enumeration as en
from trustmass.core import operator as op

SETTINGS = CeilingSettings(enumerated=(2, 4), native=(8,), native_extra=2)


def synthetic_row(seed=0, n=60, d=8, zeros=0):
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal(n) * 2.0
    p = np.exp(logits - logits.max())
    p = (p / p.sum()).astype(np.float32)
    p[:zeros] = 0.0  # e.g. outside a sliding window
    values = rng.standard_normal((n, d)).astype(np.float32)
    keys = rng.standard_normal((n, d)).astype(np.float32)
    return Row(p=p, values=values, keys=keys, vote_scores=p.astype(np.float64))


@pytest.mark.parametrize("seed", range(6))
def test_records_are_consistent(seed):
    row = synthetic_row(seed)
    inst, positive, _, _ = instance_of(row)
    for rec in row_records(row, SETTINGS):
        s = rec["budget"]
        assert rec["es_top"] == pytest.approx(op.es(inst, op.top_mass(inst, s)))
        assert rec["dropped_mass"] == pytest.approx(op.least_dropped_mass(inst, s))
        assert rec["es_top"] <= rec["bound_2dm"] * (1 + 1e-12) and rec["es_top"] <= rec["bound_var"] * (1 + 1e-12)
        assert rec["es_bal"] <= rec["es_top"] * (1 + 1e-12)
        assert rec["es_vote"] == pytest.approx(rec["es_top"])  # the vote of a single row is its top-mass set
        if rec["enumerated"]:
            e = SETTINGS.pool.extra(s)
            assert rec["es_pool"] == pytest.approx(en.pool_optimum(inst, s, e).es_pool)
            assert rec["es_pool"] <= rec["es_bal"] * (1 + 1e-12)
            assert rec["kappa_hat"] >= 1.0 and rec["kappa_hat_bal"] >= 1.0
            assert rec["c_hat"] == pytest.approx(1 - 1 / rec["kappa_hat"])
            assert rec["pi_hat"] == pytest.approx(rec["es_pool"] / rec["ef_fw"])
            assert rec["n_subsets"] == math.comb(s + e, s) and rec["pool_extra"] == e
        else:
            assert "es_pool" not in rec and rec["pool_extra"] == SETTINGS.native_extra


def test_zero_mass_keys_are_dropped_and_counted():
    row = synthetic_row(3, zeros=5)
    inst, positive, n_zero, raw_dev = instance_of(row)
    assert n_zero == 5 and positive[0] == 5 and inst.n_keys == 55
    assert raw_dev == pytest.approx(float(row.p.astype(np.float64).sum()) - 1.0)  # the zeroed mass is missing
    assert inst.p.sum() == pytest.approx(1.0, abs=1e-15)
    assert all(r["n_keys"] == 55 and r["n_zero_mass"] == 5 for r in row_records(row, SETTINGS))


def test_budget_beyond_row_length_is_degenerate_not_an_error():
    row = synthetic_row(4, n=6)
    recs = {r["budget"]: r for r in row_records(row, SETTINGS)}
    assert recs[8]["es_top"] == pytest.approx(0.0, abs=1e-12) and recs[8]["pool_is_row"]
    assert recs[4]["pool_is_row"]  # 6 keys < s + e: the pool is the whole row


def test_shard_records_contract(tmp_path):
    from capture.tiny_models import tiny_model

    cap.register()
    model = tiny_model("llama", cap.ATTENTION_NAME)
    ids = torch.randint(0, 96, (80,), generator=torch.Generator().manual_seed(1))
    result = cap.capture_document(model, ids, "tiny", "d0", cap.CaptureOptions(rows_per_head=2, min_position=30))
    path = tmp_path / "s.safetensors"
    shards.write_shard(result, path)
    frame = shard_records(str(path), "tiny", "words", "0000", SETTINGS)
    assert frame.columns == COLUMNS + DIAGNOSTICS
    assert frame.height == 2 * 4 * 2 * 3  # layers x heads x rows x budgets
    assert set(frame["group_size"].unique()) == {2}
    native = frame.filter(frame["budget"] == 8)
    assert native["es_pool"].null_count() == native.height
    # rows of one KV group share their positions
    import polars as pl

    pos = (
        frame.filter(pl.col("budget") == 2)
        .group_by(["layer", "kv_head"])
        .agg(pl.col("query_pos").n_unique().alias("u"))
    )
    assert set(pos["u"].to_list()) == {2}
    assert frame.filter(frame["enumerated"])["kappa_hat"].min() >= 1.0
