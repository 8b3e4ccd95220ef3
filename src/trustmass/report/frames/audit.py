"""Statistics of the selector audit (spec §5, Figure 3, claims 48-51, 105-109).

Input: the audit records of :mod:`trustmass.audit.records` (every shard, concatenated).  Output frames:

* ``audit_table``: per (population, model, rule, budget) -- and a pooled row per (model, rule) over
  the enumerated budgets (``budget`` null) -- n, n_docs, median excess (CI), share above
  ``kappa_threshold``·ES_pool (CI), AUC of top-mass's dropped mass for the rule's label (CI),
  Spearman(dropped mass, excess) and Spearman(dropped mass, es_rule - ES_pool), median cache-faithful excess,
  median es_rule / es_top.  At the
  native budgets (no ES_pool) the label is ``es_rule > thr·es_bal`` [C] and the excess columns are
  null; ``median_over_top`` carries SnapKV-vs-top-mass through s = 256; ``contracts`` says whether the
  rule compares with top-mass like for like (ranking scalar alone) or which contract fields it crosses.  The rule ``certificate``
  scores dropped mass against top-mass's own label ``kappa_hat > thr`` (Figure 3's reference row).
* ``fig3_roc``: ROC points per (model, rule) at the ROC budget (first model only is plotted).
* ``headline_audit``: the audit claims' rows in the one headline schema (:mod:`trustmass.report.headline`).

:func:`statistics` is the rule ``audit_statistics``.  Records are restricted to the headline population (the audit
stage only scores its documents);
intervals are document-cluster bootstraps of the statistics engine (:mod:`trustmass.report.engine`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from trustmass.core.selectors.registry import AUDITED, FIG3_RULES, REGISTRY
from trustmass.core.selectors.run_contract import contrast
from trustmass.core.stats import roc_curve
from trustmass.plumbing.rule_io import read_parquets
from trustmass.report.engine import (
    GroupStatistics,
    HeadlinePopulation,
    StatisticsSettings,
    frame_from_rows,
    groups,
    populations,
    with_document_columns,
)
from trustmass.report.headline import HeadlineValue, headline_frame, rows_from_frame
from trustmass.report.statistics import Frames, Inputs, bootstrap_seeds

__all__ = [
    "AuditStatisticsSettings",
    "audit_table",
    "fig3_roc",
    "first_budget_clearing",
    "headline",
    "prepare",
    "statistics",
    "summarize",
]

CERTIFICATE = "certificate"
#: the budget of Figure 3's ROC panel and claim 48
ROC_BUDGET = 8

AUDIT_TABLE_SCHEMA = {
    "population": pl.Utf8,
    "model": pl.Utf8,
    "rule": pl.Utf8,
    "budget": pl.Int64,
    "enumerated": pl.Boolean,
    "n": pl.Int64,
    "n_docs": pl.Int64,
    "n_degenerate": pl.Int64,
    "median_excess": pl.Float64,
    "median_excess_low": pl.Float64,
    "median_excess_high": pl.Float64,
    "label_share": pl.Float64,
    "label_share_low": pl.Float64,
    "label_share_high": pl.Float64,
    "auc": pl.Float64,
    "auc_low": pl.Float64,
    "auc_high": pl.Float64,
    "auc_n_pos": pl.Int64,
    "spearman_dm_excess": pl.Float64,
    "spearman_dm_abs_excess": pl.Float64,
    "median_excess_cf": pl.Float64,
    "n_cf": pl.Int64,
    "median_over_top": pl.Float64,
    "share_excess_below_1": pl.Float64,
    "n_below_1_in_pool": pl.Int64,
    "contracts": pl.Utf8,
}
ROC_SCHEMA = {
    "model": pl.Utf8,
    "rule": pl.Utf8,
    "order": pl.Int64,
    "budget": pl.Int64,
    "fpr": pl.Float64,
    "tpr": pl.Float64,
    "auc": pl.Float64,
}


@dataclass(frozen=True)
class AuditStatisticsSettings:
    summary: StatisticsSettings = StatisticsSettings()
    roc_budget: int = ROC_BUDGET

    @classmethod
    def from_config(cls, config) -> AuditStatisticsSettings:
        return cls(summary=StatisticsSettings.from_config(config))


def prepare(records: pl.DataFrame, settings: AuditStatisticsSettings = AuditStatisticsSettings()) -> pl.DataFrame:
    """Records + cluster, primary, degenerate (es_top = 0 or ES_pool = 0), label as float-free bool."""
    s = settings.summary
    f = records.with_columns(
        [pl.col(c).cast(pl.Float64).fill_nan(None) for c, t in records.schema.items() if t in (pl.Float32, pl.Float64)]
    )
    return with_document_columns(f, s.primary_docs).with_columns(
        degenerate=(pl.col("es_top").abs() <= 1e-12 * pl.col("D").abs())
        | (pl.col("enumerated") & pl.col("excess").is_infinite()).fill_null(False)
        | pl.col("es_rule").is_null(),
        below_1=pl.col("excess") < 1.0 - 1e-9,
        abs_excess=pl.when(pl.col("enumerated")).then(pl.col("es_rule") - pl.col("es_pool")),
    )


def _row(st: GroupStatistics, g: pl.DataFrame, enumerated: bool | None) -> dict:
    row = {**st.counts(g), "enumerated": enumerated}
    row.update(st.median(g, "excess", "median_excess"))
    row.update(st.share(g, "label", "label_share"))
    row.update(st.auc(g, "dropped_mass", "label", "auc"))
    row.update(st.spearman(g, "dropped_mass", "excess", "spearman_dm_excess"))
    # the other reading of claim 51's "excess": the absolute gap es_rule - ES_pool (see the note)
    row.update(st.spearman(g, "dropped_mass", "abs_excess", "spearman_dm_abs_excess"))
    later = g.filter(pl.col("query_pos") > pl.col("evict_pos"))  # rows the frozen cache serves
    row.update({"median_excess_cf": st.value(later, "excess_cf"), "n_cf": later.height})
    row.update({"median_over_top": st.value(g, "over_top")})
    if g.filter(pl.col("excess").is_not_null()).height:
        row["share_excess_below_1"] = st.fraction(g, "below_1")
        row["n_below_1_in_pool"] = g.filter(
            pl.col("below_1") & pl.col("in_pool").fill_null(False)
        ).height  # 0: a theorem
    return row


def _certificate(frame: pl.DataFrame, thr: float) -> pl.DataFrame:
    """Top-mass's own label (kappa_hat > thr) as a pseudo-rule, one record per ceiling row."""
    top = frame.filter(pl.col("rule") == "top_mass")
    return top.with_columns(
        rule=pl.lit(CERTIFICATE),
        label=pl.when(pl.col("enumerated")).then(pl.col("kappa_hat") > thr),
        excess=pl.when(pl.col("enumerated")).then(pl.col("kappa_hat")),
        excess_cf=pl.lit(None, dtype=pl.Float64),
    )


