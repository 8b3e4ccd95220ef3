"""Statistics of the certification stage (spec §3.2, §3.5-3.6, Table 7): substitution of the
certified optima, Table 7, the cap-widening sweep's table, and the claims they regenerate.

* :func:`substitute` -- the manifest joined with its certification, paired before/after statistics;
* :func:`table7` -- per budget: improved count, solved n, Wilson-95 f_hi, the full-records median
  c_hat and its distribution-free caps (at f_hi, and with the unsolved counted as improved), the
  paired manifest medians before/after substitution, the optimum-beats-balancing shares and the
  kappa_hat_bal = 1 share with its worst (model, budget) margin;
* :func:`sweep_table` -- per extra-key setting: subsets, label rate, median c_hat and its shift;
* :data:`HEADLINE` / :data:`SWEEP_HEADLINE` -- claims 18, 21, 84, 90-95, 101 / 19-20, declared as data and read
  from the frames of :func:`claim_frames` by :func:`headline` (in the one headline schema);
* :func:`statistics` / :func:`sweep_statistics` -- the rules ``certification_statistics`` / ``sweep_statistics``.

The records and the manifest are the study's headline population (headline families on the
headline corpus); ``n_docs`` counts documents (corpus, doc), as the paper's "20 docs".
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import polars as pl

from trustmass.certification.manifest import IDENTITY
from trustmass.certification.misocp import (
    CONFIRMED_OPTIMAL,
    IMPROVED,
    SAFETY_STOP,
    UNDECIDED,
    UNSOLVED,
    WITHIN_1PCT,
)
from trustmass.core import operator as op
from trustmass.core import stats
from trustmass.core.operator import REL_TOL
from trustmass.plumbing.errors import CleanError
from trustmass.plumbing.rule_io import read_parquets
from trustmass.report.engine import GroupStatistics, HeadlinePopulation, StatisticsSettings, with_document_columns
from trustmass.report.headline import HeadlineValue, declared_rows, headline_frame
from trustmass.report.statistics import Frames, Inputs, one

__all__ = [
    "HEADLINE",
    "STATED_BUDGET",
    "SWEEP_HEADLINE",
    "SWEEP_SCHEMA",
    "TABLE7_SCHEMA",
    "claim_frames",
    "headline",
    "statistics",
    "substitute",
    "sweep_statistics",
    "sweep_table",
    "table7",
]

#: "materially better" / "beats by more than 1 %"
MATERIAL = 0.01


def substitute(man: pl.DataFrame, certified: pl.DataFrame) -> pl.DataFrame:
    """The manifest joined with its certification, with paired before/after statistics.

    Where the status is ``improved`` the solver's subset replaces the ES_pool argmin: ES_opt =
    es_cert, and c_hat, kappa_hat_bal are recomputed from the record's es_top / es_bal (degenerate
    rules of spec §1.2); elsewhere they are unchanged.
    """
    f = man.join(certified.drop("es_pool"), on="instance", how="left")
    after_es, c_after, kb_after = [], [], []
    for r in f.select("status", "es_pool", "es_cert", "es_top", "es_bal", "D", "c_hat", "kappa_hat_bal").iter_rows(
        named=True
    ):
        if r["status"] == IMPROVED and r["es_cert"] is not None:
            es_opt = r["es_cert"]
            c_after.append(op.closable_share(r["es_top"], es_opt, r["D"]))
            kb_after.append(op.ratio_kappa(r["es_bal"], es_opt, r["D"]))
        else:
            es_opt = r["es_pool"]
            c_after.append(r["c_hat"])
            kb_after.append(r["kappa_hat_bal"])
        after_es.append(es_opt)
    return f.with_columns(
        es_opt_after=pl.Series(after_es, dtype=pl.Float64),
        c_hat_after=pl.Series(c_after, dtype=pl.Float64),
        kappa_hat_bal_after=pl.Series(kb_after, dtype=pl.Float64),
    ).with_columns(
        beats_bal_before=pl.col("es_bal") > (1 + MATERIAL) * pl.col("es_pool"),
        beats_bal_after=pl.col("es_bal") > (1 + MATERIAL) * pl.col("es_opt_after"),
    )


def _med(x) -> float:
    a = np.asarray([v for v in x if v is not None and not (isinstance(v, float) and math.isnan(v))], dtype=np.float64)
    return stats.median(a) if a.size else math.nan


def _is_one(x: pl.Expr) -> pl.Expr:
    return (x - 1.0).abs() <= REL_TOL


TABLE7_SCHEMA = {
    "budget": pl.Int64,
    "n_manifest": pl.Int64,
    "n_solved": pl.Int64,
    "n_unsolved": pl.Int64,
    "n_undecided": pl.Int64,
    "n_safety_stop": pl.Int64,
    "n_confirmed": pl.Int64,
    "n_within_1pct": pl.Int64,
    "improved": pl.Int64,
    "f_hi": pl.Float64,
    "n_records": pl.Int64,
    "n_docs": pl.Int64,
    "median_c_hat": pl.Float64,
    "cap_f_hi": pl.Float64,
    "f_hi_unsolved": pl.Float64,
    "cap_unsolved": pl.Float64,
    "manifest_median_c_hat_before": pl.Float64,
    "manifest_median_c_hat_after": pl.Float64,
    "manifest_median_kappa_hat_bal_before": pl.Float64,
    "manifest_median_kappa_hat_bal_after": pl.Float64,
    "beats_bal_before": pl.Float64,
    "beats_bal_after": pl.Float64,
    "median_improvement": pl.Float64,
    "max_improvement": pl.Float64,
    "kappa_hat_bal_eq_1": pl.Float64,
    "worst_cell_margin": pl.Float64,
    "median_kappa_hat_bal_cap": pl.Float64,
    "median_seconds": pl.Float64,
    "max_seconds": pl.Float64,
    "certifier": pl.Utf8,
}
#: how Table 7 names each certifier (certification.certifier)
CERTIFIER_NAMES = {"paper": "SCIP bisection (paper)", "bnb": "branch-and-bound"}


def _certifiers(g: pl.DataFrame) -> str:
    """The certifier(s) that produced a budget's rows, named for the table ("–" if none recorded)."""
    if "certifier" not in g.columns:
        return "–"
    names = sorted({CERTIFIER_NAMES.get(c, c) for c in g["certifier"].to_list() if c})
    return " + ".join(names) if names else "–"


