"""Block rules of the related methods (related-methods.md §A.3 and §C.1-C.2).

**Value-aware block scores (002, "Module II")** for a block ``c`` of the row: block mass
``a = p(c)``, residual ``g_c = sum_{j in c} p_j (v_j - mu) = a (mu_c - mu)`` (``mu_c`` the
attention-weighted block centroid, ``mu`` the dense output):

* ``mass``  (support-only / access): ``a``;
* ``nolev`` (NoLev):                 ``a^2 ||mu_c - mu||^2 = ||g_c||^2``;
* ``mii``   (full leverage):         ``(a / gamma)^2 ||mu_c - mu||^2 = ||g_c||^2 / gamma^2``, with
  ``gamma = max(1 - a, eps_a)``.

The identity (related-methods §0): for ``a < 1``, ``mii(c) = es([N] \\ c)^2`` -- the squared
forced-weight error of dropping block ``c`` alone (``operator.drop_distortion``, for one set) -- and
``nolev(c) = ||g_c||^2``.  MII therefore
ranks blocks by their single-block deletion cost; it ignores cancellation between dropped blocks.
``g_c`` is computed directly, so no centroid epsilon ``eps_mu`` is needed; ``eps_a = 1e-12``.

Projection (``selectors.projection``; blocks aligned at position 0): by default whole blocks in
score order while they fit, then the lattice slack (a short last block) token-filled by the same
scalar at block size 1 among the keys not kept (002's token ranking is unspecified [C]).  With no
short block among the winners this is 002's strict block TopK of ``k_b = floor(s / b)`` blocks plus
its token-fill; ``projection="strict"`` (slack left) and ``"strict_then_fill"`` are 002's exactly.

**Block-select (004, ``block-select-exact``)**: the recent window ``W = s/2`` exact, plus the old
blocks (positions ``< i + 1 - W``, cut into blocks of ``b`` aligned at position 0) with the largest
mean-key summary score ``q . kbar_c`` (004's formula is unspecified; ``q . kbar_c / sqrt(d)`` is the
presumed one and ``1/sqrt(d)`` does not change the ranking), ``K_blk = floor((s - W)/b)`` of them,
then token-fill by ``q . k_j`` among old keys not kept.

Token-scaled sizes, comparable at ``s <= 256`` (4 blocks of the budget wherever possible):
value-aware ``b = max(2, s/4)`` (as Quest's pages); block-select ``W = s/2`` and
``b = max(2, s/8)`` (4 old blocks for s >= 16).  A fixed ``block`` overrides the scaling.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from trustmass.core.selectors.deployed import (
    block_reduce,
    checked_budget,
    contiguous_units,
    keep_all,
    recent,
    select_units,
)
from trustmass.core.selectors.projection import FIT_THEN_FILL, ProjectedBlocks
from trustmass.core.selectors.selector_input import SelectorInput

#: the 002 variants: the block scalar each ranks by
VALUE_AWARE_SCORES = ("mass", "nolev", "mii")


def block_residuals(p: np.ndarray, values: np.ndarray, mu: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray]:
    """(block masses a, block residuals g_c) for blocks of `block` keys aligned at position 0."""
    p = np.asarray(p, dtype=np.float64)
    starts = np.arange(0, p.shape[0], block)
    w = p[:, None] * (np.asarray(values, dtype=np.float64) - mu)
    return np.add.reduceat(p, starts), np.add.reduceat(w, starts, axis=0)


def value_aware_scores(
    p: np.ndarray,
    values: np.ndarray,
    mu: np.ndarray,
    block: int,
    score: str,
    eps_a: float = 1e-12,
) -> np.ndarray:
    """One 002 block scalar per block: 'mass' (a), 'nolev' (||g_c||^2) or 'mii' (||g_c||^2/gamma^2)."""
    return block_scores(*block_residuals(p, values, mu, block), score, eps_a)


def block_scores(a: np.ndarray, g: np.ndarray, score: str, eps_a: float = 1e-12) -> np.ndarray:
    """The 002 block scalar from block masses `a` and block residuals `g` (see value_aware_scores)."""
    if score == "mass":
        return a
    nolev = np.einsum("ij,ij->i", g, g)
    if score == "nolev":
        return nolev
    if score == "mii":
        return nolev / np.maximum(1.0 - a, eps_a) ** 2
    raise ValueError(f"value-aware score must be one of {VALUE_AWARE_SCORES}; got {score!r}")


@dataclass(frozen=True)
class ValueAwareBlocks(ProjectedBlocks):
    """002's value-consequence block rule: block TopK by `score`, token-filled by the same scalar."""

    score: str = "mii"  # "mass" | "nolev" | "mii"
    block: int | None = None  # None: token-scaled max(2, s/4)
    eps_a: float = 1e-12
    projection: str = FIT_THEN_FILL  # selectors.projection.PROJECTIONS

    unit: ClassVar[str] = "block"
    scope: ClassVar[str] = "per_row"
    audit_role: ClassVar[str] = "scored"
    cache_faithful: ClassVar[str] = "frozen_prefill"  # evicts to its blocks at the eviction time
    registered: ClassVar[dict] = {
        "related": {
            "value_aware_mass": {"score": "mass"},
            "value_aware_nolev": {"score": "nolev"},
            "value_aware_mii": {"score": "mii"},
        }
    }
    batched: ClassVar[str] = "trustmass.loss.block_rules:value_aware_mask"  # every score and projection

    @property
    def evidence(self) -> frozenset:
        return frozenset({"mass"}) if self.score == "mass" else frozenset({"mass", "values"})

    @property
    def reads_dense_output(self) -> bool:
        return self.score != "mass"

    @property
    def min_budget(self) -> int:
        return 1 if self.block is None else self.block

    def block_size(self, budget: int) -> int:
        return max(2, int(budget) // 4) if self.block is None else self.block

    def run_terms(self, budget: int) -> dict[str, str]:
        """What the configuration sets in the run contract (``selectors.run_contract``)."""
        return {"projection": self.projection_term(self.block_size(budget)), "ranking": f"block_{self.score}"}

    def scores(self, x: SelectorInput, budget: int) -> np.ndarray:
        """value_aware_scores at the token-scaled block size, from the row's cached residuals."""
        b = self.block_size(budget)
        a = block_reduce(np.add, x.p64, b)
        if self.score == "mass":  # reads the row's masses only
            return a
        return block_scores(a, block_reduce(np.add, x.residuals, b), self.score, self.eps_a)

    def token_scores(self, x: SelectorInput) -> np.ndarray:
        """The same scalar at block size 1 (the token-fill ranking)."""
        if self.score == "mass":
            return x.p64
        return block_scores(x.p64, x.residuals, self.score, self.eps_a)

    def select(self, x: SelectorInput, budget: int) -> np.ndarray:
        s, n = checked_budget(budget, self.min_budget), x.n_keys
        if n <= s:
            return keep_all(n)
        blocks = contiguous_units(0, n, self.block_size(s))
        return select_units(n, s, blocks, self.scores(x, s), self.token_scores(x), projection=self.projection)


@dataclass(frozen=True)
class BlockSelect(ProjectedBlocks):
    """004's block-select-exact: recent window W = s/2 plus the top old blocks by q . mean(K)."""

    recent_fraction: float = 0.5
    block: int | None = None  # None: token-scaled max(2, s/8)
    projection: str = FIT_THEN_FILL  # selectors.projection.PROJECTIONS

    unit: ClassVar[str] = "block"
    evidence: ClassVar[frozenset] = frozenset({"query", "keys"})
    scope: ClassVar[str] = "per_row"
    reads_dense_output: ClassVar[bool] = False
    audit_role: ClassVar[str] = "scored"
    cache_faithful: ClassVar[str] = "no_eviction"  # keeps the full cache, selects blocks per query
    registered: ClassVar[dict] = {"related": {"block_select": {}}}

    @property
    def min_budget(self) -> int:
        return 1 if self.block is None else self.block

    def block_size(self, budget: int) -> int:
        return max(2, int(budget) // 8) if self.block is None else self.block

    def window(self, budget: int) -> int:
        return int(int(budget) * self.recent_fraction)

    def run_terms(self, budget: int) -> dict[str, str]:
        projection = self.projection_term(self.block_size(budget))
        return {"projection": f"{projection}+recent:{self.window(budget)}", "ranking": "block_mean_key_q.k"}

    def summary_scores(self, x: SelectorInput, budget: int) -> tuple[list[np.ndarray], np.ndarray]:
        """(old blocks, q . kbar_c) for the positions before the recent window."""
        old = x.n_keys - self.window(budget)
        b = self.block_size(budget)
        keys = x.keys64[:old]
        blocks = contiguous_units(0, old, b)
        means = block_reduce(np.add, keys, b) / blocks.sizes[:, None]
        return blocks, means @ x.query64

    def select(self, x: SelectorInput, budget: int) -> np.ndarray:
        s, n = checked_budget(budget, self.min_budget), x.n_keys
        if n <= s:
            return keep_all(n)
        w = self.window(s)
        blocks, score = self.summary_scores(x, s)
        token = np.full(n, -np.inf)
        token[: n - w] = x.query_scores[: n - w]
        return select_units(n, s, blocks, score, token, forced=recent(n, w), projection=self.projection)
