"""The deployed selectors the paper audits, exactly as configured (paper spec §5, App C).

Every rule is a small frozen dataclass with a declared contract (``selectors.contract``: class
attributes ``unit``, ``evidence``, ``scope``, ``reads_dense_output``, ``min_budget``, and its part in
the audit, ``audit_role`` and ``cache_faithful``) and

    select(x: SelectorInput, budget: int) -> np.ndarray   # key positions, ascending

returning ``min(budget, x.n_keys)`` positions of the row's keys ``0..i`` (``i = x.position``).
A row with at most ``budget`` keys keeps them all (every rule's short-prompt branch).
Ties follow the project's rule everywhere: descending score, then ascending position.

Configurations at budget ``s`` (``s/2`` is ``s // 2``):

* **SnapKV**: observation window ``w = max(1, min(32, s/2))`` (``core.windows``); vote ``sc_j = sum_{t=i-w+1..i}
  P[t, j]`` for ``j <= i - w`` (the captured window sums; ``w = 1`` is the row itself); 1-D max
  pooling over the prefix, kernel 7, stride 1, same padding (padding never wins: -inf, as
  ``torch.max_pool1d``); keep the ``w`` window keys plus the top ``s - w`` pooled keys.
* **H2O**: the ``s/2`` most recent keys ``i-s/2+1..i`` plus the top ``s - s/2`` of the rest by
  accumulated mass ``acc_i[j] = sum_{t<=i} P[t, j]``.  Its count-debiased variant (002 Stage I,
  related-methods §A.4; scored, not audited) ranks by ``acc_i[j] / (T - j)`` instead, ``T = i + 1``
  the prefix length: key ``j`` is seen by the ``T - j`` causal rows ``j..i``, so early keys no
  longer win by exposure alone.  Recency and budget are H2O's.
* **Quest**: pages of ``max(2, s/4)`` keys (2, 2, 4, 8 at s = 4, 8, 16, 32), or fixed pages of 16
  (the page-16 configuration, ``s >= 16``), aligned at position 0 (the last page may be short).
  Page score ``sum_c max(q_c kmax_c, q_c kmin_c)`` from the page's elementwise key max/min (Quest's
  upper bound on ``q . k``).  Pages are taken in score order while they fit whole ("the top s/page
  pages"); lattice slack, which only a short last page leaves, is token-filled by ``q . k_j`` (the
  same bound at page size 1) among the keys not kept [C].  ``projection`` selects 002's strict
  block TopK or its token-fill instead (``selectors.projection``).
* **StreamingLLM**: ``min(4, s/2)`` sink keys (positions 0..) plus the ``s - min(4, s/2)`` most
  recent keys (original positions, forced weights: not the official position-shift variant).
* **TOVA**: per query it evicts the lowest-attention key until ``s`` remain, which is top-mass.
  The identity is asserted at runtime (spec: "assert equal sets; do not score TOVA separately").
* **Recency** (positional control for Figure 3, spec [C]): the ``s`` most recent keys.

All of these read only what a captured prefill row provides; none reads the dense output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from trustmass.core import windows
from trustmass.core.operator import top_k
from trustmass.core.selectors.contract import TokenRule
from trustmass.core.selectors.projection import FIT_THEN_FILL, ProjectedBlocks, chosen_units, fills_slack
from trustmass.core.selectors.selector_input import SelectorInput
from trustmass.core.windows import SNAPKV_MAX_WINDOW


def keep_all(n: int) -> np.ndarray:
    """Every key: what a rule keeps when the budget covers the whole row."""
    return np.arange(n, dtype=np.int64)


def checked_budget(budget: int, min_budget: int = 1) -> int:
    """The budget as an int, refused below the rule's smallest budget."""
    s = int(budget)
    if s < max(1, min_budget):
        raise ValueError(f"budget must be >= {max(1, min_budget)}; got {budget}")
    return s


def recent(n: int, count: int) -> np.ndarray:
    """The `count` most recent positions of a row with n keys, ascending."""
    return np.arange(max(0, n - count), n, dtype=np.int64)


def max_pool_same(score: np.ndarray, kernel: int) -> np.ndarray:
    """1-D max pooling, stride 1, odd kernel, 'same' padding with -inf (torch.max_pool1d)."""
    if kernel < 1 or kernel % 2 == 0:
        raise ValueError(f"pooling kernel must be odd and >= 1; got {kernel}")
    half = kernel // 2
    padded = np.concatenate(
        (
            np.full(half, -np.inf),
            np.asarray(score, dtype=np.float64),
            np.full(half, -np.inf),
        )
    )
    windows = np.lib.stride_tricks.sliding_window_view(padded, kernel)
    return windows.max(axis=1)


