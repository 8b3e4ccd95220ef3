"""ContourKV's allocator: exact averages, the floor, tie order, a brute-force reference, caps, scores from kvpress."""

import itertools

import numpy as np
import pytest
import torch
from deploy_helpers import models, random_ids

from trustmass.deploy.contourkv import contour_kept, record_scores, window_scores

kvpress = pytest.importorskip("kvpress")


def rand_scores(layers, heads, n, seed, ties=False):
    g = torch.Generator().manual_seed(seed)
    if ties:  # few distinct values: most comparisons are ties
        return [torch.randint(0, 3, (heads, n), generator=g).float() for _ in range(layers)]
    return [torch.rand(heads, n, generator=g) for _ in range(layers)]


def total(kept):
    return sum(len(k) for heads in kept for k in heads)


def as_sets(kept):
    return [[set(k.tolist()) for k in heads] for heads in kept]


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("budget,floor", [(8, 4), (20, 8), (8, 8), (40, 8), (3, 0)])
def test_exact_average_and_floor(budget, floor, ties):
    layers, heads, n = 3, 4, 40
    scores = rand_scores(layers, heads, n, seed=budget + floor, ties=ties)
    cells = layers * heads
    kept = contour_kept(scores, budget, floor=floor)
    assert total(kept) == budget * cells
    counts = [len(k) for hs in kept for k in hs]
    if budget < n and budget > floor:
        assert len(set(counts)) > 1 or ties  # global threshold: counts really vary between cells
    if budget + floor <= n:
        kept_extra = contour_kept(scores, budget, floor=floor, floor_counts_toward_budget=False)
        assert total(kept_extra) == (budget + floor) * cells
    for hs in kept:
        for k in hs:
            assert k.dtype == torch.int64 and torch.equal(k, k.sort().values) and len(set(k.tolist())) == len(k)
            assert set(range(n - floor, n)) <= set(k.tolist())  # the recency floor


def test_tie_order_is_layer_head_position():
    layers, heads, n, floor, budget = 2, 3, 10, 2, 4
    scores = [torch.zeros(heads, n) for _ in range(layers)]
    kept = contour_kept(scores, budget, floor=floor)
    # K = (4 - 2) * 6 = 12 non-floor entries, 8 per cell available: layer 0 head 0 takes 0..7, head 1 takes 0..3
    flat = [(layer, h, j) for layer in range(layers) for h in range(heads) for j in range(n - floor)][:12]
    want = [
        [set(range(n - floor, n)) | {j for (la, hh, j) in flat if (la, hh) == (layer, h)} for h in range(heads)]
        for layer in range(layers)
    ]
    assert as_sets(kept) == want


def brute(scores, budget, floor, counts, scope, caps=None):
    """The allocation written out: enumerate every non-floor entry, sort by (-score, layer, head, position), walk."""
    layers, (heads, n) = len(scores), scores[0].shape
    f = min(floor, n)
    per_cell = budget - f if counts else budget
    entries = [(-float(scores[la][h, j]), la, h, j) for la in range(layers) for h in range(heads) for j in range(n - f)]
    groups = [entries] if scope == "global" else [[e for e in entries if e[1] == la] for la in range(layers)]
    kept = [[set(range(n - f, n)) for _ in range(heads)] for _ in range(layers)]
    for group in groups:
        quota = per_cell * heads * (layers if scope == "global" else 1)
        for _, la, h, j in sorted(group)[:quota]:
            cap = None if caps is None else (caps if np.ndim(caps) == 0 else caps[la][h])
            if cap is None or len(kept[la][h]) < cap:
                kept[la][h].add(j)
    return kept


