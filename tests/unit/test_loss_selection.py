"""The batched selectors of the loss stage (trustmass.loss.selection) choose exactly the registry's
kept sets: on captured rows of the tiny Llama (GQA 4:2), on synthetic rows full of exact ties, on
sliding-window rows and on rows seeing fewer keys than the budget."""

import numpy as np
import pytest
import torch

from trustmass.contracts import shards
from trustmass.core.enumeration import PoolRule, candidate_pool
from trustmass.core.selectors.balancing import balancing
from trustmass.core.selectors.ceiling_rules import Balancing
from trustmass.core.selectors.contract import run
from trustmass.core.selectors.registry import REGISTRY
from trustmass.core.selectors.selector_input import SelectorInput
from trustmass.loss.configurations import BATCHED_RULES, random_cells
from trustmass.loss.selection import (
    RULES,
    SUPPORTED,
    LayerRows,
    select,
    to_csr,
)

BUDGETS = (4, 8, 16, 32, 64, 128)
WINDOWS = (2, 4, 8, 16, 32)


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    """[(layer arrays, LayerRows)] of one 200-token tiny capture, 6 rows per KV head."""
    from capture.tiny_models import tiny_shard

    path = tiny_shard(tmp_path_factory.mktemp("selection"), n_tokens=200, rows_per_head=6, seed=3)
    windows = tuple(shards.read_metadata(path)["options"]["windows"])
    layers = []
    for layer in shards.read_metadata(path)["layers"]:
        t = shards.read_layer(path, layer)
        layers.append((t, LayerRows.from_layer(t, windows), windows))
    return layers


def kept_of(selection, head, row):
    kept = selection.kept[head, row].numpy()
    assert np.all(kept[kept >= 0] == kept[: (kept >= 0).sum()]), "padding -1 comes last"
    return kept[kept >= 0]


def assert_matches_registry(name, rows, inputs, budget, rule=None):
    """Every row's batched kept set equals contract.run of the registry rule on its SelectorInput."""
    rule = REGISTRY[name] if rule is None else rule
    sel = select(name, rows, budget, rule=rule)
    assert sel.kept.shape == (rows.n_heads, rows.n_rows, budget)
    for (h, m), x in inputs.items():
        want = run(rule, x, budget)
        np.testing.assert_array_equal(kept_of(sel, h, m), want, err_msg=f"{name} at s={budget}, head {h}, row {m}")
    return sel


def shard_inputs(t, windows):
    return {
        (h, m): SelectorInput.from_layer(t, h, m, windows)
        for h in range(t["p"].shape[0])
        for m in range(t["p"].shape[1])
    }


@pytest.mark.parametrize("name", SUPPORTED)
def test_captured_rows_match_the_registry(captured, name):
    for t, rows, windows in captured:
        inputs = shard_inputs(t, windows)
        for budget in BUDGETS:
            if budget >= REGISTRY[name].min_budget:
                assert_matches_registry(name, rows, inputs, budget)


def test_balancing_swaps_match_the_registry(captured):
    rule, total = REGISTRY["balancing"], 0
    for t, rows, windows in captured:
        for budget in BUDGETS:
            sel = select("balancing", rows, budget)
            for (h, m), x in shard_inputs(t, windows).items():
                inst = x.instance
                s = min(budget, inst.n_keys)
                want = balancing(inst, s, candidate_pool(inst, s, rule.extra(budget))).swaps
                assert int(sel.swaps[h, m]) == want, (budget, h, m)
                total += want
    assert total > 0, "the captured rows must exercise swaps"


def test_configured_balancing_pool(captured):
    t, rows, windows = captured[1]
    rule = Balancing(enumerated=(8,), native_extra=1, pool=PoolRule(max_extra=3))
    for budget in (4, 8, 16):
        assert_matches_registry("balancing", rows, shard_inputs(t, windows), budget, rule=rule)


# -- synthetic rows -----------------------------------------------------------------------------


