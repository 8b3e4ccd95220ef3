"""A rule's part in the audit is declared in its contract: the audit's rule list, its cache-faithful
readings, the paper's audited rules and Figure 3's rules are all derived from the declarations."""

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import polars as pl
import pytest

from trustmass.audit import records as au
from trustmass.core.selectors import registry as R
from trustmass.core.selectors.contract import TokenRule, contract
from trustmass.core.selectors.deployed import recent
from trustmass.core.selectors.selector_input import SelectorInput

#: the lists audit/records.py and the registry kept by hand before the contracts carried them
PAPER_AUDITED = ("snapkv", "h2o", "quest", "streaming_llm")
PAPER_FIG3 = ("snapkv", "h2o", "quest", "streaming_llm", "recency")
AUDITED_BY_HAND = {
    "snapkv": "frozen_prefill",
    "h2o": "frozen_prefill",
    "h2o_debiased": "frozen_prefill",
    "streaming_llm": "frozen_prefill",
    "recency": "frozen_prefill",
    "top_mass": "frozen_prefill",
    "value_aware_mass": "frozen_prefill",
    "value_aware_nolev": "frozen_prefill",
    "value_aware_mii": "frozen_prefill",
    "quest": "no_eviction",
    "quest_page16": "no_eviction",
    "block_select": "no_eviction",
}


def test_derived_lists_equal_the_lists_once_kept_by_hand():
    assert R.AUDITED == PAPER_AUDITED and R.FIG3_RULES == PAPER_FIG3
    assert set(R.audit_rules()) == set(AUDITED_BY_HAND) and au.AuditSettings().rules == R.audit_rules()
    assert au.cache_faithful_readings(R.audit_rules()) == AUDITED_BY_HAND
    assert "tova" not in R.audit_rules()  # run only to assert it equals top-mass


@dataclass(frozen=True)
class Newest(TokenRule):
    """A rule defined here only: the s most recent keys, evicting or not."""

    keeps_full_cache: bool = False

    evidence: ClassVar[frozenset] = frozenset()
    audit_role: ClassVar[str] = "scored"

    @property
    def cache_faithful(self) -> str:
        return "no_eviction" if self.keeps_full_cache else "frozen_prefill"

    def select(self, x: SelectorInput, budget: int) -> np.ndarray:
        return recent(x.n_keys, int(budget))


def causal_layer(seed: int = 0, n: int = 40, positions=(20, 30, 39), heads: int = 2, d: int = 4) -> dict:
    """One KV head with `heads` query heads, sampled at `positions`, as a shard's layer."""
    rng = np.random.default_rng(seed)
    keys, values = rng.standard_normal((1, n, d)), rng.standard_normal((1, n, d))
    queries = rng.standard_normal((heads, n, d))
    logits = queries @ keys[0].T
    logits = np.where(np.tril(np.ones((n, n), dtype=bool)), logits, -np.inf)
    P = np.exp(logits - logits.max(axis=2, keepdims=True))
    P /= P.sum(axis=2, keepdims=True)
    rows = list(positions)
    windows = (2, 4, 8, 16, 32)
    return {
        "positions": np.array([rows]),
        "p": P[:, rows, :],
        "acc_mass": np.stack([np.cumsum(P[h], axis=0)[rows] for h in range(heads)]),
        "window_sums": np.stack(
            [[[P[h, max(0, i - w + 1) : i + 1].sum(axis=0) for w in windows] for i in rows] for h in range(heads)]
        ),
        "query": queries[:, rows, :],
        "keys": keys,
        "values": values,
    }


@pytest.mark.parametrize("keeps_full_cache", [False, True])
def test_a_new_rule_needs_only_its_class_and_its_entry(monkeypatch, keeps_full_cache):
    monkeypatch.setitem(R.REGISTRY, "newest", Newest(keeps_full_cache))
    reading = "no_eviction" if keeps_full_cache else "frozen_prefill"
    assert "newest" in R.audit_rules() and "newest" in au.AuditSettings().rules
    assert au.cache_faithful_readings(R.audit_rules())["newest"] == reading
    assert "newest" not in R.names_where(lambda c: c.drawn_in_figure3)  # "scored" only

    t = causal_layer()
    settings = au.AuditSettings(enumerated=(2, 4), native=(8,))
    recs = pl.DataFrame(au.layer_audit(t, settings), infer_schema_length=None).filter(pl.col("rule") == "newest")
    assert recs.height == 2 * 3 * 3 and (recs["cf_reading"] == reading).all()  # heads x rows x budgets
    later = recs.filter(pl.col("query_pos") > pl.col("evict_pos"))
    x_tau, x_late = SelectorInput.from_layer(t, 0, 0), SelectorInput.from_layer(t, 0, 2)
    rec = later.filter(pl.col("head") == 0, pl.col("query_pos") == 39, pl.col("budget") == 4).row(0, named=True)
    assert rec["es_rule"] == pytest.approx(au._score(x_late, recent(40, 4))[0], rel=1e-12)
    if keeps_full_cache:  # no eviction: the cache-faithful reading is the per-query one
        np.testing.assert_array_equal(later["es_cf"].to_numpy(), later["es_rule"].to_numpy())
    else:  # the set chosen at the eviction row (position 20) serves row 39
        assert rec["es_cf"] == pytest.approx(au._score(x_late, recent(x_tau.n_keys, 4))[0], rel=1e-12)
        assert rec["es_cf"] != rec["es_rule"]


def test_an_audit_role_needs_a_cache_faithful_reading():
    @dataclass(frozen=True)
    class Unread(TokenRule):
        evidence: ClassVar[frozenset] = frozenset()
        audit_role: ClassVar[str] = "audited"

    with pytest.raises(
        ValueError, match=r"Unread.audit_role = 'audited' but no cache_faithful reading; fix: declare cache_faithful"
    ):
        contract(Unread())

    @dataclass(frozen=True)
    class Misnamed(TokenRule):
        evidence: ClassVar[frozenset] = frozenset()
        audit_role: ClassVar[str] = "deployed"
        cache_faithful: ClassVar[str] = "frozen_prefill"

    with pytest.raises(
        ValueError,
        match=r"Misnamed.audit_role = 'deployed'; fix: declare one of \[None, 'audited', 'control', 'scored'\]",
    ):
        contract(Misnamed())


def test_the_audit_runs_only_rules_with_an_audit_role():
    with pytest.raises(ValueError, match="'balancing' declares no audit role"):
        au.AuditSettings(rules=("snapkv", "balancing"))
    with pytest.raises(ValueError, match="no rule 'snap_kv'"):
        au.AuditSettings(rules=("snap_kv",))