def table7(records: pl.DataFrame, man: pl.DataFrame, certified: pl.DataFrame) -> pl.DataFrame:
    """Table 7 per budget (spec §3.6); ``records`` are the full ceiling records (every document)."""
    sub = substitute(man, certified)
    rows = []
    for s in sorted(sub["budget"].unique().to_list()):
        g = sub.filter(pl.col("budget") == s)
        status = g["status"].to_list()
        n_unsolved = sum(st == UNSOLVED for st in status)
        n_solved = len(status) - n_unsolved
        k = sum(st == IMPROVED for st in status)
        f_hi = stats.wilson_upper(k, n_solved) if n_solved else math.nan
        f_hi_u = stats.wilson_upper(k + n_unsolved, len(status)) if status else math.nan
        full = records.filter((pl.col("budget") == s) & pl.col("c_hat").is_not_null() & pl.col("c_hat").is_not_nan())
        c = full["c_hat"].to_numpy()
        kb = full.filter(pl.col("kappa_hat_bal").is_not_null() & pl.col("kappa_hat_bal").is_not_nan())
        cells = kb.group_by("model").agg(_is_one(pl.col("kappa_hat_bal")).mean().alias("frac"))
        imp = g.filter(pl.col("status") == IMPROVED)["improvement"].to_numpy()
        rows.append(
            {
                "budget": s,
                "n_manifest": g.height,
                "n_solved": n_solved,
                "n_unsolved": n_unsolved,
                "n_undecided": sum(st == UNDECIDED for st in status),
                "n_safety_stop": sum(st == SAFETY_STOP for st in status),
                "n_confirmed": sum(st == CONFIRMED_OPTIMAL for st in status),
                "n_within_1pct": sum(st == WITHIN_1PCT for st in status),
                "improved": k,
                "f_hi": f_hi,
                "n_records": full.height,
                "n_docs": full.select("corpus", "doc").n_unique(),
                "median_c_hat": stats.median(c) if c.size else math.nan,
                "cap_f_hi": stats.median_cap(c, f_hi) if c.size and not math.isnan(f_hi) else math.nan,
                "f_hi_unsolved": f_hi_u,
                "cap_unsolved": stats.median_cap(c, f_hi_u) if c.size and not math.isnan(f_hi_u) else math.nan,
                "manifest_median_c_hat_before": _med(g["c_hat"].to_list()),
                "manifest_median_c_hat_after": _med(g["c_hat_after"].to_list()),
                "manifest_median_kappa_hat_bal_before": _med(g["kappa_hat_bal"].to_list()),
                "manifest_median_kappa_hat_bal_after": _med(g["kappa_hat_bal_after"].to_list()),
                "beats_bal_before": float(g["beats_bal_before"].mean()) if g.height else math.nan,
                "beats_bal_after": float(g["beats_bal_after"].mean()) if g.height else math.nan,
                "median_improvement": stats.median(imp) if imp.size else math.nan,
                "max_improvement": float(imp.max()) if imp.size else math.nan,
                "kappa_hat_bal_eq_1": float(kb.select(_is_one(pl.col("kappa_hat_bal")).mean()).item())
                if kb.height
                else math.nan,
                "worst_cell_margin": float((cells["frac"] - 0.5 - f_hi).min())
                if cells.height and not math.isnan(f_hi)
                else math.nan,
                "median_kappa_hat_bal_cap": stats.median_cap(kb["kappa_hat_bal"].to_numpy(), f_hi)
                if kb.height and not math.isnan(f_hi)
                else math.nan,
                "median_seconds": _med(g["seconds"].to_list()),
                "max_seconds": float(g["seconds"].max() or math.nan),
                "certifier": _certifiers(g),
            }
        )
    return pl.DataFrame(rows, schema=TABLE7_SCHEMA)


