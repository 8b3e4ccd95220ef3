"""The answers a claim value gets (the statuses of an :class:`Axis`), how cells' outcomes become one
answer (:func:`tally`) and several answers one (:func:`combine`); shared by the size and direction
comparisons (:mod:`trustmass.report.claims.size`, :mod:`trustmass.report.claims.direction`), the claims
and the summary (:mod:`trustmass.report.claims.report`).

One aggregation at every level -- cells into a value's answer, populations into one, values into a claim's:

* **agrees** only when every item is answered and agrees;
* **contradicted** when any answered item disagrees (is contradicted);
* **partial** when some items agree and the rest cannot answer;
* otherwise no answer, the most telling reason first, in one order everywhere (:data:`NO_ANSWER_ORDER`):
  *uninformative* (the cells exist but none can decide), *not produced* (no cell), *by construction* (the
  statement cannot fail on any data), *not comparable* (the number is set by the run's configuration).

Items that are *by construction* or *not comparable* cannot be answered by any run of this configuration:
they are listed beside the answer, never counted among the items to answer (``k of n``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from trustmass.report.claims.cells import Cell
from trustmass.report.claims.decision import Outcome, fmt

__all__ = [
    "AGREES",
    "ANSWERED",
    "AXIS_STATUSES",
    "BY_CONSTRUCTION",
    "CONTRADICTED",
    "NOT_COMPARABLE",
    "NOT_PRODUCED",
    "NO_ANSWER_ORDER",
    "PARTIAL",
    "UNANSWERABLE",
    "UNINFORMATIVE",
    "Axis",
    "Outcome",
    "combine",
    "counted",
    "decisive_of",
    "fmt",
    "interval",
    "shown",
    "span",
    "tally",
]

AGREES, CONTRADICTED, PARTIAL = "agrees", "contradicted", "partial"
UNINFORMATIVE, NOT_COMPARABLE, BY_CONSTRUCTION, NOT_PRODUCED = (
    "uninformative",
    "not comparable",
    "by construction",
    "not produced",
)
#: the answers that are verdicts
ANSWERED = (AGREES, CONTRADICTED, PARTIAL)
#: the reasons for no answer, most telling first: the one order of every level
NO_ANSWER_ORDER = (UNINFORMATIVE, NOT_PRODUCED, BY_CONSTRUCTION, NOT_COMPARABLE)
#: no run of this configuration can answer these: not counted among the items to answer
UNANSWERABLE = (BY_CONSTRUCTION, NOT_COMPARABLE)
#: every answer an axis can give
AXIS_STATUSES = ANSWERED + NO_ANSWER_ORDER


@dataclass(frozen=True)
class Axis:
    """One answer (direction or size) for one value: a status of :data:`AXIS_STATUSES`, why, how it was
    compared, and how many of its cells answered (``answered`` of ``cells``)."""

    status: str
    reason: str
    kind: str = ""
    answered: int = 0
    cells: int = 0
    decisive: tuple[str, ...] = ()  # the cells that decided it: those that disagree, else those that agree


def span(cells: Sequence[Cell]) -> str:
    ests = [c.estimate for c in cells]
    return fmt(ests[0]) if len(ests) == 1 else f"{fmt(min(ests))}..{fmt(max(ests))}"


def interval(c: Cell) -> str:
    return f"[{fmt(c.low)}, {fmt(c.high)}]"


def shown(cell: Cell) -> str:
    """A cell as the report names it: its group, estimate and 95 % interval."""
    ci = f" {interval(cell)}" if cell.has_interval and cell.high > cell.low else ""
    return f"{cell.label()} {fmt(cell.estimate)}{ci}"


def tally(kind: str, outcomes: Sequence[Outcome], detail: str, cells: Sequence[Cell] = ()) -> Axis:
    """Cells' outcomes as one answer (module docstring).  Every cell is counted: one that cannot decide
    keeps a value from agreeing, and its reason is kept.  ``cells`` (one per outcome) name the decisive ones."""
    n = len(outcomes)
    agree = sum(o is True for o in outcomes)
    disagree = sum(o is False for o in outcomes)
    unknown = list(dict.fromkeys(o for o in outcomes if isinstance(o, str)))
    if n == 0:
        return Axis(UNINFORMATIVE, "no cell to judge", kind)
    if disagree:
        status = CONTRADICTED
    elif agree == n:
        status = AGREES
    elif agree:
        status = PARTIAL
    else:
        return Axis(UNINFORMATIVE, "; ".join(unknown), kind, 0, n)
    counts = f"{agree} of {n} cells agree, {disagree} disagree" if disagree else f"{agree} of {n} cells agree"
    undecided = f"; {n - agree - disagree} cannot decide: {'; '.join(unknown)}" if unknown else ""
    decided = [c for c, o in zip(cells, outcomes) if o is (status == AGREES or status == PARTIAL)]
    return Axis(
        status, f"{counts}; {detail}{undecided}", kind, agree + disagree, n, tuple(shown(c) for c in decided[:6])
    )


def decisive_of(axes: Sequence[Axis], status: str) -> tuple[str, ...]:
    """The decisive cells of several answers combined into ``status``: the contradicting ones' when
    contradicted, else the agreeing ones'."""
    wanted = (CONTRADICTED,) if status == CONTRADICTED else (AGREES, PARTIAL)
    return tuple(d for a in axes if a.status in wanted for d in a.decisive)[:6]


def counted(statuses: Sequence[str]) -> list[str]:
    """The statuses of the items a run can answer (those neither by construction nor not comparable)."""
    return [s for s in statuses if s not in UNANSWERABLE]


def combine(statuses: Sequence[str]) -> str:
    """The answer of several answers (module docstring): contradicted if any is; agrees if every item that can
    be answered agrees; partial if some are answered; else the first reason of :data:`NO_ANSWER_ORDER`."""
    items = counted(statuses)
    if CONTRADICTED in items:
        return CONTRADICTED
    if items and all(s == AGREES for s in items):
        return AGREES
    if any(s in ANSWERED for s in items):
        return PARTIAL
    for status in NO_ANSWER_ORDER:
        if status in statuses:
            return status
    return NOT_PRODUCED
