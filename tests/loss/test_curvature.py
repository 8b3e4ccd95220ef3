"""Curvature (App E): the gradient and Hessian-vector products at the o_proj inputs against finite
differences, the second-order prediction's O(t^3) error, the prediction of a real switch, shares."""

import numpy as np
import pytest
import torch
from capture.tiny_models import tiny_model

from trustmass.loss import forward
from trustmass.loss.configurations import ALL_CELLS, BALANCING, TOP_MASS, Configuration
from trustmass.loss.curvature import ALL, Curvature, curvature, restricted_output
from trustmass.loss.policy import CellRecorder, SelectionPolicy, visible_only

KINDS = ("llama", "gemma3", "gemma2")  # plain GQA; sliding window; soft-capped logits
N_TOKENS, CONTINUATION, BUDGET = 64, 16, 4
SHAPE = (2, 4)  # the tiny models' [layers, query heads]
# finite-difference step: transformers' RMS norms compute in float32 even in a float64 model, so L is
# smooth only to ~1e-9; a five-point stencil at 1e-2 keeps that noise and its O(h^4) truncation small
H = 1e-2


@pytest.fixture(scope="module", autouse=True)
def registered():
    forward.register()


def document() -> torch.Tensor:
    return torch.randint(0, 96, (N_TOKENS,), generator=torch.Generator().manual_seed(2))


def point(kind: str, dtype=torch.float64, budget: int = BUDGET) -> Curvature:
    return Curvature(tiny_model(kind, forward.ATTENTION_NAME, dtype=dtype), document(), CONTINUATION, budget)


def dot(a, b) -> float:
    return sum(float((x.double() * y.double()).sum()) for x, y in zip(a, b, strict=True))


def unit_direction(like, seed: int) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    u = [torch.randn(x.shape, generator=gen, dtype=x.dtype) for x in like]
    norm = dot(u, u) ** 0.5
    return [x / norm for x in u]


def shifted(c: Curvature, v, t: float) -> dict:
    return {layer: t * x for layer, x in zip(c.layers, v, strict=True)}


def stencil(f, h: float):
    """The five-point central difference ``f'(0)`` (error O(h^4))."""
    return (8 * (f(h) - f(-h)) - (f(2 * h) - f(-2 * h))) / (12 * h)


@pytest.mark.parametrize("kind", KINDS)
def test_gradient_matches_central_difference(kind):
    c = point(kind)
    loss, g = c.gradient()
    assert float(loss) == pytest.approx(float(c.loss()), abs=1e-12)  # the frozen replay is the same point
    norm = dot(g, g) ** 0.5
    assert norm > 1e-3  # a vanishing gradient would pass the check trivially
    for seed in (0, 1):  # half along g, half random: g.u is of the order of |g|
        u = [x / norm + r for x, r in zip(g, unit_direction(g, seed), strict=True)]
        u = [x / dot(u, u) ** 0.5 for x in u]
        fd = stencil(lambda t, u=u: float(c.loss(shifted(c, u, t))), H)
        assert dot(g, u) == pytest.approx(fd, rel=1e-4)


@pytest.mark.parametrize("kind", KINDS)
def test_hvp_matches_difference_of_gradients(kind):
    c = point(kind)
    _, g = c.gradient()
    v = unit_direction(g, 3)
    hv = c.hvp(v)

    def gradient_at(t):
        leaves = [(t * x).requires_grad_() for x in v]
        loss = c.loss(dict(zip(c.layers, leaves, strict=True)), grad=True)
        return torch.cat([x.reshape(-1) for x in torch.autograd.grad(loss, leaves)])

    fd = stencil(gradient_at, H)
    hv_flat = torch.cat([x.reshape(-1) for x in hv])
    scale = float(hv_flat.norm())
    assert scale > 1e-3
    assert float((hv_flat - fd).norm()) < 1e-3 * scale
    # and H is symmetric: u^T H v == v^T H u
    u = unit_direction(g, 4)
    assert dot(u, hv) == pytest.approx(dot(v, c.hvp(u)), rel=1e-5, abs=1e-9)


@pytest.mark.parametrize("kind", KINDS)
def test_second_order_error_is_cubic(kind):
    """err(t) = L(t delta) - L(0) - t g.delta - t^2/2 delta.H.delta shrinks 8-fold as t halves."""
    c = point(kind)
    cells = np.ones(SHAPE, dtype=bool)
    delta = c.direction(cells)
    first, second = c.predict(cells)
    loss0 = float(c.loss())

    def err(t):
        return float(c.loss(shifted(c, delta, t))) - loss0 - t * first - t * t * second

    ratio = err(1 / 16) / err(1 / 32)
    assert 6.0 < ratio < 10.5  # 8 up to the O(t^4) term; a wrong second order gives ~4
    assert abs(second) > 1e-5  # (a second order of 0 would leave err ~ t^2: ratio 4)