def audit_table(records: pl.DataFrame, settings: AuditStatisticsSettings = AuditStatisticsSettings()) -> pl.DataFrame:
    f = records if "cluster" in records.columns else prepare(records, settings)
    f = pl.concat([f, _certificate(f, settings.summary.kappa_threshold)], how="vertical_relaxed")
    st = GroupStatistics(settings.summary)
    rows = []
    for population, pop in populations(f):
        for key, g in groups(pop, ["model", "rule", "budget"]):
            rows.append(
                {
                    "population": population,
                    **key,
                    **_row(st, g, bool(g["enumerated"].all())),
                    "contracts": _against_top_mass(key["rule"], key["budget"]),
                }
            )
        for key, g in groups(pop.filter(pl.col("enumerated")), ["model", "rule"]):
            rows.append(
                {
                    "population": population,
                    **key,
                    "budget": None,
                    **_row(st, g, True),
                    "contracts": _against_top_mass(key["rule"], settings.roc_budget),
                }
            )
    return frame_from_rows(rows, AUDIT_TABLE_SCHEMA).sort(
        ["population", "model", "rule", "budget"], descending=[True, False, False, False], nulls_last=True
    )


def _against_top_mass(rule: str, budget: int) -> str | None:
    """The rule's comparison with top-mass (es_rule / es(A*)): like for like, or the contract fields
    it crosses (``run_contract.contrast``); null for the certificate row, which is no selector."""
    return contrast(REGISTRY["top_mass"], REGISTRY[rule], int(budget)) if rule in REGISTRY else None


def fig3_roc(records: pl.DataFrame, settings: AuditStatisticsSettings = AuditStatisticsSettings()) -> pl.DataFrame:
    """ROC points of dropped mass for each Figure-3 rule's label (and the certificate) at the ROC budget,
    per model, primary population."""
    f = records if "cluster" in records.columns else prepare(records, settings)
    f = pl.concat([f, _certificate(f, settings.summary.kappa_threshold)], how="vertical_relaxed")
    f = f.filter(
        pl.col("primary"), pl.col("budget") == settings.roc_budget, ~pl.col("degenerate"), pl.col("label").is_not_null()
    )
    drawn = (*FIG3_RULES, CERTIFICATE)  # the rules whose contracts say Figure 3 draws them, in that order
    rows = []
    for (model, rule), g in sorted(f.group_by(["model", "rule"]), key=lambda kg: kg[0]):
        if rule not in drawn:
            continue
        roc = roc_curve(g["dropped_mass"].to_numpy(), g["label"].to_numpy())
        auc = None if math.isnan(roc.auc) else roc.auc
        for x, y in zip(roc.fpr.tolist(), roc.tpr.tolist()):
            rows.append(
                {
                    "model": model,
                    "rule": rule,
                    "order": drawn.index(rule),
                    "budget": settings.roc_budget,
                    "fpr": x,
                    "tpr": y,
                    "auc": auc,
                }
            )
    return frame_from_rows(rows, ROC_SCHEMA)


