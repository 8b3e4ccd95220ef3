"""Statistics of the fixed-contract diagnostics (related-methods A.2, A.5 and A.6).

Boundary swaps (``trustmass.audit.swaps`` on captured rows, ``trustmass.loss.swaps`` through the
restricted forward).  A *unit* is one captured row (outcome ``es``) or one held-out target token
(``ce``: its NLL; ``kl``: ``KL(dense || config)`` of its next-token distribution).  For a pair X -> Y
every unit has ``err_x`` (X's kept sets), ``err_y`` (Y's) and, per swap kind and fraction, ``err``
after the swap (the random kinds averaged over their seeds per unit first).  Frames:

``swap_curves``      per (model, outcome, pair, budget, kind, fraction): units, documents, the mean
                     errors and the gap recovered ``(mean err_x - mean err) / (mean err_x - mean err_y)``
                     with its document-cluster interval (the ratio recomputed on every resample);
                     es units are the rows whose kept sets differ;
``swap_boundaries``  per (model, outcome, pair, budget): the share of swap-improving boundaries, units
                     where the full swap (Y's set) lowers the error, and where the smallest boundary
                     swap does, with intervals; whether the pair compares like for like (run contracts,
                     ``core.selectors.run_contract``: X and Y differ in the ranking scalar alone) or
                     which contract fields it crosses (then it is a transfer check, not a Stage II one).

Block projection (A.4 Stage III): ``projection``, per (model, outcome, rule, budget), strict block
TopK against its token-fill: the lattice slack before and after (captured rows), the mean errors, the
ratio of the token-filled error to the strict one with its interval, and (es) the correlation of a
row's slack with its es reduction (002 reports r = +0.14 for the score change).

The signed reference margin split (A.5, A.6), on cells = (model, corpus, budget), content from the
corpus's ``content``: ``margin = CE(host) - CE(dense)`` (positive: room to help) and, per rule,
``delta = CE(host) - CE(rule)`` (positive: the rule helps); ``|delta| <= tie_nats`` is a tie.

``margin_cells``     one row per (cell, rule) with the bucket (``positive`` / ``nonpositive`` margin)
                     and the shift (``positive`` / ``tie`` / ``negative``);
``margin_split``     per rule: the positive-shift rate and mean delta per bucket (ties counted
                     apart), the rate gap, the direction match (over the cells that are not ties),
                     Pearson's r(margin, delta), the permutation null of the gap and of the match
                     (bucket sizes kept, labels shuffled: null mean, 95 % interval, one-sided p),
                     leave-one-content-out extremes of the gap, and ``degenerate`` saying why a
                     statistic is undefined.  With es as the outcome the split degenerates (dense es
                     is 0, so every margin is >= 0); with held-out CE it degenerates as well when no
                     host cell beats the dense model, which the frame says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from trustmass.core.selectors.registry import REGISTRY
from trustmass.core.selectors.run_contract import contrast
from trustmass.core.stats import ClusterIndex, percentile_interval
from trustmass.plumbing.rule_io import read_parquets
from trustmass.report.engine import GroupStatistics, StatisticsSettings, frame_from_rows, interval_columns
from trustmass.report.statistics import Frames, Inputs, bootstrap_seeds

__all__ = [
    "margin_cells",
    "margin_split",
    "pooled",
    "projection_frame",
    "statistics",
    "summarize",
    "swap_boundaries",
    "swap_curves",
    "swap_units",
]

BOUNDARY = "boundary"
#: relative margin below which two errors are equal (a swap that changes nothing does not "improve")
REL_TOL = 1e-12

SWAP_CURVES_SCHEMA = {
    "model": pl.Utf8,
    "outcome": pl.Utf8,
    "pair": pl.Utf8,
    "budget": pl.Int64,
    "kind": pl.Utf8,
    "fraction": pl.Float64,
    "n": pl.Int64,
    "n_docs": pl.Int64,
    "n_seeds": pl.Int64,
    "err_x": pl.Float64,
    "err_y": pl.Float64,
    "err": pl.Float64,
    **interval_columns("gap_recovered", "err_ratio"),
}
SWAP_BOUNDARIES_SCHEMA = {
    "model": pl.Utf8,
    "outcome": pl.Utf8,
    "pair": pl.Utf8,
    "budget": pl.Int64,
    "n": pl.Int64,
    "n_docs": pl.Int64,
    "err_x": pl.Float64,
    "err_y": pl.Float64,
    **interval_columns("improving_full", "improving_first"),
    "contracts": pl.Utf8,
}
PROJECTION_SCHEMA = {
    "model": pl.Utf8,
    "outcome": pl.Utf8,
    "rule": pl.Utf8,
    "budget": pl.Int64,
    "block": pl.Int64,
    "n": pl.Int64,
    "n_docs": pl.Int64,
    "slack_strict": pl.Float64,
    "slack_fill": pl.Float64,
    "err_strict": pl.Float64,
    "err_fill": pl.Float64,
    "err_fit": pl.Float64,
    **interval_columns("fill_ratio"),
    "slack_gain_r": pl.Float64,
}
MARGIN_CELLS_SCHEMA = {
    "model": pl.Utf8,
    "corpus": pl.Utf8,
    "content": pl.Utf8,
    "budget": pl.Int64,
    "host": pl.Utf8,
    "rule": pl.Utf8,
    "n_docs": pl.Int64,
    "ce_dense": pl.Float64,
    "ce_host": pl.Float64,
    "ce_rule": pl.Float64,
    "margin": pl.Float64,
    "delta": pl.Float64,
    "bucket": pl.Utf8,
    "shift": pl.Utf8,
    "contracts": pl.Utf8,
}
MARGIN_SPLIT_SCHEMA = {
    "rule": pl.Utf8,
    "host": pl.Utf8,
    "models": pl.Utf8,
    "n_cells": pl.Int64,
    "n_positive_bucket": pl.Int64,
    "n_nonpositive_bucket": pl.Int64,
    "rate_positive_bucket": pl.Float64,
    "rate_nonpositive_bucket": pl.Float64,
    "ties_positive_bucket": pl.Int64,
    "ties_nonpositive_bucket": pl.Int64,
    "mean_delta_positive_bucket": pl.Float64,
    "mean_delta_nonpositive_bucket": pl.Float64,
    "rate_gap": pl.Float64,
    "direction_match": pl.Float64,
    "n_not_tied": pl.Int64,
    "pearson_r": pl.Float64,
    "null_gap_mean": pl.Float64,
    "null_gap_low": pl.Float64,
    "null_gap_high": pl.Float64,
    "p_gap": pl.Float64,
    "null_match_mean": pl.Float64,
    "null_match_low": pl.Float64,
    "null_match_high": pl.Float64,
    "p_match": pl.Float64,
    "loo_gap_min": pl.Float64,
    "loo_gap_max": pl.Float64,
    "tie_nats": pl.Float64,
    "contracts": pl.Utf8,
    "degenerate": pl.Utf8,
}


# -- boundary swaps --------------------------------------------------------------------------------


def swap_units(rows: pl.DataFrame, tokens: pl.DataFrame) -> pl.DataFrame:
    """One frame of units: ``model, outcome, pair, budget, kind, fraction, cluster, unit, err_x, err_y,
    err, n_seeds`` from the captured-row swaps (es) and the diagnostics forward (ce, kl)."""
    parts = []
    if rows.height:
        es = rows.filter((pl.col("n_out") + pl.col("n_in")) > 0).with_columns(
            outcome=pl.lit("es"),
            cluster=pl.concat_str("corpus", "doc", separator="/"),
            unit=pl.concat_str("layer", "head", "query_pos", separator=":"),
            err_x=pl.col("es_x"),
            err_y=pl.col("es_y"),
            err=pl.col("es"),
        )
        parts.append(_mean_over_seeds(es))
    swaps = tokens.filter(pl.col("family") == "swap") if tokens.height else tokens
    if swaps.height:
        for outcome, col in (("ce", "nll"), ("kl", "kl")):
            units = swaps.with_columns(
                outcome=pl.lit(outcome),
                cluster=pl.concat_str("corpus", "doc", separator="/"),
                unit=pl.col("position").cast(pl.Utf8),
                err=pl.col(col),
            )
            ends = units.filter(pl.col("kind") == BOUNDARY)
            keys = ["model", "pair", "budget", "cluster", "unit"]
            x = ends.filter(pl.col("fraction") == 0.0).select(*keys, err_x=pl.col("err"))
            y = ends.filter(pl.col("fraction") == 1.0).select(*keys, err_y=pl.col("err"))
            joined = units.filter(pl.col("fraction") > 0).join(x, on=keys).join(y, on=keys)
            parts.append(_mean_over_seeds(joined))
    return pl.concat(parts, how="vertical_relaxed") if parts else pl.DataFrame()


def _mean_over_seeds(units: pl.DataFrame) -> pl.DataFrame:
    keys = ["model", "outcome", "pair", "budget", "kind", "fraction", "cluster", "unit"]
    return units.group_by(keys, maintain_order=True).agg(
        err_x=pl.col("err_x").first(), err_y=pl.col("err_y").first(), err=pl.col("err").mean(), n_seeds=pl.len()
    )


def _cluster_weights(clusters: np.ndarray, settings: StatisticsSettings) -> tuple[np.ndarray, np.ndarray]:
    """(cluster codes of the units, weights [1 + B, K]): row 0 the estimate, then one row per
    document resample (multiplicities of each cluster)."""
    index = ClusterIndex(clusters)
    weights = np.ones((1, index.n_clusters))
    if settings.bootstrap:
        picks = index.draw(np.random.default_rng(settings.seed), settings.bootstrap)
        weights = np.vstack([weights, index.multiplicities(picks)])
    return index.codes, weights


def pooled(
    name: str, columns: Sequence[np.ndarray], clusters: np.ndarray, statistic, settings: StatisticsSettings
) -> dict:
    """``statistic`` of the columns' pooled sums (a function of one sum per column, NaN where undefined)
    with its document-cluster percentile interval: ``{name, name_low, name_high}``."""
    codes, weights = _cluster_weights(clusters, settings)
    k = weights.shape[1]
    sums = [weights @ np.bincount(codes, weights=np.asarray(c, dtype=np.float64), minlength=k) for c in columns]
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.asarray(statistic(*sums), dtype=np.float64)
    low = high = None
    if values.shape[0] > 1:
        low, high = percentile_interval(values[1:], settings.level, nan_policy="omit")
    return {name: None if np.isnan(values[0]) else float(values[0]), f"{name}_low": low, f"{name}_high": high}


def gap_recovered(
    err_x: np.ndarray, err: np.ndarray, err_y: np.ndarray, clusters: np.ndarray, settings: StatisticsSettings
) -> dict:
    """The pooled gap recovered and the pooled error relative to X's (``err_ratio``: mean err / mean
    err(X), well defined where X and Y err alike), each with its document-cluster interval; the gap is
    null where X and Y err alike."""

    def gap(x, e, y):
        return np.where(np.abs(x - y) > REL_TOL * np.abs(x), (x - e) / (x - y), np.nan)

    return {
        **pooled("gap_recovered", (err_x, err, err_y), clusters, gap, settings),
        **pooled("err_ratio", (err, err_x), clusters, _ratio, settings),
    }


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    return np.where(den > 0, num / den, np.nan)


def swap_curves(units: pl.DataFrame, settings: StatisticsSettings) -> pl.DataFrame:
    """The gap recovered per (model, outcome, pair, budget, kind, fraction) (module docstring)."""
    rows = []
    if units.height:
        keys = ["model", "outcome", "pair", "budget", "kind", "fraction"]
        for key, g in units.sort(keys).group_by(keys, maintain_order=True):
            x, e, y = (g[c].to_numpy().astype(np.float64) for c in ("err_x", "err", "err_y"))
            rows.append(
                {
                    **dict(zip(keys, key)),
                    "n": g.height,
                    "n_docs": g["cluster"].n_unique(),
                    "n_seeds": int(g["n_seeds"].max()),
                    "err_x": float(x.mean()),
                    "err_y": float(y.mean()),
                    "err": float(e.mean()),
                    **gap_recovered(x, e, y, g["cluster"].to_numpy(), settings),
                }
            )
    return frame_from_rows(rows, SWAP_CURVES_SCHEMA)


def pair_contracts(pair: str, budget: int) -> str:
    """``run_contract.contrast`` of the registry rules named ``"X>Y"`` at `budget`."""
    x, y = pair.split(">")
    return contrast(REGISTRY[x], REGISTRY[y], budget)


def swap_boundaries(units: pl.DataFrame, settings: StatisticsSettings) -> pl.DataFrame:
    """Shares of swap-improving boundaries per (model, outcome, pair, budget) (module docstring)."""
    rows = []
    stats = GroupStatistics(settings)
    if units.height:
        keys = ["model", "outcome", "pair", "budget"]
        boundary = units.filter(pl.col("kind") == BOUNDARY)
        for key, g in boundary.sort(keys).group_by(keys, maintain_order=True):
            units_x = g.unique(["cluster", "unit"], keep="first", maintain_order=True)  # err_x, err_y: per unit
            improving = units_x.with_columns(
                better=pl.col("err_y") < pl.col("err_x") * (1 - REL_TOL), degenerate=pl.lit(False)
            )
            first = g.filter(pl.col("fraction") == g["fraction"].min())
            first = first.with_columns(better=pl.col("err") < pl.col("err_x") * (1 - REL_TOL), degenerate=pl.lit(False))
            rows.append(
                {
                    **dict(zip(keys, key)),
                    "n": units_x.height,
                    "n_docs": units_x["cluster"].n_unique(),
                    "err_x": float(units_x["err_x"].mean()),
                    "err_y": float(units_x["err_y"].mean()),
                    **_renamed(stats.share(improving, "better", "x"), "improving_full"),
                    **_renamed(stats.share(first, "better", "x"), "improving_first"),
                    "contracts": pair_contracts(key[2], int(key[3])),
                }
            )
    return frame_from_rows(rows, SWAP_BOUNDARIES_SCHEMA)


def _renamed(stat: Mapping, name: str) -> dict:
    return {k.replace("x", name, 1): v for k, v in stat.items()}


def projection_frame(rows: pl.DataFrame, tokens: pl.DataFrame, settings: StatisticsSettings) -> pl.DataFrame:
    """Strict block TopK against its token-fill per (model, outcome, rule, budget): the mean lattice slack
    before and after (es rows), the mean errors and ``fill_ratio`` = mean err(fill) / mean err(strict)
    with its document-cluster interval, and (es) Pearson's r of a row's slack with its es reduction."""
    out = []
    if rows.height:
        es = rows.filter(pl.col("es_strict").is_not_null(), pl.col("es_fill").is_not_null()).with_columns(
            cluster=pl.concat_str("corpus", "doc", separator="/")
        )
        for (model, rule, budget), g in es.sort("model", "rule", "budget").group_by(
            ["model", "rule", "budget"], maintain_order=True
        ):
            strict, fill = g["es_strict"].to_numpy(), g["es_fill"].to_numpy()
            slack, gain = g["slack_strict"].to_numpy().astype(np.float64), strict - fill
            r = float(np.corrcoef(slack, gain)[0, 1]) if g.height > 2 and slack.std() > 0 and gain.std() > 0 else None
            out.append(
                {
                    "model": model,
                    "outcome": "es",
                    "rule": rule,
                    "budget": budget,
                    "block": int(g["block"][0]),
                    "n": g.height,
                    "n_docs": g["cluster"].n_unique(),
                    "slack_strict": float(slack.mean()),
                    "slack_fill": float(g["slack_fill"].mean()),
                    "err_strict": float(strict.mean()),
                    "err_fill": float(fill.mean()),
                    "err_fit": float(g["es_fit"].drop_nulls().mean()),
                    "slack_gain_r": r,
                    **pooled("fill_ratio", (fill, strict), g["cluster"].to_numpy(), _ratio, settings),
                }
            )
    forward = tokens.filter(pl.col("family") == "projection") if tokens.height else tokens
    for outcome, col in (("ce", "nll"), ("kl", "kl")) if forward.height else ():
        keys = ["model", "rule", "budget", "corpus", "doc", "position"]
        wide = forward.pivot(on="kind", index=keys, values=col).with_columns(
            cluster=pl.concat_str("corpus", "doc", separator="/")
        )
        for (model, rule, budget), g in wide.sort("model", "rule", "budget").group_by(
            ["model", "rule", "budget"], maintain_order=True
        ):
            strict, fill = g["strict"].to_numpy(), g["strict_then_fill"].to_numpy()
            out.append(
                {
                    "model": model,
                    "outcome": outcome,
                    "rule": rule,
                    "budget": budget,
                    "n": g.height,
                    "n_docs": g["cluster"].n_unique(),
                    "err_strict": float(strict.mean()),
                    "err_fill": float(fill.mean()),
                    **pooled("fill_ratio", (fill, strict), g["cluster"].to_numpy(), _ratio, settings),
                }
            )
    return frame_from_rows(out, PROJECTION_SCHEMA)


# -- the margin split -------------------------------------------------------------------------------


def margin_cells(
    tokens: pl.DataFrame, content: Mapping[str, str | None], host: str, rules: Sequence[str], tie_nats: float
) -> pl.DataFrame:
    """One row per (model, corpus, budget, rule): CE of dense, host and rule (means over the corpus's
    held-out documents), the margin, the delta, the bucket and the shift."""
    if not tokens.height:
        return frame_from_rows([], MARGIN_CELLS_SCHEMA)
    per_doc = (
        tokens.filter(pl.col("family").is_in(["dense", "margin"]))
        .group_by(["model", "corpus", "doc", "family", "rule", "budget"], maintain_order=True)
        .agg(ce=pl.col("nll").mean())
    )
    per_cell = per_doc.group_by(["model", "corpus", "family", "rule", "budget"], maintain_order=True).agg(
        ce=pl.col("ce").mean(), n_docs=pl.len()
    )
    dense = {
        (m, c): ce
        for m, c, ce in per_cell.filter(pl.col("family") == "dense").select("model", "corpus", "ce").iter_rows()
    }
    margin = per_cell.filter(pl.col("family") == "margin")
    ce = {
        (m, c, r, b): (v, n)
        for m, c, r, b, v, n in margin.select("model", "corpus", "rule", "budget", "ce", "n_docs").iter_rows()
    }
    rows = []
    for (model, corpus, rule, budget), (ce_rule, n_docs) in sorted(ce.items()):
        if rule == host or (model, corpus, host, budget) not in ce or rule not in rules:
            continue
        ce_host, ce_dense = ce[(model, corpus, host, budget)][0], dense[(model, corpus)]
        delta = ce_host - ce_rule
        rows.append(
            {
                "model": model,
                "corpus": corpus,
                "content": content.get(corpus) or corpus,
                "budget": budget,
                "host": host,
                "rule": rule,
                "n_docs": n_docs,
                "ce_dense": ce_dense,
                "ce_host": ce_host,
                "ce_rule": ce_rule,
                "margin": ce_host - ce_dense,
                "delta": delta,
                "bucket": "positive" if ce_host - ce_dense > 0 else "nonpositive",
                "shift": "tie" if abs(delta) <= tie_nats else "positive" if delta > 0 else "negative",
                "contracts": pair_contracts(f"{host}>{rule}", int(budget)),
            }
        )
    return frame_from_rows(rows, MARGIN_CELLS_SCHEMA)


def _split_statistics(positive_bucket: np.ndarray, delta: np.ndarray, tie: float) -> tuple[float | None, float | None]:
    """(rate gap, direction match) of one labelling: the positive-shift rate of the positive bucket
    minus the nonpositive bucket's; the share of non-tied cells whose shift sign the bucket predicts."""
    shift_up, tied = delta > tie, np.abs(delta) <= tie
    gap = None
    if positive_bucket.any() and (~positive_bucket).any():
        gap = float(shift_up[positive_bucket].mean() - shift_up[~positive_bucket].mean())
    decided = ~tied
    match = float((shift_up[decided] == positive_bucket[decided]).mean()) if decided.any() else None
    return gap, match


