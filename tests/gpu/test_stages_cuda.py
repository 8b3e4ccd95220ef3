"""Every stage on a GPU against the CPU (issue 28, item 1), on the tiny study's random-weight Llama and
its document (``tests/workflow/tiny_study.py``).  Skipped without CUDA.

Each test runs a stage's library entry point on the GPU and on the CPU with the same weights and inputs
and compares the outputs: bit for bit where the arithmetic is the same on both (host-side sampling,
kept sets chosen from identical rows, ContourKV's allocation, which sorts on the host), within the
named tolerances below where a GPU reduces in another order (float32 GEMMs, the Triton kernels' tiles).
Where a stage builds a polars frame, the arrays before it are compared; the module imports torch,
numpy and pytest only (stages import inside the tests; polars and kvpress are needed by the curvature
and deployment tests alone and skip them when missing).

Dry run on a machine without a GPU: ``TRUSTMASS_STAGE_TEST_DEVICE=cpu pytest tests/gpu`` runs every
comparison with the CPU on both sides (checks the test code, not the GPU).
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

DEVICE = torch.device(os.environ.get("TRUSTMASS_STAGE_TEST_DEVICE", "cuda"))
pytestmark = pytest.mark.skipif(
    DEVICE.type == "cuda" and not torch.cuda.is_available(),
    reason="needs a CUDA device (TRUSTMASS_STAGE_TEST_DEVICE=cpu: dry run)",
)

#: float32 values computed by GEMMs and reductions (projections, head outputs, logits, softmax rows,
#: their column and window sums): the GPU sums in another order (and Triton in its own tiles), each
#: float32 sum off by a few ulps of its terms; through the tiny model's two layers that stays below
#: 1e-5 of values of order 1, and 1e-4 leaves a factor ten for the sums over up to 96 rows
F32_ATOL, F32_RTOL = 1e-4, 1e-4
#: per-token NLL (nats, float64 from float32 logits) of the forwards that choose nothing (dense,
#: keep-all): the logits differ by float32 reduction order only
NLL_ATOL = 1e-4
#: forwards that choose kept sets from float32 rows: a row whose s-th and (s+1)-th key tie to within
#: float32 rounding may keep the other key on the GPU, and that token's NLL moves by what the key
#: carries; at most this share of tokens may differ by more than NLL_ATOL, and the mean by CE_ATOL
FLIP_SHARE, CE_ATOL = 0.1, 2e-3
#: kept sets of the rules that reduce in float64 GEMMs (balancing's mu, Quest's token fill, the value-aware
#: block scores) on identical rows: a set may differ only where two candidates tie to ~1e-15, which random
#: rows almost never hold; at most this share of rows may differ
SET_MISMATCH_SHARE = 0.02
#: rules whose kept sets depend on comparisons, elementwise float ops and torch.topk only: bit for bit
ORDER_FREE = ("top_mass", "snapkv", "h2o", "streaming_llm", "recency")
#: curvature (a float64 model): transformers' RMS norms compute in float32 even there, and the GPU's float32
#: mean and rsqrt round otherwise, so L, g . delta and delta . H delta / 2 agree to ~1e-7 relative (L is
#: smooth to ~1e-9 absolute); a factor 1000 to spare.  (The kept sets are chosen from float32 rows: a
#: near-tied row choosing otherwise on the GPU -- well under 1 % of runs on these rows -- would move the
#: prediction by that row's share and fail this check.)
CURVATURE_RTOL, CURVATURE_ATOL = 1e-4, 1e-9


@pytest.fixture(autouse=True)
def ieee_float32():
    """IEEE float32 GEMMs on the GPU (no TF32): the tolerances above are float32's."""
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    yield
    torch.set_float32_matmul_precision(before)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """(model folder, the tiny study's first document as int64 token ids [96])."""
    from transformers import AutoTokenizer
    from workflow.tiny_study import make_tiny_corpus, make_tiny_model

    root = tmp_path_factory.mktemp("study")
    folder = make_tiny_model(root / "tiny-model")
    text = (make_tiny_corpus(root / "tiny-corpus") / "a.txt").read_text(encoding="utf-8")
    ids = AutoTokenizer.from_pretrained(folder)(text, add_special_tokens=False)["input_ids"][:96]
    return folder, torch.tensor(ids, dtype=torch.int64)


def load(folder, attention: str, device, dtype=torch.float32):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(folder, attn_implementation=attention, dtype=dtype).to(device).eval()


def close(gpu: torch.Tensor, cpu: torch.Tensor, atol=F32_ATOL, rtol=F32_RTOL, what=""):
    assert gpu.device.type == DEVICE.type, what
    torch.testing.assert_close(gpu.cpu(), cpu, atol=atol, rtol=rtol, msg=lambda m: f"{what}: {m}")


