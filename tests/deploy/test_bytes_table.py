"""The bytes table: fractions of the full cache and ratios to SnapKV's bytes, per item then summarised."""

import polars as pl
import pytest

from trustmass.deploy.bytes_table import bytes_summary

FULL = 1000


def _rows():
    """Two items; SnapKV holds 40 and 50 bytes, AdaKV as shipped the full cache plus a 10-byte index."""
    out = []
    for item, snap in (("a", 40), ("b", 50)):
        for method, shipped, ragged, lo, hi in (
            ("snapkv", snap, snap, 8, 8),
            ("adakv", FULL + 10, snap, 3, 15),
            ("contourkv", 2 * snap, 0.5 * snap, 4, 12),
        ):
            for storage, measured in (("as_shipped", shipped), ("ragged", ragged)):
                out.append(
                    dict(
                        model="m",
                        item_id=item,
                        length=1024,
                        budget=8,
                        method=method,
                        storage=storage,
                        bytes_measured=measured,
                        bytes_full=FULL,
                        kept_min_head=lo,
                        kept_max_head=hi,
                    )
                )
    return pl.DataFrame(out)


def _row(table, method, storage):
    return table.filter((pl.col("method") == method) & (pl.col("storage") == storage)).row(0, named=True)


def test_ratios_and_fractions_per_item_then_summarised():
    table = bytes_summary(_rows())
    snap = _row(table, "snapkv", "as_shipped")
    assert snap["ratio_to_snapkv_median"] == snap["ratio_to_snapkv_min"] == snap["ratio_to_snapkv_max"] == 1.0
    assert snap["frac_full_median"] == pytest.approx(0.045) and snap["n_items"] == 2
    ada = _row(table, "adakv", "as_shipped")
    assert ada["frac_full_min"] == pytest.approx(1.01)  # the full cache and the index
    assert ada["ratio_to_snapkv_min"] == pytest.approx(1010 / 50) and ada["ratio_to_snapkv_max"] == pytest.approx(
        1010 / 40
    )
    assert _row(table, "adakv", "ragged")["ratio_to_snapkv_median"] == 1.0
    contour = _row(table, "contourkv", "ragged")
    assert contour["ratio_to_snapkv_median"] == pytest.approx(0.5)
    assert (contour["kept_min_head"], contour["kept_max_head"]) == (4, 12)
    assert table.height == 6


def test_every_row_needs_its_snapkv_reference():
    rows = _rows().filter(
        ~((pl.col("method") == "snapkv") & (pl.col("item_id") == "b") & (pl.col("storage") == "ragged"))
    )
    with pytest.raises(ValueError, match="no snapkv row.*add snapkv to deploy.methods"):
        bytes_summary(rows)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda f: f.drop("bytes_full"), "lack column"),
        (lambda f: f.with_columns(storage=pl.lit("masked")), "not one of as_shipped, ragged, layer_padded"),
        (lambda f: pl.concat([f, f.head(1)]), "repeat"),
        (lambda f: f.with_columns(bytes_full=pl.lit(0)), "positive"),
    ],
)
def test_bad_ledger_rows_are_named(change, message):
    with pytest.raises(ValueError, match=message):
        bytes_summary(change(_rows()))
