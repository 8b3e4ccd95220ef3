"""Scores shared on the runner's prefill: each declaration of score_sharing holds on a model, and a shared
call gives bitwise the scores of one call per press."""

import pytest
import torch
from deploy_helpers import models, random_ids

from trustmass.deploy import methods
from trustmass.deploy.contourkv import record_all, record_scores
from trustmass.deploy.runner import score_all
from trustmass.deploy.score_sharing import RATIO_FREE, SCORE_OF, score_identity, sharing_groups

kvpress = pytest.importorskip("kvpress")

N = 192


@pytest.fixture(scope="module")
def llama():
    return models("llama")[0]


@pytest.mark.parametrize("press_class", sorted(SCORE_OF, key=lambda c: c.__name__), ids=lambda c: c.__name__)
def test_each_declared_press_scores_as_its_scoring_class_at_any_ratio(llama, press_class):
    """The declarations score_sharing trusts: a press computes its SCORE_OF class's score, at any ratio when
    that class is RATIO_FREE (a kvpress upgrade that makes a score read the ratio fails here)."""
    ids = random_ids(N, llama.config.vocab_size, seed=41)
    scorer = SCORE_OF[press_class]
    assert scorer in RATIO_FREE
    got = record_scores(llama, ids, press_class(compression_ratio=0.25))
    want = record_scores(llama, ids, scorer(compression_ratio=0.75))
    assert len(got) == 2 and all(torch.equal(g, w) for g, w in zip(got, want))


def test_presses_that_read_the_ratio_or_draw_share_nothing():
    for name in ("streaming_llm", "h2o", "criticalkv", "compactor"):
        press = methods.method(name).press_factory(0.5)
        assert score_identity(press) is None, name
    window_64, window_32 = kvpress.SnapKVPress(0.5), kvpress.SnapKVPress(0.5, window_size=32)
    assert score_identity(window_64) != score_identity(window_32)
    groups = sharing_groups({"a": window_64, "b": window_32, "c": kvpress.PyramidKVPress(0.25)})
    assert groups == {"a": "a", "b": "b", "c": "a"}


def _counting(press, calls: dict, name: str):
    score = press.score

    def counted(*args, **kwargs):
        calls[name] = calls.get(name, 0) + 1
        return score(*args, **kwargs)

    press.score = counted
    return press


def test_shared_calls_give_every_press_its_own_scores(llama):
    ids = random_ids(N, llama.config.vocab_size, seed=42)
    roster = ["snapkv", "adakv", "pyramidkv", "snapkv_w32", "contourkv_enforced", "knorm", "h2o", "streaming_llm"]
    ratios = (methods.ratio_for(48, N), methods.ratio_for(96, N))

    def presses(calls):
        return {
            f"{name}@{ratio}": _counting(methods.method(name).press_factory(ratio), calls, f"{name}@{ratio}")
            for ratio in ratios
            for name in roster
        }

    shared_calls, alone_calls = {}, {}
    shared = score_all(llama, ids, presses(shared_calls))
    alone = score_all(llama, ids, presses(alone_calls), share=False)
    layers = llama.config.num_hidden_layers
    assert set(alone_calls.values()) == {layers} and len(alone_calls) == 2 * len(roster)
    # one SnapKV window-64 call (snapkv, adakv, pyramidkv at both ratios), one window-32 call, one key norm;
    # H2O and StreamingLLM size their windows from the ratio: one call per ratio
    low, high = ratios
    assert shared_calls == {
        f"snapkv@{low}": layers,
        f"snapkv_w32@{low}": layers,
        f"knorm@{low}": layers,
        f"h2o@{low}": layers,
        f"h2o@{high}": layers,
        f"streaming_llm@{low}": layers,
        f"streaming_llm@{high}": layers,
    }
    for name in alone.scores:
        assert all(torch.equal(a, b) for a, b in zip(shared.scores[name], alone.scores[name])), name
    assert shared.score_s[f"adakv@{high}"] == shared.score_s[f"snapkv@{low}"] > 0
    assert shared.prefill_s > 0


def test_record_all_unshared_calls_every_scorer(llama):
    ids = random_ids(N, llama.config.vocab_size, seed=43)
    calls = {}
    scorers = {n: _counting(kvpress.SnapKVPress(0.5), calls, n) for n in ("a", "b")}
    recorder = record_all(llama, ids, scorers, share=False)
    assert calls == {"a": 2, "b": 2} and recorder.owner == {"a": "a", "b": "b"}
