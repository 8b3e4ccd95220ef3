"""The one table renderer: a statistics frame, shaped by a :class:`TableLayout`, written as CSV (full
precision) and Markdown (rounded; one section per population when the table has one).

A layout names the table's title, the function that shapes the statistics frame into the table's
rows and columns (the CSV), the key columns, the displayed :class:`Column` s (with their 95 %
intervals) and the notes under it.  Rounding happens in the Markdown only.  The layouts of the
paper's tables are in :mod:`trustmass.report.layouts` (one module per stage).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import polars as pl

from trustmass.plumbing.provenance import atomic_write
from trustmass.report.html_page import markdown_page

__all__ = [
    "Column",
    "TableLayout",
    "check_columns",
    "markdown",
    "order_rows",
    "populations_of",
    "value_columns",
    "write",
]

SAME_AS_PRIMARY = "Identical to the primary slice: no (model, corpus) has more documents than the slice takes."
POPULATION_TITLES = {
    "primary": "Primary slice (the first statistics.primary_docs documents of each (model, corpus))",
    "all": "All documents",
}


@dataclass(frozen=True)
class Column:
    """One displayed column: header, source column, digits (None: integer), interval columns."""

    header: str
    name: str
    digits: int | None = 3
    interval: bool = False


@dataclass(frozen=True)
class TableLayout:
    """How a statistics frame becomes a table: ``shape`` (frame -> the CSV table), ``keys`` shown
    first, ``columns`` (or ``columns_of(frame)`` when they depend on the data, e.g. one per budget)."""

    title: str
    shape: Callable[[pl.DataFrame], pl.DataFrame]
    keys: tuple[str, ...] = ()
    columns: tuple[Column, ...] = ()
    notes: tuple[str, ...] = ()
    columns_of: Callable[[pl.DataFrame], tuple[Column, ...]] | None = None
    key_headers: tuple[tuple[str, str], ...] = (("budgets", "budget"), ("budget", "s"))

    def displayed(self, frame: pl.DataFrame) -> tuple[Column, ...]:
        return self.columns_of(frame) if self.columns_of is not None else self.columns


def value_columns(columns: Sequence[Column]) -> list[str]:
    """The frame columns behind displayed columns, intervals included."""
    out = []
    for c in columns:
        out.append(c.name)
        if c.interval:
            out += [f"{c.name}_low", f"{c.name}_high"]
    return out


def check_columns(frame: pl.DataFrame, needed: Sequence[str], what: str) -> None:
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise ValueError(f"{what}: the statistics frame lacks {missing}; fix: rerun the rule that writes it")


def markdown(layout: TableLayout, frame: pl.DataFrame, kappa_threshold: float | None = None) -> str:
    """The table as Markdown: rounded; one section per population (an ``all`` section identical to
    ``primary`` is replaced by a sentence saying so)."""
    table = layout.shape(frame)
    columns = layout.displayed(frame)
    keys = dict(layout.key_headers)
    headers = [keys.get(k, k) for k in layout.keys] + [c.header for c in columns]
    if kappa_threshold is not None:
        headers = [h.replace("threshold", f"{kappa_threshold:g}") for h in headers]
    lines = [f"## {layout.title}", ""]
    for population, part in _sections(table):
        if population is not None:
            lines += [f"### {POPULATION_TITLES.get(population, population)}", ""]
        if part is None:
            lines += [SAME_AS_PRIMARY, ""]
            continue
        lines += [_md_row(headers), _md_rule(len(headers))]
        for r in part.iter_rows(named=True):
            cells = [_fmt_key(r[k]) for k in layout.keys]
            for c in columns:
                text = _fmt(r[c.name], c.digits)
                if c.interval and r.get(f"{c.name}_low") is not None:
                    text += f" [{_fmt(r[f'{c.name}_low'], c.digits)}, {_fmt(r[f'{c.name}_high'], c.digits)}]"
                cells.append(text)
            lines.append(_md_row(cells))
        lines.append("")
    for note in layout.notes:
        lines += [f"_{note}_", ""]
    return "\n".join(lines).rstrip() + "\n"


def write(
    layout: TableLayout,
    frame: pl.DataFrame,
    csv_path: str | os.PathLike,
    md_path: str | os.PathLike,
    kappa_threshold: float | None = None,
    html_path: str | os.PathLike | None = None,
) -> pl.DataFrame:
    """Write the table as CSV (full precision) and Markdown (and the Markdown as an HTML page, the view
    Snakemake's report shows), atomically; return the table.

    A frame without columns is a panel the config switched off (e.g. ``loss.probe.enabled: false``):
    an empty CSV and a Markdown page that says so."""
    if frame.width == 0:
        table = pl.DataFrame()
        text = f"# {layout.title}\n\nNot produced in this run: its stage is switched off in the configuration.\n"
    else:
        table = layout.shape(frame)
        text = markdown(layout, frame, kappa_threshold)
    with atomic_write(csv_path) as tmp:
        table.write_csv(tmp)
    with atomic_write(md_path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    if html_path is not None:
        with atomic_write(html_path) as tmp:
            tmp.write_text(markdown_page(text, layout.title), encoding="utf-8")
    return table


# ============================================================================================ helpers


def populations_of(frame: pl.DataFrame) -> list[str]:
    present = frame["population"].unique().to_list()
    return [p for p in ("primary", "all") if p in present] + sorted(p for p in present if p not in ("primary", "all"))


def order_rows(frame: pl.DataFrame, keys: Sequence[str], pooled_first: bool = False) -> pl.DataFrame:
    """Rows by population (primary first), then by ``keys`` (nulls first: pooled rows lead)."""
    rank = pl.col("population").replace_strict({"primary": 0, "all": 1}, default=2, return_dtype=pl.Int64)
    sort_keys = [rank.alias("_p")]
    for k in keys:
        sort_keys.append(pl.col(k).fill_null(-1) if frame.schema[k] != pl.Utf8 else pl.col(k))
    if pooled_first and "budget" in frame.columns:
        sort_keys.append(pl.col("budget").fill_null(-1))
    return frame.sort(sort_keys)


def _sections(table: pl.DataFrame):
    """(population, rows) per population; rows are None for an ``all`` that repeats ``primary``;
    one section (population None) for a table without populations."""
    if "population" not in table.columns:
        yield None, table
        return
    parts = {p: table.filter(pl.col("population") == p).drop("population") for p in populations_of(table)}
    for population, part in parts.items():
        if population == "all" and "primary" in parts and part.equals(parts["primary"]):
            yield population, None
        else:
            yield population, part


def _fmt_key(x) -> str:
    return "–" if x is None else str(x)


def _fmt(x, digits: int | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, float) and math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if isinstance(x, str):
        return x
    if digits is None:
        return f"{round(x):,}"
    return f"{x:.{digits}f}"


def _md_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def _md_rule(n: int) -> str:
    return "|" + "|".join(["---"] * n) + "|"
