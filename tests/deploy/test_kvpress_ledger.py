"""kvpress's caches through the ledger, and a ragged cache of SnapKV's kept positions decoding like kvpress's own."""

import pytest
import torch
from deploy_helpers import greedy, models, random_ids
from transformers import DynamicCache

from trustmass.deploy import ledger
from trustmass.deploy.ragged import RaggedCache
from trustmass.deploy.shipped import kept_from_masks

kvpress = pytest.importorskip("kvpress")

N, STEPS, TOL = 192, 4, 1e-5  # N > SnapKV's default 64-query window, so half the cache is more than the window


@pytest.fixture(scope="module")
def llama():
    return models("llama")[0]


def press_prefill(model, ids, press):
    """kvpress's own recipe (spec part B): the press's hooks shrink the cache after each layer's prefill."""
    for layer in model.model.layers:  # no head-wise masks left from an earlier press
        layer.self_attn.masked_key_indices = None
    cache = DynamicCache()
    with torch.inference_mode(), press(model):
        hidden = model.model(input_ids=ids, past_key_values=cache).last_hidden_state
        first = model.lm_head(hidden[:, -1:]).argmax(-1)
    return cache, first


def dense_prefill(model, ids):
    cache = DynamicCache()
    with torch.inference_mode():
        model.model(input_ids=ids, past_key_values=cache)
    return cache


def kept_positions(shrunk: DynamicCache, dense: DynamicCache) -> list[list[torch.Tensor]]:
    """The positions whose dense key rows the shrunk cache holds (each row must match exactly one)."""
    kept = []
    for layer, (small, full) in enumerate(zip(shrunk.layers, dense.layers)):
        heads = []
        for h in range(small.keys.shape[1]):
            same = (small.keys[0, h][:, None, :] == full.keys[0, h][None, :, :]).all(-1)  # [kept, N]
            assert (same.sum(1) == 1).all(), (
                f"layer {layer} head {h}: a kept key row matches no (or several) dense rows"
            )
            heads.append(same.float().argmax(1).sort().values)
        kept.append(heads)
    return kept


def test_snapkv_shrinks_and_ragged_decodes_like_kvpress(llama):
    ids = random_ids(N, llama.config.vocab_size, seed=11)
    shrunk, first = press_prefill(llama, ids, kvpress.SnapKVPress(compression_ratio=0.5))
    cfg = llama.config
    d = cfg.hidden_size // cfg.num_attention_heads
    n_kept = N // 2
    assert [layer.keys.shape for layer in shrunk.layers] == [torch.Size([1, cfg.num_key_value_heads, n_kept, d])] * 2
    full = ledger.full_bytes(N, cfg.num_hidden_layers, cfg.num_key_value_heads, d, torch.float32)
    assert ledger.bytes_held(shrunk, llama) == full // 2

    kept = kept_positions(shrunk, dense_prefill(llama, ids))
    assert all(int(k[-1]) == N - 1 and len(k) == n_kept for heads in kept for k in heads)  # the window is kept
    assert any(not torch.equal(kept[0][0], k) for heads in kept for k in heads)  # heads chose differently
    cache = RaggedCache.from_dense(dense_prefill(llama, ids), kept)
    assert ledger.bytes_held(cache) == ledger.bytes_held(shrunk)
    row = ledger.ledger_row(ledger.bytes_held(cache), "ragged", cache.kept_counts(), N, d, torch.float32)
    assert (row.kept_entries, row.kept_min_head, row.kept_max_head, row.frac_full) == (n_kept * 4, n_kept, n_kept, 0.5)

    # kvpress's pipeline decodes its shrunk cache with explicit positions (the cache reports n_kept)
    want, want_tokens = greedy(llama, shrunk, first, STEPS, positions=N)
    got, got_tokens = greedy(llama, cache, first, STEPS)
    assert (got - want).abs().max() <= TOL
    assert got_tokens == want_tokens
    dense, _ = greedy(llama, dense_prefill(llama, ids), first, STEPS)
    assert (dense - want).abs().max() > 1e-3  # the eviction mattered


def test_adakv_as_shipped_holds_the_full_cache_plus_masks(llama):
    """Head-wise presses only mask: the cache keeps every row and the modules hold the evicted indices."""
    ids = random_ids(N, llama.config.vocab_size, seed=12)
    shrunk, _ = press_prefill(llama, ids, kvpress.AdaKVPress(kvpress.SnapKVPress(compression_ratio=0.5)))
    cfg = llama.config
    d = cfg.hidden_size // cfg.num_attention_heads
    full = ledger.full_bytes(N, cfg.num_hidden_layers, cfg.num_key_value_heads, d, torch.float32)
    assert ledger.bytes_held(shrunk) == full
    # per layer, AdaKV prunes Hkv * (N - n_kept) entries and stores (batch, head, position) int64 indices
    n_pruned = cfg.num_key_value_heads * (N - N // 2)
    assert ledger.bytes_held(shrunk, llama) == full + cfg.num_hidden_layers * 3 * n_pruned * 8


kept_from_masked = kept_from_masks  # the library's reader of kvpress's head-wise masks


def test_adakv_ragged_decodes_like_kvpress_masked_decode(llama):
    """kvpress decodes AdaKV's masks by swapping in fake keys inside its patched SDPA; ragged stores the kept rows."""
    from capture.tiny_models import tiny_model

    sdpa = tiny_model("llama", "sdpa")  # kvpress patched "sdpa" when it was imported
    sdpa.load_state_dict(llama.state_dict())
    ids = random_ids(N, llama.config.vocab_size, seed=13)
    masked, first = press_prefill(sdpa, ids, kvpress.AdaKVPress(kvpress.SnapKVPress(compression_ratio=0.5)))
    cfg = llama.config
    kept = kept_from_masked(sdpa, cfg.num_key_value_heads, N)
    counts = [len(k) for heads in kept for k in heads]
    assert sum(counts) == cfg.num_hidden_layers * cfg.num_key_value_heads * N // 2 and len(set(counts)) > 1
    cache = RaggedCache.from_dense(dense_prefill(llama, ids), kept)
    want, want_tokens = greedy(sdpa, masked, first, STEPS)
    got, got_tokens = greedy(llama, cache, first, STEPS)
    assert (got - want).abs().max() <= TOL
    assert got_tokens == want_tokens
    dense, _ = greedy(llama, dense_prefill(llama, ids), first, STEPS)
    assert (dense - want).abs().max() > 1e-3  # the eviction mattered
