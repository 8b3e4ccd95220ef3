"""Sanity-check controls (issue 37): the randomised-weights twin, shuffled documents, the control source."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("transformers")
import torch  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402
from sources_fixtures import word_tokenizer  # noqa: E402

from trustmass.sources import SourceError  # noqa: E402
from trustmass.sources import models as M  # noqa: E402
from trustmass.sources.controls import randomise_weights, shuffle_tokens  # noqa: E402

QUIET = dict(log=lambda s: None)
COPIED = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json")


def trained_folder(folder, dtype=torch.float32):
    """A tiny Qwen2 (q/k/v biases, tied embeddings stored once) with a word-level tokenizer, as an HF folder."""
    from capture.tiny_models import tiny_config
    from transformers import AutoModelForCausalLM

    config = tiny_config("qwen2")
    config.tie_word_embeddings = True
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    with torch.no_grad():  # trained-looking: matrices with their own, different means and scales
        for i, p in enumerate(model.parameters()):
            p.mul_(1 + i % 3).add_(0.01 * (i % 5))
    model.save_pretrained(folder)
    word_tokenizer(folder)
    return folder


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    folder = trained_folder(tmp_path_factory.mktemp("trained") / "tiny")
    return folder, load_file(str(folder / "model.safetensors"))


def twin(trained_dir, out, **kw):
    summary = randomise_weights(trained_dir, out, **{"seed": 0, **kw}, **QUIET)
    return summary, load_file(str(out / "model.safetensors"))


# ---- randomised weights -----------------------------------------------------------------------------------


def test_the_twin_redraws_every_matrix_and_keeps_shapes_config_tokenizer_and_1d_tensors(trained, tmp_path):
    from transformers import AutoModelForCausalLM

    folder, weights = trained
    summary, drawn = twin(folder, tmp_path / "twin")
    assert "lm_head.weight" not in weights  # tied: stored once
    assert drawn.keys() == weights.keys()
    for name, tensor in weights.items():
        assert drawn[name].shape == tensor.shape and drawn[name].dtype == tensor.dtype
        assert torch.equal(drawn[name], tensor) == (tensor.ndim == 1), name  # matrices re-drawn, the rest kept
    assert any(name.endswith("q_proj.bias") for name in summary["kept"])  # biases and norms are 1-D
    assert summary["redrawn_tensors"] == sum(t.ndim >= 2 for t in weights.values()) > 0
    assert summary["kept_tensors"] == sum(t.ndim == 1 for t in weights.values()) > 0
    assert summary["method"] == "matched" and summary["seed"] == 0
    for name in COPIED:
        assert (tmp_path / "twin" / name).read_bytes() == (folder / name).read_bytes(), name
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path / "twin")
    assert loaded.lm_head.weight.data_ptr() == loaded.model.embed_tokens.weight.data_ptr()  # still tied
    assert torch.equal(loaded.model.embed_tokens.weight, drawn["model.embed_tokens.weight"])


def test_matched_draws_keep_each_matrix_mean_and_std(trained, tmp_path):
    _, weights = trained
    _, drawn = twin(trained[0], tmp_path / "twin")
    for name, tensor in weights.items():
        if tensor.ndim < 2:
            continue
        n, mean, std = tensor.numel(), tensor.double().mean().item(), tensor.double().std().item()
        assert drawn[name].double().mean().item() == pytest.approx(mean, abs=6 * std / n**0.5), name
        assert drawn[name].double().std().item() == pytest.approx(std, rel=0.1), name


def test_the_same_seed_gives_the_same_bytes_in_any_tensor_order_and_another_seed_differs(trained, tmp_path):
    folder, weights = trained
    twin(folder, tmp_path / "a")
    twin(folder, tmp_path / "b")
    assert (tmp_path / "a" / "model.safetensors").read_bytes() == (tmp_path / "b" / "model.safetensors").read_bytes()
    # the same tensors split over two shards in another order: each name draws the same values
    sharded = tmp_path / "sharded"
    sharded.mkdir()
    (sharded / "config.json").write_bytes((folder / "config.json").read_bytes())
    names = sorted(weights, reverse=True)
    for i, part in enumerate((names[::2], names[1::2])):
        save_file({n: weights[n] for n in part}, str(sharded / f"model-0000{i + 1}-of-00002.safetensors"))
    summary = randomise_weights(sharded, tmp_path / "sharded-twin", seed=0, **QUIET)
    assert len(summary["weight_files"]) == 2
    one = load_file(str(tmp_path / "a" / "model.safetensors"))
    for path in (tmp_path / "sharded-twin").glob("*.safetensors"):
        for name, tensor in load_file(str(path)).items():
            assert torch.equal(tensor, one[name]), name
    _, other = twin(folder, tmp_path / "c", seed=1)
    assert not torch.equal(other["model.embed_tokens.weight"], one["model.embed_tokens.weight"])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_permuted_keeps_each_matrix_multiset_bit_for_bit(tmp_path, dtype):
    folder = trained_folder(tmp_path / "trained", dtype=dtype)
    weights = load_file(str(folder / "model.safetensors"))
    summary, drawn = twin(folder, tmp_path / "twin", method="permuted")
    assert summary["method"] == "permuted"
    for name, tensor in weights.items():
        assert drawn[name].dtype == dtype and drawn[name].shape == tensor.shape
        assert torch.equal(drawn[name].flatten().sort().values, tensor.flatten().sort().values), name
        assert torch.equal(drawn[name], tensor) == (tensor.ndim == 1), name
    _, matched = twin(folder, tmp_path / "matched")
    assert all(t.dtype == dtype for t in matched.values())  # the trained dtype, whatever the method


def test_randomisation_needs_safetensors_and_a_known_method(trained, tmp_path):
    with pytest.raises(SourceError, match="randomisation 'gaussian' is not one of matched, permuted"):
        randomise_weights(trained[0], tmp_path / "x", seed=0, method="gaussian", **QUIET)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "pytorch_model.bin").write_bytes(b"")
    with pytest.raises(SourceError, match="no \\*.safetensors weights"):
        randomise_weights(tmp_path / "bin", tmp_path / "y", seed=0, **QUIET)


# ---- the control source of prepare_model --------------------------------------------------------------------


def test_prepare_model_builds_both_controls_from_the_prepared_folder(trained, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    declared = {"layers": 2, "heads": 4, "kv_heads": 1}
    spec = {"source": "control", "of": "tiny", "seed": 7, "dtype": "float32", "declared": declared}
    randomised = {**spec, "control": "randomised_weights", "randomisation": "matched"}
    with pytest.raises(SourceError, match=r"control of 'tiny', whose prepared folder resources/models/tiny is missing"):
        M.prepare_model("tiny.randomised", randomised, "resources/models/tiny.randomised", **QUIET)
    base = M.prepare_model("tiny", {"source": "local", "path": str(trained[0])}, "resources/models/tiny", **QUIET)
    (tmp_path / "resources/models/tiny/config.json.prov.json").write_text("{}")  # the trained rule's sidecar

    record = M.prepare_model("tiny.randomised", randomised, "resources/models/tiny.randomised", **QUIET)
    assert (record["source"], record["control"], record["of"], record["seed"]) == (
        "control",
        "randomised_weights",
        "tiny",
        7,
    )
    assert record["randomisation"] == "matched" and record["summary"]["redrawn_tensors"] > 0
    assert record["shapes"] == base["shapes"] and "trained_shapes" not in record
    out = tmp_path / "resources/models/tiny.randomised"
    assert not (out / "model.safetensors").is_symlink() and not (out / "config.json.prov.json").exists()
    assert record["files"]["model.safetensors"] != base["files"]["model.safetensors"]
    assert record["files"]["tokenizer.json"] == base["files"]["tokenizer.json"]

    shuffled = M.prepare_model(
        "tiny.shuffled", {**spec, "control": "shuffled_text"}, "resources/models/tiny.shuffled", **QUIET
    )
    assert shuffled["control"] == "shuffled_text" and shuffled["files"] == base["files"]  # the trained weights
    assert (tmp_path / "resources/models/tiny.shuffled/model.safetensors").is_symlink()
    assert not (tmp_path / "resources/models/tiny.shuffled/config.json.prov.json").exists()

    with pytest.raises(SourceError, match="control 'noise' is not one of randomised_weights, shuffled_text"):
        M.prepare_model("tiny.x", {**spec, "control": "noise"}, "resources/models/tiny.x", **QUIET)
    with pytest.raises(SourceError, match="unknown source 'zip'.*control: a randomised-weights"):
        M.prepare_model("x", {"source": "zip"}, tmp_path / "x", **QUIET)


# ---- shuffled documents -------------------------------------------------------------------------------------


def test_shuffled_rows_are_permutations_with_the_kept_positions_in_place():
    rng = np.random.default_rng(0)
    ids = np.concatenate([np.ones((4, 1)), rng.integers(3, 60, (4, 30)), np.full((4, 1), 2)], axis=1).astype(np.int64)
    out = shuffle_tokens(ids, seed=5, key="documents/words", keep=[0, -1])
    assert out.shape == ids.shape and out.dtype == ids.dtype
    assert (out[:, 0] == 1).all() and (out[:, -1] == 2).all()  # the <bos> and </s> stay
    assert np.array_equal(np.sort(out, axis=1), np.sort(ids, axis=1))  # each row a permutation of itself
    assert all(not np.array_equal(out[i], ids[i]) for i in range(4))
    assert np.array_equal(out, shuffle_tokens(ids, seed=5, key="documents/words", keep=[0, -1]))
    assert not np.array_equal(out, shuffle_tokens(ids, seed=6, key="documents/words", keep=[0, -1]))
    assert not np.array_equal(out, shuffle_tokens(ids, seed=5, key="heldout/words", keep=[0, -1]))
    # a row is seeded by its index, not by the rows around it
    assert np.array_equal(shuffle_tokens(ids[:2], seed=5, key="documents/words", keep=[0, -1]), out[:2])
    mask = np.zeros(ids.shape, dtype=bool)
    mask[:, 5:12] = True
    masked = shuffle_tokens(ids, seed=5, key="k", keep=mask)
    assert np.array_equal(masked[:, 5:12], ids[:, 5:12])
