"""Tables 1, 2, 6 and 8 of the paper as CSV (full precision) and Markdown (rounded), from the summary
frames of :mod:`trustmass.report.ceiling_stats`.

Each ``tableN(summary)`` is a pure function returning the table in the paper's layout as a polars
frame (one row per table row, both populations, intervals in ``*_low``/``*_high`` columns);
:func:`markdown` renders it, rounded, with one section per population; :func:`write` writes both
files atomically.  Rounding happens in the Markdown only.

- Table 1 (native budget): per model, the median balancing share ``1 - es_bal/es_top``, the share of
  rows where balancing beats top-mass by >= 10%, and the remaining ``2 D m_s`` cap as a share of its
  ``s = 8`` value, over every budget (the enumerated ones left of the paper's vertical rule); the
  last row pools the models.
- Table 2 (content): per (model, corpus), budgets pooled and per budget: label share, 0.9-form share,
  AUC of the dropped mass, median ``kappa_hat``.
- Table 6 (panel): per model: AUC at s = 8, edge/interior label-rate ratio, rho_depth,
  rho(Phi, ES_pool), median ``kappa_hat_bal``.
- Table 8 (per-budget profile): per (model, budget): the columns of the paper's Table 8 plus the
  coverage, swaps and group-vote columns.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import polars as pl

from trustmass.plumbing.provenance import atomic_write

__all__ = ["TABLES", "Column", "markdown", "table1", "table2", "table6", "table8", "write"]

POOLED = "(pooled)"  # the model label of rows pooled over models (as in trustmass.report.ceiling_stats)
SAME_AS_PRIMARY = "Identical to the primary slice: no (model, corpus) has more documents than the slice takes."
POPULATION_TITLES = {"primary": "Primary slice (the first statistics.primary_docs documents of each (model, corpus))", "all": "All documents"}


@dataclass(frozen=True)
class Column:
    """One displayed column: header, source column, digits (None: integer), interval columns."""

    header: str
    name: str
    digits: int | None = 3
    interval: bool = False


def _check(summary: pl.DataFrame, needed: Sequence[str], what: str) -> None:
    missing = [c for c in needed if c not in summary.columns]
    if missing:
        raise ValueError(f"{what}: the summary frame lacks {missing}; fix: rerun the summaries rule (trustmass.report.ceiling_stats)")


def _with_intervals(columns: Sequence[Column]) -> list[str]:
    out = []
    for c in columns:
        out.append(c.name)
        if c.interval:
            out += [f"{c.name}_low", f"{c.name}_high"]
    return out


# ============================================================================================ Table 1

TABLE1_ROWS = (
    ("median balancing share 1 − es(A_bal)/es(A*_s)", "median_balancing_share"),
    ("share of rows with es(A_bal) ≤ 0.9·es(A*_s)", "balancing_beats_10pct_share"),
    ("remaining 2·D·m̄_s as a share of its s = 8 value (median over rows)", "median_mass_share_of_map"),
)


def table1(summary: pl.DataFrame) -> pl.DataFrame:
    """Table 1 from the ``table1`` summary: rows (population, model, statistic), one column per budget."""
    _check(summary, ["population", "model", "budget", "enumerated"] + [c for _, c in TABLE1_ROWS], "table 1")
    budgets = sorted(summary["budget"].unique().to_list())
    rows = []
    for population in _populations(summary):
        pop = summary.filter(pl.col("population") == population)
        models = sorted(m for m in pop["model"].unique().to_list() if m != POOLED)
        for model in [*models, POOLED]:
            part = pop.filter(pl.col("model") == model)
            if part.height == 0:
                continue
            wanted = TABLE1_ROWS[2:] if model == POOLED else TABLE1_ROWS
            for label, col in wanted:
                by_budget = dict(zip(part["budget"].to_list(), part[col].to_list()))
                rows.append({"population": population, "model": model, "statistic": label,
                             **{f"s{b}": by_budget.get(b) for b in budgets}})  # fmt: skip
    schema = {"population": pl.Utf8, "model": pl.Utf8, "statistic": pl.Utf8, **{f"s{b}": pl.Float64 for b in budgets}}
    return pl.DataFrame(rows, schema=schema, strict=False) if rows else pl.DataFrame(schema=schema)


def _table1_markdown(table: pl.DataFrame, summary: pl.DataFrame) -> list[str]:
    native = set(summary.filter(~pl.col("enumerated"))["budget"].to_list())
    budget_cols = [c for c in table.columns if c.startswith("s") and c[1:].isdigit()]
    headers = ["model", "statistic"] + [f"s = {c[1:]}" + (" ‡" if int(c[1:]) in native else "") for c in budget_cols]
    lines = []
    for population, part in _sections(table):
        lines += [f"### {POPULATION_TITLES.get(population, population)}", ""]
        if part is None:
            lines += [SAME_AS_PRIMARY, ""]
            continue
        lines += [_md_row(headers), _md_rule(len(headers))]
        for r in part.iter_rows(named=True):
            lines.append(_md_row([r["model"], r["statistic"]] + [_fmt(r[c], 3) for c in budget_cols]))
        lines.append("")
    lines.append("‡ native (deployed) budgets: no enumeration; right of the paper's vertical rule.")
    return lines


# ============================================================================================ Table 2

TABLE2_COLUMNS = (
    Column("n", "n", None),
    Column("docs", "n_docs", None),
    Column("share κ̂ > threshold", "label_share", 3, True),
    Column("share ES ≤ 0.9·es(A*)", "share90", 3),
    Column("AUC(m̄_s)", "auc", 3, True),
    Column("median κ̂", "median_kappa_hat", 3, True),
)


def table2(summary: pl.DataFrame) -> pl.DataFrame:
    """Table 2 from the ``table2`` summary: rows (population, model, corpus, budgets)."""
    cols = _with_intervals(TABLE2_COLUMNS)
    _check(summary, ["population", "model", "corpus", "budget", *cols], "table 2")
    out = summary.with_columns(budgets=pl.when(pl.col("budget").is_null()).then(pl.lit("pooled")).otherwise(pl.col("budget").cast(pl.Utf8)))
    return _order(out, ["model", "corpus"], pooled_first=True).select(["population", "model", "corpus", "budgets", *cols])


# ============================================================================================ Table 6

TABLE6_COLUMNS = (
    Column("group size", "group_size", None),
    Column("layers", "n_layers", None),
    Column("n (s = 8)", "n", None),
    Column("AUC(m̄_s) at s = 8", "auc", 3, True),
    Column("edge/int", "edge_int_ratio", 2, True),
    Column("ρ_depth", "rho_depth", 2),
    Column("ρ(Φ, ES_pool) pooled", "rho_phi_es_pool", 2),
    Column("median κ̂_bal (pooled)", "median_kappa_hat_bal", 2, True),
)


def table6(summary: pl.DataFrame) -> pl.DataFrame:
    """Table 6 from the ``table6`` summary: one row per (population, model)."""
    cols = _with_intervals(TABLE6_COLUMNS)
    _check(summary, ["population", "model", "budget", *cols], "table 6")
    return _order(summary, ["model"]).select(["population", "model", "budget", *cols])


# ============================================================================================ Table 8

TABLE8_COLUMNS = (
    Column("n", "n", None),
    Column("median κ̂", "median_kappa_hat", 3),
    Column("share", "share90", 3),
    Column("median π̂", "median_pi_hat", 2),
    Column("p99 π̂", "p99_pi_hat", 1),
    Column("ρ(Φ, ES_pool)", "rho_phi_es_pool", 2),
    Column("geo / top", "median_geo_ratio", 2),
    Column("lev / top", "median_lev_ratio", 1),
    Column("geo / top in C_s", "median_geo_pool_ratio", 2),
    Column("lev / top in C_s", "median_lev_pool_ratio", 1),
    Column("top attains ES_pool", "top_attains_share", 3),
    Column("κ̂ ≤ 1.5", "coverage_1_5", 3),
    Column("κ̂ ≤ 2", "coverage_2", 3),
    Column("median swaps", "median_n_swaps", 1),
    Column("vote / top", "median_vote_over_top", 3),
    Column("vote / ES_pool", "median_vote_over_pool", 3),
    Column("vote degrades", "vote_degraded_share", 3),
    Column("vote improves", "vote_improved_share", 3),
)


def table8(summary: pl.DataFrame) -> pl.DataFrame:
    """Table 8 from the ``table8`` summary: one row per (population, model, budget)."""
    cols = _with_intervals(TABLE8_COLUMNS)
    _check(summary, ["population", "model", "budget", "group_size", *cols], "table 8")
    return _order(summary, ["model", "budget"]).select(["population", "model", "budget", "group_size", *cols])


# ============================================================================================ rendering


@dataclass(frozen=True)
class _Spec:
    title: str
    build: Callable[[pl.DataFrame], pl.DataFrame]
    keys: tuple[str, ...]
    columns: tuple[Column, ...]
    notes: tuple[str, ...]


TABLES: dict[str, _Spec] = {
    "table1": _Spec(
        "Table 1 — native budget: balancing's share of the gap through s = 256", table1, (), (),
        ("Balancing's share is a lower bound on the closable share c at every budget (one convention throughout).",),
    ),
    "table2": _Spec(
        "Table 2 — content diversity: prose, code, French", table2, ("model", "corpus", "budgets"), TABLE2_COLUMNS,
        ("Label: κ̂ > labels.kappa_threshold. Intervals: 95% document-cluster bootstrap.",
         "\"pooled\" pools the enumerated budgets (the paper does not say whether Table 2 pools them).",),
    ),
    "table6": _Spec(
        "Table 6 — the panel", table6, ("model",), TABLE6_COLUMNS,
        ("AUC, edge/int and ρ_depth at the map budget (s = 8); ρ(Φ, ES_pool) and κ̂_bal pooled over the enumerated budgets.",
         ("Edges: the first and last statistics.edge_layers layers; edge/int intervals resample cells (layer, head), "
          "the others documents."),),
    ),
    "table8": _Spec(
        "Table 8 — per-budget profile", table8, ("model", "budget"), TABLE8_COLUMNS,
        (("share: ES_pool ≤ 0.9·es(A*_s). geo/lev: median es(A^geo)/es(A*), es(A^lev)/es(A*) over all keys and "
          "restricted to the candidate set C_s. vote: the group vote at this budget (median es_vote/es(A*), "
          "es_vote/ES_pool; fractions degraded and improved)."),),
    ),
}  # fmt: skip


def markdown(name: str, summary: pl.DataFrame, kappa_threshold: float | None = None) -> str:
    """The table ``name`` rendered as Markdown (rounded; one section per population; an ``all``
    section identical to ``primary`` is replaced by a sentence saying so)."""
    spec = TABLES[name]
    table = spec.build(summary)
    lines = [f"## {spec.title}", ""]
    if name == "table1":
        lines += _table1_markdown(table, summary)
    else:
        headers = [_header(k) for k in spec.keys] + [c.header for c in spec.columns]
        if kappa_threshold is not None:
            headers = [h.replace("threshold", f"{kappa_threshold:g}") for h in headers]
        for population, part in _sections(table):
            lines += [f"### {POPULATION_TITLES.get(population, population)}", ""]
            if part is None:
                lines += [SAME_AS_PRIMARY, ""]
                continue
            lines += [_md_row(headers), _md_rule(len(headers))]
            for r in part.iter_rows(named=True):
                cells = [str(r[k]) for k in spec.keys]
                for c in spec.columns:
                    text = _fmt(r[c.name], c.digits)
                    if c.interval and r.get(f"{c.name}_low") is not None:
                        text += f" [{_fmt(r[f'{c.name}_low'], c.digits)}, {_fmt(r[f'{c.name}_high'], c.digits)}]"
                    cells.append(text)
                lines.append(_md_row(cells))
            lines.append("")
    for note in spec.notes:
        lines += [f"_{note}_", ""]
    return "\n".join(lines).rstrip() + "\n"


def write(name: str, summary: pl.DataFrame, csv_path: str | os.PathLike, md_path: str | os.PathLike,
          kappa_threshold: float | None = None) -> pl.DataFrame:  # fmt: skip
    """Write table ``name`` as CSV (full precision) and Markdown, atomically; return the table."""
    table = TABLES[name].build(summary)
    with atomic_write(csv_path) as tmp:
        table.write_csv(tmp)
    text = markdown(name, summary, kappa_threshold)
    with atomic_write(md_path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return table


# ============================================================================================ helpers


def _populations(frame: pl.DataFrame) -> list[str]:
    present = frame["population"].unique().to_list()
    return [p for p in ("primary", "all") if p in present] + sorted(p for p in present if p not in ("primary", "all"))


def _order(frame: pl.DataFrame, keys: Sequence[str], pooled_first: bool = False) -> pl.DataFrame:
    rank = pl.col("population").replace_strict({"primary": 0, "all": 1}, default=2, return_dtype=pl.Int64)
    sort_keys = [rank.alias("_p")]
    for k in keys:
        sort_keys.append(pl.col(k).fill_null(-1) if frame.schema[k] != pl.Utf8 else pl.col(k))
    if pooled_first and "budget" in frame.columns:
        sort_keys.append(pl.col("budget").fill_null(-1))
    return frame.sort(sort_keys)


def _sections(table: pl.DataFrame):
    """(population, rows) per population; rows are None for an ``all`` that repeats ``primary``."""
    parts = {p: table.filter(pl.col("population") == p).drop("population") for p in _populations(table)}
    for population, part in parts.items():
        if population == "all" and "primary" in parts and part.equals(parts["primary"]):
            yield population, None
        else:
            yield population, part


def _header(key: str) -> str:
    return {"budgets": "budget", "budget": "s"}.get(key, key)


def _fmt(x, digits: int | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if isinstance(x, float) and math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if digits is None:
        return f"{round(x):,}"
    return f"{x:.{digits}f}"


def _md_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def _md_rule(n: int) -> str:
    return "|" + "|".join(["---"] * n) + "|"
