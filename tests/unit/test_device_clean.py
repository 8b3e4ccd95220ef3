"""Device-clean stages, checked on the CPU (issue 28, item 1): the code that runs on a GPU with
``capture.device: cuda`` never mixes CPU and CUDA tensors.

Inputs are placed on a virtual accelerator (``device_guard.VirtualDevice``: the data stays on the CPU,
every tensor computed from a placed one reports ``cuda:0``, and any torch call mixing a placed tensor
with a CPU tensor of one or more dimensions raises); ``ragged_attention``, which reads no data, also
runs on the ``meta`` device.  Covered here: the loss forward's batched selectors (``loss.selection``,
``loss.batched``, ``loss.balancing``, ``loss.block_rules``) and its policies (the restricted forward of a
tiny model under balancing, the flat switch, keep-all, deployed rules, the cache-faithful reading, the
probe and a random swap; the curvature), the restricted-attention and capture twins and the capture with
access laws; ``tests/deploy/test_device_clean_deploy.py``: the deployment's ragged-cache decode with
kvpress presses and ContourKV.  Each runs on the CPU too and must give the same values bit for bit: the
code paths a CUDA tensor takes (a loop for ``sequential_sum``, the out-of-place softmax) are the CPU's
arithmetic.  What only a GPU shows (Triton, other reduction orders) is ``tests/gpu/test_stages_cuda.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from device_guard import DeviceMixError, VirtualDevice, is_placed

from trustmass import kernels
from trustmass.core.selectors.registry import REGISTRY
from trustmass.loss import balancing
from trustmass.loss.selection import SUPPORTED, LayerRows, select

WINDOWS = (2, 4, 8, 16, 32)


@pytest.fixture(autouse=True)
def twins(monkeypatch):
    """The PyTorch twins: a placed tensor reports CUDA, where ``auto`` would pick Triton."""
    monkeypatch.setenv(kernels.BACKEND_ENV, "torch")


def synthetic_rows(seed=0, n_q=4, n_kv=2, m=5, n=48, d=8, window=None, levels=None, positions=None) -> LayerRows:
    """Random rows of one layer (``levels``: masses and evidence quantised, exact ties everywhere)."""
    rng = np.random.default_rng(seed)

    def draw(*shape):
        x = rng.random(shape)
        return np.floor(x * levels) / levels if levels else x

    keys, values = (draw(n_kv, n, d) - 0.5).astype(np.float32), (draw(n_kv, n, d) - 0.5).astype(np.float32)
    query = (draw(n_q, m, d) - 0.5).astype(np.float32)
    positions = rng.integers(1, n, size=(n_q // n_kv, m)).repeat(n_kv, 0) if positions is None else positions
    j = np.arange(n)
    seen = j <= positions[..., None]
    if window is not None:
        seen &= j > positions[..., None] - window
    p = np.where(seen, draw(n_q, m, n) + 0.05, 0.0)
    p = (p / p.sum(axis=-1, keepdims=True)).astype(np.float32)
    acc = np.where(j <= positions[..., None], draw(n_q, m, n) * 10, 0.0).astype(np.float32)
    sums = np.where(j <= positions[..., None, None], draw(n_q, m, len(WINDOWS), n) * 4, 0.0).astype(np.float32)
    return LayerRows(
        p=p,
        positions=positions,
        keys=keys,
        values=values,
        query=query,
        acc_mass=acc,
        window_sums={w: sums[:, :, k] for k, w in enumerate(WINDOWS)},
    )


def rows_tensors(rows: LayerRows) -> list:
    return [rows.p, rows.positions, rows.keys, rows.values, rows.query, rows.acc_mass, rows.window_sums]


def test_the_guard_catches_cpu_tensors_and_follows_device_arguments():
    x = torch.randn(4, 6)
    with VirtualDevice() as dev:
        dev.place(x)
        assert x.device == torch.device("cuda", 0) and x.is_cuda
        assert torch.zeros(3, device=x.device).is_cuda and torch.arange(6).to(x.device).is_cuda
        assert not torch.arange(6).is_cuda and not x.cpu().is_cuda and x.is_cuda
        with pytest.raises(DeviceMixError, match="gather"):  # issue 28's bug: a CPU index into CUDA values
            x.gather(1, torch.zeros(4, 1, dtype=torch.int64))
        with pytest.raises(DeviceMixError):
            x + torch.arange(6)
        with pytest.raises(DeviceMixError):
            x.numpy()
        assert (x * torch.tensor(2.0)).is_cuda  # a 0-dim CPU tensor is a scalar on every device
        values, index = x.topk(2, dim=1)
        assert values.is_cuda and index.is_cuda and int(index[0, 0]) == int(x[0].argmax())
    meta = torch.empty(3, device="meta")
    with pytest.raises(RuntimeError):  # the meta device refuses a CPU operand on its own
        meta + torch.ones(3)


@pytest.mark.parametrize("name", SUPPORTED)
@pytest.mark.parametrize("case", ["random", "ties", "sliding_window", "short_rows"])
def test_batched_selectors_are_device_clean(name, case):
    kw = {
        "random": {},
        "ties": {"levels": 4},
        "sliding_window": {"window": 12},
        "short_rows": {"positions": np.full((4, 5), 9)},
    }[case]
    budget = max(8, REGISTRY[name].min_budget)
    want = select(name, synthetic_rows(seed=2, **kw), budget)
    rows = synthetic_rows(seed=2, **kw)
    with VirtualDevice() as dev:
        dev.place(rows_tensors(rows))
        got = select(name, rows, budget)
        assert got.kept.is_cuda and (got.swaps is None or got.swaps.is_cuda)
        ptr, idx = got.to_csr()
        assert ptr.is_cuda and idx.is_cuda
    assert torch.equal(got.kept, want.kept)
    assert (got.swaps is None) == (want.swaps is None) and (got.swaps is None or torch.equal(got.swaps, want.swaps))


def test_balancing_screens_and_exact_rounds_are_device_clean(monkeypatch):
    """Every branch of balancing on placed rows: crowded rows through the expansion screen
    (TRIANGLE_WIDTH 0) and every swap round undecided by the screen, so decided exactly (SCREEN_TOL 1)."""
    monkeypatch.setattr(balancing, "TRIANGLE_WIDTH", 0)
    monkeypatch.setattr(balancing, "SCREEN_TOL", 1.0)
    for seed in range(2):
        want = select("balancing", synthetic_rows(seed=seed, n=64), 8)
        rows = synthetic_rows(seed=seed, n=64)
        with VirtualDevice() as dev:
            dev.place(rows_tensors(rows))
            got = select("balancing", rows, 8)
        assert torch.equal(got.kept, want.kept) and torch.equal(got.swaps, want.swaps) and int(want.swaps.sum()) > 0


def restricted_inputs(window, keep_all, seed=0, heads=4, kv_heads=2, m=7, n=40, d=8):
    """q, k, v, rows and CSR kept sets (ragged, random order, empty ones; or every visible key)."""
    g = torch.Generator().manual_seed(seed)
    q, k, v = (
        torch.randn(heads, m, d, generator=g) * 2,
        torch.randn(kv_heads, n, d, generator=g),
        torch.randn(kv_heads, n, d, generator=g),
    )
    rows = torch.cat([torch.tensor([0, n - 1]), 1 + torch.randperm(n - 2, generator=g)[: m - 2]]).sort().values
    sets = []
    for r in range(heads * m):
        i = int(rows[r % m])
        visible = torch.arange(0 if window is None else max(0, i - window + 1), i + 1)
        sets.append(visible if keep_all else visible[torch.randperm(visible.numel(), generator=g)][: r % 9])
    ptr = torch.tensor([0] + [len(s) for s in sets]).cumsum(0)
    return [q, k, v, rows, ptr, torch.cat(sets)]


@pytest.mark.parametrize(
    ("softcap", "window", "logits_dtype"), [(None, None, None), (5.0, 11, None), (None, None, torch.bfloat16)]
)
@pytest.mark.parametrize("keep_all", [False, True])  # the sparse and the dense value product
def test_restricted_twin_is_device_clean(softcap, window, logits_dtype, keep_all):
    args = restricted_inputs(window, keep_all)
    if logits_dtype is not None:
        args[:3] = [t.to(logits_dtype) for t in args[:3]]
    kw = {"scaling": 0.35, "softcap": softcap, "window": window, "logits_dtype": logits_dtype}
    want = kernels.restricted_attention_torch(*args, **kw)
    with VirtualDevice() as dev:
        got = kernels.restricted_attention_torch(*dev.place([t.clone() for t in args]), **kw)
        assert all(t.is_cuda for t in got)
    assert all(torch.equal(a, b) for a, b in zip(got, want, strict=True))


@pytest.mark.parametrize(("softcap", "window"), [(None, None), (5.0, 9)])
def test_capture_twins_are_device_clean(softcap, window):
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(4, 40, 8, generator=g), torch.randn(4, 40, 8, generator=g)
    positions = torch.tensor([[3, 17, 39]] * 4)
    kw = {"scaling": 0.35, "softcap": softcap, "window": window}
    want = (
        kernels.sampled_row_probs_torch(q, k, positions, **kw),
        *kernels.column_mass_and_window_sums_torch(q, k, positions, block_rows=16, **kw),
    )
    with VirtualDevice() as dev:
        dev.place([q, k, positions])
        got = (
            kernels.sampled_row_probs_torch(q, k, positions, **kw),
            *kernels.column_mass_and_window_sums_torch(q, k, positions, block_rows=16, **kw),
        )
        assert all(t.is_cuda for t in got)
    assert all(torch.equal(a, b) for a, b in zip(got, want, strict=True))


def test_loss_forward_is_device_clean():
    """The restricted forward of the tiny Llama, every kind of policy: each configuration's token NLLs
    and cell records equal the CPU run's."""
    from capture.tiny_models import tiny_model

    from trustmass.loss import forward
    from trustmass.loss.configurations import (
        ALL_CELLS,
        BALANCING,
        CACHE_FAITHFUL,
        FLAT_CELLS,
        KEEP_ALL,
        TOP_MASS,
        Configuration,
    )
    from trustmass.loss.diagnostics import run_diagnostics
    from trustmass.loss.document import run_document
    from trustmass.loss.probe import ProbeParams
    from trustmass.loss.swaps import SwapConfiguration

    forward.register()
    ids = torch.randint(0, 96, (32,), generator=torch.Generator().manual_seed(5))
    flat = np.array([[True, False, True, False], [False, False, False, True]])
    configs = [  # the rules themselves are checked on every kind of row above; here each kind of policy
        Configuration(KEEP_ALL, KEEP_ALL),
        Configuration("all_cell", TOP_MASS, BALANCING, ALL_CELLS),
        Configuration("flat_switch", TOP_MASS, BALANCING, FLAT_CELLS),
        Configuration("snapkv+flat", "snapkv", BALANCING, FLAT_CELLS),
        Configuration("h2o@cf", "h2o", accounting=CACHE_FAITHFUL),
        Configuration("probe@0.5", "probe", alpha=0.5),
    ]
    gen = torch.Generator().manual_seed(3)
    probe = ProbeParams(
        u={l: torch.randn(4, 16, 16, generator=gen) for l in (0, 1)},
        v={l: torch.randn(4, 16, 16, generator=gen) for l in (0, 1)},
        budget=8,
    )  # on the CPU, as loaded
    swaps = [SwapConfiguration("h2o", "snapkv", "random", 0.5, 0)]

    def run(model):
        doc = run_document(model, ids, configs, flat, 8, 8, probe=probe, log=lambda _: None)
        diag, _ = run_diagnostics(model, ids, 8, swaps, 8, [], [], log=lambda _: None)
        return doc, diag

    model = tiny_model("llama", forward.ATTENTION_NAME)
    want = run(model)
    with VirtualDevice() as dev:
        got = run(dev.place(model))
        assert dev.calls > 1000
    assert got[0].tokens.equals(want[0].tokens) and got[0].cells.equals(want[0].cells) and got[1].equals(want[1])