def margin_split(cells: pl.DataFrame, tie_nats: float, permutations: int, seed: int = 0) -> pl.DataFrame:
    """Per rule, the split's statistics over its cells (module docstring)."""
    rows = []
    for (rule,), g in cells.group_by(["rule"], maintain_order=True):
        positive = (g["bucket"] == "positive").to_numpy()
        delta, margin = g["delta"].to_numpy().astype(np.float64), g["margin"].to_numpy().astype(np.float64)
        shift_up, tied = delta > tie_nats, np.abs(delta) <= tie_nats
        gap, match = _split_statistics(positive, delta, tie_nats)
        out = {
            "rule": rule,
            "host": g["host"][0],
            "models": ",".join(sorted(g["model"].unique().to_list())),
            "n_cells": g.height,
            "n_positive_bucket": int(positive.sum()),
            "n_nonpositive_bucket": int((~positive).sum()),
            "ties_positive_bucket": int(tied[positive].sum()),
            "ties_nonpositive_bucket": int(tied[~positive].sum()),
            "rate_gap": gap,
            "direction_match": match,
            "n_not_tied": int((~tied).sum()),
            "tie_nats": tie_nats,
            "contracts": ";".join(sorted(g["contracts"].unique().to_list())),
        }
        for name, mask in (("positive_bucket", positive), ("nonpositive_bucket", ~positive)):
            if mask.any():
                out[f"rate_{name}"], out[f"mean_delta_{name}"] = float(shift_up[mask].mean()), float(delta[mask].mean())
        if g.height >= 3 and np.std(margin) > 0 and np.std(delta) > 0:
            out["pearson_r"] = float(np.corrcoef(margin, delta)[0, 1])
        out.update(_permutation_null(positive, delta, tie_nats, permutations, seed, gap, match))
        out.update(_leave_one_content_out(g, tie_nats))
        if gap is None:
            empty = "nonpositive" if positive.all() else "positive"
            out["degenerate"] = (
                f"no cell in the {empty} bucket: every host cell is {'worse' if empty == 'nonpositive' else 'no worse'} "
                "than the dense model, so the rate gap, its null and the leave-one-out are undefined "
                "(with es as the outcome the split always degenerates: dense es is 0)"
            )
        rows.append(out)
    return frame_from_rows(rows, MARGIN_SPLIT_SCHEMA)


