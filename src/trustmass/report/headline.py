"""The one headline schema: every regenerated claim value, from every stage, as rows of one frame.

Each stage's statistics rule writes ``results/stats/headline_<stage>.parquet`` with exactly
:data:`HEADLINE_SCHEMA`; the claims report reads them all and judges each row against the paper's
value (:mod:`trustmass.report.claims.verdicts`).  A row is one estimate of one claim value for one
group and population:

- ``claim_id``, ``value_name``: the value in ``data/claims.yaml`` (checked to exist when the row is made);
- ``by_key`` / ``by_value``: the group's dimensions and values, comma-separated (``"model,budget"`` /
  ``"smollm2-135m,8"``); null for a study-wide value;
- ``population``: ``primary`` (the first ``statistics.primary_docs`` documents) or ``all``;
- ``estimate`` with its 95 % interval ``low``/``high`` (null without one), in natural units (fractions
  stay fractions where the paper states percent: the report scales);
- ``n_instances`` (records behind the estimate), ``n_docs``, ``models`` (run models, comma-separated),
  ``n_excluded`` (degenerate records left out), ``source`` (the frame and column it was read from);
- ``context``: JSON of the instance quantities a formula value is evaluated at (``{"N": 8, "s": 4}``),
  null otherwise;
- ``uninformative``: why the estimate cannot speak to the claim although it was computed (a degenerate
  input the producer can see: hit rates all 0 or all 100, an infinite Wilson cap, a probe that chose
  alpha = 0, both compared numbers 0), null otherwise.  The claims report shows such a row and
  judges nothing on it.

:class:`HeadlineValue` declares where a value is read from in a statistics frame -- its frame, column,
filter, grouping, interval, degenerate-input flag and the values the statistic can take at all -- so adding a
claim value is one declaration; :func:`declared_rows` reads every declaration of a stage from its frames,
:func:`rows_from_frame` one declaration from one frame; :func:`row` makes one row by hand (the theory's
worked examples only).  ``tests/unit/test_can_fail.py`` builds, for every declaration, a frame on which the
paper's statement is false and checks the answer flips.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from trustmass.report.claims.data import claim as claim_of

__all__ = [
    "HEADLINE_SCHEMA",
    "HeadlineValue",
    "check_value",
    "declared_rows",
    "headline_frame",
    "row",
    "rows_from_frame",
]

HEADLINE_SCHEMA = {
    "claim_id": pl.Int64,
    "value_name": pl.Utf8,
    "by_key": pl.Utf8,
    "by_value": pl.Utf8,
    "population": pl.Utf8,
    "estimate": pl.Float64,
    "low": pl.Float64,
    "high": pl.Float64,
    "n_instances": pl.Int64,
    "n_docs": pl.Int64,
    "models": pl.Utf8,
    "n_excluded": pl.Int64,
    "source": pl.Utf8,
    "context": pl.Utf8,
    "uninformative": pl.Utf8,
}


@dataclass(frozen=True)
class HeadlineValue:
    """One claim value and where a statistics frame holds it.

    ``source`` names the frame, ``column`` the estimate (``<column>_low``/``_high`` its interval when
    ``ci``); ``keys`` are the frame columns that label a row's group (``by_key``); ``where`` filters
    the frame first (column -> allowed values; how symbolic values such as "map" resolve is the
    producing module's business); ``at`` names dimensions the whole frame is computed at, with no
    column for them (the map budget, budgets ``"pooled"``), added to every row's group after ``keys``;
    ``n_column`` counts the records behind the estimate; ``flag`` names the column that says why a row's
    estimate cannot speak to the claim (a degenerate input: both arms of a comparison at the floor), null where
    it can; ``context`` the columns a formula bound is evaluated at (``N``, ``s``, ...); ``domain`` the values the
    statistic can take on any data this configuration allows (a share lies in [0, 1], a count of conditions up to
    the run's count): a claim whose statement covers the whole domain cannot fail and must say so in the claims
    file (``by_construction`` or ``configured``).
    """

    claim: int
    value: str
    source: str
    column: str
    keys: tuple[str, ...]
    where: Mapping[str, Any] = field(default_factory=dict)
    ci: bool = False
    n_column: str = "n"
    at: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""
    flag: str | None = None
    context: tuple[str, ...] = ()
    domain: tuple[float, float] = (-math.inf, math.inf)


def check_value(claim: int, value: str) -> None:
    """KeyError naming the claim's values when ``data/claims.yaml`` has no such value."""
    claim_of(claim).value(value)


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def row(
    claim: int,
    value: str,
    estimate: float | None,
    population: str,
    *,
    by: Mapping[str, Any] | None = None,
    low: float | None = None,
    high: float | None = None,
    n_instances: int | None = None,
    n_docs: int | None = None,
    models: str | None = None,
    n_excluded: int | None = None,
    source: str = "",
    context: Mapping[str, float] | None = None,
    uninformative: str | None = None,
) -> dict:
    """One headline row (a dict in :data:`HEADLINE_SCHEMA`); ``by`` is the group, in order."""
    check_value(claim, value)
    by = dict(by or {})
    return {
        "claim_id": claim,
        "value_name": value,
        "by_key": ",".join(by) or None,
        "by_value": ",".join(str(v) for v in by.values()) or None,
        "population": population,
        "estimate": None if _missing(estimate) else float(estimate),
        "low": None if _missing(low) else float(low),
        "high": None if _missing(high) else float(high),
        "n_instances": n_instances,
        "n_docs": n_docs,
        "models": models,
        "n_excluded": n_excluded,
        "source": source,
        "context": None if context is None else json.dumps(dict(context), sort_keys=True),
        "uninformative": uninformative or None,
    }


def rows_from_frame(spec: HeadlineValue, frame: pl.DataFrame, source: str | None = None) -> list[dict]:
    """A row per frame row with an estimate in ``spec.column`` (the frame already filtered by ``where``).

    ``models`` is the row's ``model`` when the frame has one (and it is not the pooled label),
    else its ``models`` column.
    """
    check_value(spec.claim, spec.value)
    out = []
    sort_cols = [c for c in ("population", *spec.keys) if c in frame.columns]
    if sort_cols:
        frame = frame.sort(sort_cols, descending=[c == "population" for c in sort_cols], nulls_last=True)
    for rec in frame.iter_rows(named=True):
        est = rec.get(spec.column)
        if _missing(est):
            continue
        model = rec.get("model")
        models = model if model is not None and not str(model).startswith("(") else rec.get("models")
        out.append(
            row(
                spec.claim,
                spec.value,
                est,
                rec["population"],
                by={**{k: rec[k] for k in spec.keys}, **spec.at},
                low=rec.get(f"{spec.column}_low") if spec.ci else None,
                high=rec.get(f"{spec.column}_high") if spec.ci else None,
                n_instances=rec.get(spec.n_column),
                n_docs=rec.get("n_docs"),
                models=models,
                n_excluded=rec.get("n_degenerate"),
                source=source or f"{spec.source}.{spec.column}",
                context={k: rec[k] for k in spec.context} if spec.context else None,
                uninformative=rec.get(spec.flag) if spec.flag else None,
            )
        )
    return out


def _filtered(spec: HeadlineValue, frame: pl.DataFrame) -> pl.DataFrame:
    """The frame rows meeting the declaration's literal ``where`` (a column -> one value or a tuple of them)."""
    for col, allowed in spec.where.items():
        values = list(allowed) if isinstance(allowed, (tuple, list)) else [allowed]
        frame = frame.filter(pl.col(col).is_in(values))
    return frame


def declared_rows(specs: Sequence[HeadlineValue], frames: Mapping[str, pl.DataFrame]) -> list[dict]:
    """The rows of every declaration, each read from its frame (filtered by its literal ``where``); a frame the
    run did not make (a stage switched off) gives no rows.  Symbolic ``where`` values (the map budget) are
    resolved by the producing module before it calls this."""
    rows: list[dict] = []
    for spec in specs:
        frame = frames.get(spec.source)
        if frame is None or frame.height == 0:
            continue
        rows += rows_from_frame(spec, _filtered(spec, frame))
    return rows


def headline_frame(rows: Sequence[dict]) -> pl.DataFrame:
    """Rows as the headline frame (exactly :data:`HEADLINE_SCHEMA`)."""
    for r in rows:
        extra = set(r) - set(HEADLINE_SCHEMA)
        if extra:
            raise KeyError(f"headline row has columns outside the schema: {sorted(extra)}")
    if not rows:
        return pl.DataFrame(schema=HEADLINE_SCHEMA)
    return pl.DataFrame([{k: r.get(k) for k in HEADLINE_SCHEMA} for r in rows], schema=HEADLINE_SCHEMA, strict=False)