# ------------------------------------------------------------------------------ headline rows
def _rows(
    claim: int,
    value: str,
    keys: tuple[str, ...],
    frame: pl.DataFrame,
    column: str,
    ci: bool = False,
    n_column: str = "n",
    source: str | None = None,
) -> list[dict]:
    spec = HeadlineValue(claim, value, "audit_table", column, keys, ci=ci, n_column=n_column)
    return rows_from_frame(spec, frame, source=source)


def first_budget_clearing(native: pl.DataFrame, threshold: float = 0.70) -> pl.DataFrame:
    """Claim 108, per model: the smallest native budget at which every audited mass rule's label AUC
    reaches ``threshold``; ``inf`` when no audited budget does (the result "not within s <= the
    largest native budget", which the claims report can judge, rather than a missing row)."""
    cleared = native.group_by(["population", "model", "budget"]).agg(
        ok=(pl.col("auc") >= threshold).all() & pl.col("auc").is_not_null().all(),
        n=pl.col("n").sum(),
        n_docs=pl.col("n_docs").max(),
        n_degenerate=pl.col("n_degenerate").sum(),
    )
    return (
        cleared.sort("budget")
        .group_by(["population", "model"], maintain_order=True)
        .agg(
            x=pl.col("budget").filter(pl.col("ok")).first().cast(pl.Float64).fill_null(math.inf),
            n=pl.col("n").sum(),
            n_docs=pl.col("n_docs").max(),
            n_degenerate=pl.col("n_degenerate").sum(),
        )
        .sort(["population", "model"], descending=[True, False])
    )