@pytest.mark.parametrize("scope", ["global", "per_layer"])
@pytest.mark.parametrize("counts", [True, False])
def test_brute_force_reference(scope, counts):
    for seed, (layers, heads, n) in enumerate(itertools.product([1, 2], [1, 3], [5, 9])):
        scores = rand_scores(layers, heads, n, seed, ties=seed % 2 == 0)
        for floor in (0, 2):
            for budget in range(max(1, floor if counts else 1), n - (0 if counts else floor) + 1):
                got = contour_kept(scores, budget, floor=floor, floor_counts_toward_budget=counts, scope=scope)
                assert as_sets(got) == brute(scores, budget, floor, counts, scope), (seed, floor, budget)
                for cap in (max(budget, floor), max(budget, floor) + 1):  # a cap must hold the floor
                    got = contour_kept(
                        scores, budget, floor=floor, floor_counts_toward_budget=counts, scope=scope, caps=cap
                    )
                    assert as_sets(got) == brute(scores, budget, floor, counts, scope, caps=cap), (
                        seed,
                        floor,
                        budget,
                        cap,
                    )


def test_per_layer_scope_averages_per_layer():
    scores = rand_scores(3, 4, 50, seed=3)
    scores[1] = scores[1] * 10  # layer 1 would take most of a global budget
    glob = contour_kept(scores, 16, floor=4)
    local = contour_kept(scores, 16, floor=4, scope="per_layer")
    assert sum(len(k) for k in glob[1]) > 16 * 4  # the global threshold does favour layer 1
    assert [sum(len(k) for k in heads) for heads in local] == [16 * 4] * 3


def test_enforced_caps():
    scores = rand_scores(2, 4, 60, seed=5)
    scores[0][0] *= 5  # one cell wants far more than its share
    free = contour_kept(scores, 16, floor=8)
    assert max(len(k) for hs in free for k in hs) > 16
    capped = contour_kept(scores, 16, floor=8, caps=16)
    assert max(len(k) for hs in capped for k in hs) <= 16
    assert total(capped) < total(free)  # what the capped cell refused is not redistributed
    for fk, ck in zip(itertools.chain(*free), itertools.chain(*capped)):
        assert set(ck.tolist()) <= set(fk.tolist())  # caps only remove entries
    cap_array = np.full((2, 4), 60)
    cap_array[1, 2] = 9
    per_cell = contour_kept(scores, 16, floor=8, caps=cap_array)
    assert len(per_cell[1][2]) <= 9
    assert as_sets(contour_kept(scores, 16, floor=8, caps=60)) == as_sets(free)  # caps never reached: unenforced


def test_uniform_scores_equal_uniform_top_s_under_caps():
    """Per-layer scope with caps = s: if every cell has the same score distribution, every cell keeps exactly s."""
    base = torch.randperm(30, generator=torch.Generator().manual_seed(2)).float()
    scores = [base.expand(3, 30).clone() for _ in range(2)]
    kept = contour_kept(scores, 10, floor=4, scope="per_layer", caps=10)
    want = set(base[:26].topk(6).indices.tolist()) | set(range(26, 30))
    assert as_sets(kept) == [[want] * 3] * 2


@pytest.mark.parametrize(
    "kwargs,field",
    [
        (dict(budget=0), "budget"),
        (dict(budget=41), "budget"),
        (dict(budget=8, floor=32), "floor_counts_toward_budget"),
        (dict(budget=36, floor=8, floor_counts_toward_budget=False), "budget"),
        (dict(budget=8, scope="cells"), "scope"),
        (dict(budget=8, floor=-1), "floor"),
        (dict(budget=16, floor=8, caps=4), "caps"),
        (dict(budget=16, floor=8, caps=np.ones((3, 2), int) * 16), "caps"),
    ],
)
def test_bad_inputs_name_the_field(kwargs, field):
    scores = rand_scores(2, 2, 40, seed=0)
    budget = kwargs.pop("budget")
    with pytest.raises(ValueError, match=field):
        contour_kept(scores, budget, **kwargs)


def test_bad_scores_name_the_field():
    good = rand_scores(2, 2, 40, seed=0)
    with pytest.raises(ValueError, match="scores"):
        contour_kept([good[0], torch.rand(2, 39)], 8)
    with pytest.raises(ValueError, match="scores"):
        contour_kept([good[0], torch.rand(3, 40)], 8)
    nan = good[1].clone()
    nan[0, 3] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        contour_kept([good[0], nan], 8)
    with pytest.raises(ValueError, match="scores"):
        contour_kept([], 8)