SWEEP_SCHEMA = {
    "budget": pl.Int64,
    "extra": pl.Int64,
    "subsets": pl.Int64,
    "n": pl.Int64,
    "label_rate": pl.Float64,
    "median_c_hat": pl.Float64,
    "median_gap_shift": pl.Float64,
    "median_gap_shift_rel": pl.Float64,
    "improved_over_base": pl.Float64,
    "median_seconds": pl.Float64,
}


def sweep_table(rows: pl.DataFrame, kappa_threshold: float = 1.11, budget: int = 32) -> pl.DataFrame:
    """Per e: subsets C(s+e, s), fraction kappa_hat > threshold, median c_hat and its shift from the smallest e
    (at the sweep's budget s)."""
    extras = sorted(rows["extra"].unique().to_list())
    base = rows.filter(pl.col("extra") == extras[0]).select(*IDENTITY, pl.col("es_pool").alias("_base"))
    base_med = _med(rows.filter(pl.col("extra") == extras[0])["c_hat"].to_list())
    out = []
    for e in extras:
        g = rows.filter(pl.col("extra") == e).join(base, on=IDENTITY, how="left")
        med = _med(g["c_hat"].to_list())
        out.append(
            {
                "budget": budget,
                "extra": e,
                "subsets": math.comb(budget + e, budget),
                "n": g.height,
                "label_rate": float((g["kappa_hat"] > kappa_threshold).mean()),
                "median_c_hat": med,
                "median_gap_shift": med - base_med,
                "median_gap_shift_rel": (med - base_med) / base_med if base_med else math.nan,
                "improved_over_base": float((g["es_pool"] < (1 - 1e-12) * g["_base"]).mean()),
                "median_seconds": _med(g["seconds"].to_list()),
            }
        )
    return pl.DataFrame(out, schema=SWEEP_SCHEMA)