@pytest.mark.parametrize("kind", KINDS)
def test_prediction_of_a_real_last_layer_switch(kind):
    """Switching the last layer's heads to balancing (the real policy and kernel) changes the loss by
    exactly L(delta): no layer downstream re-selects; the quadratic predicts it to O(|delta|^3)."""
    model, budget = tiny_model(kind, forward.ATTENTION_NAME, dtype=torch.float32), 12  # a large budget: a small delta
    c = Curvature(model, document(), CONTINUATION, budget)
    fw = forward.RestrictedForward(model, document(), CONTINUATION)
    top = fw.nll(
        SelectionPolicy(Configuration("top", TOP_MASS), np.zeros(SHAPE, bool), budget, CellRecorder(SHAPE))
    ).mean()
    assert float(c.loss()) == pytest.approx(top, abs=2e-5)
    cells = np.zeros(SHAPE, dtype=bool)
    cells[-1, 1] = True
    switch = Configuration("all", TOP_MASS, BALANCING, ALL_CELLS)
    measured = fw.nll(SelectionPolicy(switch, cells, budget, CellRecorder(SHAPE))).mean() - top
    delta = c.direction(cells)
    assert float(c.loss(shifted(c, delta, 1.0))) - float(c.loss()) == pytest.approx(measured, abs=2e-5)
    first, second = c.predict(cells)
    assert abs(measured) > 1e-4
    assert first + second == pytest.approx(measured, rel=0.2)


@pytest.mark.parametrize("kind", KINDS)
def test_restricted_output_matches_the_kernel_twin(kind):
    """The differentiable m_A equals the kernel twin's sum_A P v / sum_A P on the frozen sets."""
    from trustmass import kernels
    from trustmass.loss import selection

    c = point(kind, torch.float32)
    calls = {}

    def spy(call, prefix):
        calls[call.layer] = call
        return c.policy(call, prefix)

    with torch.no_grad():
        c.forward.logits(spy)
    for layer, call in calls.items():
        top, bal = c.policy.kept[layer]
        for kept in (top, bal):
            assert torch.equal(kept, visible_only(kept, call.probabilities()))
            ptr, idx = selection.to_csr(kept)
            twin, _, _ = kernels.restricted_attention(
                call.query,
                call.keys,
                call.values,
                call.positions,
                ptr,
                idx,
                call.scaling,
                call.softcap,
                call.window,
                call.logits_dtype,
                backend="torch",
            )
            torch.testing.assert_close(restricted_output(call, kept), twin, rtol=1e-5, atol=1e-5)
        assert float((bal != top).sum()) > 0  # balancing differs somewhere: delta is not trivially 0


def test_frame_shares():
    model = tiny_model("llama", forward.ATTENTION_NAME, dtype=torch.float64)
    first_layer = np.zeros(SHAPE, dtype=bool)
    first_layer[0] = True
    sets = {"first_layer": first_layer, "rest": ~first_layer, ALL: np.ones(SHAPE, dtype=bool)}
    frame = curvature(model, document(), CONTINUATION, BUDGET, sets, log=lambda _: None)
    rows = {r["cell_set"]: r for r in frame.iter_rows(named=True)}
    assert frame["cell_set"].to_list() == [ALL, "first_layer", "rest"]  # the all-cell set once, first
    assert rows[ALL]["predicted_share"] == pytest.approx(1.0, abs=1e-12)
    assert rows[ALL]["n_cells"] == 8 and rows["first_layer"]["n_cells"] == 4
    c = point("llama")
    delta = c.direction(first_layer)
    assert rows["first_layer"]["replayed"] == pytest.approx(float(c.loss(shifted(c, delta, 1.0)) - c.loss()), abs=1e-12)
    for r in rows.values():
        assert r["predicted"] == pytest.approx(r["first_order"] + r["second_order"], abs=1e-12)
        assert r["predicted_share"] == pytest.approx(r["predicted"] / rows[ALL]["predicted"], rel=1e-12)
    # g.delta is linear over a partition; the quadratic part is not (the cross term)
    assert rows["first_layer"]["first_order"] + rows["rest"]["first_order"] == pytest.approx(
        rows[ALL]["first_order"], rel=1e-9
    )
    cross = rows[ALL]["second_order"] - rows["first_layer"]["second_order"] - rows["rest"]["second_order"]
    hv = c.hvp(c.direction(~first_layer))
    assert cross == pytest.approx(dot(c.direction(first_layer), hv), rel=1e-6, abs=1e-12)
    with pytest.raises(ValueError, match="shape"):
        curvature(model, document(), CONTINUATION, BUDGET, {"bad": np.ones((3, 4), bool)}, log=lambda _: None)