def _permutation_null(positive, delta, tie, permutations, seed, gap, match) -> dict:
    """Null mean, 95 % interval and one-sided p of the gap and the match, labels shuffled."""
    if gap is None and match is None:
        return {}
    rng = np.random.default_rng(seed)
    null = np.array(
        [_split_statistics(rng.permutation(positive), delta, tie) for _ in range(permutations)], dtype=np.float64
    )
    out = {}
    for k, (name, observed) in enumerate((("gap", gap), ("match", match))):
        values = null[:, k]
        values = values[~np.isnan(values)]
        if observed is None or not values.size:
            continue
        low, high = np.percentile(values, [2.5, 97.5])
        out |= {
            f"null_{name}_mean": float(values.mean()),
            f"null_{name}_low": float(low),
            f"null_{name}_high": float(high),
            f"p_{name}": float((1 + (values >= observed - 1e-12).sum()) / (1 + values.size)),
        }
    return out


def _leave_one_content_out(g: pl.DataFrame, tie: float) -> dict:
    """The rate gap with each content's cells left out: the smallest and the largest."""
    gaps = []
    for content in g["content"].unique().to_list():
        rest = g.filter(pl.col("content") != content)
        gap, _ = _split_statistics((rest["bucket"] == "positive").to_numpy(), rest["delta"].to_numpy(), tie)
        if gap is not None:
            gaps.append(gap)
    return {"loo_gap_min": min(gaps), "loo_gap_max": max(gaps)} if gaps else {}


