"""How a block rule turns unit scores into a kept set (related-methods §A.4, Stage III).

Units (blocks or pages) of ``p`` keys are aligned at position 0; the row's last unit may be short.
``room`` is the budget left after a rule's forced keys (block-select's recent window).  Units are
ranked by descending score, ties to the lower unit (the project's tie rule).

* ``strict`` -- 002's strict block TopK: the ``floor(room / p)`` best units ``Z*`` and nothing else.
  It leaves the lattice slack ``eps_lat = room - p floor(room / p)`` unspent (more when a short unit
  is among ``Z*``), so its kept set can be smaller than the budget.
* ``strict_then_fill`` -- 002's token-fill: ``Z*`` exactly as ``strict`` (same units, same order),
  then the slack spent on single keys by the rule's own token score among the keys not kept (the
  fill ranking is unspecified in 002 [C]; each rule names its own).
* ``fit_then_fill`` -- the registered block rules' default: units in rank order taken whenever they
  still fit whole (a short unit can let one more whole unit in), then the same token-fill.  This is
  Quest's greedy page fill as the audit and the loss stage's batched Quest run it.

With every unit whole and ``p | room`` all three keep the same ``floor(room / p)`` units and no slack.
:func:`lattice_slack` reports a rule's slack before and after token-fill on one row.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from trustmass.core.operator import descending_order
from trustmass.core.selectors.contract import run
from trustmass.core.selectors.selector_input import SelectorInput

STRICT = "strict"
STRICT_THEN_FILL = "strict_then_fill"
FIT_THEN_FILL = "fit_then_fill"
PROJECTIONS = (FIT_THEN_FILL, STRICT, STRICT_THEN_FILL)


def check_projection(projection: str, owner: str) -> None:
    if projection not in PROJECTIONS:
        raise ValueError(f"{owner}.projection = {projection!r}; fix: one of {PROJECTIONS}")


def fills_slack(projection: str) -> bool:
    """Whether the projection token-fills what the whole units leave of the budget."""
    return projection != STRICT


def chosen_units(unit_score: np.ndarray, sizes: np.ndarray, room: int, projection: str) -> np.ndarray:
    """The units the projection keeps whole, in rank order.  ``p`` is the largest unit's size (a row
    shorter than one block is a single unit of all its keys)."""
    check_projection(projection, "chosen_units")
    order = descending_order(np.asarray(unit_score, dtype=np.float64))
    if len(sizes) == 0:
        return order
    if projection != FIT_THEN_FILL:
        return order[: room // int(sizes.max())]
    taken, left, smallest = [], room, int(sizes.min())
    for u in order:
        if left < smallest:  # nothing fits any more
            break
        if sizes[u] <= left:
            taken.append(u)
            left -= int(sizes[u])
    return np.asarray(taken, dtype=np.int64)


def lattice_slack_tokens(room: int, block: int) -> int:
    """eps_lat(k, p) = k - p floor(k / p): what strict block TopK leaves when every unit is whole."""
    return int(room) - int(block) * (int(room) // int(block))


class ProjectedBlocks:
    """Mixin of the block rules (dataclasses with a ``projection`` field): the field's check and
    what it means for the contract -- only ``strict`` may keep fewer keys than the budget."""

    def __post_init__(self):
        check_projection(self.projection, type(self).__name__)

    @property
    def fills_budget(self) -> bool:
        return fills_slack(self.projection)

    def projection_term(self, block: int) -> str:
        """The run contract's projection: the rule and its unit size.  Every block rule token-fills
        by its own score at unit size 1 (``fill=own_score``), so the fill is not a second ranking."""
        return f"{self.projection}:p={block}" + (",fill=own_score" if fills_slack(self.projection) else "")


@dataclass(frozen=True)
class Slack:
    """Budget a block rule leaves unspent on one row: by strict block TopK, and after token-fill."""

    before: int
    after: int


def lattice_slack(rule: ProjectedBlocks, x: SelectorInput, budget: int) -> Slack:
    """The rule's unspent budget on row x at `budget`, strict (before) and token-filled (after),
    both measured from the kept sets (so a short unit among Z* counts)."""
    want = min(int(budget), x.n_keys)
    before = run(replace(rule, projection=STRICT), x, budget)
    after = run(replace(rule, projection=STRICT_THEN_FILL), x, budget)
    return Slack(before=want - before.shape[0], after=want - after.shape[0])
