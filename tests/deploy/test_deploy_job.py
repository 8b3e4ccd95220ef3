"""The deployment job: items cut from the haystack, the roster expanded, rows with dense-valid gating, the replay."""

import numpy as np
import polars as pl
import pytest
import torch
from test_runner import BUDGET, char_tok, item, kvzip_ready, llama  # noqa: F401 (fixtures)
from test_tasks import PROSE

from trustmass.deploy import ledger
from trustmass.deploy.job import build_items, check_runnable, condition_rows, haystack_ids, methods_of
from trustmass.deploy.replay import replay_rows

DEPLOY = {
    "methods": ["dense", "snapkv", "kvzip", "contourkv_enforced"],
    "hub": False,
    "budgets": [BUDGET],
    "max_new_tokens": 3,
    "query_aware": True,
    "alpha_safeguard": 0.2,
    "contour": {"floor": 8, "floor_readings": ["counts", "extra"], "scopes": ["global", "per_layer"]},
    "decomposition": {"methods": ["contourkv_enforced"]},
}


def test_contourkv_is_expanded_per_floor_reading_and_scope():
    run, extra = methods_of(DEPLOY)
    assert [m.name for m in run] == [
        "dense",
        "snapkv",
        "kvzip",
        "contourkv_enforced",
        "contourkv_enforced_per_layer",
        "contourkv_enforced_floor_extra",
        "contourkv_enforced_floor_extra_per_layer",
    ]
    options = {m.name: dict(m.options) for m in run}
    assert options["contourkv_enforced_floor_extra_per_layer"] == {
        "floor_counts_toward_budget": False,
        "scope": "per_layer",
    }
    assert len(extra) == 4 and all(m.kind == "contourkv" for m in extra)
    with pytest.raises(ValueError, match="needs hub access"):
        methods_of({**DEPLOY, "methods": ["kvzap"]})


def test_methods_kvpress_refuses_on_gemma3_fail_before_any_prefill(llama):  # noqa: F811
    from capture.tiny_models import tiny_model

    gemma3 = tiny_model("gemma3", "eager")
    deploy = {
        **DEPLOY,
        "methods": ["dense", "snapkv", "kvzip", "contourkv_recon_enforced"],
        "replay": {"methods": ["snapkv"]},
    }
    with pytest.raises(
        ValueError,
        match=r"deploy\.methods: kvzip, contourkv_recon_enforced, contourkv_recon_enforced_"
        r"per_layer, .* cannot run on gemma3-tiny: .*fix: remove them from deploy\.methods",
    ):
        check_runnable(gemma3, "gemma3-tiny", deploy)
    with pytest.raises(ValueError, match=r"deploy\.replay\.methods: kvzip cannot run"):
        check_runnable(
            gemma3, "gemma3-tiny", {**DEPLOY, "methods": ["snapkv"], "replay": {"methods": ["snapkv", "kvzip"]}}
        )
    check_runnable(gemma3, "gemma3-tiny", {**DEPLOY, "methods": ["dense", "snapkv", "contourkv_enforced"]})
    check_runnable(llama, "llama-tiny", deploy)  # KVzip runs on Llama


def test_items_are_cut_from_successive_haystack_spans():
    tok = char_tok()
    hay = haystack_ids(tok, PROSE * 4, 1260)
    assert hay.size == 1260 and hay.dtype == np.int64
    items = build_items("niah_single", 420, 3, hay, tok, seed=1)
    assert [it.item_id for it in items] == [f"niah_single-420-{i:04d}" for i in range(3)]
    assert items[0].context_ids[:10].tolist() != items[1].context_ids[:10].tolist()
    assert items[1].context_ids[:5].tolist() == hay[420:425].tolist()  # item 1 reads from token 420
    with pytest.raises(ValueError, match="the items need 50000"):
        haystack_ids(tok, PROSE, 50000)
    with pytest.raises(ValueError, match="exceeds the model's window"):
        build_items("niah_single", 420, 1, hay, tok, seed=1, max_positions=256)


def test_condition_rows_flag_dense_valid_items(kvzip_ready):  # noqa: F811
    tok = char_tok()
    items = build_items("niah_single", 420, 2, haystack_ids(tok, PROSE * 4, 840), tok, seed=3)
    logged = []
    rows = condition_rows(
        kvzip_ready,
        tok,
        items,
        {**DEPLOY, "contour": {**DEPLOY["contour"], "scopes": ["global"]}},
        seed=0,
        log=logged.append,
    )
    assert len(logged) == 2 and all("dense" in line for line in logged)
    assert set(rows["item_id"].to_list()) == {it.item_id for it in items}
    for item_id, group in rows.group_by("item_id"):
        dense = group.filter((pl.col("method") == "dense"))["score"].item()
        assert group["dense_valid"].unique().to_list() == [dense == 100.0]  # a random tiny model misses: excluded
    assert set(rows["variant"].to_list()) == {"unmodified", "doc_rows", "doc_boundary"}
    assert {"task", "length", "depth"} <= set(rows.columns)