def summarize(
    rows: pl.DataFrame,
    tokens: pl.DataFrame,
    content: Mapping[str, str | None],
    diagnostics: Mapping,
    settings: StatisticsSettings,
    projection: pl.DataFrame | None = None,
) -> dict[str, pl.DataFrame]:
    """Every diagnostics frame from the swap rows, the projection rows and the diagnostics forward's tokens."""
    units = swap_units(rows, tokens)
    margin = diagnostics["margin"]
    cells = margin_cells(tokens, content, margin["host"], margin["rules"], float(margin["tie_nats"]))
    return {
        "swap_curves": swap_curves(units, settings),
        "swap_boundaries": swap_boundaries(units, settings),
        "projection": projection_frame(pl.DataFrame() if projection is None else projection, tokens, settings),
        "margin_cells": cells,
        "margin_split": margin_split(cells, float(margin["tie_nats"]), int(margin["permutations"]), settings.seed),
    }


def statistics(inputs: Inputs, config: Mapping[str, Any]) -> Frames:
    """Rule ``diagnostics_statistics``: the swap rows (``rows``: es), the projection rows and the diagnostics
    forward (``forward``: CE, KL) -> the swap curves, boundaries, projection and the margin split;
    ``config["content"]``: the corpora's content kinds."""
    settings = StatisticsSettings.from_config(config)
    row_files, forward_files, projection_files = (
        list(inputs["rows"]),
        list(inputs["forward"]),
        list(inputs["projection"]),
    )
    rows, tokens, projection = read_parquets(row_files), read_parquets(forward_files), read_parquets(projection_files)
    frames = summarize(rows, tokens, config["content"], config["diagnostics"], settings, projection)
    return Frames(
        frames,
        summary={name: frame.height for name, frame in frames.items()},
        seeds=bootstrap_seeds(settings),
        notes=[
            f"{rows.height} swap rows from {len(row_files)} files, {tokens.height} token outcomes from "
            f"{len(forward_files)}; {settings}"
        ],
    )