# ---- scores recorded from kvpress on a tiny model -------------------------------------------------------------

N, WINDOW = 96, 16


@pytest.fixture(scope="module")
def llama():
    return models("llama")[0]


def layer_inputs(model, ids):
    """Every attention layer's hook inputs on one dense prefill (what kvpress's press receives)."""
    seen = {}

    def hook(module, args, kwargs, output):
        seen[module.layer_idx] = (module, kwargs["hidden_states"], kwargs["past_key_values"], kwargs)

    from transformers import DynamicCache

    handles = [layer.self_attn.register_forward_hook(hook, with_kwargs=True) for layer in model.model.layers]
    try:
        with torch.inference_mode():
            model.model(input_ids=ids, past_key_values=DynamicCache())
    finally:
        for h in handles:
            h.remove()
    return seen


def test_window_scores_are_kvpress_snapkv_scores(llama):
    ids = random_ids(N, llama.config.vocab_size, seed=21)
    got = window_scores(llama, ids, window_size=WINDOW)
    press = kvpress.SnapKVPress(window_size=WINDOW)
    for layer, (module, hidden, cache, kwargs) in sorted(layer_inputs(llama, ids).items()):
        keys = cache.layers[layer].keys
        with torch.inference_mode():
            want = press.score(module, hidden, keys, cache.layers[layer].values, None, kwargs)[0]
        assert got[layer].shape == (llama.config.num_key_value_heads, N)
        assert torch.equal(got[layer], want)


def test_uniform_top_s_of_window_scores_is_snapkvs_kept_set(llama):
    from test_kvpress_ledger import dense_prefill, kept_positions, press_prefill

    ids = random_ids(N, llama.config.vocab_size, seed=22)
    shrunk, _ = press_prefill(llama, ids, kvpress.SnapKVPress(compression_ratio=0.75, window_size=WINDOW))
    want = kept_positions(shrunk, dense_prefill(llama, ids))
    scores = window_scores(llama, ids, window_size=WINDOW)
    s = N // 4
    got = [[set(row.topk(s).indices.tolist()) for row in layer] for layer in scores]
    assert got == as_sets(want)
    # ContourKV on the same score: the same total bytes, but cells differ in count
    contour = contour_kept(scores, s, floor=WINDOW)
    assert total(contour) == total(want)
    assert as_sets(contour) != as_sets(want)
    from trustmass.deploy.ragged import RaggedCache

    ragged = RaggedCache.from_dense(dense_prefill(llama, ids), contour)  # the allocation ships as a ragged cache
    assert [list(map(int, c)) for c in ragged.kept_counts()] == [[len(k) for k in heads] for heads in contour]


def test_record_scores_with_any_scorer(llama):
    ids = random_ids(N, llama.config.vocab_size, seed=23)
    norms = record_scores(llama, ids, kvpress.KnormPress())
    from test_kvpress_ledger import dense_prefill

    dense = dense_prefill(llama, ids)
    for layer, got in enumerate(norms):
        assert torch.allclose(got, -dense.layers[layer].keys[0].norm(dim=-1))


# ---- KVzip's reconstruction score ------------------------------------------------------------------------------


