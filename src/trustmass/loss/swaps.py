"""Boundary swaps through the restricted forward (related-methods A.2): the model-level outcomes.

For a selector pair X -> Y at one budget every (layer, query head, row) has its disagreement
``D_out = K_X \\ K_Y`` and ``D_in = K_Y \\ K_X`` (``core.selectors.boundary_swaps``).  A swap
configuration moves a *fraction* f of each row's disagreement (rows differ in |D|):

* ``boundary``: the ``round(f |D_out|)`` members of ``D_out`` with the least mass leave and the
  ``round(f |D_in|)`` members of ``D_in`` with the most mass enter (rank to rank by the row's mass
  ``p``, ties to the smaller position: ``boundary_swaps.swap_at_fraction`` with ``score = p``, row by
  row), so f = 0 is X's kept set and f = 1 is Y's;
* ``random``: as many kept keys of X, drawn uniformly, leave for as many drawn evicted keys with
  mass (the unrestricted control);
* ``random_restricted``: the same draws inside ``D_out`` and ``D_in`` (at f = 1 this is Y's set, so the
  plan runs it only below 1).

``round`` is half up.  Draws are seeded per (master seed, control seed, layer).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from trustmass.core.selectors.boundary_swaps import BOUNDARY, RANDOM, RANDOM_RESTRICTED, SWAP_KINDS
from trustmass.loss.batched import mask_to_csr, top_k_mask
from trustmass.loss.configurations import NO_CELLS, Configuration
from trustmass.loss.forward import LayerCall, PrefixLayer
from trustmass.loss.policy import CellRecorder, SelectionPolicy, dense_outputs, restricted_outputs


@dataclass(frozen=True)
class SwapConfiguration:
    """X's kept sets with a fraction of the disagreement with Y's swapped (module docstring)."""

    x: str
    y: str
    kind: str
    fraction: float
    seed: int | None = None  # the random controls only

    def __post_init__(self):
        if self.kind not in SWAP_KINDS:
            raise ValueError(f"swap kind {self.kind!r}; fix: one of {SWAP_KINDS}")
        if not 0.0 <= self.fraction <= 1.0:
            raise ValueError(f"swap fraction {self.fraction} outside [0, 1]")

    @property
    def pair(self) -> str:
        return f"{self.x}>{self.y}"

    @property
    def name(self) -> str:
        seed = "" if self.seed is None else f"#{self.seed}"
        return f"{self.pair}:{self.kind}@{self.fraction:g}{seed}"


def swap_plan(pairs, fractions, seeds: int) -> list[SwapConfiguration]:
    """Per pair: X itself (boundary @ 0), the boundary swaps at each fraction and at 1 (Y itself: the
    gap's other end), and per control seed the unrestricted random swaps at each fraction and the
    restricted ones below 1."""
    fractions = sorted({float(f) for f in fractions if f > 0} | {1.0})
    plan = []
    for x, y in pairs:
        plan.append(SwapConfiguration(x, y, BOUNDARY, 0.0))
        plan += [SwapConfiguration(x, y, BOUNDARY, f) for f in fractions]
        for seed in range(int(seeds)):
            plan += [SwapConfiguration(x, y, RANDOM, f, seed) for f in fractions]
            plan += [SwapConfiguration(x, y, RANDOM_RESTRICTED, f, seed) for f in fractions if f < 1]
    return plan


def kept_mask(kept: torch.Tensor, n_keys: int) -> torch.Tensor:
    """bool [R, N] of kept sets [..., s] padded with -1."""
    flat = kept.reshape(-1, kept.shape[-1])
    mask = torch.zeros(flat.shape[0], n_keys + 1, dtype=torch.bool, device=kept.device)
    mask.scatter_(1, flat.masked_fill(flat < 0, n_keys), True)
    return mask[:, :n_keys]


def share(count: torch.Tensor, fraction: float) -> torch.Tensor:
    """round(fraction * count), half up, as int64."""
    return torch.floor(count.double() * fraction + 0.5).to(torch.int64)


def swapped_mask(
    in_x: torch.Tensor,
    in_y: torch.Tensor,
    score: torch.Tensor,
    eligible: torch.Tensor,
    config: SwapConfiguration,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """bool [R, N]: X's kept keys after the configuration's swap on every row.  ``score`` ranks the
    boundary swap (the rows' mass); ``eligible`` marks the keys a random swap may bring in (visible,
    with mass)."""
    d_out, d_in = in_x & ~in_y, in_y & ~in_x
    m_out, m_in = share(d_out.sum(dim=1), config.fraction), share(d_in.sum(dim=1), config.fraction)
    if config.kind == BOUNDARY:
        leave = top_k_mask(-score, m_out, d_out)
        enter = top_k_mask(score, m_in, d_in)
    else:
        if generator is None:
            raise ValueError("a random swap needs a generator")
        pool_out, pool_in = (d_out, d_in) if config.kind == RANDOM_RESTRICTED else (in_x, eligible & ~in_x)
        # drawn from the (CPU) generator, then moved: the same draws on every device
        draw = torch.rand(in_x.shape, generator=generator, dtype=torch.float64).to(in_x.device)
        leave = top_k_mask(draw, m_out, pool_out)
        enter = top_k_mask(
            torch.rand(in_x.shape, generator=generator, dtype=torch.float64).to(in_x.device), m_in, pool_in
        )
    return (in_x & ~leave) | enter


def layer_generator(master_seed: int, seed: int, layer: int) -> torch.Generator:
    """The random controls' generator of one layer: seeded by (master seed, control seed, layer)."""
    seeded = np.random.default_rng([int(master_seed), int(seed), int(layer)]).integers(2**62)
    return torch.Generator().manual_seed(int(seeded))


class SwapPolicy(SelectionPolicy):
    """The forward policy of one swap configuration: X and Y choose on every head, the swap mixes them."""

    def __init__(self, swap: SwapConfiguration, budget: int, recorder: CellRecorder, master_seed: int = 0, rules=None):
        base = Configuration(swap.name, swap.x, swap.y, NO_CELLS)
        super().__init__(base, np.zeros(recorder.shape, dtype=bool), budget, recorder, rules=rules)
        self.swap, self.master_seed = swap, int(master_seed)

    def __call__(self, call: LayerCall, prefix: PrefixLayer) -> torch.Tensor:
        p = call.probabilities()
        kept_x, kept_y = self.kept_sets(call, prefix, p, [self.swap.x, self.swap.y])
        n = p.shape[-1]
        flat_p = p.reshape(-1, n)
        generator = (
            None if self.swap.kind == BOUNDARY else layer_generator(self.master_seed, self.swap.seed or 0, call.layer)
        )
        mask = swapped_mask(kept_mask(kept_x, n), kept_mask(kept_y, n), flat_p, flat_p > 0, self.swap, generator)
        ptr, idx = mask_to_csr(mask)
        out, kept_mass = restricted_outputs(call, p, ptr, idx)
        self.recorder.add(call.layer, 1.0 - kept_mass, (out - dense_outputs(call, p)).norm(dim=-1), None)
        return out
