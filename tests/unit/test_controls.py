"""Sanity-check controls (issue 37): the randomised-weights twin, shuffled documents, the control source."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

pytest.importorskip("transformers")
import torch  # noqa: E402
from deploy.test_tasks import PROSE, tok  # noqa: E402, F401 (the fixture: two trained BPE tokenizers)
from safetensors.torch import load_file, save_file  # noqa: E402
from sources_fixtures import word_corpus, word_tokenizer  # noqa: E402

from trustmass.sources import SourceError  # noqa: E402
from trustmass.sources import models as M  # noqa: E402
from trustmass.sources.controls import randomise_weights, shuffle_tokens  # noqa: E402
from trustmass.sources.documents import load_documents, tokenize_documents  # noqa: E402

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


def test_tokenize_documents_shuffles_after_cutting(tmp_path):
    corpus = tmp_path / "corpora" / "words" / "corpus.txt"
    corpus.parent.mkdir(parents=True)
    corpus.write_text(word_corpus(100), encoding="utf-8")
    words = word_tokenizer(tmp_path / "tok", template="<s> $A </s>")
    kw = dict(doc_tokens=12, n_docs=3, model="m", corpus="words", **QUIET)
    plain = tokenize_documents(words, corpus, tmp_path / "plain.safetensors", **kw)
    shuffled = tokenize_documents(words, corpus, tmp_path / "shuffled.safetensors", shuffle=True, seed=3, **kw)
    a, _ = load_documents(tmp_path / "plain.safetensors")
    b, manifest = load_documents(tmp_path / "shuffled.safetensors")
    assert manifest == shuffled and "shuffled" not in plain  # an unshuffled manifest is as before
    assert (b[:, 0] == 1).all() and (b[:, -1] == 2).all() and not np.array_equal(a, b)
    assert np.array_equal(np.sort(a, axis=1), np.sort(b, axis=1))  # the same chunk of text, permuted
    assert manifest["shuffled"] and manifest["shuffle"]["seed"] == 3 and manifest["shuffle"]["key"] == "documents/words"
    assert manifest["shuffle"]["unshuffled_input_ids_sha256"] == plain["input_ids_sha256"]
    for p, s, row in zip(plain["documents"], manifest["documents"], b):
        assert s["corpus_tokens"] == p["corpus_tokens"] and s["chars"] == p["chars"]
        assert s["unshuffled_tokens_sha256"] == p["tokens_sha256"]
        assert s["tokens_sha256"] == hashlib.sha256(row.astype("<i8").tobytes()).hexdigest()
    with pytest.raises(SourceError, match="need the master seed"):
        tokenize_documents(words, corpus, tmp_path / "x.safetensors", shuffle=True, **kw)


def test_the_heldout_documents_must_be_shuffled_like_the_capture_documents(tmp_path):
    from trustmass.loss.heldout import heldout_document

    corpus = tmp_path / "corpora" / "words" / "corpus.txt"
    corpus.parent.mkdir(parents=True)
    corpus.write_text(word_corpus(100), encoding="utf-8")
    words = word_tokenizer(tmp_path / "tok")
    kw = dict(model="m", corpus="words", **QUIET)
    tokenize_documents(words, corpus, tmp_path / "capture.safetensors", doc_tokens=8, n_docs=2, **kw)
    align = (3, json.loads((tmp_path / "capture.json").read_text())["documents"][-1]["corpus_tokens"][1])
    heldout = tmp_path / "heldout.safetensors"
    tokenize_documents(words, corpus, heldout, doc_tokens=8, n_docs=4, align=align, shuffle=True, seed=0, **kw)
    with pytest.raises(ValueError, match="is shuffled but the capture documents .* are not shuffled"):
        heldout_document(heldout, tmp_path / "capture.json", "0003")
    tokenize_documents(words, corpus, heldout, doc_tokens=8, n_docs=4, align=align, **kw)
    ids, record = heldout_document(heldout, tmp_path / "capture.json", "0003")
    assert ids.shape == (8,) and record["id"] == "words-0003"


def test_shuffled_task_contexts_keep_the_task_in_place(tok, tmp_path):  # noqa: F811
    from trustmass.sources.task_contexts import build_task_documents

    tok.save_pretrained(tmp_path / "model")
    (tmp_path / "austen").mkdir()
    haystack = tmp_path / "austen" / "corpus.txt"
    haystack.write_text(PROSE * 40, encoding="utf-8")
    kw = dict(
        types=["niah_single", "vt", "quote_qa"],
        per_type=1,
        doc_tokens=600,
        first_chunk=1,
        retrieval_rows=2,
        rows_per_head=6,
        min_position=100,
        seed=0,
        bos="none",
        log=lambda s: None,
    )
    plain = build_task_documents(tmp_path / "model", haystack, tmp_path / "plain.safetensors", **kw)
    shuffled = build_task_documents(tmp_path / "model", haystack, tmp_path / "shuffled.safetensors", shuffle=True, **kw)
    a, _ = load_documents(tmp_path / "plain.safetensors")
    b, manifest = load_documents(tmp_path / "shuffled.safetensors")
    assert manifest == shuffled and manifest["shuffled"] and manifest["shuffle"]["key"] == "tasks/tasks"
    assert "shuffled" not in plain
    for row_a, row_b, p, s in zip(a, b, plain["documents"], manifest["documents"]):
        assert np.array_equal(np.sort(row_a), np.sort(row_b)) and not np.array_equal(row_a, row_b)
        assert {k: s[k] for k in ("answer", "planted", "retrieval_positions", "gold")} == {
            k: p[k] for k in ("answer", "planted", "retrieval_positions", "gold")
        }
        start = s["answer"][0]
        question = len(tok.encode("\nQuestion: " + s["question"] + " Answer:", add_special_tokens=False))
        kept = [range(x, y) for x, y in s["planted"]] + [range(start - question, 600)]
        for span in kept:  # the planted spans, the question and the answer, token for token
            assert np.array_equal(row_a[list(span)], row_b[list(span)]), (s["task"], span)
        assert s["unshuffled_tokens_sha256"] == p["tokens_sha256"] != s["tokens_sha256"]
