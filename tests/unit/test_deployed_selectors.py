"""Hand-computed kept sets of the audited rules (spec §5) and the related-methods block rules."""

import numpy as np
import pytest
from unit.instances import random_cases, random_instance

from trustmass.core import operator as op
from trustmass.core.selectors.contract import run
from trustmass.core.selectors.deployed import (
    H2O,
    TOVA,
    Quest,
    Recency,
    SnapKV,
    StreamingLLM,
    block_reduce,
    contiguous_units,
    max_pool_same,
    select_units,
)
from trustmass.core.selectors.selector_input import SelectorInput
from trustmass.core.selectors.value_aware import (
    BlockSelect,
    ValueAwareBlocks,
    value_aware_scores,
)


def row(n: int, **fields) -> SelectorInput:
    fields.setdefault("p", np.full(n, 1.0 / n))
    return SelectorInput(**fields)


# ---------------------------------------------------------------------------------------------
# StreamingLLM
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "s, kept",
    [
        (1, [9]),  # min(4, 0) = 0 sinks
        (2, [0, 9]),
        (4, [0, 1, 8, 9]),  # 2 sinks + 2 recent
        (6, [0, 1, 2, 7, 8, 9]),  # 3 sinks + 3 recent
        (8, [0, 1, 2, 3, 6, 7, 8, 9]),  # 4 sinks + 4 recent
        (9, [0, 1, 2, 3, 5, 6, 7, 8, 9]),  # sinks capped at 4
        (10, list(range(10))),
        (16, list(range(10))),
    ],
)
def test_streaming_llm_sinks_and_recency_on_ten_keys(s, kept):
    assert run(StreamingLLM(), row(10), s).tolist() == kept


def test_recency_control():
    assert run(Recency(), row(10), 3).tolist() == [7, 8, 9]


# ---------------------------------------------------------------------------------------------
# SnapKV
# ---------------------------------------------------------------------------------------------


def test_max_pool_same_padding():
    assert max_pool_same(np.array([0.0, 3.0, 0.0, 0.0, 0.0, 0.0, 1.0]), 3).tolist() == [
        3,
        3,
        3,
        0,
        0,
        1,
        1,
    ]
    assert max_pool_same(np.array([-2.0, -1.0]), 7).tolist() == [
        -1,
        -1,
    ]  # padding never wins


def test_snapkv_pooling_on_a_known_window():
    """N = 16, s = 8: w = 4, prefix 0..11, vote spikes 0.3 at 1 and 0.5 at 10, kernel 7.

    pooled = 0.3 on 0..4, 0 on 5..6, 0.5 on 7..11 (the window key 12's 5.0 is outside the prefix
    and is not pooled in); top 4 = 7, 8, 9, 10 (ties to the lower position); plus window 12..15.
    Without pooling the top 4 would be 10, 1, 0, 2.
    """
    n = 16
    sums = np.full((5, n), 9.0)  # other windows are decoys
    vote = np.zeros(n)
    vote[1], vote[10], vote[12] = 0.3, 0.5, 5.0
    sums[1] = vote  # w = 4 is windows[1]
    x = row(n, window_sums=sums)
    assert SnapKV().window(8) == 4
    assert SnapKV().pooled_scores(x, 8).tolist() == [0.3] * 5 + [0.0] * 2 + [0.5] * 5
    assert run(SnapKV(), x, 8).tolist() == [7, 8, 9, 10, 12, 13, 14, 15]
    assert run(SnapKV(kernel=1), x, 8).tolist() == [0, 1, 2, 10, 12, 13, 14, 15]


def test_snapkv_window_schedule():
    assert [SnapKV().window(s) for s in (1, 2, 4, 8, 16, 32, 64, 128, 256)] == [
        1,
        1,
        2,
        4,
        8,
        16,
        32,
        32,
        32,
    ]
    # s = 2: w = 1, the window is the row itself; 1 pooled key from the prefix
    p = np.array([0.1, 0.5, 0.05, 0.05, 0.1, 0.2])
    assert run(SnapKV(), row(6, p=p), 2).tolist() == [
        0,
        5,
    ]  # pooled: 0..4 all reach 0.5 -> lowest position


# ---------------------------------------------------------------------------------------------
# H2O
# ---------------------------------------------------------------------------------------------


