"""A tiny study the whole workflow can run in seconds: a random-weight Llama and a local corpus.

The model folder is a real Hugging Face folder (config, weights, a word-level tokenizer), so the
`local` model source, tokenization, capture and everything downstream run their real code paths.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np

WORDS = [f"w{i}" for i in range(60)]
REPO = Path(__file__).resolve().parents[2]

#: the settings of every tiny run (test_end_to_end, the fault campaign, the report in a browser, the SLURM cluster),
#: merged over config.yaml together with :func:`tiny_study_config`
TINY = """\
budgets:
  enumerated: [4, 8, 32]
  native: [40]
statistics:
  bootstrap: 50
certification:
  bnb_work: 1000                 # 10^9 work units per probe: about a second (the fault campaign kills one in flight)
  n_shards: 1
benchmark:
  n_keys: 64
  head_dim: 4
  instances: 1
"""
#: test_end_to_end's run: the same outcomes (statuses) from 20 x 10^6 work units per probe, in 2 s instead of 50 per
#: shard (the tiny rows' bisections spend whatever they are given); the fault campaign keeps TINY's, to kill one
TINY_RUN = TINY.replace("bnb_work: 1000 ", "bnb_work: 20   ")
assert TINY_RUN != TINY


def private_package(root: Path) -> dict[str, str]:
    """A copy of the library in ``root/src/trustmass`` (and of the defaults it reads, ``root/config.yaml``), and the
    environment that puts it first on PYTHONPATH: a run there declares and hashes the copy's files (paths relative
    to ``root``), so a test can edit library code in the copy and never in the repository."""
    import trustmass

    shutil.copytree(
        os.path.dirname(trustmass.__file__),
        root / "src" / "trustmass",
        ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"),
    )
    shutil.copy(REPO / "config.yaml", root / "config.yaml")  # the copy's checkout root holds its defaults
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(root / "src"), os.environ.get("PYTHONPATH")]))}


def make_tiny_model(folder: Path, seed: int = 0) -> Path:
    import torch
    from tokenizers import Tokenizer, pre_tokenizers
    from tokenizers.models import WordLevel
    from transformers import AutoModelForCausalLM, LlamaConfig, PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, **{w: i + 3 for i, w in enumerate([*WORDS, "."])}}
    backend = Tokenizer(WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>", bos_token="<s>", eos_token="</s>")
    config = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        bos_token_id=1,
        eos_token_id=2,
    )
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    with torch.no_grad():  # sharper attention than the default init
        for layer in model.model.layers:
            layer.self_attn.q_proj.weight.mul_(6.0)
            layer.self_attn.k_proj.weight.mul_(6.0)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def make_tiny_char_model(folder: Path, seed: int = 1) -> Path:
    """A random-weight Llama with a character tokenizer (every printable ASCII character): the deployment's
    needles and questions round-trip through it, as they must through a real model's tokenizer."""
    import torch
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import AutoModelForCausalLM, LlamaConfig, PreTrainedTokenizerFast

    chars = ["\n"] + [chr(c) for c in range(32, 127)]
    backend = Tokenizer(
        models.WordLevel(vocab={"<unk>": 0} | {c: i + 1 for i, c in enumerate(chars)}, unk_token="<unk>")
    )
    backend.pre_tokenizer = pre_tokenizers.Split(Regex("[\\s\\S]"), behavior="isolated")
    backend.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>")
    config = LlamaConfig(
        vocab_size=len(chars) + 1,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
    )
    torch.manual_seed(seed)
    AutoModelForCausalLM.from_config(config, dtype=torch.float32).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def make_tiny_corpus(folder: Path, n_words: int = 2000, seed: int = 0) -> Path:
    """Random words in sentences of 12 (full stops: the deployment's needles go at sentence boundaries)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    words = rng.choice(WORDS, size=n_words).tolist()
    text = " . ".join(" ".join(words[i : i + 12]) for i in range(0, n_words, 12)) + " ."
    (folder / "a.txt").write_text(text, encoding="utf-8")
    return folder


def make_tiny_benchmark(path: Path, corpus_text: Path) -> Path:
    """Two records in kvpress's evaluation format (context, question, answer_prefix, answer, task): a planted
    line in the tiny corpus, so the benchmark adapter runs end to end (a stand-in for simonjegou/ruler)."""
    text = corpus_text.read_text(encoding="utf-8")
    rows = []
    for i, value in enumerate(("4821", "7390")):
        context = text[i * 300 : i * 300 + 150] + f" . the code is {value} . " + text[i * 300 + 150 : i * 300 + 700]
        rows.append(
            {
                "context": context,
                "question": "\nwhat is the code ?",
                "answer_prefix": " the code is",
                "answer": [value],
                "task": "niah_single_1",
                "max_new_tokens": 4,
            }
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def tiny_study_config(workdir: Path) -> str:
    """Config text (merged over config.yaml) for a study of the tiny model on the tiny corpus."""
    model = make_tiny_model(workdir / "tiny-model")
    reader = make_tiny_char_model(workdir / "tiny-reader")
    corpus = make_tiny_corpus(workdir / "tiny-corpus")
    bench = make_tiny_benchmark(workdir / "tiny-ruler.jsonl", corpus / "a.txt")
    return f"""\
models:
  tiny:
    source: local
    path: {model}
    declared: {{layers: 2, heads: 4, kv_heads: 2}}
  tiny-reader:
    source: local
    path: {reader}
    declared: {{layers: 2, heads: 4, kv_heads: 2}}
corpora:
  words: {{source: local, path: {corpus}}}
documents:
  doc_tokens: 96
  n_docs: 2
capture:
  rows_per_head: 3
  min_position: 40
  block_rows: 32
  windows: [2, 4, 8, 16, 20, 32]  # SnapKV's windows at the default budgets and at s = 40
study:
  models: [tiny]
  corpora: [words]
task_contexts:
  types: [quote_qa]            # the word-level tokenizer cannot spell the needles; quote QA copies tokens
loss:
  continuation: 16
  heldout: {{doc_tokens: null}}
  accounting: [per_query, cache_faithful]
  probe: {{steps: 5, train_docs: 1, alpha_grid: [0.0, 1.0]}}
diagnostics:
  margin: {{budgets: [8, 16], permutations: 200}}
deploy:
  models: [tiny-reader]        # deployed, not captured
  lengths: [400]
  items: 2
  budgets: [40]
  max_new_tokens: 2
  methods: [dense, snapkv, h2o, adakv, kvzip, compactor, contourkv_enforced, contourkv_unenforced,
            contourkv_recon_enforced, contourkv_recon_unenforced]
  replay: {{methods: [snapkv, adakv, kvzip], items: 1}}
  benchmarks:                  # Table 3's benchmark setting, through the kvpress-format adapter
    - {{name: tiny-ruler, format: kvpress, family: ruler, path: {bench}, max_length: 400, items: 2}}
"""