def headline(
    table: pl.DataFrame,
    records: pl.DataFrame,
    settings: AuditStatisticsSettings = AuditStatisticsSettings(),
    qk_norm: Mapping[str, bool | None] | None = None,
) -> pl.DataFrame:
    """Claims 48, 49, 50, 51, 105, 106, 107, 108, 109 from the audit table (48/105/106 over the
    enumerated budgets; 107 as counts of AUDITED rules with AUC >= 0.70 per native budget; 108 the
    first native budget where all of them do).  ``qk_norm`` ({model: whether its attention
    normalises q and k}) places claim 51's rows."""
    t = table
    at_b = t.filter(pl.col("budget") == settings.roc_budget)
    enum_budget = t.filter(pl.col("enumerated") & pl.col("budget").is_not_null())
    audited = pl.col("rule").is_in(list(AUDITED))
    rows = []
    rows += _rows(48, "median_rule_excess", ("model", "rule", "budget"), at_b.filter(audited), "median_excess", ci=True)
    rows += _rows(
        48,
        "median_top_mass_excess",
        ("model", "budget"),
        at_b.filter(pl.col("rule") == "top_mass"),
        "median_excess",
        ci=True,
    )
    # claim 49: TOVA mismatches (the run asserts; a finished run has zero)
    f = records if "cluster" in records.columns else prepare(records, settings)
    for population, pop in populations(f.filter(pl.col("rule") == "top_mass")):
        for key, g in groups(pop, ["model"]):
            mismatches = pl.DataFrame(
                [
                    {
                        "population": population,
                        **key,
                        "x": float(g["tova_mismatch"].sum()),
                        "n": g.height,
                        "n_docs": g["cluster"].n_unique(),
                    }
                ]
            )
            rows += _rows(
                49, "tova_top_mass_mismatches", ("model",), mismatches, "x", source="audit records.tova_mismatch"
            )
    rows += _rows(
        50,
        "snapkv_over_top_mass",
        ("model", "budget"),
        t.filter(pl.col("rule") == "snapkv", pl.col("budget").is_not_null()),
        "median_over_top",
    )
    # claim 51 is stated per QK-norm class: models whose class is unknown give no row
    qk = {m: ("with" if v else "without") for m, v in (qk_norm or {}).items() if v is not None}
    pooled = t.filter(audited, pl.col("budget").is_null(), pl.col("model").is_in(list(qk)))
    rows += _rows(
        51,
        "spearman_dropped_mass_rule_excess",
        ("model", "rule", "qk_norm"),
        pooled.with_columns(qk_norm=pl.col("model").replace_strict(qk)),
        "spearman_dm_excess",
    )
    rows += _rows(
        105,
        "top_mass_label_rate",
        ("model", "budget"),
        enum_budget.filter(pl.col("rule") == "top_mass"),
        "label_share",
        ci=True,
    )
    rows += _rows(
        105,
        "deployed_rule_label_rate",
        ("model", "rule", "budget"),
        enum_budget.filter(audited),
        "label_share",
        ci=True,
    )
    rows += _rows(
        106,
        "pooled_label_auc",
        ("model", "rule"),
        t.filter(pl.col("rule").is_in([*FIG3_RULES]), pl.col("budget").is_null()),
        "auc",
        ci=True,
    )
    native = t.filter(~pl.col("enumerated"), audited)
    if native.height:
        counts = (
            native.group_by(["population", "model", "budget"])
            .agg(
                x=(pl.col("auc") >= 0.70).sum().cast(pl.Float64),
                n=pl.col("n").sum(),
                n_docs=pl.col("n_docs").max(),
                n_degenerate=pl.col("n_degenerate").sum(),
            )
            .sort(["population", "model", "budget"], descending=[True, False, False])
        )
        rows += _rows(107, "mass_selectors_clearing_auc_0_70", ("model", "budget"), counts, "x")
        rows += _rows(
            108,
            "first_budget_auc_reaches_0_70",
            ("model",),
            first_budget_clearing(native),
            "x",
            source="audit_table.auc (smallest native budget where every audited rule has AUC >= 0.70)",
        )
    # claim 110: the page size the audited Quest ran with at each enumerated budget (its contract)
    quest = REGISTRY["quest"]
    pages = enum_budget.filter(pl.col("rule") == "quest").with_columns(
        x=pl.col("budget").map_elements(lambda s: float(quest.page_size(int(s))), return_dtype=pl.Float64)
    )
    rows += _rows(
        110,
        "quest_page_size",
        ("model", "budget"),
        pages,
        "x",
        source="registry quest.page_size at the audited budgets",
    )
    # claim 109: frozen-set SnapKV is its cache-faithful reading; of the "sequential" (token-by-token)
    # rules, StreamingLLM's streaming cache at query i *is* its per-query set (sinks + the keys
    # before i), so its per-query excess is the sequential reading; token-by-token H2O needs every
    # attention row and is not computed (audit module docstring)
    cf = at_b.filter(pl.col("rule") == "snapkv").with_columns(rule=pl.lit("frozen_snapkv"))
    rows += _rows(
        109, "cache_faithful_median_excess", ("model", "rule", "budget"), cf, "median_excess_cf", n_column="n_cf"
    )
    seq = at_b.filter(pl.col("rule") == "streaming_llm").with_columns(rule=pl.lit("sequential"))
    rows += _rows(
        109,
        "cache_faithful_median_excess",
        ("model", "rule", "budget"),
        seq,
        "median_excess",
        ci=True,
        source="audit_table.median_excess (streaming_llm: token-by-token cache = per-query set; H2O not computed)",
    )
    return headline_frame(rows)


def summarize(
    records: pl.DataFrame,
    settings: AuditStatisticsSettings = AuditStatisticsSettings(),
    qk_norm: Mapping[str, bool | None] | None = None,
    population: HeadlinePopulation = HeadlinePopulation(),
) -> dict[str, pl.DataFrame]:
    """Every audit frame on the headline population."""
    f = prepare(population.select(records), settings)
    table = audit_table(f, settings)
    return {
        "audit_table": table,
        "fig3_roc": fig3_roc(f, settings),
        "headline_audit": headline(table, f, settings, qk_norm),
    }


def statistics(inputs: Inputs, config: Mapping[str, Any]) -> Frames:
    """Rule ``audit_statistics``: the audit records of the headline population (``audit``) and the models'
    source records (``sources``: QK-norm per model, from the shapes the model preparation recorded)."""
    settings, population = AuditStatisticsSettings.from_config(config), HeadlinePopulation.from_config(config)
    files = list(inputs["audit"])
    records = read_parquets(files)
    qk_norm = {
        Path(p).parent.name: json.loads(Path(p).read_text(encoding="utf-8")).get("shapes", {}).get("qk_norm")
        for p in inputs["sources"]
    }
    return Frames(
        summarize(records, settings, qk_norm, population),
        summary={"records": records.height},
        seeds=bootstrap_seeds(settings.summary),
        notes=[f"{records.height} audit records from {len(files)} files; {settings}", f"qk_norm per model: {qk_norm}"],
    )