def test_h2o_on_a_constructed_accumulated_mass():
    """s = 6: recency {9, 10, 11}; the rest by accumulated mass: 0 (5), then the tie 3/5/7 (4)
    to the lower positions 3, 5.  Key 10's 9.0 is in the recency window anyway."""
    acc = np.array([5, 1, 1, 4, 1, 4, 1, 4, 1, 1, 9, 1], dtype=float)
    assert run(H2O(), row(12, acc_mass=acc), 6).tolist() == [0, 3, 5, 9, 10, 11]
    assert run(H2O(), row(12, acc_mass=acc), 4).tolist() == [0, 3, 10, 11]
    assert run(H2O(), row(12, acc_mass=acc), 1).tolist() == [10]  # no recency at s = 1


#: a causal attention matrix of T = 6 prefill rows (dyadic entries, rows sum to 1); key 3 is read
#: heavily by the late rows, key 0 collects mass mostly from being seen by every row
H2O_ROWS = np.array(
    [
        [1, 0, 0, 0, 0, 0],
        [1 / 2, 1 / 2, 0, 0, 0, 0],
        [1 / 4, 1 / 4, 1 / 2, 0, 0, 0],
        [1 / 8, 1 / 8, 1 / 4, 1 / 2, 0, 0],
        [1 / 8, 1 / 8, 1 / 8, 1 / 2, 1 / 8, 0],
        [1 / 8, 1 / 8, 1 / 8, 3 / 8, 1 / 8, 1 / 8],
    ]
)


def test_count_debiased_h2o_divides_the_column_mass_by_its_observing_rows():
    """C = column sums = (17/8, 9/8, 1, 11/8, 1/4, 1/8); rows seeing key j: 6 - j = 6, 5, 4, 3, 2, 1;
    C_j / (6 - j) = (17/48, 9/40, 1/4, 11/24, 1/8, 1/8).  Exact in float64: C is dyadic and each
    quotient is one correctly rounded division."""
    x = SelectorInput(p=H2O_ROWS[-1], acc_mass=H2O_ROWS.sum(axis=0))
    assert x.acc_mass.tolist() == [17 / 8, 9 / 8, 1, 11 / 8, 1 / 4, 1 / 8]
    debiased = H2O(exposure="count_debiased")
    assert debiased.heavy_scores(x).tolist() == [17 / 48, 9 / 40, 1 / 4, 11 / 24, 1 / 8, 1 / 8]
    # s = 2 (recency 1: key 5): H2O's heavy hitter is the early key 0, the debiased one key 3
    assert run(H2O(), x, 2).tolist() == [0, 5]
    assert run(debiased, x, 2).tolist() == [3, 5]
    # s = 4 (recency 4, 5): both keep {0, 3} -- in the other order of rank (3 first when debiased)
    assert run(H2O(), x, 4).tolist() == run(debiased, x, 4).tolist() == [0, 3, 4, 5]
    assert run(debiased, x, 6).tolist() == list(range(6))  # the whole prefix fits
    assert debiased.audit_role == "scored" and H2O().audit_role == "audited"
    with pytest.raises(ValueError, match="exposure"):
        H2O(exposure="debiased")


