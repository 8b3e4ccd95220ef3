"""Batched block rules: the greedy unit fill they share and 002's value-aware block scores.

Units (pages, blocks) of ``page`` keys are aligned at position 0; a row seeing keys ``0..i`` has
``last = i // page`` as its last unit, holding ``L = i + 1 - last * page`` keys (short when
``L < page``).  The registry's ``fit_then_fill`` projection walks units by descending score (ties
to the lower unit) and takes each whole unit that still fits; :func:`greedy_units` is that walk in
closed form, and the rule then token-fills the rest (``selectors.projection``).

The value-aware rules (``selectors.value_aware.ValueAwareBlocks``; related-methods §A.3) score a
block ``c`` by its mass ``a = p(c)`` ('mass'), its residual ``||g_c||^2`` with
``g_c = sum_{j in c} p_j (v_j - mu)`` ('nolev'), or ``||g_c||^2 / max(1 - a, eps_a)^2`` ('mii'),
and token-fill by the same scalar at block size 1.  Everything is float64, and nothing of size [rows, N, d] is
formed (:func:`_residual_norms`).
"""

from __future__ import annotations

import torch

from trustmass.core.selectors.deployed import checked_budget
from trustmass.core.selectors.projection import FIT_THEN_FILL, fills_slack
from trustmass.loss.batched import top_k_mask
from trustmass.loss.evidence import LayerRows


