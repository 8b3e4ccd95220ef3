"""The fixed selector contract of every deployment method (related-methods A.1), import-light.

A W/T/L row compares two methods; it is a like-for-like (Stage II) comparison only when their
contracts differ in the ranking scalar alone.  Each method declares the contract fields its kvpress
press (or ContourKV's allocator) fixes: the ranking scalar, the query domain the score reads, the
observation window, the allocation of the budget over (layer, KV head) cells, and the projection to
kept positions (every method here keeps single tokens).  :func:`contrast` names the fields two
methods cross; the W/T/L tables carry it in their ``contracts`` column.  The contracts are declared in the
roster entries (:mod:`trustmass.deploy.roster`).
"""

from __future__ import annotations

import hashlib
import json

from trustmass.deploy.roster import FIELDS, ROSTER

__all__ = ["CONTRACTS", "FIELDS", "contract_sha256", "contrast"]

#: each method's contract, from its roster entry
CONTRACTS: dict[str, dict[str, str]] = {m.name: dict(m.contract) for m in ROSTER}


def contrast(a: str, b: str) -> str:
    """``like_for_like`` when methods a and b differ in the ranking scalar alone, else
    ``crosses: <fields>`` (a transfer check); ``unknown`` for a method without a declared contract."""
    if a not in CONTRACTS or b not in CONTRACTS:
        return "unknown"
    crossed = [f for f in FIELDS if f != "ranking" and CONTRACTS[a][f] != CONTRACTS[b][f]]
    return "like_for_like" if not crossed else "crosses: " + ", ".join(crossed)


def contract_sha256(method: str, budget: int, item_id: str, variant: str, query_aware: bool) -> str | None:
    """The hash of one run's contract record: the method's fields, the budget, the item (the captured
    prefill), the eviction variant and whether the question is visible (sha256 over canonical JSON,
    as ``core.selectors.run_contract``); None for a method without a declared contract."""
    if method not in CONTRACTS:
        return None
    record = {
        **CONTRACTS[method],
        "budget_rule": f"tokens:{int(budget)}",
        "capture_id": str(item_id),
        "variant": str(variant),
        "query_aware": bool(query_aware),
        "tie_break": "kvpress_topk",
    }
    return hashlib.sha256(json.dumps(record, sort_keys=True, separators=(",", ":")).encode("ascii")).hexdigest()
