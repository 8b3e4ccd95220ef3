"""The deployment runner: one fan-out prefill, kvpress's own kept sets, dense decode = generate, rows per method."""

import numpy as np
import pytest
import torch
from deploy_helpers import models, random_ids
from test_kvpress_ledger import dense_prefill, kept_from_masked, kept_positions, press_prefill

from trustmass.deploy import ledger, methods, names
from trustmass.deploy.contourkv import record_scores
from trustmass.deploy.ragged import RaggedCache
from trustmass.deploy.runner import greedy_answer, kept_sets, pyramid_budgets, run_item, score_all

kvpress = pytest.importorskip("kvpress")

N, BUDGET = 192, 48
OFFLINE = [name for name, m in methods.METHODS.items() if m.status == "offline"]


@pytest.fixture(scope="module")
def llama():
    return models("llama")[0]


def presses(names, budget=BUDGET, n=N):
    ratio = methods.ratio_for(budget, n)
    return {name: methods.method(name).press_factory(ratio) for name in names}


def test_score_all_equals_one_prefill_per_scorer(llama):
    ids = random_ids(N, llama.config.vocab_size, seed=31)
    names = ["snapkv", "knorm", "streaming_llm", "h2o", "criticalkv", "expected_attention", "compactor", "tova"]
    pre = score_all(llama, ids, presses(names))
    dense = dense_prefill(llama, ids)
    for got, want in zip(pre.cache.layers, dense.layers):  # the dense cache is intact, full length
        assert torch.equal(got.keys, want.keys) and torch.equal(got.values, want.values)
    for name, press in presses(names).items():
        with torch.random.fork_rng():  # Compactor's random sketch: the same draws as in score_all (seed 0)
            torch.manual_seed(0)
            alone = record_scores(llama, ids, press)
        assert len(pre.scores[name]) == len(alone) == 2
        assert all(torch.equal(a, b) for a, b in zip(pre.scores[name], alone)), name
        assert pre.score_s[name] > 0
    assert pre.prefill_s > 0


@pytest.mark.parametrize("name", ["snapkv", "knorm", "streaming_llm", "pyramidkv"])
def test_uniform_kept_sets_are_kvpress_own(llama, name):
    """kvpress's press shrinks the cache; the positions of its kept key rows are our kept sets."""
    ids = random_ids(N, llama.config.vocab_size, seed=32)
    # PyramidKV with its default 64-query window falls back to SnapKV below ~1,300 kept; a 2-query window does not
    make = (
        (lambda: kvpress.PyramidKVPress(methods.ratio_for(BUDGET, N), window_size=2))
        if name == "pyramidkv"
        else (lambda: presses([name])[name])
    )
    press = make()
    shrunk, _ = press_prefill(llama, ids, press)
    want = kept_positions(shrunk, dense_prefill(llama, ids))
    scores = score_all(llama, ids, {name: make()}).scores[name]
    kind = methods.method(name).kind
    budgets = pyramid_budgets(press, llama.config, N) if kind == "pyramid" else None
    got = kept_sets(kind, scores, BUDGET, layer_budgets=budgets)
    assert all(torch.equal(g, w) for gs, ws in zip(got, want) for g, w in zip(gs, ws))
    if kind == "uniform":
        assert {len(k) for heads in got for k in heads} == {BUDGET}
    else:  # PyramidKV: more to the lower layer
        assert len(got[0][0]) > len(got[1][0])


def test_headwise_kept_sets_are_adakvs_masks(llama):
    ids = random_ids(N, llama.config.vocab_size, seed=33)
    inner = presses(["adakv"])["adakv"]
    press_prefill(llama, ids, kvpress.AdaKVPress(inner))
    want = kept_from_masked(llama, llama.config.num_key_value_heads, N)
    for layer in llama.model.layers:
        layer.self_attn.masked_key_indices = None
    got = kept_sets("headwise", score_all(llama, ids, presses(["adakv"])).scores["adakv"], BUDGET)
    assert all(torch.equal(g, w) for gs, ws in zip(got, want) for g, w in zip(gs, ws))
    assert len({len(k) for heads in got for k in heads}) > 1


