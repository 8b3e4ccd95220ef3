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

its part in the selector audit (``trustmass.audit``; not declaring them keeps a rule out of it):

* ``audit_role``: ``audited`` (one of the paper's audited deployed rules, spec §5: scored, in the
  audit's headline statistics and drawn in Figure 3), ``control`` (the positional control: scored
  and drawn in Figure 3), ``scored`` (scored alongside: other configurations, related methods,
  top-mass) or ``None`` (the audit does not run it);
* ``cache_faithful``: how one evicted cache serves later queries -- ``frozen_prefill`` (the rule
  evicts once, at the eviction time, and the frozen set serves every later query) or
  ``no_eviction`` (it keeps the full cache and selects per query, so its cache-faithful reading is
  the per-query one); required with an audit role;

whether the loss stage's restricted forward has a batched version of it (``trustmass.loss.selection``):

* ``batched``: its batched (torch) mask by dotted name, ``"module:function"`` (e.g.
  ``"trustmass.loss.selection:h2o_mask"``), imported only by the loss stage; None (the default): none;
* ``loss_batched``: True where the rule, as configured, is one that mask reproduces exactly -- by default
  whenever it names one; a property narrows it where that depends on the configuration (H2O's exposure);

its names in the registry (``selectors.registry``; not declaring them keeps a rule out of it):

* ``registered``: section -> {name: constructor options}, e.g. ``{"deployed": {"h2o": {}}, "related":
  {"h2o_debiased": {"exposure": "count_debiased"}}}``; the sections are ``registry.SECTIONS``;

optionally ``run_terms(budget) -> dict``: what its configuration sets in the fixed selector contract
record of a run (ranking scalar, observation window, pooling, projection; ``selectors.run_contract``);

and ``select(x: SelectorInput, budget) -> np.ndarray``: the kept positions among the row's keys
``0..i``, ascending, ``min(budget, x.n_keys)`` of them -- or at most that many where the rule
declares ``fills_budget = False`` (strict block TopK, which leaves lattice slack:
``selectors.projection``).  :func:`contract` reads and validates the declaration; :func:`run` calls
a rule and checks its output.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from trustmass.core.selectors.selector_input import SelectorInput

UNITS = frozenset({"token", "block", "page"})
EVIDENCE = frozenset({"mass", "accumulated_mass", "window", "query", "keys", "values"})
SCOPES = frozenset({"per_row", "shared_group"})
AUDIT_ROLES = frozenset({"audited", "control", "scored"})
CACHE_FAITHFUL_READINGS = frozenset({"frozen_prefill", "no_eviction"})
#: a batched mask's dotted name: "package.module:function"
BATCHED_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")


class TokenRule:
    """The contract most rules share: tokens, chosen per row from prefill evidence, any budget.
    Subclasses declare their ``evidence`` (and override the rest where they differ)."""

    unit: ClassVar[str] = "token"
    scope: ClassVar[str] = "per_row"
    reads_dense_output: ClassVar[bool] = False
    min_budget: ClassVar[int] = 1
    audit_role: ClassVar[str | None] = None
    cache_faithful: ClassVar[str | None] = None
    batched: ClassVar[str | None] = None


@dataclass(frozen=True)
class Contract:
    unit: str
    evidence: frozenset
    scope: str
    reads_dense_output: bool
    min_budget: int
    audit_role: str | None
    cache_faithful: str | None
    loss_batched: bool = False
    batched: str | None = None  # the batched mask, "module:function"

    @property
    def in_audit(self) -> bool:
        """Whether the audit runs the rule."""
        return self.audit_role is not None

    @property
    def drawn_in_figure3(self) -> bool:
        """Figure 3 draws the audited deployed rules and the positional control."""
        return self.audit_role in ("audited", "control")


def contract(rule) -> Contract:
    """A rule's declared contract, validated (the error names the attribute and the fix)."""
    name = type(rule).__name__
    batched = getattr(rule, "batched", None)
    c = Contract(
        unit=rule.unit,
        evidence=frozenset(rule.evidence),
        scope=rule.scope,
        reads_dense_output=bool(rule.reads_dense_output),
        min_budget=int(getattr(rule, "min_budget", 1)),
        audit_role=getattr(rule, "audit_role", None),
        cache_faithful=getattr(rule, "cache_faithful", None),
        loss_batched=bool(getattr(rule, "loss_batched", batched is not None)),
        batched=batched,
    )
    for attr, value, allowed in (
        ("unit", c.unit, UNITS),
        ("scope", c.scope, SCOPES),
        ("audit_role", c.audit_role, AUDIT_ROLES | {None}),
        ("cache_faithful", c.cache_faithful, CACHE_FAITHFUL_READINGS | {None}),
    ):
        if value not in allowed:
            raise ValueError(f"{name}.{attr} = {value!r}; fix: declare one of {sorted(allowed, key=str)}")
    if not c.evidence <= EVIDENCE:
        raise ValueError(
            f"{name}.evidence has unknown kinds {sorted(c.evidence - EVIDENCE)}; fix: use only {sorted(EVIDENCE)}"
        )
    if c.reads_dense_output and not {"mass", "values"} <= c.evidence:
        raise ValueError(f"{name}: reading the dense output needs mass and values evidence; fix: declare both")
    if c.batched is not None and not BATCHED_NAME.fullmatch(str(c.batched)):
        raise ValueError(f"{name}.batched = {c.batched!r}; fix: name its batched mask as 'package.module:function'")
    if c.loss_batched and c.batched is None:
        raise ValueError(
            f"{name}.loss_batched is True but it names no batched mask; fix: declare batched = 'module:function'"
        )
    if c.in_audit and c.cache_faithful is None:
        raise ValueError(
            f"{name}.audit_role = {c.audit_role!r} but no cache_faithful reading; fix: declare cache_faithful, "
            f"one of {sorted(CACHE_FAITHFUL_READINGS)}"
        )
    return c


def run(rule, x: SelectorInput, budget: int) -> np.ndarray:
    """rule.select(x, budget), checked: ascending unique positions in range, min(budget, N) of them
    (at most that many for a rule that does not fill its budget)."""
    kept = np.asarray(rule.select(x, budget))
    want = min(int(budget), x.n_keys)
    fills_budget = getattr(rule, "fills_budget", True)
    if (
        kept.ndim != 1
        or (kept.shape[0] != want if fills_budget else kept.shape[0] > want)
        or not np.issubdtype(kept.dtype, np.integer)
        or (want and (kept[0] < 0 or kept[-1] >= x.n_keys))
        or np.any(np.diff(kept) <= 0)
    ):
        raise AssertionError(f"{type(rule).__name__} at budget {budget}: bad kept set {kept!r} for {x.n_keys} keys")
    return kept.astype(np.int64)
