"""The diagnostics forward (trustmass.loss.diagnostics) on the tiny models: X's swap at fraction 0 and
Y's at 1 give exactly the loss of X and Y run as plain configurations, the dense configuration has
zero KL, every configuration has one outcome per target token, and the swap policy's kept sets are
the batched swap of X's and Y's on every layer."""

import numpy as np
import polars as pl
import pytest
import torch
from capture.tiny_models import tiny_model

from trustmass.loss import forward
from trustmass.loss.configurations import Configuration
from trustmass.loss.diagnostics import run_diagnostics
from trustmass.loss.policy import CellRecorder, SelectionPolicy
from trustmass.loss.swaps import swap_plan

N_TOKENS, CONTINUATION = 64, 16
SHAPE = (2, 4)


@pytest.fixture(scope="module", autouse=True)
def registered():
    forward.register()


@pytest.mark.parametrize("kind", ["llama", "gemma2"])
def test_the_swap_ends_are_x_and_y_and_dense_has_no_kl(kind):
    ids = torch.randint(0, 96, (N_TOKENS,), generator=torch.Generator().manual_seed(5))
    model = tiny_model(kind, forward.ATTENTION_NAME, dtype=torch.float32)
    plan = swap_plan([("h2o", "snapkv")], [0.5], seeds=1)
    tokens, seconds = run_diagnostics(
        model, ids, CONTINUATION, plan, 8, ["value_aware_mass", "value_aware_mii"], [8], log=lambda _: None
    )
    assert tokens.group_by("config").len()["len"].unique().to_list() == [CONTINUATION - 1]
    assert set(seconds) >= {"prefix", "dense", "h2o>snapkv:boundary@0", "value_aware_mii@8"}
    dense = tokens.filter(tokens["family"] == "dense")
    assert float(dense["kl"].abs().max()) < 1e-9
    f = forward.RestrictedForward(model, ids, CONTINUATION, tail_rows=7, column_mass=True)
    for rule, config in (
        ("h2o", "h2o>snapkv:boundary@0"),
        ("snapkv", "h2o>snapkv:boundary@1"),
        ("value_aware_mii", "value_aware_mii@8"),
    ):
        plain = f.nll(SelectionPolicy(Configuration(rule, rule), np.zeros(SHAPE, dtype=bool), 8, CellRecorder(SHAPE)))
        got = tokens.filter(tokens["config"] == config)["nll"].to_numpy()
        np.testing.assert_allclose(got, plain, rtol=0, atol=1e-6, err_msg=config)
    half = tokens.filter(tokens["config"] == "h2o>snapkv:boundary@0.5")
    assert half["kl"].min() >= 0 and half["fraction"].unique().to_list() == [0.5]
    assert tokens.filter(tokens["kind"] == "random_restricted")["seed"].unique().to_list() == [0]
    margin = tokens.filter(tokens["family"] == "margin").group_by("rule").agg(pl.col("contract_sha256").first())
    assert (
        margin.height == 2 and margin["contract_sha256"].n_unique() == 2
    )  # the two rules differ in ranking: two records