def test_replay_measures_kvpress_own_bytes(kvzip_ready):  # noqa: F811
    tok = char_tok()
    items = build_items("niah_single", 420, 1, haystack_ids(tok, PROSE * 4, 420), tok, seed=3)
    rows = replay_rows(kvzip_ready, items, ["snapkv", "adakv", "kvzip"], [BUDGET], query_aware=True)
    by = {r["method"]: r for r in rows.iter_rows(named=True)}
    cfg = kvzip_ready.config
    n = by["dense"]["n_cached"]
    d = cfg.hidden_size // cfg.num_attention_heads
    assert (
        by["dense"]["bytes_measured"]
        == by["dense"]["bytes_full"]
        == ledger.full_bytes(n, cfg.num_hidden_layers, cfg.num_key_value_heads, d, torch.float32)
    )
    assert by["snapkv"]["bytes_measured"] == ledger.ragged_bytes(np.full((2, 2), BUDGET), d, torch.float32)
    assert by["snapkv"]["cache_rows"] == BUDGET
    for masked in ("adakv", "kvzip"):  # head-wise: the full cache plus the index tensors
        assert by[masked]["frac_full"] > 1.0 and by[masked]["cache_rows"] == n
    assert by["dense"]["cost_over_dense"] == 1.0 and all(r["prefill_s"] > 0 for r in by.values())


def test_the_shuffled_text_control_shuffles_each_items_haystack_and_keeps_what_is_planted(llama, tmp_path):  # noqa: F811
    from trustmass.deploy.job import items_for

    tok, text = char_tok(), tmp_path / "corpus.txt"
    text.write_text(PROSE * 4, encoding="utf-8")
    cfg = {"seed": 1, "deploy": {"benchmarks": [], "prompt_format": "plain"}}
    plain = items_for(cfg, llama, tok, text, "niah_single", 420, 2)
    shuffled = items_for(cfg, llama, tok, text, "niah_single", 420, 2, shuffle_seed=0)
    assert shuffled == items_for(cfg, llama, tok, text, "niah_single", 420, 2, shuffle_seed=0)  # seeded
    for a, b in zip(plain, shuffled, strict=True):
        assert (a.gold, a.question, a.needle_texts) == (b.gold, b.question, b.needle_texts)
        assert a.context_ids.size == b.context_ids.size and not np.array_equal(a.context_ids, b.context_ids)
        for (start, end), needle in zip(b.needles, b.needle_texts, strict=True):  # planted intact
            assert needle in tok.decode(b.context_ids[start:end].tolist())
    # item i's haystack is a permutation of window i: the same tokens, outside the planted spans
    hay = haystack_ids(tok, PROSE * 4, 840)
    outside = np.ones(shuffled[1].context_ids.size, bool)
    for start, end in shuffled[1].needles:
        outside[start:end] = False
    assert set(shuffled[1].context_ids[outside].tolist()) <= set(hay[420:].tolist())
    with pytest.raises(ValueError, match="no shuffled version"):
        bench = {"name": "b", "format": "kvpress", "path": "x", "max_length": 420}
        items_for({**cfg, "deploy": {**cfg["deploy"], "benchmarks": [bench]}}, llama, tok, text, "b", 420, 1, 0)


def test_a_rerun_gives_the_same_rows_but_for_their_seconds(kvzip_ready):  # noqa: F811
    """Answers, scores, kept entries and bytes repeat exactly (greedy decoding; Compactor's sketch seeded): only
    the timing columns move, and they are the ones the reference check leaves out (issue 38: seconds apart from
    results).  The default study's condition, run twice in two processes, agreed the same way (docs/reliability.md)."""
    from trustmass.report.reference import TIMING_COLUMNS, compare_frames

    tok = char_tok()
    items = build_items("niah_single", 420, 1, haystack_ids(tok, PROSE * 4, 420), tok, seed=3)
    deploy = {**DEPLOY, "contour": {"floor": 8, "floor_readings": ["counts"], "scopes": ["global"]}}
    first, again = (condition_rows(kvzip_ready, tok, items, deploy, seed=0, log=lambda _: None) for _ in range(2))
    assert {c for c in first.columns if c in TIMING_COLUMNS} == {"prefill_s", "score_s", "decode_s"}
    assert compare_frames(again, first, rtol=0.0, atol=0.0) == []
    first, again = (replay_rows(kvzip_ready, items, ["snapkv", "kvzip"], [BUDGET], query_aware=True) for _ in range(2))
    assert {c for c in first.columns if c in TIMING_COLUMNS} == {"dense_prefill_s", "prefill_s", "cost_over_dense"}
    assert compare_frames(again, first, rtol=0.0, atol=0.0) == []