# ================================================================================ headline


#: the claims report reads populations "primary" / "all": the manifest and the sweep are drawn from
#: the primary slice, the Table 7 medians and caps read every document's records
MANIFEST, RECORDS = "primary", "all"
#: the budget at which the paper states claim 90's and 92's before/after pair and claim 93's cap
STATED_BUDGET = 32
_BUDGET = ("budget",)
_SHARE, _NONNEGATIVE, _RATIO = (0.0, 1.0), (0.0, math.inf), (1.0, math.inf)
#: a distribution-free cap is a quantile of the values it caps, or +inf (flagged) when f_hi >= 1/2
_CAP = (0.0, math.inf)

#: the certification stage's claim values (claims 18, 21, 84, 90-95, 101), each read from a frame of
#: :func:`claim_frames`.  Domains: the substitution only replaces ES_pool by a lower certified optimum, so per
#: instance c_hat and kappa_hat_bal can only rise and the paired median shifts are >= 0; an improvement is
#: > MATERIAL by the solver's definition of ``improved``; the worst cell margin frac - 1/2 - f_hi lies in
#: [-3/2, 1/2] (frac in [0, 1], f_hi in (0, 1]).
HEADLINE: tuple[HeadlineValue, ...] = (
    HeadlineValue(18, "median_c_hat_certified", "manifest_budgets", "median_c_hat_after", _BUDGET, domain=_SHARE),
    HeadlineValue(
        18,
        "median_c_hat_certified_cap",
        "records_budgets",
        "cap_f_hi",
        _BUDGET,
        flag="cap_f_hi_infinite",
        domain=_CAP,
    ),
    HeadlineValue(90, "median_c_hat_shift", "manifest_budgets", "median_c_hat_shift", _BUDGET, domain=_SHARE),
    HeadlineValue(
        90, "median_kappa_hat_bal_shift", "manifest_budgets", "median_kappa_hat_bal_shift", _BUDGET, domain=_NONNEGATIVE
    ),
    HeadlineValue(
        91, "n_improvements", "manifest_budgets", "improved", _BUDGET, n_column="n_solved", domain=_NONNEGATIVE
    ),
    HeadlineValue(
        90,
        "median_c_hat_s32",
        "manifest_substitution",
        "median_c_hat",
        ("budget", "substitution"),
        {"budget": STATED_BUDGET},
        domain=_SHARE,
    ),
    HeadlineValue(
        92,
        "optimum_beats_balancing_share",
        "manifest_substitution",
        "beats_bal",
        ("budget", "substitution"),
        {"budget": STATED_BUDGET},
        domain=_SHARE,
    ),
    HeadlineValue(
        93,
        "median_c_hat_cap",
        "records_budgets",
        "cap_f_hi",
        _BUDGET,
        {"budget": STATED_BUDGET},
        flag="cap_f_hi_infinite",
        domain=_CAP,
    ),
    HeadlineValue(
        92,
        "optimum_beats_balancing_share_elsewhere",
        "manifest_budgets",
        "beats_bal_after",
        _BUDGET,
        {"at_stated_budget": False},
        domain=_SHARE,
    ),
    HeadlineValue(94, "kappa_hat_bal_eq_1_share", "records_budgets", "kappa_hat_bal_eq_1", _BUDGET, domain=_SHARE),
    HeadlineValue(
        94,
        "median_kappa_hat_bal_cap",
        "records_budgets",
        "median_kappa_hat_bal_cap",
        _BUDGET,
        flag="kappa_hat_bal_cap_infinite",
        domain=_RATIO,
    ),
    HeadlineValue(95, "n_instances_per_budget", "records_budgets", "n_records", _BUDGET, domain=_NONNEGATIVE),
    HeadlineValue(94, "worst_cell_margin", "records_study", "worst_cell_margin", (), domain=(-1.5, 0.5)),
    HeadlineValue(95, "n_docs", "records_study", "n_docs", (), domain=_NONNEGATIVE),
    HeadlineValue(
        21,
        "confirmed_optimal_share",
        "manifest_status",
        "confirmed_optimal_share",
        (),
        n_column="n_solved",
        domain=_SHARE,
    ),
    HeadlineValue(21, "improved_share", "manifest_status", "improved_share", (), n_column="n_solved", domain=_SHARE),
    HeadlineValue(91, "n_improvements", "manifest_status", "n_improved", (), n_column="n_solved", domain=_NONNEGATIVE),
    HeadlineValue(
        91,
        "median_improvement",
        "manifest_status",
        "median_improvement",
        (),
        n_column="n_improved",
        domain=(MATERIAL, 1.0),
    ),
    HeadlineValue(
        91, "max_improvement", "manifest_status", "max_improvement", (), n_column="n_improved", domain=(MATERIAL, 1.0)
    ),
    HeadlineValue(84, "n_unsolved", "manifest_status", "n_unsolved", (), domain=_NONNEGATIVE),
    HeadlineValue(
        84,
        "largest_improvement",
        "manifest_status",
        "max_improvement",
        (),
        n_column="n_improved",
        domain=(MATERIAL, 1.0),
    ),
    HeadlineValue(101, "auc_certified_label", "relabelled", "auc", ("model",), domain=_SHARE),
)

