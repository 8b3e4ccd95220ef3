"""The contract every kept-set rule declares, and the checked call (design.md, kvpress style).

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
``0..i``, ascending, ``min(budget, x.n_keys)`` of them.  :func:`contract` reads and validates the
declaration; :func:`run` calls a rule and checks its output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from trustmass.core.selectors.selector_input import SelectorInput

UNITS = frozenset({"token", "block", "page"})
EVIDENCE = frozenset({"mass", "accumulated_mass", "window", "query", "keys", "values"})
SCOPES = frozenset({"per_row", "shared_group"})


class TokenRule:
    """The contract most rules share: tokens, chosen per row from prefill evidence, any budget.
    Subclasses declare their ``evidence`` (and override the rest where they differ)."""

    unit: ClassVar[str] = "token"
    scope: ClassVar[str] = "per_row"
    reads_dense_output: ClassVar[bool] = False
    min_budget: ClassVar[int] = 1


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