def synthetic(seed=0, n_q=4, n_kv=2, m=5, n=48, d=8, window=None, levels=None, positions=None):
    """(LayerRows, {(h, m): SelectorInput}) of random rows; `levels` quantises p, the evidence, keys
    and values to that many values (exact ties everywhere); `window` zeroes keys older than i-window+1."""
    rng = np.random.default_rng(seed)

    def draw(*shape):
        x = rng.random(shape)
        return np.floor(x * levels) / levels if levels else x

    keys, values = (draw(n_kv, n, d) - 0.5).astype(np.float32), (draw(n_kv, n, d) - 0.5).astype(np.float32)
    query = (draw(n_q, m, d) - 0.5).astype(np.float32)
    if positions is None:
        positions = rng.integers(1, n, size=(n_q, m))
    j = np.arange(n)
    seen = j <= positions[..., None]
    if window is not None:
        seen &= j > positions[..., None] - window
    p = draw(n_q, m, n) + (1.0 / levels if levels else 0.05)
    p = np.where(seen, p, 0.0)
    p = (p / p.sum(axis=-1, keepdims=True)).astype(np.float32)
    if levels:  # quantised masses stay tied after the float32 renormalisation
        p = np.where(seen, np.float32(1.0 / n), 0.0).astype(np.float32) * (
            1 + np.floor(rng.random((n_q, m, n)) * 3)
        ).astype(np.float32)
    acc = np.where(j <= positions[..., None], draw(n_q, m, n) * 10, 0.0).astype(np.float32)
    sums = np.where(j <= positions[..., None, None], draw(n_q, m, len(WINDOWS), n) * 4, 0.0).astype(np.float32)
    rows = LayerRows(
        p=p,
        positions=positions,
        keys=keys,
        values=values,
        query=query,
        acc_mass=acc,
        window_sums={w: sums[:, :, k] for k, w in enumerate(WINDOWS)},
    )
    group = n_q // n_kv
    inputs = {}
    for h in range(n_q):
        for r in range(m):
            i, kv = int(positions[h, r]), h // group
            inputs[h, r] = SelectorInput(
                p=p[h, r, : i + 1],
                values=values[kv, : i + 1],
                keys=keys[kv, : i + 1],
                query=query[h, r],
                acc_mass=acc[h, r, : i + 1],
                window_sums=sums[h, r, :, : i + 1],
                windows=WINDOWS,
            )
    return rows, inputs


@pytest.mark.parametrize("name", SUPPORTED)
@pytest.mark.parametrize("case", ["ties", "sliding_window", "short_rows"])
def test_synthetic_rows_match_the_registry(name, case):
    kw = {"ties": {"levels": 4}, "sliding_window": {"window": 12}, "short_rows": {"positions": np.full((4, 5), 9)}}[
        case
    ]
    for seed in range(3):
        rows, inputs = synthetic(seed=seed, **kw)
        for budget in (4, 8, 16, 32):
            if budget >= REGISTRY[name].min_budget:
                assert_matches_registry(name, rows, inputs, budget)


def test_top_mass_ties_go_to_the_smaller_position():
    p = np.zeros((1, 2, 10), dtype=np.float32)
    p[0, 0, :8] = [0.1, 0.2, 0.1, 0.2, 0.1, 0.1, 0.1, 0.1]  # position 7: 2 keys at 0.2, then six at 0.1
    p[0, 1, :6] = [0.0, 0.5, 0.0, 0.0, 0.25, 0.25]  # zero-mass visible keys tie at 0
    rows = LayerRows(p=p, positions=[[7, 5]], keys=np.zeros((1, 10, 2)), values=np.zeros((1, 10, 2)))
    sel = select("top_mass", rows, 4)
    assert kept_of(sel, 0, 0).tolist() == [0, 1, 2, 3]
    assert kept_of(sel, 0, 1).tolist() == [0, 1, 4, 5]


def test_short_rows_keep_every_visible_key_and_pad():
    rows, _ = synthetic(positions=np.full((4, 5), 5))
    for name in SUPPORTED:
        if REGISTRY[name].min_budget <= 16:
            sel = select(name, rows, 16)
            assert (sel.kept[..., :6] == torch.arange(6)).all() and (sel.kept[..., 6:] == -1).all(), name


def test_csr_drops_the_padding():
    kept = torch.tensor([[[0, 3, -1], [1, 2, 4]]])
    ptr, idx = to_csr(kept)
    assert ptr.tolist() == [0, 2, 5] and idx.tolist() == [0, 3, 1, 2, 4]


def test_the_policy_takes_the_switch_rule_on_the_chosen_heads():
    from trustmass.loss.configurations import Configuration
    from trustmass.loss.policy import CellRecorder, SelectionPolicy

    rows, _ = synthetic()
    top, bal = select("top_mass", rows, 8), select("balancing", rows, 8)
    policy = SelectionPolicy(
        Configuration("flat_switch", "top_mass", "balancing", "flat"), np.zeros((1, 4), bool), 8, CellRecorder((1, 4))
    )
    heads = torch.tensor([False, True, False, True])
    kept, swaps = policy._switched_select(rows, heads)
    assert torch.equal(kept[heads], bal.kept[heads]) and torch.equal(kept[~heads], top.kept[~heads])
    assert torch.equal(swaps[heads], bal.swaps[heads]) and (swaps[~heads] == 0).all()
    every, _ = policy._switched_select(rows, torch.ones(4, dtype=torch.bool))
    assert torch.equal(every, bal.kept)


