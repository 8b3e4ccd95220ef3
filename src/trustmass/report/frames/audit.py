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
* ``headline_audit``: the audit claims' rows in the one headline schema (:mod:`trustmass.report.headline`), each
  value declared in :data:`HEADLINE` and read from a frame of :func:`claim_frames`.

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
from trustmass.report.headline import HeadlineValue, declared_rows, headline_frame
from trustmass.report.statistics import Frames, Inputs, bootstrap_seeds

__all__ = [
    "HEADLINE",
    "AuditStatisticsSettings",
    "audit_table",
    "claim_frames",
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
_MODEL_BUDGET, _MODEL_RULE_BUDGET = ("model", "budget"), ("model", "rule", "budget")
_SHARE, _POSITIVE, _CORRELATION = (0.0, 1.0), (0.0, math.inf), (-1.0, 1.0)
#: the AUC a mass rule's label must reach for claims 107 and 108
AUC_BAR = 0.70

#: the audit's claim values (48-51, 105-110), each read from a frame of :func:`claim_frames`.  Domains: a rule's
#: excess es_rule / ES_pool is positive and may fall below 1 when the rule keeps a set outside the pool; top-mass's
#: own excess kappa_hat is >= 1 (A*_s is in the pool); claim 107 counts audited rules; Quest's page size is
#: max(2, s / 4), a function of the budget alone (the registry's contract: a configuration check).
HEADLINE: tuple[HeadlineValue, ...] = (
    HeadlineValue(
        48,
        "median_rule_excess",
        "at_roc_budget",
        "median_excess",
        _MODEL_RULE_BUDGET,
        {"rule": AUDITED},
        ci=True,
        domain=_POSITIVE,
    ),
    HeadlineValue(
        48,
        "median_top_mass_excess",
        "at_roc_budget",
        "median_excess",
        _MODEL_BUDGET,
        {"rule": "top_mass"},
        ci=True,
        domain=(1.0, math.inf),
    ),
    HeadlineValue(49, "tova_top_mass_mismatches", "tova", "mismatches", ("model",), domain=_POSITIVE),
    HeadlineValue(
        50, "snapkv_over_top_mass", "per_budget", "median_over_top", _MODEL_BUDGET, {"rule": "snapkv"}, domain=_POSITIVE
    ),
    HeadlineValue(
        51,
        "spearman_dropped_mass_rule_excess",
        "pooled_qk_norm",
        "spearman_dm_excess",
        ("model", "rule", "qk_norm"),
        {"rule": AUDITED},
        domain=_CORRELATION,
    ),
    HeadlineValue(
        105,
        "top_mass_label_rate",
        "enumerated_budgets",
        "label_share",
        _MODEL_BUDGET,
        {"rule": "top_mass"},
        ci=True,
        domain=_SHARE,
    ),
    HeadlineValue(
        105,
        "deployed_rule_label_rate",
        "enumerated_budgets",
        "label_share",
        _MODEL_RULE_BUDGET,
        {"rule": AUDITED},
        ci=True,
        domain=_SHARE,
    ),
    HeadlineValue(
        106, "pooled_label_auc", "pooled", "auc", ("model", "rule"), {"rule": FIG3_RULES}, ci=True, domain=_SHARE
    ),
    HeadlineValue(
        107,
        "mass_selectors_clearing_auc_0_70",
        "native_clearing",
        "n_clearing",
        _MODEL_BUDGET,
        domain=(0.0, float(len(AUDITED))),
    ),
    HeadlineValue(
        108,
        "first_budget_auc_reaches_0_70",
        "first_budget",
        "x",
        ("model",),
        note="inf: no native budget of the run clears the bar",
        domain=(1.0, math.inf),
    ),
    HeadlineValue(110, "quest_page_size", "quest_pages", "page_size", _MODEL_BUDGET, domain=(2.0, math.inf)),
    HeadlineValue(
        109,
        "cache_faithful_median_excess",
        "cache_faithful",
        "median_excess",
        _MODEL_RULE_BUDGET,
        ci=True,
        note="frozen_snapkv: SnapKV's median excess over the rows its frozen cache serves; sequential: StreamingLLM's "
        "per-query set is its token-by-token cache (token-by-token H2O is not computed)",
        domain=_POSITIVE,
    ),
    HeadlineValue(
        109,
        "cache_faithful_over_per_query",
        "cache_faithful",
        "over_per_query",
        _MODEL_RULE_BUDGET,
        flag="over_per_query_flag",
        note="the cache-faithful median excess over the per-query one, per reading",
        domain=(0.0, math.inf),
    ),
)


def first_budget_clearing(native: pl.DataFrame, threshold: float = AUC_BAR) -> pl.DataFrame:
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


def _tova(records: pl.DataFrame) -> pl.DataFrame:
    """Claim 49, per population and model: TOVA's per-query keep sets that differ from A*_s (the run
    asserts; a finished run has zero)."""
    rows = [
        {
            "population": population,
            **key,
            "mismatches": float(g["tova_mismatch"].sum()),
            "n": g.height,
            "n_docs": g["cluster"].n_unique(),
        }
        for population, pop in populations(records.filter(pl.col("rule") == "top_mass"))
        for key, g in groups(pop, ["model"])
    ]
    schema = {"population": pl.Utf8, "model": pl.Utf8, "mismatches": pl.Float64, "n": pl.Int64, "n_docs": pl.Int64}
    return pl.DataFrame(rows, schema=schema)


#: claim 109's "raises" cannot show on the sequential reading computed here
SEQUENTIAL_IS_PER_QUERY = (
    "StreamingLLM's token-by-token cache is its per-query set, so its cache-faithful excess is its per-query one: "
    "the ratio is 1 by construction (token-by-token H2O, which could differ, is not computed)"
)


def _cache_faithful(at_roc_budget: pl.DataFrame) -> pl.DataFrame:
    """Claim 109's two readings at the ROC budget, one row each: frozen-set SnapKV over the rows its frozen cache
    serves (no interval), and the sequential reading, StreamingLLM's per-query excess (its streaming cache at query
    i *is* its per-query set: sinks + the keys before i) with its interval."""
    frozen = at_roc_budget.filter(pl.col("rule") == "snapkv").select(
        "population",
        "model",
        "budget",
        "n_docs",
        "n_degenerate",
        pl.lit("frozen_snapkv").alias("rule"),
        pl.col("median_excess_cf").alias("median_excess"),
        pl.lit(None, dtype=pl.Float64).alias("median_excess_low"),
        pl.lit(None, dtype=pl.Float64).alias("median_excess_high"),
        pl.col("n_cf").alias("n"),
        (pl.col("median_excess_cf") / pl.col("median_excess")).alias("over_per_query"),
        pl.lit(None, dtype=pl.Utf8).alias("over_per_query_flag"),
    )
    sequential = at_roc_budget.filter(pl.col("rule") == "streaming_llm").select(
        *frozen.columns[:5],
        pl.lit("sequential").alias("rule"),
        "median_excess",
        "median_excess_low",
        "median_excess_high",
        "n",
        pl.lit(1.0).alias("over_per_query"),
        pl.lit(SEQUENTIAL_IS_PER_QUERY).alias("over_per_query_flag"),
    )
    return pl.concat([frozen, sequential])


def claim_frames(
    table: pl.DataFrame,
    records: pl.DataFrame,
    settings: AuditStatisticsSettings = AuditStatisticsSettings(),
    qk_norm: Mapping[str, bool | None] | None = None,
) -> dict[str, pl.DataFrame]:
    """Every frame :data:`HEADLINE` reads, from the audit table and the prepared records: the table's rows at the ROC
    budget, per budget, per enumerated budget and pooled over the enumerated budgets (``budget`` null); claim 49's
    TOVA mismatches; the pooled rows of models whose QK-norm class is known (claim 51 is stated per class: a model
    of unknown class gives no row); per native budget and model the audited rules clearing AUC 0.70 and the first
    budget where all do (107, 108); Quest's page size at the enumerated budgets (110); claim 109's readings."""
    t = table
    at_b = t.filter(pl.col("budget") == settings.roc_budget)
    enumerated = t.filter(pl.col("enumerated") & pl.col("budget").is_not_null())
    pooled = t.filter(pl.col("budget").is_null())
    qk = {m: ("with" if v else "without") for m, v in (qk_norm or {}).items() if v is not None}
    native = t.filter(~pl.col("enumerated"), pl.col("rule").is_in(list(AUDITED)))
    quest = REGISTRY["quest"]
    out = {
        "at_roc_budget": at_b,
        "per_budget": t.filter(pl.col("budget").is_not_null()),
        "enumerated_budgets": enumerated,
        "pooled": pooled,
        "pooled_qk_norm": pooled.filter(pl.col("model").is_in(list(qk))).with_columns(
            qk_norm=pl.col("model").replace_strict(qk, return_dtype=pl.Utf8)
        ),
        "tova": _tova(records if "cluster" in records.columns else prepare(records, settings)),
        "quest_pages": enumerated.filter(pl.col("rule") == "quest").with_columns(
            page_size=pl.col("budget").map_elements(lambda s: float(quest.page_size(int(s))), return_dtype=pl.Float64)
        ),
        "cache_faithful": _cache_faithful(at_b),
    }
    if native.height:
        out["native_clearing"] = (
            native.group_by(["population", "model", "budget"])
            .agg(
                n_clearing=(pl.col("auc") >= AUC_BAR).sum().cast(pl.Float64),
                n=pl.col("n").sum(),
                n_docs=pl.col("n_docs").max(),
                n_degenerate=pl.col("n_degenerate").sum(),
            )
            .sort(["population", "model", "budget"], descending=[True, False, False])
        )
        out["first_budget"] = first_budget_clearing(native)
    return out


def headline(
    table: pl.DataFrame,
    records: pl.DataFrame,
    settings: AuditStatisticsSettings = AuditStatisticsSettings(),
    qk_norm: Mapping[str, bool | None] | None = None,
) -> pl.DataFrame:
    """Claims 48, 49, 50, 51, 105, 106, 107, 108, 109, 110: every declaration of :data:`HEADLINE` read from
    :func:`claim_frames` (48/105/106 over the enumerated budgets; 107 as counts of AUDITED rules with AUC >= 0.70
    per native budget; 108 the first native budget where all of them do).  ``qk_norm`` ({model: whether its
    attention normalises q and k}) places claim 51's rows."""
    return headline_frame(declared_rows(HEADLINE, claim_frames(table, records, settings, qk_norm)))


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