@pytest.mark.parametrize("seed", range(6))
def test_count_debiased_h2o_is_h2o_once_the_exposure_counts_are_divided_out(seed):
    """Feeding the debiased rule C_j (T - j) gives H2O's choice on C at every budget: the two
    differ in the ranking scalar alone (same recency, budget and tie rule).  Integer C keeps the
    product and the quotient exact and makes ties common."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 40))
    acc = rng.integers(0, 6, n).astype(float)
    exposed = acc * np.arange(n, 0, -1)
    for s in range(1, n + 2):
        assert np.array_equal(
            run(H2O(exposure="count_debiased"), row(n, acc_mass=exposed), s), run(H2O(), row(n, acc_mass=acc), s)
        )


# ---------------------------------------------------------------------------------------------
# Quest
# ---------------------------------------------------------------------------------------------


def quest_row() -> SelectorInput:
    """q = (1, -1): page bound = kmax_0 - kmin_1.  Pages of 2 on 9 keys (the last page short)."""
    keys = np.array(
        [[0, 0], [0, 0], [3, 0], [-3, 0], [1, 0], [1, 0], [0, -2], [0, 2], [10, 0]],
        dtype=float,
    )
    return row(9, keys=keys, query=np.array([1.0, -1.0]))


def test_quest_page_scores_on_a_constructed_query():
    x = quest_row()
    pages, bound = Quest().page_scores(x, 2)
    assert [pg.tolist() for pg in pages] == [[0, 1], [2, 3], [4, 5], [6, 7], [8]]
    assert bound.tolist() == [
        0.0,
        3.0,
        1.0,
        2.0,
        10.0,
    ]  # page 1's mean q.k is 0, its bound 3


def test_quest_keeps_top_pages_then_token_fills():
    x = quest_row()
    assert Quest().page_size(4) == 2 and Quest().page_size(32) == 8 and Quest().page_size(128) == 32
    # s = 4: page 4 (1 key), page 1 (2 keys); page 3 no longer fits; fill 1 key by q.k: key 6 (= 2)
    assert run(Quest(), x, 4).tolist() == [2, 3, 6, 8]
    # s = 8: pages 4, 1, 3, 2 (7 keys); fill 1 among keys 0, 1 (q.k = 0, tie -> 0)
    assert run(Quest(), x, 8).tolist() == [0, 2, 3, 4, 5, 6, 7, 8]


def test_quest_page16_configuration():
    rng = np.random.default_rng(1)
    keys = rng.standard_normal((40, 3)) * 0.1
    keys[20] = [5.0, 0.0, 0.0]  # page 1 (16..31) holds the largest bound
    x = row(40, keys=keys, query=np.array([1.0, 0.0, 0.0]))
    assert run(Quest(page=16), x, 16).tolist() == list(range(16, 32))
    keys[36] = [
        4.0,
        0.0,
        0.0,
    ]  # the short last page (32..39) is second: 8 keys, 8 token-filled by q.k
    kept = run(Quest(page=16), row(40, keys=keys, query=np.array([1.0, 0.0, 0.0])), 32).tolist()
    assert kept[:8] == sorted(np.argsort(-keys[:16, 0], kind="stable")[:8].tolist())
    assert kept[8:] == list(range(16, 40))
    with pytest.raises(ValueError, match=">= 16"):
        Quest(page=16).select(x, 8)


# ---------------------------------------------------------------------------------------------
# TOVA
# ---------------------------------------------------------------------------------------------


def test_tova_eviction_is_top_mass_with_the_tie_rule():
    p = np.array([0.1, 0.3, 0.1, 0.3, 0.1, 0.1])
    assert TOVA.evict(p, 3).tolist() == [
        0,
        1,
        3,
    ]  # among the tied 0.1s the later ones go first
    assert run(TOVA(), row(6, p=p), 3).tolist() == [0, 1, 3]
    for seed, d in random_cases(12, base=50):
        inst = random_instance(seed, d=d)
        for s in range(1, inst.n_keys + 1):
            assert np.array_equal(run(TOVA(), row(inst.n_keys, p=inst.p), s), op.top_mass(inst, s))


# ---------------------------------------------------------------------------------------------
# value-aware block scores (002) and block-select (004)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed, d", random_cases(16, base=900))
def test_value_aware_identity_with_single_block_forced_weight_error(seed, d):
    """mii(c) = es([N] minus c)^2, nolev(c) = ||g_c||^2, mass(c) = p(c), for every block size."""
    inst = random_instance(seed, n=int(np.random.default_rng(seed).integers(4, 14)), d=d)
    n = inst.n_keys
    for b in range(1, n):
        blocks = contiguous_units(0, n, b)
        mii = value_aware_scores(inst.p, inst.v, inst.mu, b, "mii")
        nolev = value_aware_scores(inst.p, inst.v, inst.mu, b, "nolev")
        mass = value_aware_scores(inst.p, inst.v, inst.mu, b, "mass")
        for c, block in enumerate(blocks):
            rest = np.setdiff1d(np.arange(n), block)
            assert mii[c] == pytest.approx(op.es(inst, rest) ** 2, rel=1e-10, abs=1e-15 * op.radius(inst) ** 2)
            assert nolev[c] == pytest.approx(np.linalg.norm(op.residual(inst, block)) ** 2, rel=1e-10, abs=1e-300)
            assert mass[c] == pytest.approx(op.kept_mass(inst, block), rel=1e-12)
            # the 002 form (a/(1-a))^2 ||mu_c - o||^2
            a = inst.p[block].sum()
            centroid = inst.p[block] @ inst.v[block] / a
            assert mii[c] == pytest.approx(
                (a / (1 - a)) ** 2 * np.sum((centroid - inst.mu) ** 2),
                rel=1e-9,
                abs=1e-300,
            )


def test_value_aware_mii_keeps_all_but_the_cheapest_single_block_drop():
    """With budget N - b (all blocks but one, b | N) MII drops the block whose lone deletion costs
    least -- equivalently keeps the complement with the smallest es among block complements."""
    for seed, d in random_cases(12, base=950):
        inst = random_instance(seed, n=12, d=d)
        x = SelectorInput(p=inst.p, values=inst.v)
        b = 3  # s = 9: max(2, 9 // 4) = 2 -> use a fixed block
        kept = run(ValueAwareBlocks(score="mii", block=b), x, 12 - b)
        candidates = [np.setdiff1d(np.arange(12), blk) for blk in contiguous_units(0, 12, b)]
        errors = [op.es(inst, A) for A in candidates]
        # the chosen set drops one whole block, and it is the best single-block drop
        # (blocks are ranked by descending deletion cost; the three costliest are kept)
        assert any(np.array_equal(kept, A) for A in candidates)
        assert op.es(inst, kept) == pytest.approx(min(errors), rel=1e-12)


def test_value_aware_token_fill_and_mass_variant():
    p = np.array([0.05, 0.05, 0.4, 0.1, 0.1, 0.3])
    x = SelectorInput(p=p, values=np.arange(6.0)[:, None])
    # block 2 (s = 5 -> b = 2): blocks [0,1]=.1 [2,3]=.5 [4,5]=.4; take 2 blocks (4 keys), fill 1 by p
    assert run(ValueAwareBlocks(score="mass"), x, 5).tolist() == [0, 2, 3, 4, 5]
    assert run(ValueAwareBlocks(score="mass"), x, 4).tolist() == [2, 3, 4, 5]


def test_block_select_recent_window_plus_mean_key_blocks():
    """N = 12, s = 8: W = 4 (8..11); old 0..7 in blocks of 2; q.kbar = 0, 0, 1, 2.5 -> blocks 3, 2.
    (Quest's max bound would prefer block 1 = [5, -5].)"""
    keys = np.array([0, 0, 5, -5, 1, 1, 3, 2, 0, 0, 0, 0], dtype=float)[:, None]
    x = row(12, keys=keys, query=np.array([1.0]))
    assert run(BlockSelect(), x, 8).tolist() == [4, 5, 6, 7, 8, 9, 10, 11]
    blocks, score = BlockSelect().summary_scores(x, 8)
    assert score.tolist() == [0.0, 0.0, 1.0, 2.5] and len(blocks) == 4
    # s = 5: W = 2 (10, 11), b = 2, old 0..9, 1 block (6, 7), fill 1 old key by q.k: key 2 (5)
    assert run(BlockSelect(), x, 5).tolist() == [2, 6, 7, 10, 11]


def test_select_units_fits_whole_units_then_fills():
    units = contiguous_units(0, 7, 3)  # [0,1,2] [3,4,5] [6]
    assert select_units(7, 5, units, np.array([1.0, 3.0, 2.0]), np.arange(7.0)).tolist() == [2, 3, 4, 5, 6]
    assert select_units(7, 5, units, np.array([1.0, 3.0, 2.0]), np.arange(7.0), forced=np.array([0])).tolist() == [
        0,
        3,
        4,
        5,
        6,
    ]


@pytest.mark.parametrize("n", [1, 5, 16, 17, 2047])
@pytest.mark.parametrize("size", [1, 2, 3, 16, 64])
def test_block_reduce_matches_reduceat(n, size):
    a = np.random.default_rng(n * 100 + size).standard_normal((n, 7))
    starts = np.arange(0, n, size)
    for ufunc in (np.maximum, np.minimum):
        assert np.array_equal(block_reduce(ufunc, a, size), ufunc.reduceat(a, starts, axis=0))
    np.testing.assert_allclose(
        block_reduce(np.add, a, size), np.add.reduceat(a, starts, axis=0), rtol=1e-12, atol=1e-12
    )
    np.testing.assert_allclose(
        block_reduce(np.add, a[:, 0], size), np.add.reduceat(a[:, 0], starts), rtol=1e-12, atol=1e-12
    )
