"""The numbers a claim value states, as the claims file wrote them (their printed digits set the band): shared
by the verdict property tests and the can-fail tests."""

from __future__ import annotations

from typing import Any

from trustmass.report.claims.model import Value


def stated_numbers(value: Value) -> list[tuple[Any, Any]]:
    """(group key or None, stated number or (low, high)) for the overall value and each stated group."""
    out = []
    if value.kind in ("range", "ci_within") and value.low is not None:
        out.append((None, (value.low, value.high)))
    elif value.value is not None:
        out.append((None, value.value))
    for key, entry in value.by.get(value.by_dimension(), {}).items() if value.by else []:
        out.append((key, entry))
    return out
