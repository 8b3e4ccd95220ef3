"""Every kept-set rule behind one interface, with a declared contract (design.md, kvpress style).

A rule is a small frozen dataclass with

* ``unit``: what it selects -- ``token``, ``block`` or ``page``;
* ``evidence``: the subset of ``EVIDENCE`` it reads -- ``mass`` (the row ``p``),
  ``accumulated_mass`` (H2O column mass), ``window`` (SnapKV window sums), ``query``, ``keys``,
  ``values``;
* ``scope``: ``per_row`` (reads only its own row) or ``shared_group`` (one set for a KV group's
  rows at a position, from all of them);
* ``reads_dense_output``: whether it reads ``mu = sum_j p_j v_j`` (a decode-time rule or a
  prefill teacher) rather than prefill-computable evidence only;
* ``min_budget``: the smallest budget it is defined at (1 unless configured otherwise);

and ``select(x: SelectorInput, budget) -> np.ndarray``: the kept positions among the row's keys
``0..i``, ascending, ``min(budget, x.n_keys)`` of them.  ``REGISTRY`` maps a name to a rule;
``run`` calls a rule and checks its output.  ``SelectorInput`` holds what a captured row
provides (see ``from_layer``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

import numpy as np

from trustmass.core.enumeration import candidate_pool, extras_for_budget
from trustmass.core.operator import Instance, descending_order
from trustmass.core.selectors.balancing import balancing
from trustmass.core.selectors.deployed import H2O, TOVA, Quest, Recency, SnapKV, StreamingLLM, TokenRule
from trustmass.core.selectors.geometric import geometric
from trustmass.core.selectors.group_vote import group_vote
from trustmass.core.selectors.leverage import leverage
from trustmass.core.selectors.value_aware import BlockSelect, ValueAwareBlocks

UNITS = frozenset({"token", "block", "page"})
EVIDENCE = frozenset({"mass", "accumulated_mass", "window", "query", "keys", "values"})
SCOPES = frozenset({"per_row", "shared_group"})
SNAPKV_WINDOWS = (
    2,
    4,
    8,
    16,
    32,
)  # capture.SNAPKV_WINDOWS (not imported: capture needs torch)


@dataclass(frozen=True, eq=False)
class SelectorInput:
    """One attention row at query position i = n_keys - 1, over its keys 0..i.

    Only ``p`` is required; a rule reading a missing field fails with a clear error.  ``p`` may
    hold zeros (keys outside a sliding window, float32 underflow): rules built on the operator
    work on the positive-mass keys and pad with zero-mass positions, which cannot change ``es``.
    """

    p: np.ndarray  # (N,) the row's attention masses P[i, 0..i]
    values: np.ndarray | None = None  # (N, d) values of the row's KV head
    keys: np.ndarray | None = None  # (N, d_k) post-RoPE keys as cached
    query: np.ndarray | None = None  # (d_k,) the row's query (post-RoPE, post-QK-norm)
    acc_mass: np.ndarray | None = None  # (N,) sum_{t<=i} P[t, :]
    window_sums: np.ndarray | None = None  # (len(windows), N) sum_{t=i-w+1..i} P[t, :]
    windows: tuple[int, ...] = SNAPKV_WINDOWS
    group_rows: np.ndarray | None = None  # (g, N) the KV group's rows at position i (this row among them)

    def __post_init__(self):
        p = np.asarray(self.p)
        if p.ndim != 1 or p.shape[0] == 0:
            raise ValueError(f"p must be a nonempty 1-D row; got shape {p.shape}")
        n = p.shape[0]
        for name, want in (
            ("values", (n, None)),
            ("keys", (n, None)),
            ("acc_mass", (n,)),
            ("window_sums", (len(self.windows), n)),
            ("group_rows", (None, n)),
        ):
            arr = object.__getattribute__(self, name)
            if arr is None:
                continue
            shape = np.shape(arr)
            if len(shape) != len(want) or any(w is not None and w != g for w, g in zip(want, shape)):
                raise ValueError(f"SelectorInput.{name} must have shape {want} (None = any) for {n} keys; got {shape}")
        query = object.__getattribute__(self, "query")
        keys = object.__getattribute__(self, "keys")
        if query is not None and keys is not None and np.shape(query) != (np.shape(keys)[1],):
            raise ValueError(f"query must be ({np.shape(keys)[1]},) like a key; got {np.shape(query)}")

    # -- what every rule may read without declaring evidence --------------------------------
    @property
    def n_keys(self) -> int:
        return int(np.shape(object.__getattribute__(self, "p"))[0])

    @property
    def position(self) -> int:
        """The query position i (the row sees keys 0..i)."""
        return self.n_keys - 1

    # -- derived evidence ---------------------------------------------------------------------
    def window_sum(self, w: int) -> np.ndarray:
        """sum_{t=i-w+1..i} P[t, :]; w = 1 is the row itself."""
        if w == 1 and 1 not in self.windows:
            return np.asarray(self.p, dtype=np.float64)
        if self.window_sums is None:
            raise ValueError("this rule needs SnapKV window sums (SelectorInput.window_sums)")
        if w not in self.windows:
            raise ValueError(f"no window sum for w={w}; captured windows are {self.windows} (capture.windows)")
        return np.asarray(self.window_sums[self.windows.index(w)], dtype=np.float64)

    # cached float64 views: a rule run at every budget converts and scores once per row
    @cached_property
    def p64(self) -> np.ndarray:
        return np.asarray(self.p, dtype=np.float64)

    @cached_property
    def keys64(self) -> np.ndarray:
        if self.keys is None:
            raise ValueError("this rule needs the row's keys (SelectorInput.keys)")
        return np.asarray(self.keys, dtype=np.float64)

    @cached_property
    def query64(self) -> np.ndarray:
        if self.query is None:
            raise ValueError("this rule needs the row's query (SelectorInput.query)")
        return np.asarray(self.query, dtype=np.float64)

    @cached_property
    def query_scores(self) -> np.ndarray:
        """q . k_j for every key (the query's logits before scaling)."""
        return self.keys64 @ self.query64

    @cached_property
    def residuals(self) -> np.ndarray:
        """p_j (v_j - mu) per position (p as captured, mu the renormalised dense output)."""
        if self.values is None:
            raise ValueError("this rule needs the row's values (SelectorInput.values)")
        return self.p64[:, None] * (np.asarray(self.values, dtype=np.float64) - self.dense_output)

    @cached_property
    def instance_index(self) -> np.ndarray:
        """Position -> index among the positive-mass keys (the instance), -1 for zero mass."""
        index = np.full(self.n_keys, -1, dtype=np.int64)
        index[self.positive] = np.arange(self.positive.shape[0])
        return index

    @cached_property
    def positive(self) -> np.ndarray:
        """Positions with p > 0 (the operator's keys)."""
        return np.flatnonzero(np.asarray(self.p) > 0)

    @cached_property
    def instance(self) -> Instance:
        """The operator instance over the positive-mass keys, p renormalised in float64."""
        if self.values is None:
            raise ValueError("this rule needs the row's values (SelectorInput.values)")
        p = np.asarray(self.p, dtype=np.float64)[self.positive]
        return Instance.from_arrays(p / p.sum(), np.asarray(self.values, dtype=np.float64)[self.positive])

    @cached_property
    def dense_output(self) -> np.ndarray:
        """mu = sum_j p_j v_j (p renormalised in float64)."""
        return self.instance.mu

    def on_positions(self, kept_in_instance: np.ndarray, budget: int) -> np.ndarray:
        """Instance indices -> positions, padded with zero-mass positions (ascending) up to the budget."""
        kept = self.positive[np.asarray(kept_in_instance, dtype=np.int64)]
        short = min(int(budget), self.n_keys) - kept.shape[0]
        if short > 0:
            zero = np.setdiff1d(np.arange(self.n_keys), self.positive)
            kept = np.concatenate((kept, zero[:short]))
        return np.sort(kept)

    @classmethod
    def from_layer(cls, t: dict, head: int, r: int, windows: tuple[int, ...] = SNAPKV_WINDOWS) -> SelectorInput:
        """Row r of query head `head` from one layer of a capture shard (numpy arrays keyed as in
        ``shards.read_layer``: positions [Hkv,R], p/acc_mass [Hq,R,N], window_sums [Hq,R,W,N],
        query [Hq,R,d], keys/values [Hkv,N,d])."""
        n_q, n_kv = t["p"].shape[0], t["values"].shape[0]
        group = n_q // n_kv
        kv = head // group
        i = int(t["positions"][kv][r])
        heads = slice(kv * group, (kv + 1) * group)
        return cls(
            p=t["p"][head, r, : i + 1],
            values=t["values"][kv, : i + 1],
            keys=t["keys"][kv, : i + 1],
            query=t["query"][head, r] if "query" in t else None,
            acc_mass=t["acc_mass"][head, r, : i + 1] if "acc_mass" in t else None,
            window_sums=t["window_sums"][head, r, :, : i + 1] if "window_sums" in t else None,
            windows=tuple(windows),
            group_rows=t["p"][heads, r, : i + 1],
        )


# ---------------------------------------------------------------------------------------------
# the existing rules, wrapped
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TopMass(TokenRule):
    """A*_s: the s largest masses (descending mass, ties to the smaller position)."""

    evidence: ClassVar[frozenset] = frozenset({"mass"})

    def select(self, x: SelectorInput, budget: int) -> np.ndarray:
        return np.sort(descending_order(np.asarray(x.p, dtype=np.float64))[: int(budget)])


@dataclass(frozen=True)
class Balancing(TokenRule):
    """Balancing swaps from A*_s inside the candidate pool C_s, with the ceiling's convention:
    e(s) extras at the enumerated budgets (24/12/6/4 at 4/8/16/32), `native_extra` elsewhere."""

    enumerated: tuple[int, ...] = (4, 8, 16, 32)
    native_extra: int = 4
    subset_cap: int = 200_000
    max_extra: int = 24

    evidence: ClassVar[frozenset] = frozenset({"mass", "values"})
    reads_dense_output: ClassVar[bool] = True

    def extra(self, budget: int) -> int:
        if budget in self.enumerated:
            return extras_for_budget(budget, self.subset_cap, self.max_extra)
        return self.native_extra

    def select(self, x: SelectorInput, budget: int) -> np.ndarray:
        inst, s = x.instance, min(int(budget), x.instance.n_keys)
        kept = balancing(inst, s, candidate_pool(inst, s, self.extra(int(budget)))).kept
        return x.on_positions(kept, budget)


@dataclass(frozen=True)
class GeometricRule(TokenRule):
    """A^geo_s: the Frank-Wolfe support padded with top-mass keys (over all keys)."""

    evidence: ClassVar[frozenset] = frozenset({"mass", "values"})
    reads_dense_output: ClassVar[bool] = True

    def select(self, x: SelectorInput, budget: int) -> np.ndarray:
        inst = x.instance
        return x.on_positions(geometric(inst, min(int(budget), inst.n_keys), with_ef=False).kept, budget)


@dataclass(frozen=True)
class Leverage(TokenRule):
    """A^lev_s: the largest ridge leverages over the row's keys 0..i (all visible keys)."""

    ridge: float = 1e-3

    evidence: ClassVar[frozenset] = frozenset({"keys"})

    def select(self, x: SelectorInput, budget: int) -> np.ndarray:
        return leverage(np.asarray(x.keys, dtype=np.float64), int(budget), self.ridge)


@dataclass(frozen=True)
class GroupVote(TokenRule):
    """A_vote: top-s of the KV group's summed rows (spec §1.8); group size 1 is top-mass."""

    evidence: ClassVar[frozenset] = frozenset({"mass"})
    scope: ClassVar[str] = "shared_group"

    def select(self, x: SelectorInput, budget: int) -> np.ndarray:
        rows = x.group_rows if x.group_rows is not None else np.asarray(x.p)[None, :]
        return group_vote(rows, int(budget))


REGISTRY: dict = {
    # the operator's own rules (the ceiling's)
    "top_mass": TopMass(),
    "balancing": Balancing(),
    "geometric": GeometricRule(),
    "leverage": Leverage(),
    "group_vote": GroupVote(),
    # the audited deployed rules (spec §5) and the positional control
    "snapkv": SnapKV(),
    "h2o": H2O(),
    "quest": Quest(),
    "quest_page16": Quest(page=16),
    "streaming_llm": StreamingLLM(),
    "tova": TOVA(),
    "recency": Recency(),
    # related methods: 002 value-aware blocks, 004 block-select
    "value_aware_mass": ValueAwareBlocks(score="mass"),
    "value_aware_nolev": ValueAwareBlocks(score="nolev"),
    "value_aware_mii": ValueAwareBlocks(score="mii"),
    "block_select": BlockSelect(),
}

#: the four rules the audit scores against ES_pool (TOVA is top-mass; Figure 3's mass rules)
AUDITED = ("snapkv", "h2o", "quest", "streaming_llm")


@dataclass(frozen=True)
class Contract:
    unit: str
    evidence: frozenset
    scope: str
    reads_dense_output: bool
    min_budget: int


def contract(rule) -> Contract:
    """A rule's declared contract, validated."""
    c = Contract(
        unit=rule.unit,
        evidence=frozenset(rule.evidence),
        scope=rule.scope,
        reads_dense_output=bool(rule.reads_dense_output),
        min_budget=int(getattr(rule, "min_budget", 1)),
    )
    if c.unit not in UNITS or c.scope not in SCOPES or not c.evidence <= EVIDENCE:
        raise ValueError(f"{type(rule).__name__}: bad contract {c}")
    if c.reads_dense_output and not {"mass", "values"} <= c.evidence:
        raise ValueError(f"{type(rule).__name__}: reading the dense output needs mass and values evidence")
    return c


def run(rule, x: SelectorInput, budget: int) -> np.ndarray:
    """rule.select(x, budget), checked: ascending unique positions in range, min(budget, N) of them."""
    kept = np.asarray(rule.select(x, budget))
    want = min(int(budget), x.n_keys)
    if (
        kept.ndim != 1
        or kept.shape[0] != want
        or not np.issubdtype(kept.dtype, np.integer)
        or (want and (kept[0] < 0 or kept[-1] >= x.n_keys))
        or np.any(np.diff(kept) <= 0)
    ):
        raise AssertionError(f"{type(rule).__name__} at budget {budget}: bad kept set {kept!r} for {x.n_keys} keys")
    return kept.astype(np.int64)


def table() -> list[dict]:
    """The registry's contracts as rows (for the report and docs)."""
    rows = []
    for name, rule in REGISTRY.items():
        c = contract(rule)
        rows.append(
            {
                "name": name,
                "rule": repr(rule),
                "unit": c.unit,
                "evidence": ",".join(sorted(c.evidence)) or "-",
                "scope": c.scope,
                "reads_dense_output": c.reads_dense_output,
                "min_budget": c.min_budget,
            }
        )
    return rows