def avg_pool_same(score: np.ndarray, kernel: int) -> np.ndarray:
    """1-D average pooling, stride 1, odd kernel, zero padding counted (torch AvgPool1d default)."""
    if kernel < 1 or kernel % 2 == 0:
        raise ValueError(f"pooling kernel must be odd and >= 1; got {kernel}")
    half = kernel // 2
    padded = np.concatenate((np.zeros(half), np.asarray(score, dtype=np.float64), np.zeros(half)))
    return np.lib.stride_tricks.sliding_window_view(padded, kernel).sum(axis=1) / kernel


def block_reduce(ufunc: np.ufunc, array: np.ndarray, size: int) -> np.ndarray:
    """ufunc.reduceat(array, arange(0, n, size), axis=0), by a reshape for the whole blocks (reduceat
    is slow on many short segments).  Identical for max/min; sums may differ in the last bit (numpy
    may sum a block pairwise)."""
    n = array.shape[0]
    whole = n // size
    head = ufunc.reduce(array[: whole * size].reshape(whole, size, *array.shape[1:]), axis=1)
    if whole * size == n:
        return head
    return np.concatenate((head, ufunc.reduce(array[whole * size :], axis=0, keepdims=True)))


@dataclass(frozen=True)
class Units:
    """Consecutive units [starts[u], stops[u]) of positions; indexing/iterating gives the positions."""

    starts: np.ndarray
    stops: np.ndarray

    def __len__(self) -> int:
        return int(self.starts.shape[0])

    def __getitem__(self, u: int) -> np.ndarray:
        return np.arange(self.starts[u], self.stops[u], dtype=np.int64)

    def __iter__(self):
        return (self[u] for u in range(len(self)))

    @property
    def sizes(self) -> np.ndarray:
        return self.stops - self.starts


def contiguous_units(start: int, stop: int, size: int) -> Units:
    """Positions start..stop-1 cut into consecutive units of `size`, aligned at `start`."""
    if size < 1:
        raise ValueError(f"unit size must be >= 1; got {size}")
    starts = np.arange(start, stop, size, dtype=np.int64)
    return Units(starts, np.minimum(starts + size, stop))


def select_units(
    n: int,
    budget: int,
    units: Units,
    unit_score: np.ndarray,
    token_score: np.ndarray,
    forced: np.ndarray | None = None,
    projection: str = FIT_THEN_FILL,
) -> np.ndarray:
    """Forced keys, then the whole units `projection` chooses by `unit_score` (``projection``:
    by default in descending score, ties to the lower unit, while they fit), then -- unless the
    projection is strict -- token-fill of the lattice slack by `token_score` among the keys not kept.

    Returns min(budget, n) positions (strict: at most that many), ascending.  Units must be
    disjoint from `forced`.
    """
    kept = np.zeros(n, dtype=bool)
    if forced is not None:
        kept[forced] = True
    remaining = min(budget, n) - int(kept.sum())
    if remaining < 0:
        raise ValueError("forced keys exceed the budget")
    for u in chosen_units(unit_score, units.sizes, remaining, projection):
        kept[units.starts[u] : units.stops[u]] = True
    remaining = min(budget, n) - int(kept.sum())
    if remaining > 0 and fills_slack(projection):
        kept[top_k(token_score, remaining, exclude=kept)] = True
    return np.flatnonzero(kept)


# ---------------------------------------------------------------------------------------------
# the audited rules
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SnapKV(TokenRule):
    """SnapKV with the audit's window max(1, min(max_window, s/2)), kernel 7, max pooling."""

    max_window: int = SNAPKV_MAX_WINDOW
    kernel: int = 7
    pooling: str = "max"  # "max" (the paper's audit) | "avg" (SnapKV's other pooling; 002, 000)

    evidence: ClassVar[frozenset] = frozenset({"window"})
    audit_role: ClassVar[str] = "audited"
    cache_faithful: ClassVar[str] = "frozen_prefill"
    registered: ClassVar[dict] = {"deployed": {"snapkv": {}}}
    batched: ClassVar[str] = "trustmass.loss.selection:snapkv_mask"

    @property
    def loss_batched(self) -> bool:
        """The batched version max-pools with an odd kernel."""
        return self.pooling == "max" and self.kernel >= 1 and self.kernel % 2 == 1

    def window(self, budget: int) -> int:
        return windows.snapkv_window(budget, self.max_window)

    def run_terms(self, budget: int) -> dict[str, str]:
        """What the configuration sets in the run contract (``selectors.run_contract``)."""
        w = self.window(budget)
        return {
            "observation_window": str(w),
            "pooling": f"{self.pooling}:{self.kernel}",
            "projection": f"token_topk+recent:{w}",
            "ranking": "pooled_window_vote",
        }

    def pooled_scores(self, x: SelectorInput, budget: int) -> np.ndarray:
        """Pooled vote over the prefix keys 0..i-w (length n - w)."""
        w = self.window(budget)
        vote = x.window_sum(w)[: x.n_keys - w]
        if self.pooling == "max":
            return max_pool_same(vote, self.kernel)
        if self.pooling == "avg":
            return avg_pool_same(vote, self.kernel)
        raise ValueError(f"SnapKV pooling must be 'max' or 'avg'; got {self.pooling!r}")

    def select(self, x: SelectorInput, budget: int) -> np.ndarray:
        s, n = checked_budget(budget), x.n_keys
        if n <= s:
            return keep_all(n)
        w = self.window(s)
        chosen = top_k(self.pooled_scores(x, s), s - w)
        return np.sort(np.concatenate((chosen, recent(n, w))))


