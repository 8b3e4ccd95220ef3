"""model_shapes reads attention geometry from configs and architectures, never from a per-model table."""

import json

import pytest

pytest.importorskip("transformers")
import transformers as T  # noqa: E402

from trustmass.sources import SourceError, check_declared_shape, model_shapes  # noqa: E402

SMALL = dict(
    vocab_size=128,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=6,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
)
FULL, SLIDING = "full_attention", "sliding_attention"


def shapes_of(config_cls, **overrides):
    return model_shapes(getattr(T, config_cls)(**{**SMALL, **overrides}))


def test_llama_gqa_full_attention():
    s = shapes_of("LlamaConfig", num_attention_heads=8, num_key_value_heads=2, head_dim=8, rope_theta=5e5)
    assert (s["layers"], s["heads"], s["kv_heads"], s["head_dim"], s["group"]) == (6, 8, 2, 8, 4)
    assert s["attention_types"] == [FULL] * 6 and s["sliding_window"] == [None] * 6
    assert s["qk_norm"] is False and s["attn_logit_softcapping"] is None
    assert s["scaling"] == pytest.approx(8**-0.5)
    assert s["model_type"] == "llama" and s["vocab"] == 128


def test_qwen2_without_sliding_window_and_with():
    s = shapes_of("Qwen2Config")
    assert s["sliding_window"] == [None] * 6 and s["qk_norm"] is False
    s = shapes_of("Qwen2Config", use_sliding_window=True, sliding_window=32, max_window_layers=4)
    assert s["attention_types"] == [FULL] * 4 + [SLIDING] * 2  # layers from max_window_layers on slide
    assert s["sliding_window"] == [None] * 4 + [32] * 2


def test_qwen3_qk_norm_per_head():
    s = shapes_of("Qwen3Config")
    assert s["qk_norm"] is True and s["qk_norm_dim"] == 16  # normalises each head (head_dim)
    assert s["qk_norm_source"].startswith("architecture")


def test_olmo2_qk_norm_over_the_projection():
    s = shapes_of("Olmo2Config", num_key_value_heads=4)
    assert s["qk_norm"] is True and s["qk_norm_dim"] == 4 * 16  # over all heads at once
    assert s["group"] == 1


def test_gemma2_softcap_windows_and_scaling():
    s = shapes_of("Gemma2Config", sliding_window=4096, query_pre_attn_scalar=256, attn_logit_softcapping=50.0)
    assert s["attention_types"] == [SLIDING, FULL] * 3
    assert s["sliding_window"] == [4096, None] * 3
    assert s["attn_logit_softcapping"] == 50.0 and s["final_logit_softcapping"] == 30.0
    assert s["qk_norm"] is False
    assert s["scaling"] == pytest.approx(256**-0.5)  # query_pre_attn_scalar, not head_dim


def test_gemma3_windows_rope_per_layer_type_and_qk_norm():
    s = shapes_of(
        "Gemma3TextConfig", num_key_value_heads=1, sliding_window=512, head_dim=256, query_pre_attn_scalar=256
    )
    assert s["attention_types"] == [SLIDING] * 5 + [FULL]  # one global layer in six
    assert s["sliding_window"] == [512] * 5 + [None]
    assert s["rope"]["theta"] == [10000.0] * 5 + [1000000.0]
    assert s["qk_norm"] is True and s["qk_norm_dim"] == 256
    assert s["group"] == 4 and s["attn_logit_softcapping"] is None


def test_mistral_window_on_every_layer():
    s = shapes_of("MistralConfig", sliding_window=64)
    assert s["sliding_window"] == [64] * 6


def test_multimodal_gemma3_uses_the_text_decoder():
    cfg = T.Gemma3Config(text_config={**SMALL, "num_hidden_layers": 4, "sliding_window": 512}).to_dict()
    s = model_shapes(cfg)
    assert s["model_type"] == "gemma3_text" and s["layers"] == 4


def test_inputs_folder_file_and_dict(tmp_path):
    cfg = T.Qwen3Config(**SMALL)
    cfg.save_pretrained(tmp_path)
    from_dir = model_shapes(tmp_path)
    from_file = model_shapes(tmp_path / "config.json")
    from_dict = model_shapes(json.loads((tmp_path / "config.json").read_text()))
    assert from_dir == from_file == from_dict
    json.dumps(from_dir)  # JSON-ready


def test_bad_inputs_name_the_problem(tmp_path):
    with pytest.raises(SourceError, match="no config.json"):
        model_shapes(tmp_path)
    with pytest.raises(SourceError, match="model_type"):
        model_shapes({"num_hidden_layers": 2})


def test_declared_shape_mismatch_names_every_field():
    s = shapes_of("LlamaConfig")
    check_declared_shape(s, {"layers": 6, "heads": 4, "kv_heads": 2})  # agrees: no error
    with pytest.raises(SourceError) as err:
        check_declared_shape(s, {"layers": 28, "heads": 4, "kv_heads": 8}, name="qwen2.5-1.5b")
    text = str(err.value)
    assert "qwen2.5-1.5b" in text and "layers: declared 28" in text and "kv_heads: declared 8" in text
    assert "heads: declared 4" not in text
    with pytest.raises(SourceError, match="'layer' is not a shape"):
        check_declared_shape(s, {"layer": 6})