def test_random_cells_are_deterministic_per_seed():
    a, b, c = random_cells((6, 8), 10, seed=5), random_cells((6, 8), 10, seed=5), random_cells((6, 8), 10, seed=6)
    assert a.shape == (6, 8) and a.dtype == bool and a.sum() == 10
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert not np.array_equal(a, random_cells((6, 8), 10, seed=5, master_seed=1))
    with pytest.raises(ValueError):
        random_cells((2, 2), 5, seed=0)


def test_every_rule_declaring_loss_batched_has_a_batched_version():
    """A rule's contract says whether the loss forward batches it; the config check (BATCHED_RULES,
    torch-free) and selection.RULES both read that declaration, and each declaring class has its mask."""
    from trustmass.core.selectors.contract import contract
    from trustmass.loss.selection import BATCHED

    declared = tuple(name for name, rule in REGISTRY.items() if contract(rule).loss_batched)
    assert BATCHED_RULES == declared == tuple(RULES)
    assert {"tova", "geometric", "h2o_debiased", "block_select"}.isdisjoint(declared)
    for name in declared:
        assert type(REGISTRY[name]) in BATCHED, name


def test_unknown_and_unbatched_names_are_refused():
    rows, _ = synthetic()
    for name in ("no_such_rule", "geometric"):
        with pytest.raises(ValueError, match="top_mass"):
            select(name, rows, 8)
    with pytest.raises(ValueError, match=">= 16"):
        select("quest_page16", rows, 8)
    with pytest.raises(ValueError, match="count_debiased.*raw accumulated mass"):  # not silently ranked by the raw mass
        select("h2o", rows, 8, rule=type(REGISTRY["h2o"])(exposure="count_debiased"))
    with pytest.raises(ValueError, match="strict"):  # only the greedy page fill is batched
        select("quest", rows, 8, rule=type(REGISTRY["quest"])(projection="strict"))


@pytest.mark.parametrize("case", ["random", "duplicates", "threshold"])
def test_the_screened_round_decides_as_the_exact_round(case):
    """best_swaps (expanded norms with bounds, exact fallback) == exact_best_swaps, row by row,
    including exact ties (duplicated w-vectors) and swaps sitting at the acceptance threshold."""
    from trustmass.loss.balancing import best_swaps, exact_best_swaps

    gen = torch.Generator().manual_seed(7)
    r, pool, budget, d = 400, 20, 8, 16
    w = torch.randn(r, pool, d, generator=gen, dtype=torch.float64) * torch.rand(
        r, pool, 1, generator=gen, dtype=torch.float64
    )
    pm = torch.rand(r, pool, generator=gen, dtype=torch.float64) + 0.01
    if case == "duplicates":  # every in-slot a copy of another: exact ties between swaps
        w[:, budget + 1 :: 2], pm[:, budget + 1 :: 2] = (
            w[:, budget::2][:, : w[:, budget + 1 :: 2].shape[1]],
            pm[:, budget::2][:, : pm[:, budget + 1 :: 2].shape[1]],
        )
    kept = torch.zeros(r, pool, dtype=torch.bool)
    kept[:, :budget] = True
    valid = torch.ones(r, pool, dtype=torch.bool)
    valid[::5, -3:] = False  # some rows with a shorter pool
    if case == "threshold":  # in-slots equal to the out-slots: swaps that change nothing (es' = es)
        w[:, budget : 2 * budget], pm[:, budget : 2 * budget] = w[:, :budget], pm[:, :budget]
    seen = set()
    for _ in range(30):  # every round until no row improves, applying the exact round's swaps
        got, want = best_swaps(w, pm, kept, valid, budget), exact_best_swaps(w, pm, kept, valid, budget)
        assert torch.equal(got[0], want[0])
        accepted = want[0]
        for g, x in zip(got[1:], want[1:], strict=True):
            assert torch.equal(g[accepted], x[accepted])
        seen |= set(accepted.tolist())
        if not bool(accepted.any()):
            break
        rows = accepted.nonzero()[:, 0]
        kept[rows, want[1][rows]] = False
        kept[rows, want[2][rows]] = True
    assert seen == {True, False}


@pytest.mark.parametrize("name", SUPPORTED)
def test_a_rule_on_some_heads_chooses_what_it_chooses_there_on_all(name):
    """LayerRows.heads: the switch runs its rule on the switched heads only (policy._switched_select)."""
    rows, _ = synthetic(seed=4, n_q=6, n_kv=2, levels=4)
    chosen = torch.tensor([False, True, True, False, False, True])  # heads of both KV groups
    budget = max(8, REGISTRY[name].min_budget)
    whole, part = select(name, rows, budget), select(name, rows.heads(chosen), budget)
    assert torch.equal(part.kept, whole.kept[chosen])
    if whole.swaps is not None:
        assert torch.equal(part.swaps, whole.swaps[chosen])


