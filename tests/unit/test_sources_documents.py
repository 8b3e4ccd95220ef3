"""Documents: one tokenization per (model, corpus), equal non-overlapping chunks, BOS policies, manifests."""

import json

import numpy as np
import pytest

pytest.importorskip("transformers")
from sources_fixtures import WORDS, word_corpus, word_tokenizer  # noqa: E402

from trustmass.sources import SourceError  # noqa: E402
from trustmass.sources.common import sha256_file  # noqa: E402
from trustmass.sources.documents import cut_documents, load_documents, text_end, tokenize_documents  # noqa: E402

BOS, EOS = 1, 2


def word_id(i):
    return 3 + i % len(WORDS)


@pytest.fixture()
def corpus(tmp_path):
    path = tmp_path / "corpora" / "words" / "corpus.txt"
    path.parent.mkdir(parents=True)
    path.write_text(word_corpus(100), encoding="utf-8")  # 100 tokens: w0 .. w49 w0 .. w49
    return path


def run(tmp_path, corpus, tok_dir, name="docs", **kw):
    out = tmp_path / "documents" / name / "words.safetensors"
    settings = {"doc_tokens": 8, "n_docs": 3, "bos": "tokenizer-default", **kw}
    manifest = tokenize_documents(tok_dir, corpus, out, model="m", corpus="words", log=lambda s: None, **settings)
    ids, on_disk = load_documents(out)
    assert on_disk == manifest
    return ids, manifest, out


def test_tokenizer_default_wraps_each_document_like_a_single_text(tmp_path, corpus):
    tok = word_tokenizer(tmp_path / "tok", template="<s> $A")
    ids, manifest, _ = run(tmp_path, corpus, tok)
    assert ids.dtype == np.int64 and ids.shape == (3, 8)
    expected = [[BOS] + [word_id(i) for i in range(7 * d, 7 * d + 7)] for d in range(3)]
    assert ids.tolist() == expected  # consecutive, non-overlapping, BOS counted in doc_tokens
    assert manifest["special_prefix_tokens"] == ["<s>"] and manifest["special_suffix"] == []
    assert (
        manifest["text_tokens_per_doc"] == 7 and manifest["corpus_tokens"] == 100 and manifest["docs_available"] == 14
    )
    doc1 = manifest["documents"][1]
    assert doc1["id"] == "words-0001" and doc1["corpus_tokens"] == [7, 14]
    text = corpus.read_text()
    assert text[doc1["chars"][0] : doc1["chars"][1]] == " ".join(WORDS[7:14])


def test_tokenizer_default_without_bos_and_with_eos(tmp_path, corpus):
    plain = word_tokenizer(tmp_path / "plain", template="$A")
    ids, manifest, _ = run(tmp_path, corpus, plain, name="plain")
    assert ids[0].tolist() == [word_id(i) for i in range(8)] and manifest["special_prefix"] == []
    eos = word_tokenizer(tmp_path / "eos", template="$A </s>")
    ids, manifest, _ = run(tmp_path, corpus, eos, name="eos")
    assert ids[:, -1].tolist() == [EOS] * 3 and ids[1, 0] == word_id(7)


def test_align_starts_a_later_chunk_after_another_sets_text(tmp_path, corpus):
    """The held-out chunking: 3 capture chunks of 8 with a <bos> end at text token 21; held-out chunks of 4
    (3 text tokens each) numbered from 6 would start at 18, inside them, so the chunking leads by 3."""
    tok = word_tokenizer(tmp_path / "tok", template="<s> $A")
    _, _, capture = run(tmp_path, corpus, tok, name="capture")
    end = text_end(capture.with_suffix(".json"))
    assert end == 21
    ids, manifest, _ = run(tmp_path, corpus, tok, name="heldout", doc_tokens=4, n_docs=8, align=(6, end))
    assert manifest["lead_tokens"] == 3 and manifest["documents"][6]["corpus_tokens"] == [21, 24]
    assert ids[6].tolist() == [BOS] + [word_id(i) for i in range(21, 24)]
    assert manifest["docs_available"] == (100 - 3) // 3
    _, unshifted, _ = run(tmp_path, corpus, tok, name="late", doc_tokens=4, n_docs=9, align=(8, end))
    assert unshifted["lead_tokens"] == 0 and unshifted["documents"][8]["corpus_tokens"] == [24, 27]  # already after


def test_prepend_bos_and_none(tmp_path, corpus):
    plain = word_tokenizer(tmp_path / "plain", template="$A")
    ids, manifest, _ = run(tmp_path, corpus, plain, name="bos", bos="prepend-bos")
    assert ids[:, 0].tolist() == [BOS] * 3 and ids[1, 1] == word_id(7)
    ids, manifest, _ = run(tmp_path, corpus, word_tokenizer(tmp_path / "t", template="<s> $A"), name="none", bos="none")
    assert BOS not in ids and ids[1, 0] == word_id(8)
    nobos = word_tokenizer(tmp_path / "nobos", template="$A", with_bos=False)
    with pytest.raises(SourceError, match="no BOS token"):
        run(tmp_path, corpus, nobos, name="x", bos="prepend-bos")
    with pytest.raises(SourceError, match="'first' is not one of"):
        run(tmp_path, corpus, nobos, name="x", bos="first")