def unit_layout(rows: LayerRows, page: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(last [R], size [R], short [R], full [R, U]): each row's last unit, its key count, whether it
    is short, and which units the row holds whole."""
    n = rows.n_visible
    last = (n - 1) // page
    size = n - last * page
    short = size < page
    units = torch.arange(-(-rows.n_cache // page), device=n.device)
    full = (units[None, :] < last[:, None]) | ((units[None, :] == last[:, None]) & ~short[:, None])
    return last, size, short, full


def greedy_units(
    rows: LayerRows,
    score: torch.Tensor,
    full: torch.Tensor,
    last: torch.Tensor,
    size: torch.Tensor,
    short: torch.Tensor,
    page: int,
    budget: int,
) -> torch.Tensor:
    """bool [R, N]: the keys of the whole units the greedy fill takes (float64 ``score`` [R, U]; only
    the units in ``full`` and each row's last unit are read).  With F = s // page full units fitting the
    budget and rho the full units ranked at or above the short unit (ties go to the lower unit): rho < F
    takes the short unit and the top (s - L) // page full units; otherwise the top F full units, and
    the short unit iff L <= s - F page."""
    fit = budget // page
    rho = ((score >= score.gather(1, last[:, None])) & full).sum(dim=1)
    early = short & (rho < fit)
    taken = top_k_mask(score, torch.where(early, (budget - size) // page, fit), full)
    take_short = short & (early | (size <= budget - fit * page))
    taken.scatter_(1, last[:, None], taken.gather(1, last[:, None]) | take_short[:, None])
    keys = torch.arange(rows.n_cache, device=taken.device)
    return taken.gather(1, keys.expand(size.shape[0], -1) // page) & rows.visible


def value_aware_mask(rows: LayerRows, budget: int, rule) -> tuple[torch.Tensor, None]:
    """``ValueAwareBlocks`` under its projection: ``fit_then_fill`` takes whole blocks while they fit
    (:func:`greedy_units`); ``strict`` and ``strict_then_fill`` take the ``s // b`` best units (the
    short last one among them, as ``projection.chosen_units``); every projection but ``strict`` then
    token-fills the rest by the same scalar."""
    s = checked_budget(budget, rule.min_budget)
    block = rule.block_size(s)
    last, size, short, full = unit_layout(rows, block)
    unit_score, token_score = value_aware_scores(rows, block, rule.score, rule.eps_a)
    if rule.projection == FIT_THEN_FILL:
        kept = greedy_units(rows, unit_score, full, last, size, short, block, s)
    else:
        held = torch.arange(unit_score.shape[1], device=last.device)[None, :] <= last[:, None]
        taken = top_k_mask(unit_score, s // block, held)
        keys = torch.arange(rows.n_cache, device=taken.device)
        kept = taken.gather(1, keys.expand(last.shape[0], -1) // block) & rows.visible
    if fills_slack(rule.projection):
        kept = kept | top_k_mask(token_score, s - kept.sum(dim=1), rows.visible & ~kept)
    return kept, None


def value_aware_scores(rows: LayerRows, block: int, score: str, eps_a: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(float64 [R, U] block scores, float64 [R, N] token scores) of one 002 scalar."""
    p = rows.flat(rows.p).double() * rows.visible
    n_units = -(-rows.n_cache // block)
    pad = n_units * block - rows.n_cache
    a = torch.nn.functional.pad(p, (0, pad)).reshape(p.shape[0], n_units, block).sum(dim=2)
    if score == "mass":
        return a, p
    if score not in ("nolev", "mii"):
        raise ValueError(f"value-aware score must be one of ('mass', 'nolev', 'mii'); got {score!r}")
    g_sq, token_sq = _residual_norms(rows, p, a, block, pad)
    if score == "nolev":
        return g_sq, token_sq
    return g_sq / (1.0 - a).clamp(min=eps_a) ** 2, token_sq / (1.0 - p).clamp(min=eps_a) ** 2


def _residual_norms(
    rows: LayerRows, p: torch.Tensor, a: torch.Tensor, block: int, pad: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(||g_c||^2 [R, U], ||p_j (v_j - mu)||^2 [R, N]) with mu the row's dense output ``p v / p(all)``
    and ``a`` [R, U] the block masses, without any [rows, N, d] tensor: with ``S_c = sum_{j in c} p_j v_j``,

        ||g_c||^2 = ||S_c - a_c mu||^2 = p_c^T G_c p_c - 2 a_c sum_{j in c} p_j (v_j . mu) + a_c^2 ||mu||^2,

    ``G_c`` the block's Gram matrix of values (one [U, b, b] product per KV head), and
    ``||p_j (v_j - mu)||^2 = p_j^2 (||v_j||^2 - 2 v_j . mu + ||mu||^2)``; float64 throughout (the
    expansions cancel only where a block's centroid is within ~1e-8 of mu, far below any ranking gap)."""
    v64 = rows.values.double()
    n_kv, d, n_units = v64.shape[0], v64.shape[-1], a.shape[1]
    mu = torch.bmm(rows.grouped(p), v64).reshape(p.shape[0], -1) / p.sum(dim=1, keepdim=True)
    mu_sq = (mu * mu).sum(dim=1, keepdim=True)
    v_mu = torch.bmm(v64, rows.grouped(mu).transpose(1, 2)).transpose(1, 2).reshape(p.shape)  # v_j . mu per row
    v_blocks = torch.nn.functional.pad(v64, (0, 0, 0, pad)).reshape(n_kv, n_units, block, d)
    gram = torch.einsum("kubd,kucd->kubc", v_blocks, v_blocks)  # [Hkv, U, b, b]
    p_blocks = torch.nn.functional.pad(p, (0, pad)).reshape(n_kv, -1, n_units, block)  # [Hkv, rows per KV head, U, b]
    s_sq = torch.einsum("kmub,kubc,kmuc->kmu", p_blocks, gram, p_blocks).reshape(a.shape)
    s_mu = (torch.nn.functional.pad(p * v_mu, (0, pad))).reshape(-1, n_units, block).sum(dim=2)
    g_sq = (s_sq - 2.0 * a * s_mu + a * a * mu_sq).clamp(min=0.0)
    v_sq = (v64 * v64).sum(dim=2)  # [Hkv, N]
    dist_sq = (rows.ungrouped(v_sq) - 2.0 * v_mu + mu_sq).clamp(min=0.0)
    return g_sq, p * p * dist_sq
