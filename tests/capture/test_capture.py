"""Capture on tiny from-config models: rows, GQA, windows, QK-norm, soft-capping, validation."""

import pytest
import torch
from capture.tiny_models import tiny_model

from trustmass.capture import prefill as cap
from trustmass.capture import shards
from trustmass.contracts.shards import layer_prefix, read_metadata

N_TOKENS = 48
OPTIONS = cap.CaptureOptions(rows_per_head=3, min_position=4, seed=7, windows=(2, 4, 8), block_rows=16)
KINDS = ["llama", "qwen2", "gemma3", "gemma2"]


def token_ids(seed=0):
    return torch.randint(0, 96, (N_TOKENS,), generator=torch.Generator().manual_seed(seed))


def eager_reference(kind, ids):
    model = tiny_model(kind, "eager")
    with torch.inference_mode():
        out = model.model(input_ids=ids[None], output_attentions=True, use_cache=True)
    return out


def run_capture(kind, ids, options=OPTIONS, dtype=torch.float32):
    cap.register()
    model = tiny_model(kind, cap.ATTENTION_NAME, dtype=dtype)
    return cap.capture_document(model, ids, f"tiny-{kind}", "doc-0000", options)


@pytest.fixture(scope="module", params=KINDS)
def captured(request):
    ids = token_ids()
    return request.param, run_capture(request.param, ids), eager_reference(request.param, ids)


def test_rows_equal_eager_output_attentions(captured):
    kind, c, ref = captured
    for layer, P in enumerate(ref.attentions):
        t = shards_layer(c, layer)
        pos = t["positions"]
        group = P.shape[1] // pos.shape[0]
        for h in range(P.shape[1]):
            for r, i in enumerate(pos[h // group].tolist()):
                expected = P[0, h, i].float()
                assert torch.allclose(t["p"][h, r], expected, atol=1e-6), (kind, layer, h, i)
                assert t["p"][h, r, i + 1 :].abs().max() == 0 if i + 1 < N_TOKENS else True


def test_side_statistics_match_definitions(captured):
    kind, c, ref = captured
    for layer, P in enumerate(ref.attentions):
        t = shards_layer(c, layer)
        group = P.shape[1] // t["positions"].shape[0]
        cum = P[0].float().cumsum(dim=1)  # (H, N, N): sum over rows t <= i
        for h in range(P.shape[1]):
            for r, i in enumerate(t["positions"][h // group].tolist()):
                assert torch.allclose(t["acc_mass"][h, r], cum[h, i], atol=1e-5)
                for w_idx, w in enumerate(OPTIONS.windows):
                    lo = max(0, i - w + 1)
                    expected = P[0, h, lo : i + 1].float().sum(0)
                    assert torch.allclose(t["window_sums"][h, r, w_idx], expected, atol=1e-5)


def test_keys_values_and_gqa_mapping(captured):
    kind, c, ref = captured
    for layer in range(len(ref.attentions)):
        t = shards_layer(c, layer)
        cache = ref.past_key_values.layers[layer]
        kept = cache.keys.shape[2]  # a sliding-window cache keeps only the last window - 1 tokens
        assert torch.allclose(t["keys"][:, -kept:], cache.keys[0].float(), atol=1e-6)
        assert torch.allclose(t["values"][:, -kept:], cache.values[0].float(), atol=1e-6)
        n_q, n_kv = t["p"].shape[0], t["keys"].shape[0]
        assert c.metadata["layers"][str(layer)]["group_size"] == n_q // n_kv
        # the output of head h is sum_j p_j v_j over its own KV head's values
        for h in range(n_q):
            mu = t["p"][h] @ t["values"][h // (n_q // n_kv)]
            assert torch.allclose(mu, t["output"][h], atol=1e-5)


def test_validation_report_is_tight(captured):
    kind, c, _ = captured
    assert c.max_abs_deviation < 1e-5
    assert len(c.deviations) == 2 * 4 * OPTIONS.rows_per_head


def test_window_and_softcap_are_applied():
    ids = token_ids()
    c = run_capture("gemma3", ids)
    layer0 = shards_layer(c, 0)
    assert c.metadata["layers"]["0"]["window"] == 8 and c.metadata["layers"]["1"]["window"] is None
    for h in range(4):
        for r, i in enumerate(layer0["positions"][h // 2].tolist()):
            visible = layer0["p"][h, r] > 0
            assert visible.nonzero().min() > i - 8  # keys outside the window get exactly zero mass
    assert run_capture("gemma2", ids).metadata["layers"]["0"]["softcap"] == 5.0


def test_positions_are_seeded_and_shared():
    a = cap.sample_positions(OPTIONS, "m", "d", 3, 1, 100)
    assert a.tolist() == cap.sample_positions(OPTIONS, "m", "d", 3, 1, 100).tolist()
    assert a.tolist() != cap.sample_positions(OPTIONS, "m", "d", 3, 0, 100).tolist()
    assert a.min() >= OPTIONS.min_position and a.max() < 100 and len(set(a.tolist())) == 3
    with pytest.raises(ValueError, match="min_position"):
        cap.sample_positions(cap.CaptureOptions(min_position=98, rows_per_head=6), "m", "d", 0, 0, 100)


def test_corrupted_values_abort(monkeypatch):
    original = cap._Session.record

    def corrupt(self, module, query, key, value, *args):
        return original(self, module, query, key, value + 0.5, *args)

    monkeypatch.setattr(cap._Session, "record", corrupt)
    with pytest.raises(cap.CaptureValidationError, match="max_abs_deviation"):
        run_capture("llama", token_ids())


def test_shard_is_bit_reproducible(tmp_path):
    ids = token_ids(3)
    digests = []
    for name in ("a", "b"):
        c = run_capture("llama", ids)
        digests.append(shards.write_shard(c, tmp_path / f"{name}.safetensors"))
    assert digests[0] == digests[1]
    meta = read_metadata(tmp_path / "a.safetensors")
    assert meta["n_tokens"] == N_TOKENS and meta["model"] == "tiny-llama"
    report = shards.write_validation_report(c, tmp_path / "a.validation.parquet")
    assert report["rows"] == 24 and report["max_abs_dev"] < 1e-5


def test_bf16_model_rows_match_eager_bf16():
    ids = token_ids(5)
    c = run_capture("llama", ids, dtype=torch.bfloat16)
    model = tiny_model("llama", "eager", dtype=torch.bfloat16)
    captured_fp32 = {}

    def grab(module, args, kwargs, output):  # eager returns weights cast to bf16; recompute fp32 rows
        captured_fp32[module.layer_idx] = output[1]

    hooks = [layer.self_attn.register_forward_hook(grab, with_kwargs=True) for layer in model.model.layers]
    with torch.inference_mode():
        model.model(input_ids=ids[None], output_attentions=True)
    for h in hooks:
        h.remove()
    t = shards_layer(c, 1)
    for h in range(4):
        for r, i in enumerate(t["positions"][h // 2].tolist()):
            # eager's probabilities are the fp32 softmax cast to bf16: agree to bf16 resolution
            assert torch.allclose(t["p"][h, r].bfloat16().float(), captured_fp32[1][0, h, i].float(), atol=4e-3)
    assert c.max_abs_deviation < 4e-3


def shards_layer(c, layer):
    prefix = layer_prefix(layer)
    return {k[len(prefix) :]: v for k, v in c.tensors.items() if k.startswith(prefix)}
