"""The loss configurations (paper spec §6) and the cells each one switches.

A configuration runs a *base* rule in every cell and, in its switched cells, a *switch* rule
(balancing) instead; cells are (layer, query head):

=================  ==============  ===========  =========================================
name               base            switch       switched cells
=================  ==============  ===========  =========================================
dense              (the model)     --           --
keep_all           every key       --           --  (must reproduce dense: the unit test)
top_mass           top_mass        --           none
all_cell           top_mass        balancing    all
flat_switch        top_mass        balancing    the map's flat cells
random_<seed>      top_mass        balancing    as many random cells as flat ones
<rule>             <rule>          --           none
<rule>+flat        <rule>          balancing    the map's flat cells
probe@<alpha>      probe           --           none (one per mixing weight of the grid)
=================  ==============  ===========  =========================================

``gain(X) = CE(top_mass) - CE(X)``; ``share(X) = gain(X) / gain(all_cell)``; a rule's recovered
gap is ``(CE(rule) - CE(rule+flat)) / (CE(rule) - CE(all_cell))``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trustmass.core.selectors.registry import REGISTRY, names_where

DENSE, KEEP_ALL, TOP_MASS, BALANCING = "dense", "keep_all", "top_mass", "balancing"
PER_QUERY, CACHE_FAITHFUL = "per_query", "cache_faithful"  # the accountings (loss.policy)
ALL_CELL, FLAT_SWITCH = "all_cell", "flat_switch"
NO_CELLS, ALL_CELLS, FLAT_CELLS, RANDOM_CELLS = "none", "all", "flat", "random"
#: the registry rules the loss forward batches (each rule's contract says so: ``loss_batched``), named without
#: torch for the configuration check at workflow start-up; ``loss.selection.RULES`` is derived the same way
BATCHED_RULES = names_where(lambda c: c.loss_batched)


def rule_problems(rules, field: str = "config.loss.rules") -> list[str]:
    """Entries of `field` that are not registry rules with a batched version, with the fix."""
    problems = []
    for rule in rules:
        if rule not in REGISTRY:
            problems.append(
                f"{field}: {rule!r} is not a selector of the registry ({', '.join(REGISTRY)}); fix: use a registry name"
            )
        elif rule not in BATCHED_RULES:
            problems.append(
                f"{field}: {rule!r} has no batched version for the restricted forward; "
                f"fix: use one of {', '.join(BATCHED_RULES)}"
            )
    return problems


@dataclass(frozen=True)
class Configuration:
    name: str
    base_rule: str  # "dense", "keep_all", a selection rule name, or "probe"
    switch_rule: str | None = None
    cells: str = NO_CELLS  # none | all | flat | random
    seed: int | None = None  # random cells only
    accounting: str = PER_QUERY
    alpha: float | None = None  # the probe's mixing weight

    @property
    def restricted(self) -> bool:
        return self.base_rule != DENSE


def plan(
    rules: tuple[str, ...],
    random_seeds: int,
    accounting: tuple[str, ...] = (PER_QUERY,),
    probe_alphas: tuple[float, ...] = (),
) -> list[Configuration]:
    """Every configuration of one held-out document, in a fixed order (dense first)."""
    configs = [Configuration(DENSE, DENSE), Configuration(KEEP_ALL, KEEP_ALL)]
    for acc in accounting:
        suffix = "" if acc == PER_QUERY else f"@{acc}"
        configs += [
            Configuration(TOP_MASS + suffix, TOP_MASS, accounting=acc),
            Configuration(ALL_CELL + suffix, TOP_MASS, BALANCING, ALL_CELLS, accounting=acc),
            Configuration(FLAT_SWITCH + suffix, TOP_MASS, BALANCING, FLAT_CELLS, accounting=acc),
        ]
        if acc == PER_QUERY:
            configs += [
                Configuration(f"random_{seed}", TOP_MASS, BALANCING, RANDOM_CELLS, seed) for seed in range(random_seeds)
            ]
        for rule in rules:
            configs += [
                Configuration(rule + suffix, rule, accounting=acc),
                Configuration(f"{rule}+flat{suffix}", rule, BALANCING, FLAT_CELLS, accounting=acc),
            ]
    # alpha = 0 is top-mass exactly (the probe is zero-initialised): not run again
    configs += [Configuration(probe_name(a), "probe", alpha=float(a)) for a in probe_alphas if a > 0]
    return configs


def probe_name(alpha: float) -> str:
    """The configuration name of the probe at mixing weight `alpha`."""
    return f"probe@{float(alpha):g}"


def random_cells(shape: tuple[int, int], count: int, seed: int, master_seed: int = 0) -> np.ndarray:
    """``count`` cells of a ``[layers, heads]`` grid drawn uniformly without replacement, from the
    generator seeded by (master seed, control seed)."""
    n = shape[0] * shape[1]
    if not 0 <= count <= n:
        raise ValueError(f"cannot draw {count} random cells from {n}")
    grid = np.zeros(n, dtype=bool)
    grid[np.random.default_rng([master_seed, seed]).choice(n, size=count, replace=False)] = True
    return grid.reshape(shape)


def switched_cells(config: Configuration, flat: np.ndarray, master_seed: int = 0) -> np.ndarray:
    """The bool grid ``[layers, heads]`` of the cells where `config` runs its switch rule."""
    if config.cells == NO_CELLS or config.switch_rule is None:
        return np.zeros_like(flat, dtype=bool)
    if config.cells == ALL_CELLS:
        return np.ones_like(flat, dtype=bool)
    if config.cells == FLAT_CELLS:
        return flat.astype(bool).copy()
    if config.cells == RANDOM_CELLS:
        return random_cells(flat.shape, int(flat.sum()), config.seed, master_seed)
    raise ValueError(f"unknown cell set {config.cells!r}")