# -- capture ---------------------------------------------------------------------------------------


def test_capture_with_access_laws(study):
    from trustmass.capture import prefill as cap
    from trustmass.capture.access import AccessLaws, AccessOptions

    folder, ids = study
    cap.register()
    options = cap.CaptureOptions(rows_per_head=3, min_position=40, windows=(2, 4, 8, 16, 20, 32), block_rows=32)
    laws = AccessOptions(tail_rows=(4, 8), dilution_rows=16)
    runs = {}
    for device in ("cpu", DEVICE):
        runs[str(device)] = cap.capture_document(
            load(folder, cap.ATTENTION_NAME, device), ids, "tiny", "0000", options, access=AccessLaws(laws)
        )
    cpu, gpu = runs["cpu"], runs[str(DEVICE)]
    assert gpu.tensors.keys() == cpu.tensors.keys() and gpu.metadata == cpu.metadata
    for name, want in cpu.tensors.items():
        got = gpu.tensors[name]
        assert got.device.type == "cpu" and got.dtype == want.dtype and got.shape == want.shape, name
        if name.endswith("positions"):  # sampled on the host
            assert torch.equal(got, want), name
        else:
            torch.testing.assert_close(got, want, atol=F32_ATOL, rtol=F32_RTOL, msg=lambda m, n=name: f"{n}: {m}")
    assert [d[:4] for d in gpu.deviations] == [d[:4] for d in cpu.deviations]
    assert all(d[4] <= b for d, b in zip(gpu.deviations, gpu.bounds, strict=True))
    assert gpu.access.decode_token == cpu.access.decode_token
    for layer, want in cpu.access.prefill.items():
        for key in ("column_mass", "tails", "last"):
            np.testing.assert_allclose(
                gpu.access.prefill[layer][key], want[key], atol=F32_ATOL, rtol=F32_RTOL, err_msg=f"{layer} {key}"
            )
        np.testing.assert_allclose(gpu.access.decode[layer], cpu.access.decode[layer], atol=F32_ATOL, rtol=F32_RTOL)


# -- kernels ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("softcap", "window"), [(None, None), (5.0, 11)])
def test_restricted_attention(softcap, window):
    from trustmass import kernels

    g = torch.Generator().manual_seed(0)
    q, k, v = torch.randn(4, 9, 8, generator=g), torch.randn(2, 96, 8, generator=g), torch.randn(2, 96, 8, generator=g)
    rows = torch.tensor([0, 5, 20, 40, 41, 60, 77, 90, 95])
    sets = []
    for r in range(4 * 9):
        i = int(rows[r % 9])
        visible = torch.arange(0 if window is None else max(0, i - window + 1), i + 1)
        sets.append(visible[torch.randperm(visible.numel(), generator=g)][: r % 11])
    ptr, idx = torch.tensor([0] + [len(s) for s in sets]).cumsum(0), torch.cat(sets)
    args = (q, k, v, rows, ptr, idx)
    kw = {"scaling": 8**-0.5, "softcap": softcap, "window": window}
    want = kernels.restricted_attention(*args, backend="torch", **kw)
    got = kernels.restricted_attention(*(t.to(DEVICE) for t in args), **kw)  # auto: Triton where it imports
    for name, a, b in zip(("out", "kept_mass", "lse"), got, want, strict=True):
        close(a, b, what=name)


# -- held-out loss -----------------------------------------------------------------------------------