#: the sweep stage's claim values (claims 19, 20).  A wider pool contains the narrower one, so ES_pool can
#: only fall and c_hat only rise: the median gap's change from the narrowest pool is >= 0.
SWEEP_HEADLINE: tuple[HeadlineValue, ...] = (
    HeadlineValue(20, "label_rate", "sweep_pools", "label_rate", ("budget", "pool_extra"), domain=_SHARE),
    HeadlineValue(
        19,
        "median_gap_change",
        "sweep_widest",
        "median_gap_change",
        _BUDGET,
        note="relative to the narrowest pool's median",
        domain=_NONNEGATIVE,
    ),
    HeadlineValue(19, "median_gap_change_points", "sweep_widest", "median_gap_change_points", _BUDGET, domain=_SHARE),
    HeadlineValue(19, "extra_keys", "sweep_widest", "extra", (), domain=_NONNEGATIVE),
    HeadlineValue(19, "enumeration_cap_widened", "sweep_widest", "subsets", (), domain=_NONNEGATIVE),
)


def _relabelled_auc(certified_manifest: pl.DataFrame, settings: StatisticsSettings) -> pl.DataFrame:
    """Claim 101, per model: AUC of the dropped mass for the label recomputed against the certified
    optimum (kappa_hat after substitution > threshold), over the manifest."""
    f = certified_manifest.filter(pl.col("status") != UNSOLVED)
    kappa_after = [op.ratio_kappa(t, e, d) for t, e, d in zip(f["es_top"], f["es_opt_after"], f["D"])]
    f = (
        with_document_columns(f, settings.primary_docs)
        .with_columns(kappa_after=pl.Series(kappa_after, dtype=pl.Float64), degenerate=pl.lit(False))
        .with_columns(label_after=pl.col("kappa_after") > settings.kappa_threshold)
    )
    st = GroupStatistics(settings)
    rows = [
        {
            "population": MANIFEST,
            "model": model,
            "auc": st.auc(g, "dropped_mass", "label_after", "auc", ci=False)["auc"],
            "n": g.height,
            "n_docs": g["cluster"].n_unique(),
        }
        for (model,), g in sorted(f.group_by(["model"]), key=lambda kg: kg[0])
    ]
    schema = {"population": pl.Utf8, "model": pl.Utf8, "auc": pl.Float64, "n": pl.Int64, "n_docs": pl.Int64}
    return pl.DataFrame(rows, schema=schema)