#: H2O's heavy-hitter scores: the accumulated mass as is, or divided by each key's observing rows
H2O_EXPOSURES = ("cumulative", "count_debiased")


def count_debiased(acc_mass: np.ndarray) -> np.ndarray:
    """C_j / (T - j): the accumulated column mass of a prefix of T rows per causal row that saw key j."""
    acc = np.asarray(acc_mass, dtype=np.float64)
    return acc / np.arange(acc.shape[0], 0, -1)


@dataclass(frozen=True)
class H2O(TokenRule):
    """Heavy hitters by accumulated mass (or its count-debiased form) plus a recency window of s/2."""

    recent_fraction: float = 0.5
    exposure: str = "cumulative"  # one of H2O_EXPOSURES

    evidence: ClassVar[frozenset] = frozenset({"accumulated_mass"})
    cache_faithful: ClassVar[str] = "frozen_prefill"
    # the count-debiased diagnostic is one of the related methods (002 Stage I)
    registered: ClassVar[dict] = {"deployed": {"h2o": {}}, "related": {"h2o_debiased": {"exposure": "count_debiased"}}}
    batched: ClassVar[str] = "trustmass.loss.selection:h2o_mask"

    @property
    def loss_batched(self) -> bool:
        """The batched version ranks by the raw accumulated mass (no count-debiased one)."""
        return self.exposure == "cumulative"

    def __post_init__(self):
        if self.exposure not in H2O_EXPOSURES:
            raise ValueError(f"H2O.exposure = {self.exposure!r}; fix: one of {H2O_EXPOSURES}")

    @property
    def audit_role(self) -> str:
        """The paper audits H2O as deployed; the count-debiased diagnostic is scored alongside."""
        return "audited" if self.exposure == "cumulative" else "scored"

    def recency(self, budget: int) -> int:
        return int(int(budget) * self.recent_fraction)

    def run_terms(self, budget: int) -> dict[str, str]:
        ranking = "accumulated_mass" if self.exposure == "cumulative" else "accumulated_mass/(T-j)"
        return {"projection": f"token_topk+recent:{self.recency(budget)}", "ranking": ranking}

    def heavy_scores(self, x: SelectorInput) -> np.ndarray:
        """The score the heavy hitters are ranked by, per key 0..i."""
        return x.acc_mass if self.exposure == "cumulative" else count_debiased(x.acc_mass)

    def select(self, x: SelectorInput, budget: int) -> np.ndarray:
        s, n = checked_budget(budget), x.n_keys
        if n <= s:
            return keep_all(n)
        r = self.recency(s)
        exclude = np.zeros(n, dtype=bool)
        exclude[n - r :] = True
        heavy = top_k(self.heavy_scores(x), s - r, exclude=exclude)
        return np.sort(np.concatenate((heavy, recent(n, r))))