def test_too_short_names_corpus_model_and_counts(tmp_path, corpus):
    tok = word_tokenizer(tmp_path / "tok")
    with pytest.raises(SourceError) as err:
        run(tmp_path, corpus, tok, n_docs=15)
    text = str(err.value)
    assert (
        "'words'" in text
        and "'m'" in text
        and "100 tokens" in text
        and "need 105" in text
        and "14 document(s) fit" in text
    )
    assert not (tmp_path / "documents" / "docs" / "words.safetensors").exists()


def test_rerun_is_byte_identical(tmp_path, corpus):
    tok = word_tokenizer(tmp_path / "tok")
    _, m1, out = run(tmp_path, corpus, tok)
    first = (sha256_file(out), sha256_file(out.with_suffix(".json")))
    _, m2, _ = run(tmp_path, corpus, tok)
    assert (sha256_file(out), sha256_file(out.with_suffix(".json"))) == first
    assert m1["input_ids_sha256"] == m2["input_ids_sha256"]
    assert set(m1["tokenizer_files"]) >= {"tokenizer.json", "tokenizer_config.json"}
    assert m1["corpus_sha256"] == sha256_file(corpus)
    assert json.loads(out.with_suffix(".json").read_text())["format"] == "trustmass.documents/1"


def test_cut_documents_directly():
    docs, content = cut_documents(np.arange(20), doc_tokens=5, n_docs=3, prefix=[99], suffix=[98])
    assert content == 3 and docs.tolist() == [[99, 0, 1, 2, 98], [99, 3, 4, 5, 98], [99, 6, 7, 8, 98]]
    with pytest.raises(SourceError, match="no room"):
        cut_documents(np.arange(20), doc_tokens=2, n_docs=1, prefix=[1], suffix=[2])


def _cached_run(tmp_path, corpus, tok, name, logs, **kw):
    out = tmp_path / "documents" / name / "words.safetensors"
    settings = {"doc_tokens": 8, "n_docs": 3, "bos": "tokenizer-default", **kw}
    tokenize_documents(
        tok, corpus, out, model="m", corpus="words", cache_dir=tmp_path / "cache", log=logs.append, **settings
    )
    return out


def test_second_document_set_reads_the_stream_back_with_identical_bytes(tmp_path, corpus):
    """tokenize_heldout after tokenize_documents: the corpus is encoded once; outputs equal the uncached ones."""
    tok = word_tokenizer(tmp_path / "tok", template="<s> $A")
    _, _, plain = run(tmp_path, corpus, tok, name="plain", doc_tokens=4, n_docs=8, align=(6, 21))
    logs: list[str] = []
    _cached_run(tmp_path, corpus, tok, "capture", logs)
    assert not any("read back" in line for line in logs)
    (entry,) = (tmp_path / "cache" / "token-streams").iterdir()
    logs.clear()
    cached = _cached_run(tmp_path, corpus, tok, "heldout", logs, doc_tokens=4, n_docs=8, align=(6, 21))
    assert any("read back" in line for line in logs)
    for suffix in (".safetensors", ".json"):
        assert cached.with_suffix(suffix).read_bytes() == plain.with_suffix(suffix).read_bytes()
    # a damaged entry is encoded again (and rewritten), never used
    entry.write_bytes(entry.read_bytes()[:-40])
    logs.clear()
    again = _cached_run(tmp_path, corpus, tok, "again", logs, doc_tokens=4, n_docs=8, align=(6, 21))
    assert any("does not check out" in line for line in logs) and not any("read back" in line for line in logs)
    assert again.read_bytes() == plain.read_bytes()
    logs.clear()
    _cached_run(tmp_path, corpus, tok, "after", logs)
    assert any("read back" in line for line in logs)


def test_stream_entry_is_per_corpus_text(tmp_path, corpus):
    """Another corpus text (or tokenizer) is another entry: a changed corpus is never served an old stream."""
    tok = word_tokenizer(tmp_path / "tok", template="<s> $A")
    logs: list[str] = []
    _cached_run(tmp_path, corpus, tok, "a", logs)
    corpus.write_text(word_corpus(60), encoding="utf-8")
    out = _cached_run(tmp_path, corpus, tok, "b", logs)
    assert not any("read back" in line for line in logs)
    assert len(list((tmp_path / "cache" / "token-streams").iterdir())) == 2
    assert json.loads(out.with_suffix(".json").read_text())["corpus_tokens"] == 60
