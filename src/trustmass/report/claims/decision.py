"""The one decision rule of the claims report: a regenerated cell against the paper's band.

Every comparison the report makes -- a point, a range, a bound, a count, a ratio, an identity, a sign, an
order of two cells, a trend -- is one call of :func:`decide`: the paper's statement as a :class:`Band` on the
real line, the regenerated cell as its 95 % interval (a cell without one is an interval of zero width: its
estimate alone decides).

* **agrees**: the whole interval lies inside the band.  This is an equivalence test by two one-sided tests
  (Schuirmann 1987; Lakens 2017, "Equivalence tests", Soc. Psychol. Personal. Sci. 8:355): both one-sided
  tests against the band's edges reject, at 2.5 % each with a 95 % interval (a 90 % interval would be the
  5 % test; this rule is the stricter one).  Where the band has an open end (a bound: "under 0.12"), the
  interval must also be no wider than the claim's own scale: a cell that cannot place the number within its
  own magnitude establishes nothing about it.
* **disagrees**: the whole interval lies outside the band, at any width: the difference test against the
  band's nearest edge rejects (the replication criterion of the Open Science Collaboration 2015, "the
  original value outside the replication's interval", applied to the band rather than to the point).
* **cannot decide** (a reason, shown and counted): the interval reaches across an edge of the band, the
  producer flagged the cell (a degenerate comparison: both arms at the floor), or the estimate is not finite.

Lakens, Scheel & Isager (2018, Adv. Methods Pract. Psychol. Sci. 1:259) name the four outcomes of the two
tests; "equivalent and different" cannot occur here because the band is the whole claim, not a margin around
zero.  The band of a printed number is the number widened by half a unit of its last digit (the paper's
"1.07" stands for every value that rounds to it), at most 10 % of the number, 20 % where it says "about"
(:func:`trustmass.report.claims.model.tolerance`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from trustmass.report.claims.cells import Cell

__all__ = ["Band", "Outcome", "decide", "difference", "fmt"]

#: a cell's answer: inside the band (True), outside it (False), or why it cannot decide (text)
Outcome = bool | str


def fmt(x: float) -> str:
    """Four significant digits; counts of a thousand or more in full (48,816, not 4.882e+04)."""
    if math.isfinite(x) and x == int(x) and abs(x) >= 1000:
        return f"{int(x):,}"
    return f"{x:.4g}"


@dataclass(frozen=True)
class Band:
    """The paper's statement as an interval: ``low``..``high`` (either may be infinite), each end open or
    closed; ``stated`` is how the paper wrote it ("1.07 ± 0.005", "< 0.12", "> 0")."""

    low: float
    high: float
    stated: str
    low_open: bool = False
    high_open: bool = False

    @classmethod
    def around(cls, low: float, high: float, slack_low: float, slack_high: float, stated: str) -> Band:
        """A number or range widened by its printed precision."""
        return cls(low - slack_low, high + slack_high, stated)

    @classmethod
    def above(cls, threshold: float, strict: bool, stated: str) -> Band:
        return cls(threshold, math.inf, stated, low_open=strict)

    @classmethod
    def below(cls, threshold: float, strict: bool, stated: str) -> Band:
        return cls(-math.inf, threshold, stated, high_open=strict)

    @property
    def bounded(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)

    def holds(self, x: float) -> bool:
        above_low = x > self.low if self.low_open else x >= self.low
        below_high = x < self.high if self.high_open else x <= self.high
        return above_low and below_high

    def text(self) -> str:
        if self.bounded:
            return f"[{fmt(self.low)}, {fmt(self.high)}]"
        if math.isfinite(self.low):
            return f"{'>' if self.low_open else '≥'} {fmt(self.low)}"
        return f"{'<' if self.high_open else '≤'} {fmt(self.high)}"


def _interval(cell: Cell) -> tuple[float, float]:
    """The cell's 95 % interval, or its estimate as an interval of zero width (always holding the estimate)."""
    if not cell.has_interval:
        return cell.estimate, cell.estimate
    return min(cell.low, cell.estimate), max(cell.high, cell.estimate)


def decide(cell: Cell, band: Band, scale: float | None = None) -> Outcome:
    """The decision rule (module docstring): True when the cell's whole interval lies inside ``band``, False
    when it lies wholly outside, else the reason it cannot decide.  ``scale``: the claim's own magnitude; an
    interval wider than it cannot establish agreement with a band that has an open end."""
    if cell.uninformative:
        return f"{cell.label()}: {cell.uninformative}"
    if not math.isfinite(cell.estimate):
        return f"{cell.label()}: the estimate is {cell.estimate:g}"
    low, high = _interval(cell)
    shown = f"[{fmt(low)}, {fmt(high)}]" if high > low else fmt(low)
    inside_low, inside_high = band.holds(low), band.holds(high)
    if inside_low and inside_high:
        if not band.bounded and scale is not None and high - low > scale:
            return (
                f"{cell.label()}: its 95 % interval {shown} lies inside {band.text()} but is wider than the "
                f"claim's scale ({fmt(scale)}): too wide to establish it"
            )
        return True
    below = high < band.low or (band.low_open and high == band.low)
    beyond = low > band.high or (band.high_open and low == band.high)
    if below or beyond:
        return False
    edge = band.low if not inside_low else band.high
    return f"{cell.label()}: its 95 % interval {shown} reaches across {fmt(edge)}, an edge of {band.text()}"


def difference(a: Cell, b: Cell) -> Cell:
    """``a - b`` as a cell whose interval holds every difference of the two intervals (conservative: the
    pairing of the two is not known), so an order ("a above b") is :func:`decide` against (0, inf).
    Either cell's producer flag carries over."""
    a_low, a_high = _interval(a)
    b_low, b_high = _interval(b)
    label = f"{a.label()} vs {b.label()}" if a.label() != b.label() else a.label()
    has_interval = a.has_interval or b.has_interval
    return Cell(
        estimate=a.estimate - b.estimate,
        low=(a_low - b_high) if has_interval else None,
        high=(a_high - b_low) if has_interval else None,
        group={"compared": label},
        models=tuple(dict.fromkeys(a.models + b.models)),
        uninformative=a.uninformative or b.uninformative,
    )
