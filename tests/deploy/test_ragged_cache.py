"""The ragged cache decodes like the dense model with the evicted keys masked, and really shrinks."""

import pytest
import torch
from deploy_helpers import KEEP, extend, greedy, keep_masks, models, prefill, random_ids, random_kept
from transformers import DynamicCache

from trustmass.deploy import ledger, ragged
from trustmass.deploy.ragged import RaggedCache

N, BLOCK, STEPS, TOL = 48, 5, 4, 1e-5


@pytest.fixture(autouse=True)
def no_keep_masks():
    KEEP.clear()
    yield
    KEEP.clear()


@pytest.fixture(scope="module")
def llama():
    return models("llama")


def shape_of(model):
    cfg = model.config
    head_dim = (
        getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    )  # Qwen2 configs lack head_dim
    return cfg.num_hidden_layers, cfg.num_key_value_heads, head_dim


def test_all_kept_equals_dense_decode(llama):
    model, _ = llama
    ids = random_ids(N, model.config.vocab_size)
    dense, first = prefill(model, ids)
    n_layers, kv_heads, _ = shape_of(model)
    kept = [[torch.arange(N) for _ in range(kv_heads)] for _ in range(n_layers)]
    cache = RaggedCache.from_dense(dense, kept)
    got, got_tokens = greedy(model, cache, first, STEPS)
    want, want_tokens = greedy(model, dense, first, STEPS)
    assert (got - want).abs().max() <= TOL
    assert got_tokens == want_tokens
    assert cache.get_seq_length() == dense.get_seq_length() == N + STEPS


@pytest.mark.parametrize("kind", ["llama", "qwen2", "gemma2", "gemma3"])
def test_random_kept_equals_masked_reference(kind):
    """GQA 4:2 and 4:1, soft-capping (gemma2), sliding windows (gemma2, gemma3), QK-norm (gemma3).

    A block of BLOCK tokens first (causal inside the block), then single-token greedy steps.
    """
    model, reference = models(kind)
    ids = random_ids(N, model.config.vocab_size, seed=1)
    block = random_ids(BLOCK, model.config.vocab_size, seed=9)
    dense, _ = prefill(model, ids)
    n_layers, kv_heads, _ = shape_of(model)
    kept = random_kept(n_layers, kv_heads, N, seed=2)
    assert len({len(k) for heads in kept for k in heads}) > 1  # the counts really differ per head
    cache = RaggedCache.from_dense(dense, kept, windows=ragged.layer_windows(model.config))
    got_block = extend(model, cache, block)
    got, got_tokens = greedy(model, cache, got_block[-1:].argmax(-1, keepdim=True), STEPS)

    ref_cache, _ = prefill(reference, ids)  # dense prefill; eviction applies from the first decode step
    KEEP.update(keep_masks(kept, N))
    want_block = extend(reference, ref_cache, block)
    want, want_tokens = greedy(reference, ref_cache, want_block[-1:].argmax(-1, keepdim=True), STEPS)
    assert (got_block - want_block).abs().max() <= TOL
    assert (got - want).abs().max() <= TOL
    assert got_tokens == want_tokens
    # eviction changed the result (else this test could not tell masked from dense decoding)
    KEEP.clear()
    dense_block = extend(reference, prefill(reference, ids)[0], block)
    assert (dense_block - want_block).abs().max() > 1e-3


def test_positions_are_the_original_ones(llama):
    model, reference = llama
    ids = random_ids(N, model.config.vocab_size, seed=3)
    dense, first = prefill(model, ids)
    n_layers, kv_heads, _ = shape_of(model)
    kept = random_kept(n_layers, kv_heads, N, seed=4)
    cache = RaggedCache.from_dense(dense, kept)
    assert cache.get_seq_length() == N
    assert int(cache.kept_counts().max()) < N
    got, _ = greedy(model, cache, first, 1)
    assert cache.get_seq_length() == N + 1
    ref_cache = prefill(reference, ids)[0]
    KEEP.update(keep_masks(kept, N))
    want, _ = greedy(reference, ref_cache, first, 1)
    assert (got - want).abs().max() <= TOL
    # the same decode at the shrunk length's position (what a cache reporting its rows would give) differs
    shrunk = RaggedCache.from_dense(dense, kept)
    wrong, _ = greedy(model, shrunk, first, 1, positions=int(shrunk.kept_counts()[0, 0]))
    assert (wrong - want).abs().max() > 1e-3


