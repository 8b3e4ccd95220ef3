"""Numbers inside text compared within a tolerance (the reference check's Markdown and CSV cells)."""

from __future__ import annotations

import math
import re

__all__ = ["NUMBER", "numbers_close", "texts_close"]

NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")


def numbers_close(a: float, b: float, rtol: float, atol: float) -> bool:
    if isinstance(a, float) and isinstance(b, float) and (math.isnan(a) and math.isnan(b) or math.isinf(a) and a == b):
        return True  # NaN equals NaN, an infinity its own sign (inf - inf is NaN)
    return abs(a - b) <= atol + rtol * abs(b)


def _last_place(text: str) -> float:
    """One unit in the last printed decimal of a number without exponent ("2.945": 0.001), else 0."""
    if "e" in text.lower() or "." not in text:
        return 0.0
    decimals = len(text.split(".", 1)[1])
    return 10.0**-decimals if 0 < decimals < 15 else 0.0


def texts_close(got: str, want: str, rtol: float, atol: float) -> bool:
    """Two strings equal but for the numbers printed in them, each within tolerance.

    The text between the numbers must match exactly.  A number printed to a few decimals (a claim's
    "regenerated 2.945") may also differ by one unit in its last printed place when both are printed
    to the same decimals: a value within ``rtol`` can round either side of a printed digit.
    """
    if got == want:
        return True
    if NUMBER.split(got) != NUMBER.split(want):
        return False
    for a, b in zip(NUMBER.findall(got), NUMBER.findall(want), strict=True):
        x, y = float(a), float(b)
        place = _last_place(a) if _last_place(a) == _last_place(b) else 0.0
        if not (numbers_close(x, y, rtol, atol) or abs(x - y) <= place * (1 + 1e-9)):
            return False
    return True