def _infinite_cap(r: Mapping, cap: float | None) -> str | None:
    """Why a Table 7 row's distribution-free median cap at f_hi cannot speak to a claim: it is
    infinite when too few instances were solved for a Wilson bound below one half (None: finite)."""
    if cap is None or not math.isinf(cap):
        return None
    return (
        f"the Wilson cap is infinite: {r['improved']} improved of n = {r['n_solved']} solved instances per budget "
        f"give f_hi = {r['f_hi']:.2f}, so half the records or more may be raised"
    )


def _manifest_status(certified_manifest: pl.DataFrame, models: str) -> pl.DataFrame:
    """Claims 21, 84, 91 over the whole manifest: solver status shares and counts, improvements."""
    status = certified_manifest["status"]
    solved = int((status != UNSOLVED).sum())
    improved = int((status == IMPROVED).sum())
    imp = certified_manifest.filter(status == IMPROVED)["improvement"].to_numpy()
    row = {
        "population": MANIFEST,
        "models": models,
        "n": certified_manifest.height,
        "n_solved": solved,
        "n_improved": improved,
        "confirmed_optimal_share": int((status == CONFIRMED_OPTIMAL).sum()) / solved if solved else None,
        "improved_share": improved / solved if solved else None,
        "n_unsolved": int((status == UNSOLVED).sum()),
        "median_improvement": stats.median(imp) if imp.size else None,
        "max_improvement": float(imp.max()) if imp.size else None,
    }
    return pl.DataFrame([row], schema_overrides={k: pl.Float64 for k in row if k.endswith(("_share", "improvement"))})


def claim_frames(
    t7: pl.DataFrame,
    certified_manifest: pl.DataFrame | None,
    sweep: pl.DataFrame | None,
    models: str,
    settings: StatisticsSettings = StatisticsSettings(),
) -> dict[str, pl.DataFrame]:
    """Every frame :data:`HEADLINE` and :data:`SWEEP_HEADLINE` read: per budget over the manifest
    (``manifest_budgets``; ``manifest_substitution``: before/after substitution, one row each) and over
    the full records (``records_budgets``, ``records_study``), over the whole manifest (``manifest_status``,
    ``relabelled``: per model), per pool of the sweep and at its widest pool (``sweep_pools``, ``sweep_widest``)."""
    out: dict[str, pl.DataFrame] = {}
    common = (pl.lit(models).alias("models"),)
    if t7.height:
        manifest = (pl.lit(MANIFEST).alias("population"), *common, pl.col("n_manifest").alias("n"))
        out["manifest_budgets"] = t7.select(
            *manifest,
            "budget",
            "n_solved",
            "improved",
            "beats_bal_after",
            (pl.col("budget") == STATED_BUDGET).alias("at_stated_budget"),
            pl.col("manifest_median_c_hat_after").alias("median_c_hat_after"),
            (pl.col("manifest_median_c_hat_after") - pl.col("manifest_median_c_hat_before")).alias(
                "median_c_hat_shift"
            ),
            (pl.col("manifest_median_kappa_hat_bal_after") - pl.col("manifest_median_kappa_hat_bal_before")).alias(
                "median_kappa_hat_bal_shift"
            ),
        )
        out["manifest_substitution"] = pl.concat(
            [
                t7.select(
                    *manifest,
                    "budget",
                    pl.lit(when).alias("substitution"),
                    pl.col(f"manifest_median_c_hat_{when}").alias("median_c_hat"),
                    pl.col(f"beats_bal_{when}").alias("beats_bal"),
                )
                for when in ("before", "after")
            ]
        )
        rows = list(t7.iter_rows(named=True))
        out["records_budgets"] = t7.select(
            pl.lit(RECORDS).alias("population"),
            *common,
            "budget",
            pl.col("n_records").alias("n"),
            "n_docs",
            "n_records",
            "cap_f_hi",
            "kappa_hat_bal_eq_1",
            "median_kappa_hat_bal_cap",
        ).with_columns(
            cap_f_hi_infinite=pl.Series([_infinite_cap(r, r["cap_f_hi"]) for r in rows], dtype=pl.Utf8),
            kappa_hat_bal_cap_infinite=pl.Series(
                [_infinite_cap(r, r["median_kappa_hat_bal_cap"]) for r in rows], dtype=pl.Utf8
            ),
        )
        out["records_study"] = t7.select(
            pl.lit(RECORDS).alias("population"),
            *common,
            pl.col("n_records").sum().alias("n"),
            pl.col("n_docs").max(),
            pl.col("worst_cell_margin").min(),
        )
    if certified_manifest is not None and certified_manifest.height:
        out["manifest_status"] = _manifest_status(certified_manifest, models)
        out["relabelled"] = _relabelled_auc(certified_manifest, settings)
    if sweep is not None and sweep.height:
        sweep_rows = (pl.lit(MANIFEST).alias("population"), *common, "budget", "n")
        out["sweep_pools"] = sweep.select(*sweep_rows, pl.col("extra").alias("pool_extra"), "label_rate")
        out["sweep_widest"] = sweep.tail(1).select(  # the widest pool against the narrowest
            *sweep_rows,
            "extra",
            "subsets",
            pl.col("median_gap_shift_rel").abs().alias("median_gap_change"),
            pl.col("median_gap_shift").abs().alias("median_gap_change_points"),
        )
    return out