def test_memory_is_the_kept_rows(llama):
    model, _ = llama
    dense, first = prefill(model, random_ids(N, model.config.vocab_size, seed=5))
    n_layers, kv_heads, d = shape_of(model)
    kept = random_kept(n_layers, kv_heads, N, seed=6)
    cache = RaggedCache.from_dense(dense, kept)
    n_kept = sum(len(k) for heads in kept for k in heads)
    assert ledger.bytes_held(cache) == n_kept * d * 2 * 4
    assert ledger.bytes_held(cache) < ledger.bytes_held(dense) == n_layers * kv_heads * N * d * 2 * 4
    # copies, not views that keep the dense storage alive
    assert all(t.untyped_storage().nbytes() == ledger.tensor_bytes(t) for t in cache.tensors())
    greedy(model, cache, first, STEPS)
    assert ledger.bytes_held(cache) == (n_kept + n_layers * kv_heads * STEPS) * d * 2 * 4
    assert cache.kept_counts().tolist() == [[len(k) + STEPS for k in heads] for heads in kept]


def test_sliding_layer_counts_its_positions():
    model, _ = models("gemma3")
    dense, _ = prefill(model, random_ids(N, model.config.vocab_size))
    n_layers, kv_heads, d = shape_of(model)
    kept = random_kept(n_layers, kv_heads, N, seed=7)
    windows = ragged.layer_windows(model.config)
    assert windows == [8, None]
    cache = RaggedCache.from_dense(dense, kept, windows=windows)
    n_kept = sum(len(k) for heads in kept for k in heads)
    n_sliding = sum(len(k) for k in kept[0])
    assert ledger.bytes_held(cache) == n_kept * d * 2 * 4 + n_sliding * 8  # int64 positions of layer 0


def test_missing_windows_are_an_error():
    model, _ = models("gemma3")
    dense, first = prefill(model, random_ids(N, model.config.vocab_size))
    cache = RaggedCache.from_dense(dense, random_kept(2, 2, N, seed=8))
    with pytest.raises(ValueError, match="sliding window 8.*windows=layer_windows"):
        greedy(model, cache, first, 1)


@pytest.fixture(scope="module")
def dense_cache(llama):
    return prefill(llama[0], random_ids(N, llama[0].config.vocab_size))[0]


def kept_with(head_index):
    full = torch.arange(N)
    return [[head_index, full], [full, full]]


@pytest.mark.parametrize(
    "kept, message",
    [
        (kept_with(torch.tensor([0, 5, N])), r"kept\[0\]\[0\] holds positions outside \[0, 47\]"),
        (kept_with(torch.tensor([-1, 5])), r"kept\[0\]\[0\] holds positions outside"),
        (kept_with(torch.tensor([5, 3, 7])), r"kept\[0\]\[0\] must be sorted ascending"),
        (kept_with(torch.tensor([3, 5, 5])), r"kept\[0\]\[0\] holds duplicated positions \(position 5\)"),
        (kept_with(torch.tensor([1.0, 2.0])), r"kept\[0\]\[0\] must be a 1-D integer tensor"),
        (kept_with(torch.tensor([[1, 2]])), r"kept\[0\]\[0\] must be a 1-D integer tensor"),
        ([[torch.arange(N)], [torch.arange(N)] * 2], r"kept\[0\] has 1 index tensors; layer 0 has 2 KV heads"),
        ([[torch.arange(N)] * 2], r"kept has 1 layers; the cache has 2"),
    ],
)
def test_bad_kept_sets_are_named(dense_cache, kept, message):
    with pytest.raises(ValueError, match=message):
        RaggedCache.from_dense(dense_cache, kept)


def test_a_config_built_sliding_cache_is_refused():
    model, _ = models("gemma3")
    cache = DynamicCache(config=model.config)  # its sliding layer keeps only the last window - 1 keys
    with torch.inference_mode():
        model(input_ids=random_ids(N, model.config.vocab_size), past_key_values=cache)
    with pytest.raises(ValueError, match="DynamicCache\\(\\) built without the model config"):
        RaggedCache.from_dense(cache, [[torch.arange(7)] * 2] * 2)
