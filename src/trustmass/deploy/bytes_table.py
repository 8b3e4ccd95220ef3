"""The bytes table (paper §7.2, claims 3, 59, 61, 63, 113-115): what each method's cache holds.

Input: ledger rows, one per (model, item, budget, method, storage) with ``bytes_measured``,
``bytes_full``, ``kept_min_head`` and ``kept_max_head`` (``storage``: ``as_shipped`` -- the cache
as the library leaves it, masks and indices included --, ``ragged``, or the ``layer_padded`` counterfactual).  Every row is divided by
SnapKV's row of the same model, item, budget and storage (SnapKV shrinks the cache to exactly s per
head, the paper's reference), then summarised per (model, length, budget, method, storage):
the fraction of the full cache and the ratio to SnapKV as median, min and max over items, and the
per-head kept counts as the min and max over items.
"""

from __future__ import annotations

import polars as pl

__all__ = ["REFERENCE", "STORAGES", "bytes_summary"]

REFERENCE = "snapkv"
#: as_shipped: the library's own cache; ragged: one tensor per head; layer_padded: the counterfactual of one
#: tensor per layer with as many slots as its widest head (what the shared pipeline would hold)
STORAGES = ("as_shipped", "ragged", "layer_padded")
_REQUIRED = (
    "model",
    "item_id",
    "length",
    "budget",
    "method",
    "storage",
    "bytes_measured",
    "bytes_full",
    "kept_min_head",
    "kept_max_head",
)
_PAIR = ["model", "item_id", "budget", "storage"]


def _check(rows: pl.DataFrame) -> None:
    missing = [c for c in _REQUIRED if c not in rows.columns]
    if missing:
        raise ValueError(f"ledger rows lack column(s) {missing}: write them with deploy.ledger.ledger_row")
    storages = set(rows["storage"].unique().to_list()) - set(STORAGES)
    if storages:
        raise ValueError(f"storage {sorted(storages)} is not one of {', '.join(STORAGES)}")
    if rows.select(_PAIR + ["method"]).is_duplicated().any():
        raise ValueError("ledger rows repeat a (model, item_id, budget, storage, method): one measurement each")
    if (rows["bytes_full"] <= 0).any():
        raise ValueError("bytes_full must be positive")


def bytes_summary(rows: pl.DataFrame) -> pl.DataFrame:
    """One row per (model, length, budget, method, storage); see the module docstring."""
    _check(rows)
    reference = rows.filter(pl.col("method") == REFERENCE).select(
        _PAIR + [pl.col("bytes_measured").alias("snapkv_bytes")]
    )
    joined = rows.join(reference, on=_PAIR, how="left")
    unmatched = joined.filter(pl.col("snapkv_bytes").is_null()).select(_PAIR).unique()
    if unmatched.height:
        first = unmatched.row(0, named=True)
        raise ValueError(
            f"no {REFERENCE} row for {first} ({unmatched.height} such): the bytes table divides by SnapKV's "
            f"bytes; add {REFERENCE} to deploy.methods"
        )
    joined = joined.with_columns(
        frac_full=pl.col("bytes_measured") / pl.col("bytes_full"),
        ratio_to_snapkv=pl.col("bytes_measured") / pl.col("snapkv_bytes"),
    )
    return (
        joined.group_by(["model", "length", "budget", "method", "storage"], maintain_order=True)
        .agg(
            n_items=pl.len(),
            bytes_median=pl.col("bytes_measured").median(),
            frac_full_median=pl.col("frac_full").median(),
            frac_full_min=pl.col("frac_full").min(),
            frac_full_max=pl.col("frac_full").max(),
            ratio_to_snapkv_median=pl.col("ratio_to_snapkv").median(),
            ratio_to_snapkv_min=pl.col("ratio_to_snapkv").min(),
            ratio_to_snapkv_max=pl.col("ratio_to_snapkv").max(),
            kept_min_head=pl.col("kept_min_head").min(),
            kept_max_head=pl.col("kept_max_head").max(),
        )
        .sort(["model", "length", "budget", "storage", "method"])
    )
