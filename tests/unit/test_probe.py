"""The rank-16 probe (spec §6, App E): zero-init = top-mass, training learns the balancing swaps,
selection ties, save/load, determinism."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from trustmass.core.selectors.contract import run
from trustmass.core.selectors.registry import REGISTRY
from trustmass.core.selectors.selector_input import SelectorInput
from trustmass.loss import probe as pr

S = 8


@pytest.fixture(scope="module")
def shard(tmp_path_factory):
    from capture.tiny_models import tiny_shard

    return tiny_shard(tmp_path_factory.mktemp("probe"), n_tokens=200, rows_per_head=6, min_position=40)


@pytest.fixture(scope="module")
def rows(shard):
    return pr.training_rows([shard], S)


@pytest.fixture(scope="module")
def trained(rows):
    return pr.train(rows, steps=150, lr=1e-2, seed=0)


def test_rows_match_registry_rules(shard, rows):
    """Targets are the registry's top-mass and balancing sets, row by row; logits rank as p."""
    from trustmass.contracts.shards import read_layer

    t = read_layer(shard, 1, pr.ROW_FIELDS)
    b = rows.layers[1][0]
    for h in range(b.top.shape[0]):
        for r in range(b.top.shape[1]):
            x = SelectorInput.from_layer(t, h, r)
            np.testing.assert_array_equal(b.top[h, r].numpy(), run(REGISTRY["top_mass"], x, S))
            np.testing.assert_array_equal(b.bal[h, r].numpy(), run(REGISTRY["balancing"], x, S))
            i = int(b.positions[h, r])
            assert (
                np.isneginf(b.logits[h, r, i + 1 :].numpy()).all()
                and np.isfinite(b.logits[h, r, : i + 1].numpy()).all()
            )
    assert int(b.swaps.sum()) > 0  # the random tiny model swaps: the training test below can fail


def test_untrained_probe_selects_top_mass(rows):
    params = pr.init_params(rows.shapes(), budget=S, seed=3)
    assert all(float(u.abs().max()) == 0 for u in params.u.values())
    assert all(float(v.abs().max()) > 0 for v in params.v.values())  # LoRA-style: V random, U zero
    probe, top, bal = pr.rows_selection(rows, params, alpha=5.0)
    assert torch.equal(probe, top)
    m = pr.swap_recall(probe, top, bal)
    assert m.recall == 0.0 and m.swap_rows > 0


def test_training_lowers_loss_and_recovers_swaps(rows, trained):
    params, history = trained
    for h in history.values():
        assert h[-1] < 0.5 * h[0]
    before = pr.evaluate(rows, pr.init_params(rows.shapes(), budget=S))
    after = pr.evaluate(rows, params)
    assert before.recall == 0.0
    assert after.recall > 0.4 and after.precision > 0.4


def test_alpha_zero_is_top_mass_for_trained_params(rows, trained):
    params, _ = trained
    probe, top, _ = pr.rows_selection(rows, params, alpha=0.0)
    assert torch.equal(probe, top)
    assert not torch.equal(pr.rows_selection(rows, params)[0], top)  # the trained probe does move


def test_training_is_deterministic(rows):
    one = rows.layers[0][:1]
    small = replace(rows, layers={0: one})
    a, ha = pr.train(small, steps=20, seed=7)
    lines = []
    b, hb = pr.train(small, steps=20, seed=7, log=lines.append)  # logging changes nothing
    assert lines == [f"layer 0 (1 of 1): loss {hb[0][0]:.4g} -> {hb[0][-1]:.4g} in {lines[0].split(' in ')[1]}"]
    c, _ = pr.train(small, steps=20, seed=8)
    assert ha == hb
    assert torch.equal(a.u[0], b.u[0]) and torch.equal(a.v[0], b.v[0])
    assert not torch.equal(a.v[0], c.v[0])


def test_save_load_round_trip(tmp_path, trained):
    params, _ = trained
    path = tmp_path / "probe.safetensors"
    params.with_alpha(0.37).save(path)
    back = pr.ProbeParams.load(path)
    assert back.layers == params.layers and back.rank == params.rank == pr.RANK and back.budget == S
    assert back.alpha == 0.37 and back.train_docs == params.train_docs == ("d0",)
    assert back.info == params.info
    for layer in params.layers:
        assert torch.equal(back.u[layer], params.u[layer]) and torch.equal(back.v[layer], params.v[layer])
    assert list(tmp_path.iterdir()) == [path]  # the atomic write left no temporary behind