@dataclass(frozen=True)
class Quest(ProjectedBlocks):
    """Quest: pages of max(2, s/4) keys (or a fixed `page`), ranked by the query's upper bound."""

    page: int | None = None  # None: the audit's token-scaled pages max(2, s/4); 16: the page-16 configuration
    projection: str = FIT_THEN_FILL  # selectors.projection.PROJECTIONS

    unit: ClassVar[str] = "page"
    evidence: ClassVar[frozenset] = frozenset({"query", "keys"})
    scope: ClassVar[str] = "per_row"
    reads_dense_output: ClassVar[bool] = False
    cache_faithful: ClassVar[str] = "no_eviction"  # keeps the full cache, selects pages per query
    registered: ClassVar[dict] = {"deployed": {"quest": {}, "quest_page16": {"page": 16}}}
    batched: ClassVar[str] = "trustmass.loss.selection:quest_mask"

    @property
    def loss_batched(self) -> bool:
        """The batched version is the greedy page fill."""
        return self.projection == FIT_THEN_FILL

    @property
    def min_budget(self) -> int:
        return 1 if self.page is None else self.page

    @property
    def audit_role(self) -> str:
        """The paper audits the token-scaled pages; fixed pages (page 16) are scored alongside."""
        return "audited" if self.page is None else "scored"

    def page_size(self, budget: int) -> int:
        return max(2, int(budget) // 4) if self.page is None else self.page

    def run_terms(self, budget: int) -> dict[str, str]:
        return {"projection": self.projection_term(self.page_size(budget)), "ranking": "page_upper_bound_q.k"}

    def page_scores(self, x: SelectorInput, page: int) -> tuple[list[np.ndarray], np.ndarray]:
        """(pages, upper bounds sum_c max(q_c kmax_c, q_c kmin_c))."""
        keys, q = x.keys64, x.query64
        kmax = block_reduce(np.maximum, keys, page)
        kmin = block_reduce(np.minimum, keys, page)
        bound = np.maximum(q * kmax, q * kmin).sum(axis=1)
        return contiguous_units(0, x.n_keys, page), bound

    def select(self, x: SelectorInput, budget: int) -> np.ndarray:
        s, n = checked_budget(budget, self.min_budget), x.n_keys
        if n <= s:
            return keep_all(n)
        pages, bound = self.page_scores(x, self.page_size(s))
        return select_units(n, s, pages, bound, x.query_scores, projection=self.projection)


@dataclass(frozen=True)
class StreamingLLM(TokenRule):
    """Attention sinks min(4, s/2) plus the most recent keys (original positions, forced weights)."""

    max_sinks: int = 4

    evidence: ClassVar[frozenset] = frozenset()
    audit_role: ClassVar[str] = "audited"
    cache_faithful: ClassVar[str] = "frozen_prefill"
    registered: ClassVar[dict] = {"deployed": {"streaming_llm": {}}}
    batched: ClassVar[str] = "trustmass.loss.selection:streaming_llm_mask"

    def sinks(self, budget: int) -> int:
        return min(self.max_sinks, int(budget) // 2)

    def run_terms(self, budget: int) -> dict[str, str]:
        return {"projection": f"sinks:{self.sinks(budget)}+recent", "ranking": "position"}

    def select(self, x: SelectorInput, budget: int) -> np.ndarray:
        s, n = checked_budget(budget), x.n_keys
        if n <= s:
            return keep_all(n)
        k = self.sinks(s)
        return np.concatenate((np.arange(k, dtype=np.int64), recent(n, s - k)))


class TovaIdentityError(AssertionError):
    """TOVA's eviction disagreed with top-mass (the paper asserts they are identical per query)."""


@dataclass(frozen=True)
class TOVA(TokenRule):
    """TOVA, per query: evict the lowest-attention key until s remain.  Equals top-mass (asserted)."""

    evidence: ClassVar[frozenset] = frozenset({"mass"})
    # no audit role: the audit runs TOVA only to assert it equals top-mass, and does not score it
    registered: ClassVar[dict] = {"deployed": {"tova": {}}}

    @staticmethod
    def evict(p: np.ndarray, budget: int) -> np.ndarray:
        """TOVA's own reading: eviction order = ascending attention, ties evict the later key first.

        Renormalising the remaining attention after each eviction keeps the order, so one sort
        replays the whole eviction sequence.
        """
        p = np.asarray(p, dtype=np.float64)
        n = p.shape[0]
        eviction = np.lexsort((-np.arange(n), p))  # lowest first; among ties the larger position first
        return np.sort(eviction[max(0, n - int(budget)) :])

    def select(self, x: SelectorInput, budget: int) -> np.ndarray:
        s = checked_budget(budget)
        kept = self.evict(x.p, s)
        top = np.sort(top_k(x.p, s))
        if not np.array_equal(kept, top):
            raise TovaIdentityError(f"TOVA kept {kept.tolist()} but top-mass is {top.tolist()} at s={s}")
        return kept


@dataclass(frozen=True)
class Recency(TokenRule):
    """Positional control (spec §5 [C]): the s most recent keys."""

    evidence: ClassVar[frozenset] = frozenset()
    audit_role: ClassVar[str] = "control"
    cache_faithful: ClassVar[str] = "frozen_prefill"
    registered: ClassVar[dict] = {"deployed": {"recency": {}}}
    batched: ClassVar[str] = "trustmass.loss.selection:recency_mask"

    def run_terms(self, budget: int) -> dict[str, str]:
        return {"projection": "recent", "ranking": "position"}

    def select(self, x: SelectorInput, budget: int) -> np.ndarray:
        return recent(x.n_keys, checked_budget(budget))
