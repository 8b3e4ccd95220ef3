"""The enumeration's subset cap as a config constraint, import-free (the start-up check reads it without numba)."""

from __future__ import annotations

import math

__all__ = ["subset_cap_problem"]


def subset_cap_problem(s: int, subset_cap: int) -> str | None:
    """What is wrong with a subset cap that admits no extra key at budget ``s`` (None: nothing); the job's
    check and the start-up one (trustmass.plumbing.config_checks) both read it."""
    if math.comb(s + 1, s) <= subset_cap:
        return None
    return (
        f"config.enumeration.subset_cap: {subset_cap} admits no extra key at budget {s} (C({s + 1}, {s}) = {s + 1} "
        f"subsets); fix: enumeration.subset_cap: {s + 1} or more, or an enumeration.extra_override for {s}"
    )
