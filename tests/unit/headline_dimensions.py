"""The dimension rules every producer's headline rows keep (shared by the producers' tests)."""

from __future__ import annotations

import polars as pl

from trustmass.report.claims.data import claim
from trustmass.report.claims.model import DIMENSIONS


def by_keys(row: dict) -> list[str]:
    return str(row["by_key"]).split(",") if row["by_key"] else []


def assert_dimensions(frame: pl.DataFrame) -> None:
    """Every row's group names only known dimensions (``DIMENSIONS``) and carries each dimension its
    claim value's ``where`` filters on (a paper model matches through the row's models: not needed)."""
    assert frame.height
    for r in frame.iter_rows(named=True):
        keys = by_keys(r)
        assert set(keys) <= DIMENSIONS, (r["claim_id"], r["value_name"], sorted(set(keys) - DIMENSIONS))
        where = set(claim(r["claim_id"]).value(r["value_name"]).where) - {"model"}
        assert where <= set(keys), (r["claim_id"], r["value_name"], r["by_key"], sorted(where))


def rows_of(frame: pl.DataFrame, claim_id: int, value: str, **filters) -> pl.DataFrame:
    out = frame.filter(pl.col("claim_id") == claim_id, pl.col("value_name") == value)
    for column, wanted in filters.items():
        out = out.filter(pl.col(column) == wanted)
    return out
