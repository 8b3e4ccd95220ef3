"""Batched kept-set selectors for the restricted-operator forward: the registry's rules on many rows.

``select(name, rows, budget)`` chooses, for every query head and row of one layer
(``evidence.LayerRows``), exactly the kept set that ``contract.run(REGISTRY[name],
SelectorInput.from_layer(...), budget)`` chooses for that row -- the same definitions, ties by
descending score then ascending position (never torch.topk's tie order; see ``batched``).  Every
row keeps min(budget, i + 1) of its keys 0..i (a row seeing at most `budget` keys keeps them all):

* ``top_mass``: A*_s, the s largest p (zero-mass visible keys included, as the registry sorts them);
* ``balancing``: swaps from A*_s inside C_s (``loss.balancing``), pool extras ``rule.extra(budget)``;
* ``snapkv``: the w = window(s) newest keys plus the top s - w of the window sum over j <= i - w,
  max-pooled (kernel 7, stride 1, -inf 'same' padding, as ``torch.max_pool1d``);
* ``h2o``: the r = s/2 newest keys plus the top s - r of the rest by accumulated mass;
* ``quest``, ``quest_page16``: whole pages by their bound sum_c max(q_c kmax_c, q_c kmin_c) while
  they fit, the slack token-filled by q.k (see :func:`quest_mask`);
* ``streaming_llm``: min(4, s/2) sinks plus the newest keys; ``recency``: the s newest keys;
* ``value_aware_mass``, ``value_aware_nolev``, ``value_aware_mii``: 002's block scalars, whole blocks
  while they fit, then token-fill by the same scalar (``block_rules``).

Rules are read from the registry instance (or a configured instance passed as ``rule=``), so their
parameters (windows, recency share, page size, sinks, pool rule) are the registry's.  Whether a rule is
batched, and by which mask, is its class's own declaration (``batched``, ``"module:function"``, and
``loss_batched`` in its contract, ``core.selectors.contract``); ``BATCHED`` resolves those names.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from trustmass.core.selectors.contract import contract
from trustmass.core.selectors.deployed import checked_budget
from trustmass.core.selectors.registry import REGISTRY
from trustmass.loss.balancing import balancing_mask
from trustmass.loss.batched import compress, numpy_sum, to_csr, top_k_mask
from trustmass.loss.block_rules import greedy_units, unit_layout
from trustmass.loss.configurations import BATCHED_RULES
from trustmass.loss.evidence import LayerRows

#: relative error allowed a matrix-product page bound against |q| . max(|kmax|, |kmin|) (>> d eps)
PAGE_TOL = 1e-12

__all__ = ["SUPPORTED", "LayerRows", "Selection", "select", "to_csr"]


@dataclass(frozen=True, eq=False)
class Selection:
    """Kept sets of one layer's rows at one budget."""

    name: str
    budget: int
    kept: torch.Tensor  # int64 [Hq, M, budget]: ascending positions, then -1 where a row keeps fewer
    swaps: torch.Tensor | None = None  # int64 [Hq, M]: accepted balancing swaps (balancing only)

    def to_csr(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(kept_ptr [Hq*M + 1], kept_idx): the kept sets as CSR over the rows, head-major."""
        return to_csr(self.kept)


# -- the rules: each returns (bool [R, N] kept mask, swaps [R] or None) ----------------------------


def newest(rows: LayerRows, count) -> torch.Tensor:
    """bool [R, N]: the `count` most recent visible keys of each row (i - count + 1 .. i)."""
    j = torch.arange(rows.n_cache, device=rows.p.device)
    return rows.visible & (j >= (rows.n_visible - torch.as_tensor(count, device=rows.p.device))[:, None])


def top_mass_mask(rows: LayerRows, budget: int, rule) -> tuple[torch.Tensor, None]:
    """A*_s: descending p over the visible keys, ties to the smaller position.  No eligibility
    mask: a key beyond the row's position has p = 0 and a larger position than every visible key,
    so it ranks below each of them, and rows seeing fewer keys than the budget keep all of theirs
    (:func:`select`)."""
    return top_k_mask(rows.flat(rows.p), checked_budget(budget), None), None


def balancing_rule_mask(rows: LayerRows, budget: int, rule) -> tuple[torch.Tensor, torch.Tensor]:
    """Balancing with the rule's pool: e(s) extras at its enumerated budgets, native_extra elsewhere."""
    s = checked_budget(budget)
    return balancing_mask(rows, s, rule.extra(s))


def snapkv_mask(rows: LayerRows, budget: int, rule) -> tuple[torch.Tensor, None]:
    """The w newest keys plus the top s - w of the max-pooled window sum over the prefix j <= i - w."""
    s = checked_budget(budget)
    w = rule.window(s)
    prefix = rows.visible & (torch.arange(rows.n_cache, device=rows.p.device) < (rows.n_visible - w)[:, None])
    vote = rows.window_sum(w).masked_fill(~prefix, float("-inf"))
    pooled = F.max_pool1d(vote[:, None, :], rule.kernel, stride=1, padding=rule.kernel // 2)[:, 0]
    return top_k_mask(pooled, s - w, prefix) | newest(rows, w), None


def h2o_mask(rows: LayerRows, budget: int, rule) -> tuple[torch.Tensor, None]:
    """The r = recency(s) newest keys plus the top s - r of the rest by accumulated mass."""
    if rows.acc_mass is None:
        raise ValueError("h2o needs the accumulated column mass (LayerRows.acc_mass)")
    s = checked_budget(budget)
    r = rule.recency(s)
    recent = newest(rows, r)
    return top_k_mask(rows.flat(rows.acc_mass), s - r, rows.visible & ~recent) | recent, None


def streaming_llm_mask(rows: LayerRows, budget: int, rule) -> tuple[torch.Tensor, None]:
    """min(4, s/2) sink keys 0.. plus the s - sinks newest keys."""
    s = checked_budget(budget)
    k = rule.sinks(s)
    return (rows.visible & (torch.arange(rows.n_cache, device=rows.p.device) < k)) | newest(rows, s - k), None


def recency_mask(rows: LayerRows, budget: int, rule) -> tuple[torch.Tensor, None]:
    """The s newest keys."""
    return newest(rows, checked_budget(budget)), None


# -- Quest ---------------------------------------------------------------------------------------


def page_extremes(keys: torch.Tensor, page: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Elementwise (max, min) of the keys of every whole page [u*page, (u+1)*page): [Hkv, U, d] each
    (a last page cut short by N gets values no row reads: rows read it through page_of_row)."""
    n_kv, n, d = keys.shape
    pages = -(-n // page)
    pad = pages * page - n
    hi = torch.cat((keys, keys.new_full((n_kv, pad, d), float("-inf"))), 1).reshape(n_kv, pages, page, d)
    lo = torch.cat((keys, keys.new_full((n_kv, pad, d), float("inf"))), 1).reshape(n_kv, pages, page, d)
    return hi.amax(dim=2), lo.amin(dim=2)


def bound(q: torch.Tensor, kmax: torch.Tensor, kmin: torch.Tensor) -> torch.Tensor:
    """Quest's upper bound sum_c max(q_c kmax_c, q_c kmin_c), summed in numpy's order: q [r, d],
    kmax/kmin [r, U, d] -> [r, U]."""
    q = q[:, None, :]
    return numpy_sum(torch.maximum(q * kmax, q * kmin))


def last_page_bound(rows: LayerRows, q, keys, page: int, last: torch.Tensor) -> torch.Tensor:
    """[R]: the bound of each row's last page u = i // page over its keys u*page..i only."""
    index = last[:, None] * page + torch.arange(page, device=last.device)
    inside = index < rows.n_visible[:, None]
    k = rows.gather_kv(keys, index.clamp(max=rows.n_cache - 1))
    kmax = k.masked_fill(~inside[..., None], float("-inf")).amax(dim=1)
    kmin = k.masked_fill(~inside[..., None], float("inf")).amin(dim=1)
    return bound(q, kmax[:, None], kmin[:, None])[:, 0]


def page_bounds(rows: LayerRows, q, keys, page: int, last: torch.Tensor, full: torch.Tensor, fit: int):
    """(float64 [R, U] bounds, bool [R, U] known): the exact bound (numpy's order) of every page that
    can rank among a row's top `fit` full pages, and of the row's last page over its visible keys.

    A matrix product gives every page's bound q+ . kmax + q- . kmin up to PAGE_TOL |q| . max(|kmax|,
    |kmin|); full pages whose upper value reaches the fit-th largest lower value are re-scored
    exactly.  Any other full page is strictly below `fit` known pages, so neither the top pages nor
    the count rho of full pages ranked above the short page (compared with fit) depends on it."""
    kmax, kmin = page_extremes(keys, page)
    fmax, fmin = kmax.nan_to_num(0.0, 0.0, 0.0), kmin.nan_to_num(0.0, 0.0, 0.0)
    qg, shape = rows.grouped(q), full.shape
    fast = torch.bmm(qg.clamp(min=0), fmax.transpose(1, 2)) + torch.bmm(qg.clamp(max=0), fmin.transpose(1, 2))
    slack = PAGE_TOL * torch.bmm(qg.abs(), torch.maximum(fmax.abs(), fmin.abs()).transpose(1, 2))
    lo, hi = (fast - slack).reshape(shape), (fast + slack).reshape(shape)
    threshold = (
        lo.masked_fill(~full, float("-inf")).topk(fit, dim=1).values[:, -1:]
        if fit
        else torch.full_like(lo[:, :1], float("inf"))
    )
    known = full & (hi >= threshold)
    index = compress(known, int(known.sum(dim=1).max()))
    valid = index >= 0
    at = index.clamp(min=0)
    exact = bound(q, rows.gather_kv(kmax, at), rows.gather_kv(kmin, at))
    score = torch.full(
        (shape[0], shape[1] + 1), float("-inf"), dtype=torch.float64, device=lo.device
    )  # column U: padding
    score.scatter_(1, index.masked_fill(~valid, shape[1]), exact)
    score = score[:, :-1].contiguous()
    score.scatter_(1, last[:, None], last_page_bound(rows, q, keys, page, last)[:, None])
    known.scatter_(1, last[:, None], True)
    return score, known


def quest_mask(rows: LayerRows, budget: int, rule) -> tuple[torch.Tensor, None]:
    """Quest's greedy page fill (``block_rules.greedy_units``) on its page bounds, the slack
    token-filled by q.k among the keys not kept."""
    if rows.query is None:
        raise ValueError("quest needs the rows' queries (LayerRows.query)")
    s = checked_budget(budget, rule.min_budget)
    page = rule.page_size(s)
    q, keys = rows.flat(rows.query).double(), rows.keys.double()
    last, size, short, full = unit_layout(rows, page)
    score, known = page_bounds(rows, q, keys, page, last, full, s // page)
    kept = greedy_units(rows, score, full & known, last, size, short, page, s)
    qk = torch.bmm(rows.grouped(q), keys.transpose(1, 2)).reshape(kept.shape)
    return kept | top_k_mask(qk, s - kept.sum(dim=1), rows.visible & ~kept), None


def batched_mask(cls: type):
    """The batched mask a rule class names (``batched = "module:function"``), imported."""
    module, _, function = cls.batched.partition(":")
    try:
        return getattr(importlib.import_module(module), function)
    except (ImportError, AttributeError) as exc:
        raise ValueError(
            f"{cls.__name__}.batched = {cls.batched!r} does not resolve ({exc}); "
            "fix: name an existing 'module:function'"
        ) from None


#: the batched mask of each registry rule class that names one (``batched``, its contract), in registry order
BATCHED = {cls: batched_mask(cls) for cls in dict.fromkeys(type(r) for r in REGISTRY.values() if contract(r).batched)}
#: name -> batched rule, for the registry rules that declare it (``configurations.BATCHED_RULES``); the rule
#: instance is the registry's unless configured (``rule=``)
RULES = {name: BATCHED[type(REGISTRY[name])] for name in BATCHED_RULES}
#: the registry names with a batched version
SUPPORTED = BATCHED_RULES


def select(name: str, rows: LayerRows, budget: int, rule=None) -> Selection:
    """The kept sets of rule `name` at `budget` for every row of `rows`, as the registry's rule.

    `rule` is a configured instance of the registry rule's class (default: ``REGISTRY[name]``),
    e.g. ``Balancing(pool=PoolRule.from_config(cfg))``.  Rows seeing at most `budget` keys keep them
    all.  Raises ValueError for a name without a batched version (naming the available ones)."""
    if name not in SUPPORTED:
        known = "a registry rule without a batched version" if name in REGISTRY else "not a registry rule"
        raise ValueError(f"selector {name!r} is {known}; batched selectors: {', '.join(SUPPORTED)}")
    rule = REGISTRY[name] if rule is None else rule
    if not isinstance(rule, type(REGISTRY[name])):
        raise TypeError(f"rule for {name!r} must be a {type(REGISTRY[name]).__name__}; got {type(rule).__name__}")
    if not contract(rule).loss_batched:
        declared = getattr(type(rule), "loss_batched", None)
        why = (declared.__doc__ or "").strip() if isinstance(declared, property) else ""
        raise ValueError(
            f"selector {name!r} as configured ({rule!r}) has no batched version{': ' + why if why else ''}"
        )
    mask, swaps = RULES[name](rows, int(budget), rule)
    short = rows.n_visible <= int(budget)
    if bool(short.any()):
        mask = torch.where(short[:, None], rows.visible, mask)
    shape = (rows.n_heads, rows.n_rows)
    kept = compress(mask, int(budget)).reshape(*shape, int(budget))
    return Selection(name, int(budget), kept, None if swaps is None else swaps.reshape(shape))
