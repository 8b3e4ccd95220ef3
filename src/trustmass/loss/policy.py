"""A configuration as a forward policy: per layer, choose each (query head, row)'s kept set and
return the restricted head outputs ``m_A`` through ``kernels.restricted_attention``.

Evidence (what the rules read besides the rows ``P``) is built from this forward's own rows and
the prefix's: H2O's accumulated mass is the prefix column mass plus the running sum of the
continuation rows; SnapKV's window sums reach back into the prefix's last rows.  The policy also
records, per cell, the mean dropped mass ``1 - P(A)``, the mean reconstruction error
``es = ||mu - m_A||`` and the mean number of balancing swaps (the cells frame; ``es`` feeds the
conversion constant).

Accounting: ``per_query`` (each row chooses from its own evidence) or ``cache_faithful``, the
audit's reading (``trustmass.audit.records``): a rule that evicts (contract ``cache_faithful =
"frozen_prefill"``, or no reading declared, as balancing) chooses once, at the first restricted row with that row's evidence, and the
frozen set serves every later row (the budget stays strict: keys written after the eviction are not
kept); a rule that keeps the full cache (Quest: ``"no_eviction"``) selects per query either way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from trustmass import kernels
from trustmass.core.selectors.contract import contract
from trustmass.core.selectors.registry import REGISTRY
from trustmass.core.windows import snapkv_window
from trustmass.loss import selection
from trustmass.loss.batched import mask_to_csr
from trustmass.loss.configurations import CACHE_FAITHFUL, KEEP_ALL, Configuration
from trustmass.loss.forward import LayerCall, PrefixLayer


def needs(rules: list[str], budget: int) -> dict:
    """The prefix evidence the rules read: SnapKV's ``window - 1`` tail rows, H2O's column mass."""
    evidence = set()
    for rule in rules:
        if rule in REGISTRY:
            evidence |= contract(REGISTRY[rule]).evidence
    return {
        "tail_rows": snapkv_window(budget) - 1 if "window" in evidence else 0,
        "column_mass": "accumulated_mass" in evidence,
    }


def window_sums(p: torch.Tensor, tail: torch.Tensor | None, w: int) -> torch.Tensor:
    """``sum_{t = i-w+1..i} P[t, :]`` for every continuation row (p [Hq, M, N]; tail [Hq, T, Np], the
    prefix's last T rows; rows beyond the w - 1 the window reaches are ignored, so a tail recorded
    for a larger budget serves a smaller one)."""
    rows = p
    if w > 1 and tail is not None and tail.shape[1]:
        tail = tail[:, -(w - 1) :]
        padded = p.new_zeros(p.shape[0], tail.shape[1], p.shape[2])
        padded[:, :, : tail.shape[2]] = tail
        rows = torch.cat((padded, p), dim=1)
    lead = rows.shape[1] - p.shape[1]
    out = torch.zeros_like(p)
    for k in range(w):  # the row itself and the w - 1 before it (fewer at the document's start)
        start = lead - k
        if start >= 0:
            out += rows[:, start : start + p.shape[1]]
        else:
            out[:, -start:] += rows[:, : p.shape[1] + start]
    return out


def accumulated_mass(p: torch.Tensor, column_mass: torch.Tensor | None) -> torch.Tensor:
    """``sum_{t <= i} P[t, :]``: the prefix's column mass plus the continuation rows so far."""
    acc = torch.cumsum(p, dim=1)
    if column_mass is not None:
        acc[:, :, : column_mass.shape[1]] += column_mass[:, None, :]
    return acc


@dataclass
class CellRecorder:
    """Per-cell sums over rows: dropped mass, es, swaps (divided by rows when read)."""

    shape: tuple[int, int]
    dropped: np.ndarray = field(init=False)
    es: np.ndarray = field(init=False)
    swaps: np.ndarray = field(init=False)
    rows: np.ndarray = field(init=False)

    def __post_init__(self):
        self.dropped, self.es, self.swaps, self.rows = (np.zeros(self.shape) for _ in range(4))

    def add(self, layer: int, dropped: torch.Tensor, es: torch.Tensor, swaps: torch.Tensor | None) -> None:
        self.dropped[layer] += dropped.double().sum(1).cpu().numpy()
        self.es[layer] += es.double().sum(1).cpu().numpy()
        if swaps is not None:
            self.swaps[layer] += swaps.double().sum(1).cpu().numpy()
        self.rows[layer] += dropped.shape[1]

    def means(self) -> dict[str, np.ndarray]:
        rows = np.maximum(self.rows, 1)
        return {"mean_dropped_mass": self.dropped / rows, "mean_es": self.es / rows, "mean_swaps": self.swaps / rows}


