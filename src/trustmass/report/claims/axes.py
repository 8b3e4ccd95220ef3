"""The answers a claim value gets (the statuses of an :class:`Axis`), how cells' outcomes become one
answer (:func:`tally`) and several answers one (:func:`combine`); shared by the size and direction
comparisons (:mod:`trustmass.report.claims.size`, :mod:`trustmass.report.claims.direction`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from trustmass.report.claims.cells import Cell

__all__ = [
    "AGREES",
    "AXIS_STATUSES",
    "BY_CONSTRUCTION",
    "DISAGREES",
    "JUDGED",
    "MIXED",
    "NOT_COMPARABLE",
    "NOT_PRODUCED",
    "UNINFORMATIVE",
    "Axis",
    "Outcome",
    "combine",
    "fmt",
    "interval",
    "span",
    "tally",
]

AGREES, DISAGREES, MIXED = "agrees", "disagrees", "mixed"
UNINFORMATIVE, NOT_COMPARABLE, BY_CONSTRUCTION, NOT_PRODUCED = (
    "uninformative",
    "not comparable",
    "by construction",
    "not produced",
)
#: the answers that are verdicts
JUDGED = (AGREES, DISAGREES, MIXED)
#: every answer an axis can give, most telling first
AXIS_STATUSES = (AGREES, DISAGREES, MIXED, UNINFORMATIVE, NOT_COMPARABLE, BY_CONSTRUCTION, NOT_PRODUCED)

#: a cell's answer: meets it (True), misses it (False), or why it cannot tell (text)
Outcome = bool | str


@dataclass(frozen=True)
class Axis:
    """One answer (direction or size) for one value: a status of :data:`AXIS_STATUSES`, why, and how it was compared."""

    status: str
    reason: str
    kind: str = ""


def fmt(x: float) -> str:
    """Four significant digits; counts of a thousand or more in full (48,816, not 4.882e+04)."""
    if math.isfinite(x) and x == int(x) and abs(x) >= 1000:
        return f"{int(x):,}"
    return f"{x:.4g}"


def span(cells: Sequence[Cell]) -> str:
    ests = [c.estimate for c in cells]
    return fmt(ests[0]) if len(ests) == 1 else f"{fmt(min(ests))}..{fmt(max(ests))}"


def interval(c: Cell) -> str:
    return f"[{fmt(c.low)}, {fmt(c.high)}]"


def tally(kind: str, outcomes: Sequence[Outcome], detail: str) -> Axis:
    """Every informative cell meeting it: agrees; none: disagrees; some: mixed; no informative cell:
    uninformative (with the cells' reasons)."""
    known = [o for o in outcomes if isinstance(o, bool)]
    unknown = sorted({o for o in outcomes if isinstance(o, str)})
    if not known:
        return Axis(UNINFORMATIVE, "; ".join(unknown) or "no cell to judge", kind)
    n, k = len(known), sum(known)
    status = AGREES if k == n else DISAGREES if k == 0 else MIXED
    cells = f"{k} of {n} cells agree; " if n > 1 else ""
    skipped = f"; {len(outcomes) - n} uninformative ({'; '.join(unknown)})" if unknown else ""
    return Axis(status, f"{cells}{detail}{skipped}", kind)


def combine(statuses: Sequence[str]) -> str:
    """The answer of several answers: the verdicts all agree / all disagree, else mixed; without a
    verdict, the most telling non-verdict (uninformative before not comparable before not produced)."""
    verdicts = [s for s in statuses if s in JUDGED]
    if verdicts:
        if all(s == AGREES for s in verdicts):
            return AGREES
        if all(s == DISAGREES for s in verdicts):
            return DISAGREES
        return MIXED
    for status in (UNINFORMATIVE, NOT_COMPARABLE, BY_CONSTRUCTION):
        if status in statuses:
            return status
    return NOT_PRODUCED