@pytest.mark.parametrize("shape", [(200, 16, 64), (7, 3, 256), (5, 1), (4, 0)])
def test_sequential_sum_is_a_scalar_loop(shape):
    """batched.sequential_sum adds left to right, bit for bit (what exact_errors relies on)."""
    from trustmass.loss.batched import sequential_sum

    x = torch.randn(*shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 1e3
    loop = torch.zeros(shape[:-1], dtype=torch.float64)
    for i in range(shape[-1]):
        loop = loop + x[..., i]
    assert torch.equal(sequential_sum(x), loop)


def test_cache_faithful_rules_evict_once_at_the_first_row_and_quest_does_not():
    """The cache-faithful reading (the audit's): an evicting rule's row-0 set serves every later row
    of the head; Quest keeps the full cache, so it selects per query either way."""
    from trustmass.loss.configurations import CACHE_FAITHFUL, Configuration
    from trustmass.loss.policy import CellRecorder, SelectionPolicy

    rows, _ = synthetic(positions=np.tile(np.array([[20, 25, 30, 35, 40]]), (4, 1)))
    for rule in ("top_mass", "snapkv", "h2o", "streaming_llm", "balancing", "quest"):
        config = Configuration(f"{rule}@cf", rule, accounting=CACHE_FAITHFUL)
        policy = SelectionPolicy(config, np.zeros((1, 4), bool), 16, CellRecorder((1, 4)))
        kept, _ = policy._switched_select(rows, torch.zeros(4, dtype=torch.bool))
        per_query = select(rule, rows, 16).kept
        if rule == "quest":
            assert torch.equal(kept, per_query)
        else:
            assert torch.equal(kept, per_query[:, :1].expand_as(kept)), rule
            assert torch.equal(kept[:, 0], per_query[:, 0]) and not torch.equal(kept, per_query), rule


def test_window_sums_read_only_the_tail_rows_the_window_reaches():
    """A prefix tail recorded for a larger budget's SnapKV window serves a smaller one (the
    restricted benchmark records once for its largest budget)."""
    from trustmass.loss.policy import window_sums

    gen = torch.Generator().manual_seed(3)
    p, tail = torch.rand(2, 5, 12, generator=gen), torch.rand(2, 31, 7, generator=gen)
    assert torch.equal(window_sums(p, tail, 4), window_sums(p, tail[:, -3:], 4))
    assert not torch.equal(window_sums(p, tail, 4), window_sums(p, None, 4))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n, k_low, k_high", [(23, 0, 25), (900, 16, 100)], ids=["short-rows", "long-rows"])
def test_top_k_mask_is_the_stable_descending_sort(seed, n, k_low, k_high):
    """Rows with and without ties across the k-th place, a per-row k (0 and above the eligible
    count included), ineligible keys or none: the mask equals the first k keys of a stable
    descending sort."""
    from trustmass.loss import batched

    g = np.random.default_rng(seed)
    rows = 40
    score = g.integers(0, [2, 5, 100_000][seed % 3], size=(rows, n)).astype(np.float32)
    eligible = g.random((rows, n)) < 0.8
    k = g.integers(k_low, k_high, size=rows)
    for mask in (eligible, None):
        got = batched.top_k_mask(
            torch.from_numpy(score), torch.from_numpy(k), None if mask is None else torch.from_numpy(mask)
        ).numpy()
        for r in range(rows):
            candidates = np.arange(n) if mask is None else np.flatnonzero(mask[r])
            order = candidates[np.argsort(-score[r, candidates], kind="stable")][: k[r]]
            want = np.zeros(n, dtype=bool)
            want[order] = True
            np.testing.assert_array_equal(got[r], want, err_msg=f"row {r}, k = {k[r]}")


@pytest.mark.parametrize("projection", ["strict", "strict_then_fill"])
@pytest.mark.parametrize("score", ["mass", "mii"])
def test_value_aware_projections_match_the_registry(captured, projection, score):
    """The strict block TopK (slack left) and its token-fill, at a block size that leaves slack."""
    from trustmass.core.selectors.value_aware import ValueAwareBlocks

    rule = ValueAwareBlocks(score=score, block=5, projection=projection)
    for t, rows, windows in captured:
        inputs = shard_inputs(t, windows)
        for budget in (8, 16, 32):
            sel = select(f"value_aware_{score}", rows, budget, rule=rule)
            for (h, m), x in inputs.items():
                want = run(rule, x, budget)
                np.testing.assert_array_equal(
                    kept_of(sel, h, m), want, err_msg=f"{projection} at s={budget}, head {h}, row {m}"
                )
    rows, inputs = synthetic(seed=1, levels=4)  # exact ties everywhere
    sel = select(f"value_aware_{score}", rows, 16, rule=rule)
    for (h, m), x in inputs.items():
        np.testing.assert_array_equal(kept_of(sel, h, m), run(rule, x, 16))