def headline(
    t7: pl.DataFrame,
    certified_manifest: pl.DataFrame | None,
    sweep: pl.DataFrame | None,
    models: str,
    settings: StatisticsSettings = StatisticsSettings(),
) -> pl.DataFrame:
    """Claims-report rows for claims 18-21, 84, 90-95, 101 (estimates as fractions; percent scaling is the
    report's): every declaration of :data:`HEADLINE` and :data:`SWEEP_HEADLINE` read from :func:`claim_frames`."""
    frames = claim_frames(t7, certified_manifest, sweep, models, settings)
    return headline_frame(declared_rows((*HEADLINE, *SWEEP_HEADLINE), frames))


def statistics(inputs: Inputs, config: Mapping[str, Any]) -> Frames:
    """Rule ``certification_statistics``: the manifest, its certified rows and the headline records ->
    ``joined`` (the manifest with its certification), ``table7`` and ``headline_certification``."""
    population = HeadlinePopulation.from_config(config)
    man = pl.read_parquet(one(inputs, "manifest"))
    certified = read_parquets(inputs["certified"])
    missing = set(man["instance"].to_list()) - set(certified["instance"].to_list())
    if missing:
        raise CleanError(
            f"certification rows missing for instances {sorted(missing)[:10]}...: the manifest and the "
            "certify_shard outputs disagree; fix: snakemake --forcerun certify_manifest"
        )
    columns = ["model", "corpus", "doc", "budget", "c_hat", "kappa_hat_bal"]
    records = read_parquets(inputs["records"], columns)
    records = population.select(records).filter(pl.col("budget").is_in(config["budgets"]["enumerated"]))
    joined = substitute(man, certified)
    t7 = table7(records, man, certified)
    head = headline(t7, joined, None, ",".join(population.models), StatisticsSettings.from_config(config))
    return Frames(
        {"joined": joined, "table7": t7, "headline_certification": head},
        summary={"instances": man.height, "records": records.height},
        population=population.describe(),
    )


def sweep_statistics(inputs: Inputs, config: Mapping[str, Any]) -> Frames:
    """Rule ``sweep_statistics``: the cap-widening sweep's rows -> ``sweep`` and ``headline_sweep``."""
    rows = pl.read_parquet(one(inputs, "rows"))
    table = sweep_table(rows, config["labels"]["kappa_threshold"], int(config["certification"]["sweep"]["budget"]))
    models = ",".join(HeadlinePopulation.from_config(config).models)
    return Frames({"sweep": table, "headline_sweep": headline(pl.DataFrame(schema=TABLE7_SCHEMA), None, table, models)})