class SelectionPolicy:
    """The forward policy of one configuration (base rule everywhere, switch rule on its cells)."""

    def __init__(
        self, config: Configuration, switched: np.ndarray, budget: int, recorder: CellRecorder, probe=None, rules=None
    ):
        self.config, self.switched, self.budget = config, switched, int(budget)
        self.recorder, self.probe = recorder, probe
        self.rules = dict(
            rules or {}
        )  # configured rule instances by name (the balancing pool rule); else the registry's

    def __call__(self, call: LayerCall, prefix: PrefixLayer) -> torch.Tensor:
        self.layer = call.layer
        p = call.probabilities()
        heads = torch.from_numpy(self.switched[call.layer]).to(p.device)
        if self.config.base_rule == KEEP_ALL:  # every key with mass, straight to CSR (no padded [Hq, M, N])
            (ptr, idx), swaps = mask_to_csr(p.reshape(-1, p.shape[-1]) > 0), None
        else:
            rows = self._rows(call, prefix, p)
            kept, swaps = self._switched_select(rows, heads)
            ptr, idx = selection.to_csr(visible_only(kept, p))
        out, kept_mass = restricted_outputs(call, p, ptr, idx)
        self.recorder.add(call.layer, 1.0 - kept_mass, (out - dense_outputs(call, p)).norm(dim=-1), swaps)
        return out

    def kept_sets(self, call: LayerCall, prefix: PrefixLayer, p: torch.Tensor, rules: list[str]) -> list[torch.Tensor]:
        """Each rule's kept sets ``[Hq, M, s]`` on this layer's rows (visible keys only, -1 padded)."""
        self.layer = call.layer
        rows = self._rows(call, prefix, p)
        return [visible_only(self._select(rule, rows)[0], p) for rule in rules]

    def _rows(self, call: LayerCall, prefix: PrefixLayer, p: torch.Tensor) -> selection.LayerRows:
        rules = [self.config.base_rule] + ([self.config.switch_rule] if self.config.switch_rule else [])
        evidence = set()
        for rule in rules:
            if rule in REGISTRY:
                evidence |= contract(REGISTRY[rule]).evidence
        w = snapkv_window(self.budget)
        return selection.LayerRows(
            p=p,
            positions=call.positions.unsqueeze(0).expand(p.shape[0], -1),
            keys=call.keys.float(),
            values=call.values.float(),
            query=call.query.float(),
            acc_mass=accumulated_mass(p, prefix.column_mass) if "accumulated_mass" in evidence else None,
            window_sums={w: window_sums(p, prefix.tail, w)} if "window" in evidence else None,
        )

    def _switched_select(self, rows, heads: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The base rule on the heads not in `heads`, the switch rule on those (each rule runs on its
        own heads only: balancing on a third of the cells costs a third)."""
        if not bool(heads.any()):
            return self._select(self.config.base_rule, rows)
        if bool(heads.all()):
            return self._select(self.config.switch_rule, rows)
        base, base_swaps = self._select(self.config.base_rule, rows.heads(~heads))
        switched, switch_swaps = self._select(self.config.switch_rule, rows.heads(heads))
        kept = base.new_empty((rows.n_heads, *base.shape[1:]))
        kept[~heads], kept[heads] = base, switched
        if base_swaps is None and switch_swaps is None:
            return kept, None
        swaps = torch.zeros(rows.n_heads, rows.n_rows, dtype=torch.int64, device=kept.device)
        if base_swaps is not None:
            swaps[~heads] = base_swaps
        if switch_swaps is not None:
            swaps[heads] = switch_swaps
        return kept, swaps

    def _select(self, rule: str, rows) -> tuple[torch.Tensor, torch.Tensor | None]:
        if rule == "probe":
            return self.probe.select(self.layer, rows, self.budget), None
        if self.config.accounting == CACHE_FAITHFUL and contract(REGISTRY[rule]).cache_faithful != "no_eviction":
            # one eviction at the first restricted row; its kept set serves every later row (a rule
            # that declares no reading, balancing, is a kept-set rule: it evicts)
            chosen = selection.select(rule, rows.first_rows(), self.budget, rule=self.rules.get(rule))
            swaps = None if chosen.swaps is None else chosen.swaps.expand(-1, rows.n_rows).contiguous()
            return chosen.kept.expand(-1, rows.n_rows, -1).contiguous(), swaps
        chosen = selection.select(rule, rows, self.budget, rule=self.rules.get(rule))
        return chosen.kept, chosen.swaps


@dataclass(frozen=True)
class ProbeSelector:
    """The rank-16 probe as a rule of the forward: top-s of ``log p + alpha (U q)^T (V k)``."""

    params: object  # loss.probe.ProbeParams
    alpha: float

    def select(self, layer: int, rows: selection.LayerRows, budget: int) -> torch.Tensor:
        from trustmass.loss.probe import probe_select

        logits = torch.where(rows.p > 0, rows.p.double().log(), float("-inf"))  # a scalar, not a CPU tensor
        return probe_select(rows.query, rows.keys, logits, self.params.layer(layer), self.alpha, budget)


def restricted_outputs(call: LayerCall, p: torch.Tensor, ptr: torch.Tensor, idx: torch.Tensor):
    """``(m_A [Hq, M, d], P(A) [Hq, M])`` of the CSR kept sets.  On the PyTorch backend from the
    rows ``p`` the selection already read (the twin's own logits and softmax pass would recompute
    them: a third of the operator's CPU time at 4,096 keys); the Triton kernel recomputes its rows
    on the GPU, two streaming passes over the keys instead of a read of ``[Hq, M, N]``."""
    if kernels.resolve_backend(call.query) == "torch":
        return kernels.kept_rows_attention(p, call.values, ptr, idx)
    out, kept_mass, _ = kernels.restricted_attention(
        call.query,
        call.keys,
        call.values,
        call.positions,
        ptr,
        idx,
        call.scaling,
        call.softcap,
        call.window,
        call.logits_dtype,
    )
    return out, kept_mass


def dense_outputs(call: LayerCall, p: torch.Tensor) -> torch.Tensor:
    """``mu [Hq, M, d]``, the dense head outputs ``P v / P(all)`` (one product per KV head's group)."""
    n_kv = call.values.shape[0]
    grouped = p.reshape(n_kv, -1, p.shape[-1])
    mu = torch.bmm(grouped, call.values.float()).reshape(p.shape[0], p.shape[1], -1)
    return mu / p.sum(-1, keepdim=True)


def visible_only(kept: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """`kept` with every key without mass (outside a sliding window, or underflowed) set to -1:
    such a key adds nothing to ``m_A``, so the kernel sees visible keys only."""
    return torch.where((kept >= 0) & (p.gather(-1, kept.clamp(min=0)) > 0), kept, torch.full_like(kept, -1))