def test_dense_ragged_decode_is_generate(llama):
    ctx, question = random_ids(N, 96, seed=34), random_ids(9, 96, seed=35)
    pre = score_all(llama, ctx, {})
    kept = kept_sets("dense", [layer.keys[0, :, :, 0] for layer in pre.cache.layers], N)
    eos = [llama.generation_config.eos_token_id]
    got = greedy_answer(llama, RaggedCache.from_dense(pre.cache, kept), question, 10, eos)
    with torch.inference_mode():
        out = llama.generate(torch.cat([ctx, question], 1), max_new_tokens=10, do_sample=False, eos_token_id=eos)
    assert got == out[0, N + 9 :].tolist() and len(got) >= 2
    again = greedy_answer(llama, RaggedCache.from_dense(pre.cache, kept), question, 10, eos)
    assert again == got  # the dense cache is reused unchanged


def char_tok():
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    chars = ["\n"] + [chr(c) for c in range(32, 32 + 94)]  # 95 characters + <unk>: the tiny model's 96 ids
    tok = Tokenizer(models.WordLevel(vocab={"<unk>": 0} | {c: i + 1 for i, c in enumerate(chars)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("[\\s\\S]"), behavior="isolated")
    tok.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>")


@pytest.fixture(scope="module")
def item():
    from test_tasks import PROSE

    from trustmass.deploy.tasks import make_item

    tok = char_tok()
    hay = np.asarray(tok.encode(PROSE * 2, add_special_tokens=False), dtype=np.int64)
    return tok, make_item("niah_single", 420, 0, haystack_ids=hay, tokenizer=tok, seed=3)


@pytest.fixture(scope="module")
def kvzip_ready(llama, item, tmp_path_factory):
    """KVzip's pass loads the tokenizer from model.config.name_or_path."""
    folder = tmp_path_factory.mktemp("tok")
    item[0].save_pretrained(folder)
    llama.config.name_or_path = str(folder)
    return llama


def test_run_item_rows(kvzip_ready, item):
    llama, (tok, it) = kvzip_ready, item
    n, cfg = it.context_ids.size, llama.config
    d, cells = cfg.hidden_size // cfg.num_attention_heads, cfg.num_hidden_layers * cfg.num_key_value_heads
    rows = run_item(llama, tok, it, OFFLINE, BUDGET, max_new_tokens=4, contour={"floor": 8})
    assert [r["method"] for r in rows] == OFFLINE and set(OFFLINE) == set(names.OFFLINE)
    full = ledger.full_bytes(n, cfg.num_hidden_layers, cfg.num_key_value_heads, d, torch.float32)
    for r in rows:
        kind = methods.method(r["method"]).kind
        assert r["item_id"] == it.item_id and r["budget"] == BUDGET and isinstance(r["answer"], str)
        assert r["score"] in (0.0, 100.0) and r["bytes_full"] == full
        assert r["bytes_ragged"] == r["kept_entries"] * d * 2 * 4 and r["frac_full"] == r["bytes_ragged"] / full
        assert min(r["prefill_s"], r["score_s"], r["decode_s"]) > 0
        if kind == "dense":
            assert r["frac_full"] == 1.0 and r["kept_entries"] == n * cells
            continue
        assert r["bytes_ragged"] < full
        if kind == "uniform":
            assert r["kept_min_head"] == r["kept_max_head"] == BUDGET
            assert r["bytes_ragged"] == ledger.ragged_bytes(np.full((2, 2), BUDGET), d, torch.float32)
        if kind in ("headwise", "contourkv"):  # average s per cell: the same bytes as the uniform methods
            assert r["kept_entries"] <= BUDGET * cells
        assert r["variant"] == "doc_boundary" and r["n_cached"] == n and r["question_in_cache"] == 0
        if r["method"] in ("contourkv_unenforced", "contourkv_recon_unenforced") or kind == "headwise":
            assert r["kept_entries"] == BUDGET * cells
        if kind == "kvzip":  # KVzip prunes int(ratio * L * Hkv * N) entries: one more kept at most
            assert abs(r["kept_entries"] - BUDGET * cells) <= 1 and r["kept_min_head"] < r["kept_max_head"]
        if r["method"] in ("contourkv_enforced", "contourkv_recon_enforced"):
            assert r["kept_max_head"] <= BUDGET and r["kept_min_head"] >= 8


def test_question_visible_rows_and_decomposition(kvzip_ready, item):
    """Question-visible eviction compresses context + question[:-1]; doc_rows keeps every question position in
    the budget; doc_boundary compresses the context alone; dense answers once for every budget."""
    llama, (tok, it) = kvzip_ready, item
    n_ctx, n_q = it.context_ids.size, it.question_ids.size
    rows = run_item(
        llama,
        tok,
        it,
        ["dense", "snapkv", "contourkv_enforced"],
        [BUDGET, 2 * BUDGET],
        max_new_tokens=3,
        query_aware=True,
        decomposition=["snapkv", "contourkv_enforced"],
        contour={"floor": 8},
    )
    got = {(r["variant"], r["budget"], r["method"]) for r in rows}
    assert got == {
        (v, b, m)
        for b in (BUDGET, 2 * BUDGET)
        for v, ms in (
            ("unmodified", ("dense", "snapkv", "contourkv_enforced")),
            ("doc_rows", ("snapkv", "contourkv_enforced")),
            ("doc_boundary", ("snapkv", "contourkv_enforced")),
        )
        for m in ms
    }
    for r in rows:
        assert r["query_aware"] is True
        if r["variant"] == "doc_boundary":
            assert r["n_cached"] == n_ctx and r["question_in_cache"] == r["question_kept_mean"] == 0
        else:
            assert r["n_cached"] == n_ctx + n_q - 1 and r["question_in_cache"] == n_q - 1
        if r["variant"] == "doc_rows" and r["method"] == "snapkv":  # the question rows outrank every document row
            assert r["question_kept_mean"] == min(n_q - 1, r["budget"])
        if r["method"] == "snapkv":
            assert r["kept_min_head"] == r["kept_max_head"] == r["budget"]
    dense = [r for r in rows if r["method"] == "dense"]
    assert len(dense) == 2 and dense[0]["answer"] == dense[1]["answer"] and dense[0]["frac_full"] == 1.0
    # one contract record per (method, budget, variant): a different record for every run, the same for one
    assert len({r["contract_sha256"] for r in rows}) == len(rows) and all(len(r["contract_sha256"]) == 64 for r in rows)
    with pytest.raises(ValueError, match="decomposition needs query_aware"):
        run_item(llama, tok, it, ["snapkv"], BUDGET, max_new_tokens=2, decomposition=["snapkv"])


def test_qwen2_without_config_head_dim(item):
    """CriticalKV reads config.head_dim, which Qwen2 configs lack: score_all fills it in."""
    tok, it = item
    qwen = models("qwen2")[0]
    assert getattr(qwen.config, "head_dim", None) is None
    rows = run_item(qwen, tok, it, ["criticalkv", "snapkv"], BUDGET, max_new_tokens=2)
    assert [(r["kept_min_head"], r["kept_max_head"]) for r in rows] == [(BUDGET, BUDGET)] * 2
    assert qwen.config.head_dim == 16


def test_bad_inputs(llama, item):
    tok, it = item
    n = it.context_ids.size
    with pytest.raises(ValueError, match=rf"budget={n + 1}.*context length {n}"):
        run_item(llama, tok, it, ["snapkv"], n + 1, max_new_tokens=2)
    with pytest.raises(ValueError, match="unknown method 'nope'.*snapkv"):
        methods.method("nope")
    with pytest.raises(ValueError, match="needs hub access.*deploy.methods"):
        methods.method("kvzap")
    assert methods.method("kvzap", hub=True).status == "needs_hub"
    from capture.tiny_models import tiny_model

    with pytest.raises(ValueError, match="trustmass_ragged"):
        greedy_answer(tiny_model("llama", "eager"), None, [1, 2], 2)


def test_ratio_for_keeps_exactly_the_budget():
    from kvpress.utils import compute_n_kept

    for n in (49, 192, 1971, 4096):
        for s in sorted({1, 7, 32, 64, n - 1, n} & set(range(1, n + 1))):
            assert compute_n_kept(n, methods.ratio_for(s, n)) == s


def test_one_prefill_for_every_budget_equals_one_run_per_budget(kvzip_ready, item):
    """Scorers recorded per budget on one prefill choose what a run at that budget alone chooses."""
    llama, (tok, it) = kvzip_ready, item
    names = ["dense", "snapkv", "streaming_llm", "h2o", "pyramidkv", "adakv", "kvzip", "contourkv_enforced"]
    keep = ("method", "budget", "variant", "answer", "kept_entries", "kept_min_head", "kept_max_head", "bytes_ragged")
    both = run_item(llama, tok, it, names, [BUDGET, 2 * BUDGET], max_new_tokens=3, contour={"floor": 8})
    alone = [
        r
        for b in (BUDGET, 2 * BUDGET)
        for r in run_item(llama, tok, it, names, b, max_new_tokens=3, contour={"floor": 8})
    ]
    assert [{k: r[k] for k in keep} for r in both] == [{k: r[k] for k in keep} for r in alone]