def random_rows(seed: int, n_q=8, n_kv=2, m=32, n=256, d=16):
    """One layer's rows with float evidence (no exact ties): LayerRows on the CPU."""
    from trustmass.loss.selection import LayerRows

    rng = np.random.default_rng(seed)
    positions = rng.integers(40, n, size=(n_q // n_kv, m)).repeat(n_kv, 0)
    seen = np.arange(n) <= positions[..., None]
    p = np.where(seen, rng.random((n_q, m, n)) ** 4 + 1e-3, 0.0)
    p = (p / p.sum(-1, keepdims=True)).astype(np.float32)
    acc = np.where(seen, rng.random((n_q, m, n)) * 10, 0.0).astype(np.float32)
    sums = {w: np.where(seen, rng.random((n_q, m, n)) * 4, 0.0).astype(np.float32) for w in (2, 4, 8, 16, 32)}
    return LayerRows(
        p=p,
        positions=positions,
        keys=rng.standard_normal((n_kv, n, d)).astype(np.float32),
        values=rng.standard_normal((n_kv, n, d)).astype(np.float32),
        query=rng.standard_normal((n_q, m, d)).astype(np.float32),
        acc_mass=acc,
        window_sums=sums,
    )


def on(rows, device):
    from trustmass.loss.selection import LayerRows

    def move(x):
        return None if x is None else x.to(device)

    return LayerRows(
        p=move(rows.p),
        positions=move(rows.positions),
        keys=move(rows.keys),
        values=move(rows.values),
        query=move(rows.query),
        acc_mass=move(rows.acc_mass),
        window_sums=None if rows.window_sums is None else {w: move(s) for w, s in rows.window_sums.items()},
    )


@pytest.mark.parametrize("budget", [8, 32])
def test_batched_selectors_on_identical_rows(budget):
    """The loss stage's selection on the same rows on both devices: the kept sets of every batched rule."""
    from trustmass.core.selectors.registry import REGISTRY
    from trustmass.loss.selection import SUPPORTED, select

    for seed in range(2):
        rows = random_rows(seed)
        for name in SUPPORTED:
            s = max(budget, REGISTRY[name].min_budget)
            want, got = select(name, rows, s), select(name, on(rows, DEVICE), s)
            assert got.kept.device.type == DEVICE.type, name
            differ = (got.kept.cpu() != want.kept).any(-1)
            if name in ORDER_FREE:
                assert not bool(differ.any()), name
            else:
                assert float(differ.float().mean()) <= SET_MISMATCH_SHARE, (name, int(differ.sum()))


def flat_cells(model) -> np.ndarray:
    cells = np.zeros((model.config.num_hidden_layers, model.config.num_attention_heads), dtype=bool)
    cells[0, ::2] = cells[-1, -1] = True  # a switched set that splits the KV groups
    return cells


def test_restricted_forward(study):
    """Dense, keep-all, top-mass, all-cell balancing and the flat switch: token NLLs and per-cell records."""
    from trustmass.loss import forward
    from trustmass.loss.configurations import (
        ALL_CELLS,
        BALANCING,
        FLAT_CELLS,
        KEEP_ALL,
        TOP_MASS,
        Configuration,
        switched_cells,
    )
    from trustmass.loss.policy import CellRecorder, SelectionPolicy

    folder, ids = study
    forward.register()
    configs = [
        None,
        Configuration(KEEP_ALL, KEEP_ALL),
        Configuration(TOP_MASS, TOP_MASS),
        Configuration("all_cell", TOP_MASS, BALANCING, ALL_CELLS),
        Configuration("flat_switch", TOP_MASS, BALANCING, FLAT_CELLS),
    ]
    nll, cells = {}, {}
    for device in ("cpu", DEVICE):
        model = load(folder, forward.ATTENTION_NAME, device)
        flat = flat_cells(model)
        f = forward.RestrictedForward(model, ids, 24)
        for config in configs:
            name = "dense" if config is None else config.name
            recorder = CellRecorder(flat.shape)
            policy = None if config is None else SelectionPolicy(config, switched_cells(config, flat), 8, recorder)
            nll[str(device), name] = f.nll(policy)
            cells[str(device), name] = recorder.means()
    for name in ("dense", KEEP_ALL):
        np.testing.assert_allclose(nll[str(DEVICE), name], nll["cpu", name], atol=NLL_ATOL, rtol=0, err_msg=name)
    for name in (TOP_MASS, "all_cell", "flat_switch"):
        got, want = nll[str(DEVICE), name], nll["cpu", name]
        assert float(np.mean(np.abs(got - want) > NLL_ATOL)) <= FLIP_SHARE, (name, np.abs(got - want).max())
        assert abs(float(got.mean() - want.mean())) <= CE_ATOL, name
        for key, value in cells["cpu", name].items():
            assert (
                np.isfinite(cells[str(DEVICE), name][key]).all() and cells[str(DEVICE), name][key].shape == value.shape
            ), key
    assert not np.array_equal(nll["cpu", "all_cell"], nll["cpu", TOP_MASS])  # the switch chose something else


def test_selection_inside_the_forward_equals_the_cpus_on_the_same_rows(study):
    """The rows the GPU forward hands its policy, selected again on the CPU: the same kept sets."""
    from trustmass.loss import forward, selection
    from trustmass.loss.configurations import BALANCING, FLAT_CELLS, TOP_MASS, Configuration, switched_cells
    from trustmass.loss.policy import CellRecorder, SelectionPolicy

    folder, ids = study
    forward.register()
    model = load(folder, forward.ATTENTION_NAME, DEVICE)
    config = Configuration("flat_switch", TOP_MASS, BALANCING, FLAT_CELLS)
    flat = flat_cells(model)
    policy = SelectionPolicy(config, switched_cells(config, flat), 8, CellRecorder(flat.shape))
    seen = []

    def spy(call, prefix):
        rows = policy._rows(call, prefix, call.probabilities())
        seen.append((rows, {rule: selection.select(rule, rows, 8) for rule in (TOP_MASS, BALANCING)}))
        return policy(call, prefix)

    forward.RestrictedForward(model, ids, 24).nll(spy)
    assert len(seen) == model.config.num_hidden_layers
    for rows, chosen in seen:
        assert rows.p.device.type == DEVICE.type
        host = on(rows, "cpu")
        for rule, got in chosen.items():
            want = selection.select(rule, host, 8)
            differ = (got.kept.cpu() != want.kept).any(-1)
            if rule in ORDER_FREE:
                assert not bool(differ.any()), rule
            else:
                assert float(differ.float().mean()) <= SET_MISMATCH_SHARE, (rule, int(differ.sum()))


def test_curvature(study):
    pytest.importorskip("polars")  # trustmass.loss.curvature builds its frame with polars
    from trustmass.loss import forward
    from trustmass.loss.curvature import Curvature

    folder, ids = study
    forward.register()
    out = {}
    for device in ("cpu", DEVICE):
        model = load(folder, forward.ATTENTION_NAME, device, dtype=torch.float64)
        point = Curvature(model, ids, 24, 8)
        loss, _ = point.gradient()
        out[str(device)] = (float(loss), *point.predict(flat_cells(model)))
    np.testing.assert_allclose(out[str(DEVICE)], out["cpu"], rtol=CURVATURE_RTOL, atol=CURVATURE_ATOL)


# -- deployment ------------------------------------------------------------------------------------


def test_ragged_decode_with_a_kvpress_press_and_contourkv(study):
    """One dense prefill recording SnapKV's and H2O's scores; ContourKV's kept sets; the ragged cache's
    decode over them.  Scores within float32 tolerance; ContourKV on the GPU's scores is ContourKV on
    those scores moved to the host (bit for bit); the decode over the same kept sets within tolerance."""
    pytest.importorskip("kvpress")
    from kvpress import SnapKVPress

    from trustmass.deploy import ragged
    from trustmass.deploy.contourkv import contour_kept
    from trustmass.deploy.h2o_press import H2OPress
    from trustmass.deploy.methods import ratio_for
    from trustmass.deploy.runner import kept_sets, score_all

    folder, ids = study
    ragged.register()
    context, question, budget = ids[:80], ids[80:84], 16
    presses = {"snapkv": SnapKVPress(ratio_for(budget, 80), window_size=8), "h2o": H2OPress(ratio_for(budget, 80))}
    runs = {}
    for device in ("cpu", DEVICE):
        model = load(folder, ragged.ATTENTION_NAME, device)
        runs[str(device)] = (model, score_all(model, context, presses))
    (cpu_model, cpu), (_, gpu) = runs["cpu"], runs[str(DEVICE)]
    for name in presses:
        for layer, (a, b) in enumerate(zip(gpu.scores[name], cpu.scores[name], strict=True)):
            close(a, b, what=f"{name} score, layer {layer}")
    windows = ragged.layer_windows(cpu_model.config)
    for name in presses:
        for mode in ("enforced", "unenforced"):
            on_gpu = kept_sets("contourkv", gpu.scores[name], budget, mode=mode, floor=4)
            on_host = contour_kept(
                [s.cpu() for s in gpu.scores[name]], budget, floor=4, caps=budget if mode == "enforced" else None
            )
            assert all(
                a.device.type == DEVICE.type and torch.equal(a.cpu(), b)
                for ga, ha in zip(on_gpu, on_host, strict=True)
                for a, b in zip(ga, ha, strict=True)
            ), (name, mode)
        kept = contour_kept(cpu.scores[name], budget, floor=4, caps=budget)  # the same kept sets on both devices
        logits = {}
        for device, (model, pre) in runs.items():
            cache = ragged.RaggedCache.from_dense(pre.cache, kept, windows)
            with torch.inference_mode():
                first = model(input_ids=question[None].to(model.device), past_key_values=cache).logits[0].float()
                token = first[-1].argmax().reshape(1, 1)
                second = model(input_ids=token, past_key_values=cache).logits[0].float()
            logits[device] = torch.cat([first, second])
            assert cache.kept_counts().tolist() == [
                [len(k) + 5 for k in heads] for heads in kept
            ]  # the 4 + 1 tokens appended
        close(logits[str(DEVICE)], logits["cpu"], what=f"decode logits over {name}'s ContourKV sets")