def char_tokenizer(folder, vocab_size: int):
    """A local one-character-per-token tokenizer (no chat template), so KVzip's AutoTokenizer load needs no hub."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    chars = ["\n"] + [chr(c) for c in range(32, 32 + vocab_size - 2)]
    vocab = {"<unk>": 0} | {c: i + 1 for i, c in enumerate(chars)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("[\\s\\S]"), behavior="isolated")
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>").save_pretrained(folder)
    return str(folder)


def test_reconstruction_scores_give_kvzips_own_allocation(tmp_path):
    """ContourKV (floor 0, global) on KVzip's score, sinks boosted as KVzip does, keeps exactly KVzip's kept set."""
    from capture.tiny_models import tiny_model
    from test_kvpress_ledger import kept_from_masked, press_prefill

    from trustmass.deploy.shipped import KVzipScores

    model = tiny_model("llama", "sdpa")  # KVzip's masks need non-eager attention
    model.config.name_or_path = char_tokenizer(tmp_path / "tok", model.config.vocab_size)
    ids = random_ids(N, model.config.vocab_size, seed=24)
    recorder = KVzipScores()
    press_prefill(model, ids, recorder)
    scores = [s.clone() for s in recorder.scores]
    assert len(scores) == 2 and scores[0].shape == (2, N) and all((s > 0).all() for s in scores)
    kvzip = kvpress.KVzipPress(compression_ratio=0.75)
    press_prefill(model, ids, kvzip)
    want = kept_from_masked(model, 2, N)
    top = max(float(s.max()) for s in scores) + 1.0
    for s in scores:
        s[:, : kvzip.n_sink] = top  # KVzip's compress_post: attention sinks are never evicted
    got = contour_kept(scores, N // 4, floor=0)
    assert as_sets(got) == as_sets(want)
    assert len({len(k) for heads in want for k in heads}) > 1  # KVzip's own allocation is head-wise too
    assert as_sets(recorder.kept_sets(model, 0.75)) == as_sets(want)  # the same pass, kvpress's allocation re-run


def test_reconstruction_pass_on_a_prefill_equals_kvzips_own_run(tmp_path):
    """KVzip's pass on the runner's dense prefill cache (no second prefill) gives kvpress's own run's scores
    and kept sets bit for bit, and leaves that cache as it was."""
    from capture.tiny_models import tiny_model
    from test_kvpress_ledger import dense_prefill, press_prefill

    from trustmass.deploy.shipped import KVzipScores, reconstruction_pass

    model = tiny_model("llama", "sdpa")
    model.config.name_or_path = char_tokenizer(tmp_path / "tok", model.config.vocab_size)
    ids = random_ids(N, model.config.vocab_size, seed=25)
    own = KVzipScores()
    press_prefill(model, ids, own)
    dense = dense_prefill(model, ids)
    before = [(layer.keys.clone(), layer.values.clone()) for layer in dense.layers]
    reused = KVzipScores()
    assert reconstruction_pass(model, ids, reused, dense) >= 0.0
    assert all(torch.equal(a, b) for a, b in zip(own.scores, reused.scores))
    assert as_sets(own.kept_sets(model, 0.75)) == as_sets(reused.kept_sets(model, 0.75))
    assert all(
        torch.equal(layer.keys, k) and torch.equal(layer.values, v) for layer, (k, v) in zip(dense.layers, before)
    )


def test_kvzips_passes_read_the_tokenizer_from_disk_once(tmp_path, monkeypatch):
    """KVzip loads the model's tokenizer at every pass (twice per item in the runner, per item and budget in the
    replay); the job reads it from disk once and every pass gets the same scores (issue 39: the rehearsal's
    LongBench jobs spent most of their time there)."""
    import transformers
    from capture.tiny_models import tiny_model

    from trustmass.deploy.shipped import KVzipScores, press_prefill, reconstruction_pass

    loads = []
    real = transformers.AutoTokenizer.from_pretrained

    def counted(name, *args, **kwargs):
        loads.append(str(name))
        return real(name, *args, **kwargs)

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", counted)
    model = tiny_model("llama", "sdpa")
    model.config.name_or_path = char_tokenizer(tmp_path / "tok-once", model.config.vocab_size)
    ids = random_ids(N, model.config.vocab_size, seed=26)
    first, again, own = KVzipScores(), KVzipScores(), KVzipScores()
    from test_kvpress_ledger import dense_prefill

    dense = dense_prefill(model, ids)
    reconstruction_pass(model, ids, first, dense)
    reconstruction_pass(model, ids, again, dense)
    press_prefill(model, ids, own)
    assert loads == [str(tmp_path / "tok-once")]
    assert all(torch.equal(a, b) and torch.equal(a, c) for a, b, c in zip(first.scores, again.scores, own.scores))
