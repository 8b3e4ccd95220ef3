"""Tiny offline fixtures for the sources tests: wheels, GGUF files, tokenizers, R lazy-load data."""

from __future__ import annotations

import base64
import gzip
import hashlib
import struct
import zipfile
import zlib
from pathlib import Path

import numpy as np

# ---- wheels ----------------------------------------------------------------------------------------


def make_wheel(folder: Path, name: str, version: str, files: dict[str, bytes]) -> Path:
    """A minimal valid py3-none-any wheel holding ``files`` (paths inside the wheel)."""
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    members = dict(files)
    members[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    members[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: trustmass-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = []
    for path, data in members.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    members[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, data in members.items():
            info_ = zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0))
            zf.writestr(info_, data)
    return wheel


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---- GGUF ------------------------------------------------------------------------------------------


def _byte_chars() -> list[str]:
    """GPT-2's bytes_to_unicode table, in byte order."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = dict(zip(bs, cs))
    return [chr(table[b]) for b in range(256)]


def tiny_llama_gguf(path: Path, add_bos: bool = False, seed: int = 0) -> Path:
    """A 2-layer Llama (GQA 4:2, head dim 4) with a byte-level BPE vocabulary, all tensors F32."""
    import gguf

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    merges = ["Ġ t", "h e", "Ġt he", "Ġ a"]
    tokens = specials + _byte_chars() + ["Ġt", "he", "Ġthe", "Ġa"]
    types = [3] * len(specials) + [1] * (len(tokens) - len(specials))
    vocab, hidden, layers, heads, kv, head_dim, ffn = len(tokens), 16, 2, 4, 2, 4, 32
    rng = np.random.default_rng(seed)

    def w(*shape):
        return (rng.standard_normal(shape) * 0.2).astype(np.float32)

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tiny-llama")
    writer.add_context_length(128)
    writer.add_embedding_length(hidden)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(ffn)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv)
    writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(vocab)
    writer.add_file_type(0)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    writer.add_add_bos_token(add_bos)
    writer.add_tensor("token_embd.weight", w(vocab, hidden))
    writer.add_tensor("output_norm.weight", np.ones(hidden, dtype=np.float32))
    writer.add_tensor("output.weight", w(vocab, hidden))
    for i in range(layers):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(hidden, dtype=np.float32))
        writer.add_tensor(f"blk.{i}.attn_q.weight", w(heads * head_dim, hidden))
        writer.add_tensor(f"blk.{i}.attn_k.weight", w(kv * head_dim, hidden))
        writer.add_tensor(f"blk.{i}.attn_v.weight", w(kv * head_dim, hidden))
        writer.add_tensor(f"blk.{i}.attn_output.weight", w(hidden, heads * head_dim))
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(hidden, dtype=np.float32))
        writer.add_tensor(f"blk.{i}.ffn_gate.weight", w(ffn, hidden))
        writer.add_tensor(f"blk.{i}.ffn_up.weight", w(ffn, hidden))
        writer.add_tensor(f"blk.{i}.ffn_down.weight", w(hidden, ffn))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def tiny_spm_gguf(path: Path, add_bos: bool = True, add_space_prefix: bool = False) -> Path:
    """A SentencePiece-type vocabulary (no model tensors): only what the tokenizer reads."""
    import gguf

    control = ["<pad>", "<eos>", "<bos>", "<unk>"]
    byte_tokens = [f"<0x{b:02X}>" for b in range(256)]
    # pieces with BPE-style scores: a later merge has a lower score
    pieces = [
        ("▁", -1.0),
        ("t", -2.0),
        ("h", -3.0),
        ("e", -4.0),
        ("a", -5.0),
        ("▁t", -6.0),
        ("he", -7.0),
        ("▁the", -8.0),
        ("▁a", -9.0),
    ]
    user = ["\n", "\n\n"]
    tokens = control + user + byte_tokens + [p for p, _ in pieces]
    scores = [-1000.0] * (len(control) + len(user)) + [0.0] * 256 + [s for _, s in pieces]
    types = [3] * len(control) + [4] * len(user) + [6] * 256 + [1] * len(pieces)
    writer = gguf.GGUFWriter(str(path), "gemma3")
    writer.add_tokenizer_model("llama")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_bos_token_id(2)
    writer.add_eos_token_id(1)
    writer.add_unk_token_id(3)
    writer.add_pad_token_id(0)
    writer.add_add_bos_token(add_bos)
    writer.add_add_eos_token(False)
    writer.add_add_space_prefix(add_space_prefix)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


# ---- tokenizers for documents ----------------------------------------------------------------------

WORDS = [f"w{i}" for i in range(50)]


def word_tokenizer(folder: Path, template: str = "<s> $A", with_bos: bool = True) -> Path:
    """A word-level tokenizer (``w0``..``w49``) saved as an HF folder; ``template`` wraps single texts."""
    from tokenizers import Tokenizer, pre_tokenizers
    from tokenizers.models import WordLevel
    from tokenizers.processors import TemplateProcessing
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, **{w: i + 3 for i, w in enumerate(WORDS)}}
    backend = Tokenizer(WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    backend.post_processor = TemplateProcessing(single=template, special_tokens=[("<s>", 1), ("</s>", 2)])
    tok = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        unk_token="<unk>",
        bos_token="<s>" if with_bos else None,
        eos_token="</s>",
    )
    tok.save_pretrained(folder)
    return folder


def word_corpus(n_words: int) -> str:
    return " ".join(WORDS[i % len(WORDS)] for i in range(n_words))


# ---- R lazy-load data --------------------------------------------------------------------------------


def r_lazyload(folder: Path, objects: dict[str, list[str]]) -> tuple[Path, Path]:
    """``Rdata.rdx`` / ``Rdata.rdb`` holding character vectors, in R's lazy-load layout."""
    import rdata

    folder.mkdir(parents=True, exist_ok=True)
    blob, index = b"", {}
    for name, lines in objects.items():
        tmp = folder / f".{name}.rds"
        rdata.write_rds(tmp, np.array(lines, dtype=object), compression=None)
        raw = tmp.read_bytes()
        tmp.unlink()
        record = struct.pack(">I", len(raw)) + zlib.compress(raw)
        index[name] = np.array([len(blob), len(record)], dtype=np.int32)
        blob += record
    rdb = folder / "Rdata.rdb"
    rdb.write_bytes(blob)
    rdx = folder / "Rdata.rdx"
    tmp = folder / ".rdx.rds"
    rdata.write_rds(tmp, {"variables": index, "references": {}, "compressed": np.array([True])}, compression=None)
    rdx.write_bytes(gzip.compress(tmp.read_bytes()))
    tmp.unlink()
    return rdx, rdb


# ---- a reference SentencePiece-BPE tokenizer (llama.cpp's algorithm), as a test oracle ----------------


def spm_reference(
    text: str, tokens: list[str], scores: list[float], types: list[int], add_space_prefix: bool
) -> list[int]:
    """llama.cpp's SPM tokenization: user-defined tokens split out first (longest first), then per
    fragment repeatedly merge the adjacent pair whose concatenation is the best-scoring token (ties:
    leftmost), then byte fallback for symbols that are not tokens.  Slow and simple on purpose."""
    vocab = {t: i for i, t in enumerate(tokens)}
    literal = sorted((t for t, k in zip(tokens, types) if k == 4), key=len, reverse=True)
    fragments: list[str | int] = [text]
    for tok in literal:
        out: list[str | int] = []
        for frag in fragments:
            if isinstance(frag, int):
                out.append(frag)
                continue
            parts = frag.split(tok)
            for j, part in enumerate(parts):
                if j:
                    out.append(vocab[tok])
                if part:
                    out.append(part)
        fragments = out
    ids: list[int] = []
    after_token = True  # llama.cpp: a space prefix at the start and after every token fragment
    for frag in fragments:
        if isinstance(frag, int):
            ids.append(frag)
            after_token = True
            continue
        s = frag.replace(" ", "▁")
        if add_space_prefix and after_token:
            s = "▁" + s
        after_token = False
        symbols = list(s)
        while True:
            best, where = None, -1
            for j in range(len(symbols) - 1):
                merged = symbols[j] + symbols[j + 1]
                if merged in vocab and (best is None or scores[vocab[merged]] > best):
                    best, where = scores[vocab[merged]], j
            if where < 0:
                break
            symbols[where : where + 2] = [symbols[where] + symbols[where + 1]]
        for sym in symbols:
            if sym in vocab:
                ids.append(vocab[sym])
            else:
                ids.extend(vocab[f"<0x{b:02X}>"] for b in sym.encode("utf-8"))
    return ids
