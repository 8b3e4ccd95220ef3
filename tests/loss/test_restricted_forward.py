"""The restricted forward on the tiny models (plain GQA, sliding window, soft-capped logits): the
prefix reused equals one full forward, keep-all reproduces the model's own loss (the paper's unit
test), and the policy's outputs -- gathered from the rows its selection read -- equal the kernel
twin's, which recomputes those rows from the queries and keys."""

import numpy as np
import pytest
import torch
from capture.tiny_models import tiny_model

from trustmass import kernels
from trustmass.loss import forward, selection
from trustmass.loss.configurations import KEEP_ALL, Configuration
from trustmass.loss.policy import CellRecorder, SelectionPolicy

KINDS = ("llama", "gemma3", "gemma2")
N_TOKENS, CONTINUATION = 64, 16
SHAPE = (2, 4)  # the tiny models' [layers, query heads]


@pytest.fixture(scope="module", autouse=True)
def registered():
    forward.register()


def restricted(kind: str) -> forward.RestrictedForward:
    ids = torch.randint(0, 96, (N_TOKENS,), generator=torch.Generator().manual_seed(5))
    model = tiny_model(kind, forward.ATTENTION_NAME, dtype=torch.float32)
    return forward.RestrictedForward(model, ids, CONTINUATION, tail_rows=3, column_mass=True)


def policy(rule: str, budget: int) -> SelectionPolicy:
    return SelectionPolicy(Configuration(rule, rule), np.zeros(SHAPE, dtype=bool), budget, CellRecorder(SHAPE))


@pytest.mark.parametrize("kind", KINDS)
def test_the_reused_prefix_is_one_full_forward_and_keep_all_is_the_model(kind):
    f = restricted(kind)
    dense = f.nll(None)
    np.testing.assert_allclose(dense, forward.full_forward_nll(f.model, f.ids, CONTINUATION), atol=1e-5)
    assert np.abs(f.nll(policy(KEEP_ALL, 1)) - dense).max() < 1e-5


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("rule", ["top_mass", "snapkv", "h2o"])
def test_outputs_from_the_selections_rows_equal_the_twin(kind, rule):
    f = restricted(kind)
    p = policy(rule, 4)
    seen = []

    def spy(call, prefix):
        out = p(call, prefix)
        rows = call.probabilities()
        kept = p.kept_sets(call, prefix, rows, [rule])[0]
        seen.append((call, kept, out))
        return out

    f.nll(spy)
    assert len(seen) == SHAPE[0]
    for call, kept, out in seen:
        ptr, idx = selection.to_csr(kept)
        twin, mass, _ = kernels.restricted_attention(
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
        torch.testing.assert_close(out, twin, rtol=1e-6, atol=1e-6)
        assert float(mass.min()) > 0 and float(mass.max()) < 1  # a real restriction: some mass dropped