def test_load_rejects_foreign_file(tmp_path):
    from safetensors.torch import save_file

    save_file({"x": torch.zeros(1)}, str(tmp_path / "x.safetensors"))
    with pytest.raises(ValueError, match="not a probe"):
        pr.ProbeParams.load(tmp_path / "x.safetensors")


def test_select_top_ties_and_invisible_keys():
    inf = float("inf")
    scores = torch.tensor(
        [
            [[1.0, 2.0, 2.0, 2.0, 0.5, -inf]],  # tie at 2: the smaller positions win
            [[3.0, -inf, -inf, -inf, 1.0, -inf]],
        ]
    )  # only two visible keys
    kept = pr.select_top(scores, 3)
    assert kept.tolist() == [[[1, 2, 3]], [[0, 4, -1]]]
    assert pr.select_top(torch.tensor([[[0.0, 0.0, 0.0, 0.0]]]), 2).tolist() == [[[0, 1]]]


def test_probe_select_batched_matches_row_scoring():
    """probe_scores on a GQA batch = logit + alpha (U q)^T (V k) row by row, the KV head h // g."""
    gen = torch.Generator().manual_seed(0)
    hq, hkv, m, n, d, r = 4, 2, 3, 10, 6, 2
    q, k = torch.randn(hq, m, d, generator=gen), torch.randn(hkv, n, d, generator=gen)
    logits = torch.randn(hq, m, n, generator=gen, dtype=torch.float64)
    logits[:, :, 7:] = -torch.inf
    u, v = torch.randn(hq, r, d, generator=gen), torch.randn(hq, r, d, generator=gen)
    scores = pr.probe_scores(q, k, logits, (u, v), 0.5)
    h, i = 3, 1
    want = logits[h, i] + 0.5 * ((u[h] @ q[h, i]) @ (v[h] @ k[h // 2].T)).double()
    # the low-rank term is an fp32 product (its summation order is the BLAS's): fp32 tolerance, not float64's
    torch.testing.assert_close(scores[h, i], want, rtol=1.3e-6, atol=1e-5)
    kept = pr.probe_select(q, k, logits, (u, v), 0.5, 4)
    assert kept.shape == (hq, m, 4) and int(kept.max()) < 7
    order = torch.sort(want, descending=True, stable=True).indices[:4]
    assert kept[h, i].tolist() == sorted(order.tolist())


def test_swap_recall_counts():
    top = np.array([[0, 1, 2], [0, 1, 2], [0, 1, 2]])
    bal = np.array([[0, 1, 5], [0, 6, 7], [0, 1, 2]])  # swaps in {5} and {6, 7}; the last row none
    probe = np.array([[0, 1, 5], [0, 1, 6], [0, 1, 9]])  # 2 of 3 recovered; 9 is a spurious add
    m = pr.swap_recall(probe, top, bal)
    assert m.recall == pytest.approx(2 / 3) and m.row_recall == pytest.approx((1 + 0.5) / 2)
    assert m.precision == pytest.approx(2 / 3) and m.stay == 0.0
    assert (m.swap_rows, m.rows, m.swapped_in) == (2, 3, 3)


def test_threshold_loss_by_hand():
    """sum over visible non-members of softplus(s_k - weakest member); invisible keys and rows
    without a target add nothing."""
    inf = float("inf")
    scores = torch.tensor([[3.0, 1.0, 2.0, 0.0, -inf], [1.0, 2.0, 3.0, 4.0, 5.0]])
    logits = scores.clone()
    bal = torch.tensor([[0, 2], [-1, -1]])
    want = float(
        torch.nn.functional.softplus(torch.tensor(1.0 - 2.0)) + torch.nn.functional.softplus(torch.tensor(0.0 - 2.0))
    )
    assert float(pr.threshold_loss(scores, bal, logits)) == pytest.approx(want)
    # a key at the zero-mass floor is no positive (and, as a negative, costs nothing)
    floor = logits.clone()
    floor[0, 2] = pr.ZERO_MASS_LOGIT
    assert float(pr.threshold_loss(floor, bal, floor)) == pytest.approx(
        float(sum(torch.nn.functional.softplus(torch.tensor(x - 3.0)) for x in (1.0, 0.0)))
    )
