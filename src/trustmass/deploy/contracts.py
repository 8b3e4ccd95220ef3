"""The fixed selector contract of every deployment method (related-methods A.1), import-light.

A W/T/L row compares two methods; it is a like-for-like (Stage II) comparison only when their
contracts differ in the ranking scalar alone.  Each method declares the contract fields its kvpress
press (or ContourKV's allocator) fixes: the ranking scalar, the query domain the score reads, the
observation window, the allocation of the budget over (layer, KV head) cells, and the projection to
kept positions (every method here keeps single tokens).  :func:`contrast` names the fields two
methods cross; the W/T/L tables carry it in their ``contracts`` column.
"""

from __future__ import annotations

import hashlib
import json

__all__ = ["CONTRACTS", "FIELDS", "contract_sha256", "contrast"]

FIELDS = ("ranking", "query_domain", "observation_window", "allocation", "projection")


def _c(ranking: str, domain: str, window: str, allocation: str = "uniform") -> dict[str, str]:
    return {"ranking": ranking, "query_domain": domain, "observation_window": window, "allocation": allocation,
            "projection": "token_topk"}  # fmt: skip


_SNAPKV = ("window_attention_maxpool", "last_w_rows")
_RECON = ("context_reconstruction", "reconstruction_pass", "prefix")
CONTRACTS: dict[str, dict[str, str]] = {
    "dense": _c("none", "none", "0", "keep_all"),
    "snapkv": _c(*_SNAPKV, "64"),
    "snapkv_w32": _c(*_SNAPKV, "32"),
    "pyramidkv": _c(*_SNAPKV, "64", "pyramid"),
    "tova": _c("last_row_attention", "row_T", "1"),
    "streaming_llm": _c("position_sinks_recent", "none", "0"),
    "knorm": _c("key_norm", "none", "0"),
    "keydiff": _c("key_diversity", "none", "0"),
    "criticalkv": _c("window_attention_x_value_norm", "last_w_rows", "64"),
    "expected_attention": _c("expected_attention", "query_statistics", "64"),
    "compactor": _c("leverage_blend_attention", "last_w_rows", "64"),
    "h2o": _c("accumulated_mass", "rows_0..T", "prefix"),
    "adakv": _c(*_SNAPKV, "64", "ada_headwise"),
    "kvzip": _c(*_RECON, "kvzip_threshold"),
    "contourkv_enforced": _c(*_SNAPKV, "32", "contour_enforced"),
    "contourkv_unenforced": _c(*_SNAPKV, "32", "contour"),
    "contourkv_recon_enforced": _c(*_RECON, "contour_enforced"),
    "contourkv_recon_unenforced": _c(*_RECON, "contour"),
    "kvzap": _c("kvzap_model", "none", "0"),
    "duo_attention": _c("duo_head_pattern", "none", "0", "duo_headwise"),
    "fastkvzip": _c("fastkvzip_gates", "none", "0", "fastkvzip_headwise"),
}


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
    record = {**CONTRACTS[method], "budget_rule": f"tokens:{int(budget)}", "capture_id": str(item_id),
              "variant": str(variant), "query_aware": bool(query_aware), "tie_break": "kvpress_topk"}  # fmt: skip
    return hashlib.sha256(json.dumps(record, sort_keys=True, separators=(",", ":")).encode("ascii")).hexdigest()
