"""kvpress presses on a model that rotates per layer type (Gemma 3): each layer's own rotary embedding.

Without trustmass.deploy.rope, kvpress calls the shared Gemma 3 rotary module without a layer type and
ExpectedAttention (and so ContourKV's scorer) fails with "no attribute 'None_inv_freq'" -- found by
running the packaged Gemma-3-270M through the deployment stage."""

import pytest
import torch
from capture.tiny_models import tiny_model
from deploy_helpers import random_ids

from trustmass.deploy.contourkv import record_scores
from trustmass.deploy.rope import LayerTypedRotary, layer_typed_rope, takes_layer_type
from trustmass.deploy.shipped import press_prefill

kvpress = pytest.importorskip("kvpress")


@pytest.fixture(scope="module")
def gemma3():
    return tiny_model("gemma3", "eager")


def test_expected_attention_scores_every_gemma3_layer(gemma3):
    ids = random_ids(40, gemma3.config.vocab_size)
    scores = record_scores(gemma3, ids, kvpress.ExpectedAttentionPress())
    assert len(scores) == 2 and all(s.shape == (2, 40) and bool(torch.isfinite(s).all()) for s in scores)
    cache, _ = press_prefill(
        gemma3, ids, kvpress.ExpectedAttentionPress(compression_ratio=0.5)
    )  # kvpress's own prefill
    assert cache.layers[0].keys.shape[-2] == 20


def test_each_layer_rotates_with_its_own_type_and_gets_the_shared_module_back(gemma3):
    shared = gemma3.model.rotary_emb
    assert takes_layer_type(shared)
    x, pos = torch.zeros(1, 3, 16), torch.arange(3)[None]
    with kvpress.ExpectedAttentionPress()(gemma3), layer_typed_rope(gemma3):
        for layer in gemma3.model.layers:
            bound = layer.self_attn.rotary_emb
            assert isinstance(bound, LayerTypedRotary)
            for got, want in zip(bound(x, pos), shared(x, pos, layer_type=layer.self_attn.layer_type)):
                assert torch.equal(got, want)
            assert torch.equal(bound.inv_freq, getattr(shared, f"{layer.self_attn.layer_type}_inv_freq"))
        sliding, full = (layer.self_attn.rotary_emb(x, pos)[0] for layer in gemma3.model.layers)
        assert not torch.equal(sliding, full)  # 10,000 vs 1,000,000: binding the wrong type would show
    assert all(layer.self_attn.rotary_emb is shared for layer in gemma3.model.layers)  # as the press left it


def test_models_with_one_rotation_are_left_alone():
    llama = tiny_model("llama", "eager")
    assert not takes_layer_type(llama.model.rotary_emb)
    before = [getattr(layer.self_attn, "rotary_emb", None) for layer in llama.model.layers]
    with layer_typed_rope(llama):
        assert [getattr(layer.self_attn, "rotary_emb", None) for layer in llama.model.layers] == before
