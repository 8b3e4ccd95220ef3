"""Checks that a producer's declarations (HeadlineValue) fit the frames it builds (shared by the producers' tests):
``declared_rows`` reads a missing column as "no estimate" and writes no row, so a misspelt column would silently
drop a claim value; and every estimate it writes lies in the declaration's domain."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import polars as pl

from trustmass.report.headline import HeadlineValue, rows_from_frame


def assert_columns_exist(specs: Sequence[HeadlineValue], frames: Mapping[str, pl.DataFrame]) -> None:
    """Every column a declaration names -- estimate, interval, count, keys, filter, flag, context, population -- is in
    its frame; every declaration's frame was built."""
    for spec in specs:
        assert spec.source in frames, (spec.claim, spec.value, spec.source, sorted(frames))
        columns = set(frames[spec.source].columns)
        wanted = {spec.column, "population", *spec.keys, *spec.where, *spec.context}
        wanted |= {spec.n_column} if spec.n_column != "n" else set()  # a frame may count nothing (a timing)
        wanted |= {f"{spec.column}_low", f"{spec.column}_high"} if spec.ci else set()
        wanted |= {spec.flag} if spec.flag else set()
        assert wanted <= columns, (spec.claim, spec.value, spec.source, sorted(wanted - columns))


def assert_in_domain(specs: Sequence[HeadlineValue], frames: Mapping[str, pl.DataFrame], slack: float = 1e-9) -> int:
    """Every estimate a declaration reads lies in its domain (an infinite one only where the domain or the row's
    flag allows it); returns how many were checked."""
    checked = 0
    for spec in specs:
        frame = frames.get(spec.source)
        if frame is None or frame.height == 0:
            continue
        for col, allowed in spec.where.items():
            frame = frame.filter(pl.col(col).is_in(list(allowed) if isinstance(allowed, (tuple, list)) else [allowed]))
        for r in rows_from_frame(spec, frame):
            low, high = spec.domain
            x = r["estimate"]
            if math.isinf(x) and r["uninformative"]:
                continue
            assert low - slack <= x <= high + slack, (spec.claim, spec.value, r["by_value"], x, spec.domain)
            checked += 1
    return checked
