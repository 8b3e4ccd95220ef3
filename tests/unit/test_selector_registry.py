"""The selector registry: every rule at every budget, and its declared contract checked.

Inputs are coherent captured rows: one KV head with g query heads, a causal softmax over random
queries and keys, and the row at position i = N - 1 with its accumulated mass, SnapKV window
sums, query and group rows, as capture would store them.
"""

import dataclasses

import numpy as np
import pytest

from trustmass.core import operator as op
from trustmass.core.selectors import contract as C
from trustmass.core.selectors import registry as R
from trustmass.core.selectors.contract import contract, run
from trustmass.core.selectors.registry import REGISTRY
from trustmass.core.selectors.selector_input import SelectorInput
from trustmass.core.windows import SNAPKV_WINDOWS

BUDGETS = (4, 8, 16, 32, 64)
SIZES = (10, 45, 130)  # below, between and above the budgets
GROUP = 3


def causal_softmax(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    logits = q @ k.T / np.sqrt(k.shape[1])
    logits = np.where(np.tril(np.ones(logits.shape, dtype=bool)), logits, -np.inf)
    logits -= logits.max(axis=1, keepdims=True)
    P = np.exp(logits)
    return P / P.sum(axis=1, keepdims=True)


def captured_group(seed: int, n: int, d: int = 4, d_k: int = 6, g: int = GROUP) -> list[SelectorInput]:
    """The g rows of one KV group at position n - 1, one SelectorInput per query head."""
    rng = np.random.default_rng(seed)
    keys = rng.standard_normal((n, d_k)) * 1.5
    values = rng.standard_normal((n, d))
    Ps, queries = [], []
    for _ in range(g):
        q = rng.standard_normal((n, d_k)) * 1.5
        Ps.append(causal_softmax(q, keys))
        queries.append(q[-1])
    rows = np.stack([P[-1] for P in Ps])
    out = []
    for h, P in enumerate(Ps):
        window_sums = np.stack([P[max(0, n - w) :].sum(axis=0) for w in SNAPKV_WINDOWS])
        out.append(
            SelectorInput(
                p=P[-1],
                values=values,
                keys=keys,
                query=queries[h],
                acc_mass=P.sum(axis=0),
                window_sums=window_sums,
                group_rows=rows,
            )
        )
    return out


CASES = [(seed, n) for seed, n in enumerate(SIZES)]
INPUTS = {case: captured_group(100 + case[0], case[1]) for case in CASES}


class Tracked(SelectorInput):
    """A SelectorInput that records which attributes a rule reads (after construction)."""

    def __getattribute__(self, name):
        state = object.__getattribute__(self, "__dict__")
        if state.get("_tracking"):
            state["_seen"].add(name)
        return object.__getattribute__(self, name)

    @classmethod
    def of(cls, x: SelectorInput) -> "Tracked":
        t = cls(**{f: getattr(x, f) for f in x.__dataclass_fields__})
        object.__setattr__(t, "_seen", set())
        object.__setattr__(t, "_tracking", True)
        return t


#: attribute -> the evidence reading it implies
READS = {
    "p": {"mass"},
    "positive": {"mass"},
    "acc_mass": {"accumulated_mass"},
    "window_sums": {"window"},
    "query": {"query"},
    "keys": {"keys"},
    "values": {"values"},
    "instance": {"mass", "values"},
    "dense_output": {"mass", "values"},
}


def with_field(x: SelectorInput, **changes) -> SelectorInput:
    fields = {f: getattr(x, f) for f in x.__dataclass_fields__}
    fields.update(changes)
    return SelectorInput(**fields)


def replacement(x: SelectorInput, evidence: str, rng) -> dict:
    """An independent random value for one kind of evidence."""
    n = x.n_keys
    if evidence == "mass":
        p = rng.random(n) + 0.01
        return {"p": p / p.sum()}
    if evidence == "accumulated_mass":
        return {"acc_mass": rng.random(n) * n}
    if evidence == "window":
        return {"window_sums": rng.random(x.window_sums.shape)}
    if evidence == "query":
        return {"query": rng.standard_normal(x.query.shape)}
    if evidence == "keys":
        return {"keys": rng.standard_normal(x.keys.shape)}
    if evidence == "values":
        return {"values": rng.standard_normal(x.values.shape) * 3.0}
    raise AssertionError(evidence)


def test_registry_contracts_are_valid():
    assert set(REGISTRY) >= {
        "top_mass",
        "balancing",
        "geometric",
        "leverage",
        "group_vote",
        "snapkv",
        "h2o",
        "quest",
        "quest_page16",
        "streaming_llm",
        "tova",
        "value_aware_mass",
        "value_aware_nolev",
        "value_aware_mii",
        "block_select",
    }
    for name, rule in REGISTRY.items():
        c = contract(rule)
        with pytest.raises(dataclasses.FrozenInstanceError):
            rule.__setattr__("zzz", 1)
        assert c.unit in C.UNITS and c.scope in C.SCOPES and c.evidence <= C.EVIDENCE, name
    assert all(name in REGISTRY for name in R.AUDITED)


def test_a_rule_declares_whether_the_loss_forward_batches_it_as_configured():
    """loss_batched is the rule's own declaration, and follows its configuration where the batched
    version covers only one (H2O's raw exposure, Quest's greedy fill, SnapKV's odd max-pool kernel)."""
    assert R.names_where(lambda c: c.loss_batched) == (
        "top_mass",
        "balancing",
        "snapkv",
        "h2o",
        "quest",
        "quest_page16",
        "streaming_llm",
        "recency",
        "value_aware_mass",
        "value_aware_nolev",
        "value_aware_mii",
    )
    h2o, quest, snapkv = (type(REGISTRY[n]) for n in ("h2o", "quest", "snapkv"))
    assert (
        not contract(h2o(exposure="count_debiased")).loss_batched
        and not contract(REGISTRY["h2o_debiased"]).loss_batched
    )
    assert not contract(quest(projection="strict")).loss_batched
    assert not contract(snapkv(pooling="avg")).loss_batched and not contract(snapkv(kernel=4)).loss_batched
    assert not contract(REGISTRY["tova"]).loss_batched and not contract(REGISTRY["block_select"]).loss_batched


@pytest.mark.parametrize("name", list(REGISTRY))
def test_matrix(name):
    """Every rule, every budget, every instance: sizes, determinism, and the declared contract."""
    rule = REGISTRY[name]
    c = contract(rule)
    rng = np.random.default_rng(7)
    for case in CASES:
        group = INPUTS[case]
        x = group[0]
        for s in BUDGETS:
            if s < c.min_budget:
                with pytest.raises(ValueError):
                    rule.select(x, s)
                continue
            kept = run(rule, x, s)  # ascending, unique, in range, min(s, N) keys
            assert kept.shape[0] == min(s, x.n_keys)
            if x.n_keys <= s:
                assert kept.tolist() == list(range(x.n_keys)), "a row within the budget keeps every key"
            # deterministic, and independent of caches on the input object
            assert np.array_equal(run(rule, with_field(x), s), kept)
            # reads only its declared evidence
            t = Tracked.of(x)
            assert np.array_equal(rule.select(t, s), kept)
            seen = object.__getattribute__(t, "_seen")
            implied = set().union(*(READS.get(a, set()) for a in seen))
            assert implied <= c.evidence, f"{name} read {implied - c.evidence} without declaring it"
            if not c.reads_dense_output:
                assert not seen & {"instance", "dense_output"}, f"{name} read the dense output"
            if c.scope == "per_row":
                assert "group_rows" not in seen, f"{name} is per_row but read the group's rows"
            # undeclared evidence cannot change the set (values change => mu changes, too)
            for kind in sorted(C.EVIDENCE - c.evidence):
                other = with_field(x, **replacement(x, kind, rng))
                assert np.array_equal(run(rule, other, s), kept), f"{name} changed with undeclared {kind}"
            if c.scope == "per_row":  # other rows of the group do not matter
                rows = x.group_rows.copy()
                rows[1:] = rng.permutation(rows[1:].T).T
                assert np.array_equal(run(rule, with_field(x, group_rows=rows), s), kept)
            else:  # one shared set for every row of the group
                for member in group[1:]:
                    assert np.array_equal(run(rule, member, s), kept)


def test_dense_output_rules_change_with_mu():
    """A rule declaring the dense output must actually depend on it somewhere in the matrix."""
    rng = np.random.default_rng(3)
    for name, rule in REGISTRY.items():
        if not contract(rule).reads_dense_output:
            continue
        changed = False
        for case in CASES:
            x = INPUTS[case][0]
            for s in BUDGETS:
                if s >= x.n_keys:
                    continue
                for _ in range(3):
                    other = with_field(x, **replacement(x, "values", rng))
                    changed |= not np.array_equal(run(rule, other, s), run(rule, x, s))
        assert changed, f"{name} declares reads_dense_output but never depends on values/mu"


def test_zero_mass_keys_are_padded_not_chosen_first():
    """Operator-based rules work on positive keys and pad with zero-mass positions."""
    rng = np.random.default_rng(5)
    p = rng.random(12)
    p[[0, 1, 2, 3, 4, 5, 6, 7, 8]] = 0.0  # a sliding window: three visible keys
    x = SelectorInput(p=p / p.sum(), values=rng.standard_normal((12, 2)))
    for name in ("balancing", "geometric", "top_mass"):
        kept = run(REGISTRY[name], x, 5)
        assert set(kept.tolist()) >= {9, 10, 11} and kept.tolist() == [
            0,
            1,
            9,
            10,
            11,
        ], name


def test_balancing_wrapper_matches_ceiling_convention():
    from trustmass.ceiling.records import CeilingSettings
    from trustmass.core.enumeration import candidate_pool
    from trustmass.core.selectors.balancing import balancing

    settings = CeilingSettings()
    x = INPUTS[CASES[2]][0]
    inst = x.instance
    for s in BUDGETS:
        extra = settings.pool.extra(s) if s in settings.enumerated else settings.native_extra
        want = balancing(inst, s, candidate_pool(inst, s, extra)).kept
        assert np.array_equal(run(REGISTRY["balancing"], x, s), want)
        assert op.es(inst, want) <= op.es(inst, op.top_mass(inst, s)) * (1 + 1e-12)


def test_group_vote_of_one_is_top_mass_and_tova_is_top_mass():
    for case in CASES:
        x = INPUTS[case][0]
        solo = with_field(x, group_rows=x.p[None, :])
        for s in BUDGETS:
            top = run(REGISTRY["top_mass"], x, s)
            assert np.array_equal(run(REGISTRY["group_vote"], solo, s), top)
            assert np.array_equal(run(REGISTRY["tova"], x, s), top)
            if x.n_keys > s:
                assert np.array_equal(np.flatnonzero(np.isin(x.positive, top)), op.top_mass(x.instance, s))


def test_selector_input_validation_and_from_layer():
    with pytest.raises(ValueError, match="acc_mass"):
        SelectorInput(p=np.full(4, 0.25), acc_mass=np.ones(5))
    with pytest.raises(ValueError, match="query"):
        SelectorInput(p=np.full(4, 0.25), keys=np.ones((4, 3)), query=np.ones(2))
    with pytest.raises(ValueError, match="window sum for w=3"):
        SelectorInput(p=np.full(4, 0.25), window_sums=np.ones((5, 4))).window_sum(3)
    # a layer of a shard: 4 query heads on 2 KV heads, 2 sampled rows each, 9 tokens
    rng = np.random.default_rng(0)
    Hq, Hkv, Rr, N = 4, 2, 2, 9
    t = {
        "positions": np.array([[3, 8], [5, 6]]),
        "p": rng.random((Hq, Rr, N)),
        "acc_mass": rng.random((Hq, Rr, N)),
        "window_sums": rng.random((Hq, Rr, 5, N)),
        "query": rng.random((Hq, Rr, 3)),
        "keys": rng.random((Hkv, N, 3)),
        "values": rng.random((Hkv, N, 2)),
    }
    x = SelectorInput.from_layer(t, head=3, r=0)  # KV head 1, position 5
    assert x.n_keys == 6 and x.position == 5
    assert np.array_equal(x.p, t["p"][3, 0, :6]) and np.array_equal(x.keys, t["keys"][1, :6])
    assert np.array_equal(x.group_rows, t["p"][2:4, 0, :6]) and np.array_equal(x.query, t["query"][3, 0])
    assert np.array_equal(x.window_sum(4), t["window_sums"][3, 0, 1, :6])


def test_windows_match_capture():
    pytest.importorskip("torch")
    from trustmass.capture.prefill import SNAPKV_WINDOWS as CAPTURED

    assert SNAPKV_WINDOWS == tuple(CAPTURED)