def test_capture_with_access_laws_is_device_clean():
    from capture.tiny_models import tiny_model

    from trustmass.capture import prefill as cap
    from trustmass.capture.access import AccessLaws, AccessOptions

    cap.register()
    ids = torch.randint(0, 96, (48,), generator=torch.Generator().manual_seed(0))
    options = cap.CaptureOptions(rows_per_head=3, min_position=4, seed=7, windows=(2, 4, 8), block_rows=16)
    laws = AccessOptions(tail_rows=(4, 8), dilution_rows=16, target=(5, 6, 7), block_rows=7)
    for kind in ("llama", "gemma2"):  # GQA; soft-capped eager with a sliding window
        model = tiny_model(kind, cap.ATTENTION_NAME)
        want = cap.capture_document(model, ids, "m", "d", options, access=AccessLaws(laws))
        with VirtualDevice() as dev:
            got = cap.capture_document(dev.place(model), ids, "m", "d", options, access=AccessLaws(laws))
        assert got.tensors.keys() == want.tensors.keys() and not any(is_placed(t) for t in got.tensors.values())
        assert all(torch.equal(got.tensors[name], want.tensors[name]) for name in want.tensors)
        assert got.deviations == want.deviations and got.bounds == want.bounds
        for layer in want.access.prefill:
            assert all(
                np.array_equal(got.access.prefill[layer][k], want.access.prefill[layer][k])
                for k in ("column_mass", "tails", "last")
            )
            assert np.array_equal(got.access.decode[layer], want.access.decode[layer])


def test_curvature_is_device_clean():
    """The differentiable top-mass point (frozen kept sets, gradient, Hessian-vector products)."""
    from capture.tiny_models import tiny_model

    from trustmass.loss import forward
    from trustmass.loss.curvature import curvature

    forward.register()
    ids = torch.randint(0, 96, (32,), generator=torch.Generator().manual_seed(2))
    flat = {"flat_switch": np.array([[True, False, True, False], [False, False, False, True]])}
    model = tiny_model("llama", forward.ATTENTION_NAME, dtype=torch.float64)
    want = curvature(model, ids, 8, 4, flat, log=lambda _: None)
    with VirtualDevice() as dev:
        got = curvature(dev.place(model), ids, 8, 4, flat, log=lambda _: None)
    assert got.equals(want)
