"""Device-clean deployment, checked on the CPU (issue 28, item 1): the ragged-cache decode with kvpress
presses and ContourKV on inputs placed on a virtual accelerator (``device_guard.VirtualDevice``; see
``tests/unit/test_device_clean.py``), bit for bit as on the CPU; ``ragged_attention`` also on ``meta``."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from device_guard import VirtualDevice

from trustmass import kernels

pytest.importorskip("kvpress")


@pytest.fixture(autouse=True)
def twins(monkeypatch):
    """The PyTorch twins: a placed tensor reports CUDA, where ``auto`` would pick Triton."""
    monkeypatch.setenv(kernels.BACKEND_ENV, "torch")


def test_ragged_decode_with_kvpress_and_contourkv_is_device_clean():
    """The deployment runner end to end (one dense prefill recording kvpress scores, kept sets, the
    ragged cache, greedy decoding) for uniform, pyramid, head-wise, H2O and ContourKV methods."""
    from deploy_helpers import models
    from test_runner import char_tok
    from test_tasks import PROSE

    from trustmass.deploy.runner import run_item
    from trustmass.deploy.tasks import make_item

    model = models("llama")[0]
    tok = char_tok()
    item = make_item(
        "niah_single",
        420,
        0,
        haystack_ids=np.asarray(tok.encode(PROSE * 2, add_special_tokens=False)),
        tokenizer=tok,
        seed=3,
    )
    names = ["dense", "snapkv", "pyramidkv", "adakv", "h2o", "contourkv_enforced", "contourkv_unenforced"]
    keep = ("method", "budget", "answer", "kept_entries", "kept_min_head", "kept_max_head", "bytes_ragged")
    want = run_item(model, tok, item, names, 32, max_new_tokens=3, contour={"floor": 8})
    with VirtualDevice() as dev:
        got = run_item(dev.place(model), tok, item, names, 32, max_new_tokens=3, contour={"floor": 8})
    assert [{k: r[k] for k in keep} for r in got] == [{k: r[k] for k in keep} for r in want]


def test_contourkv_and_kept_sets_follow_the_scores_device():
    from trustmass.deploy.contourkv import contour_kept
    from trustmass.deploy.runner import kept_sets

    g = torch.Generator().manual_seed(4)
    scores = [torch.rand(2, 50, generator=g) for _ in range(3)]
    cases = [
        ("contourkv", {"mode": "enforced", "floor": 4}),
        ("contourkv", {"mode": "unenforced", "floor": 4, "scope": "per_layer"}),
        ("uniform", {}),
        ("headwise", {}),
        ("pyramid", {"layer_budgets": [12, 10, 8]}),
        ("dense", {}),
    ]
    for kind, kw in cases:
        want = kept_sets(kind, [s.clone() for s in scores], 10, **kw)
        with VirtualDevice() as dev:
            got = kept_sets(kind, dev.place([s.clone() for s in scores]), 10, **kw)
            assert all(k.is_cuda for heads in got for k in heads), kind
        assert all(torch.equal(a, b) for ga, wa in zip(got, want, strict=True) for a, b in zip(ga, wa, strict=True)), (
            kind
        )
    with VirtualDevice() as dev:
        assert contour_kept(dev.place([s.clone() for s in scores]), 10, floor=4, caps=12)[0][0].is_cuda


@pytest.mark.parametrize("window", [None, 6])
def test_ragged_attention_runs_on_the_meta_device(window):
    """No data read, so the meta device runs it: any CPU tensor it made would fail the call."""
    from trustmass.deploy.ragged import RaggedHeads, ragged_attention

    meta = torch.device("meta")
    rows = tuple(torch.empty(n, 8, device=meta) for n in (7, 5))
    positions = None if window is None else tuple(torch.empty(n, dtype=torch.int64, device=meta) for n in (7, 5))
    keys = RaggedHeads(rows, positions, block=3, block_start=20, window=window)
    out = ragged_attention(torch.empty(1, 4, 3, 8, device=meta), keys, keys, scaling=0.35)
    assert out.device == meta and out.shape == (1, 3, 4, 8)
