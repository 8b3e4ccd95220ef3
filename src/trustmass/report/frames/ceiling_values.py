"""The claim values the ceiling records regenerate (spec §9: §2.1-2.3 and the App B ones), declared as data.

:data:`HEADLINE` maps each (claim, value name of ``data/claims.yaml``) to the statistics frame and column it is
read from (the frames of :func:`trustmass.report.frames.ceiling_claims._claim_frames`), its grouping, filter,
interval and the values the statistic can take at all (``domain``).  Symbolic ``where`` values resolve in
:mod:`trustmass.report.frames.ceiling_claims`: ``"map"`` is the map budget, ``"enumerated"``/``"native"`` the
budgets present, ``"largest"``/``"largest_native"`` the largest of them, group size ``"shared"`` means > 1; so
does an ``at`` budget ``"map"`` (a frame computed at the map budget alone says which budget that is).
"""

from __future__ import annotations

import math

from trustmass.report.frames.ceiling import COVERAGE
from trustmass.report.headline import HeadlineValue

__all__ = ["HEADLINE"]

_NATIVE = {"budget": "native"}
_MODEL_BUDGET = ("model", "budget")
#: rows of a frame computed at the map budget only / pooled over the enumerated budgets (``at``)
_AT_MAP = {"budget": "map"}
_POOLED_BUDGETS = {"budget": "pooled"}

#: the values a statistic can take on any records (``domain``): a share, c_hat, r_bal (balancing descends from A*_s
#: inside the pool, so ES_pool <= es_bal <= es_top), the balancing share 1 - es_bal / es_top, an AUC and a dropped
#: mass lie in [0, 1]; a rank correlation in [-1, 1]; the half-width of an interval inside [0, 1] at most 1/2;
#: kappa_hat >= 1 (A*_s is in the pool), at most the coverage bound 1.5 on the covered rows; the dropped mass of the
#: top s keys only falls as s grows, so at the native budgets (above the map budget s = 8 in every shipped
#: configuration) its share of the s = 8 value is <= 1 and its fall (the inverse) >= 1; a count, a ratio of two
#: errors, a cost >= 0
_SHARE, _CORRELATION, _HALF_WIDTH = (0.0, 1.0), (-1.0, 1.0), (0.0, 0.5)
_COUNT = _POSITIVE = (0.0, math.inf)
_RATIO, _COVERED = (1.0, math.inf), (1.0, COVERAGE[0])

#: claim value -> statistic
HEADLINE: tuple[HeadlineValue, ...] = (
    HeadlineValue(
        1,
        "n_instances",
        "panel_counts",
        "n_records_enumerated",
        (),
        note="every study model on the headline corpus",
        domain=_COUNT,
    ),
    HeadlineValue(1, "n_models", "panel_counts", "n_models", (), domain=_COUNT),
    HeadlineValue(2, "median_c_hat", "fig1", "median_c_hat", _MODEL_BUDGET, ci=True, domain=_SHARE),
    HeadlineValue(8, "median_r_bal", "fig1", "median_r_bal", _MODEL_BUDGET, ci=True, domain=_SHARE),
    HeadlineValue(
        11,
        "median_vote_cost_over_top_mass",
        "group_vote",
        "median_vote_over_top",
        ("group_size",),
        {"group_size": "shared"},
        at=_AT_MAP,
        domain=_POSITIVE,
    ),
    HeadlineValue(
        12,
        "median_vote_cost_over_es_pool",
        "group_vote",
        "median_vote_over_pool",
        ("group_size",),
        {"group_size": "shared"},
        at=_AT_MAP,
        domain=_POSITIVE,
    ),
    HeadlineValue(
        13,
        "vote_degraded_share",
        "group_vote",
        "vote_degraded_share",
        ("group_size",),
        {"group_size": "shared"},
        at=_AT_MAP,
        domain=_SHARE,
    ),
    HeadlineValue(
        13,
        "vote_improved_share",
        "group_vote",
        "vote_improved_share",
        ("group_size",),
        {"group_size": "shared"},
        at=_AT_MAP,
        domain=_SHARE,
    ),
    HeadlineValue(
        14,
        "vote_over_top_mass",
        "group_vote",
        "worst_vote_over_top",
        ("group_size",),
        {"group_size": (1,)},
        note="the ratio farthest from 1 over every group-size-1 row (all budgets); 1 exactly when the vote is top-mass",
        domain=_POSITIVE,
    ),
    HeadlineValue(
        15,
        "n_instances",
        "counts",
        "n_records_enumerated",
        (),
        note="records at the enumerated budgets, headline families",
        domain=_COUNT,
    ),
    HeadlineValue(
        17,
        "n_models",
        "study_counts",
        "n_models",
        (),
        note="the panel: every study model (Table 6's rows)",
        domain=_COUNT,
    ),
    HeadlineValue(15, "n_families", "counts", "n_models", (), domain=_COUNT),
    HeadlineValue(15, "rows_per_head_per_doc", "counts", "rows_per_head_per_doc", (), domain=_COUNT),
    HeadlineValue(15, "n_docs", "counts", "docs_per_corpus", (), domain=_COUNT),
    HeadlineValue(22, "median_pi_hat", "table8", "median_pi_hat", _MODEL_BUDGET, domain=_POSITIVE),
    HeadlineValue(22, "p99_pi_hat", "table8", "p99_pi_hat", _MODEL_BUDGET, domain=_POSITIVE),
    HeadlineValue(23, "median_geometric_ratio", "table8", "median_geo_ratio", _MODEL_BUDGET, domain=_POSITIVE),
    HeadlineValue(24, "median_c_hat", "fig1", "median_c_hat", _MODEL_BUDGET, ci=True, domain=_SHARE),
    HeadlineValue(24, "n_families", "counts", "n_models", (), domain=_COUNT),
    HeadlineValue(
        24,
        "median_c_hat_ci95",
        "fig1",
        "median_c_hat",
        _MODEL_BUDGET,
        ci=True,
        note="estimate = the median; low/high = its interval, which the claim bounds",
        domain=_SHARE,
    ),
    HeadlineValue(
        25,
        "median_c_hat_labelled",
        "fig1",
        "median_c_hat_labelled",
        _MODEL_BUDGET,
        ci=True,
        n_column="n_labelled",
        domain=_SHARE,
    ),
    HeadlineValue(
        26, "coverage_kappa_hat_le_1_5", "pooled", "coverage_1_5", ("budget",), {"budget": (4, 8)}, domain=_SHARE
    ),
    HeadlineValue(
        26, "coverage_kappa_hat_le_2", "pooled", "coverage_2", ("budget",), {"budget": (4, 8)}, domain=_SHARE
    ),
    HeadlineValue(27, "top_mass_attains_pool_share", "pooled", "top_attains_share", ("budget",), domain=_SHARE),
    HeadlineValue(28, "median_r_bal", "fig1", "median_r_bal", _MODEL_BUDGET, ci=True, domain=_SHARE),
    HeadlineValue(28, "median_r_bal_ci95", "fig1", "median_r_bal", _MODEL_BUDGET, ci=True, domain=_SHARE),
    HeadlineValue(
        29, "coverage_kappa_hat_le_1_5", "table8", "coverage_1_5", _MODEL_BUDGET, {"budget": (4,)}, domain=_SHARE
    ),
    HeadlineValue(
        29, "coverage_kappa_hat_le_2", "table8", "coverage_2", _MODEL_BUDGET, {"budget": (4,)}, domain=_SHARE
    ),
    HeadlineValue(
        30,
        "median_kappa_hat_covered",
        "covered",
        "median_kappa_hat",
        ("model",),
        note="[R] covered = kappa_hat <= 1.5, pooled over the enumerated budgets",
        domain=_COVERED,
    ),
    HeadlineValue(30, "p90_kappa_hat_covered", "covered", "p90_kappa_hat", ("model",), domain=_COVERED),
    HeadlineValue(
        31,
        "mass_cap_share_of_s8",
        "table1",
        "median_mass_share_of_map",
        _MODEL_BUDGET,
        _NATIVE,
        n_column="n_mass_share",
        domain=_SHARE,
    ),
    HeadlineValue(
        32, "median_balancing_share", "table1", "median_balancing_share", _MODEL_BUDGET, _NATIVE, ci=True, domain=_SHARE
    ),
    HeadlineValue(
        32,
        "balancing_share_over_s32",
        "table1",
        "balancing_share_over_s32",
        _MODEL_BUDGET,
        _NATIVE,
        note="each deployed budget's median balancing share over the same family's s = 32 median",
        domain=(0.0, math.inf),
    ),
    HeadlineValue(
        33,
        "balancing_beats_top_mass_10pct_share",
        "table1",
        "balancing_beats_10pct_share",
        _MODEL_BUDGET,
        domain=_SHARE,
    ),
    HeadlineValue(34, "cell_auc", "fig2_models", "cell_auc", ("model",), n_column="n_cells", domain=_SHARE),
    HeadlineValue(35, "auc_dropped_mass", "table6", "auc", _MODEL_BUDGET, ci=True, domain=_SHARE),
    HeadlineValue(37, "spearman_bound_es_top", "bounds", "rho_es_top", ("model", "bound"), domain=_CORRELATION),
    HeadlineValue(37, "spearman_bound_kappa_hat", "bounds", "rho_kappa_hat", ("model", "bound"), domain=_CORRELATION),
    HeadlineValue(
        38, "spearman_phi_es_pool_reference", "table8", "rho_phi_es_pool", _MODEL_BUDGET, domain=_CORRELATION
    ),
    HeadlineValue(
        38,
        "spearman_phi_es_pool_per_family",
        "table6",
        "rho_phi_es_pool",
        ("model",),
        n_column="n_pooled",
        at=_POOLED_BUDGETS,
        domain=_CORRELATION,
    ),
    HeadlineValue(
        41,
        "n_instances",
        "content_counts",
        "n_records_enumerated",
        ("model",),
        note="Table 2's instances: every corpus",
        domain=_COUNT,
    ),
    HeadlineValue(
        41,
        "median_kappa_hat_code",
        "content_budgets",
        "median_kappa_hat",
        ("model", "content", "budget"),
        {"content": ("code",)},
        ci=True,
        domain=_RATIO,
    ),
    HeadlineValue(41, "auc_ci_half_width", "content", "auc_half_width", ("model", "corpus"), domain=_HALF_WIDTH),
    HeadlineValue(
        41, "share_ci_half_width", "content", "label_share_half_width", ("model", "corpus"), domain=_HALF_WIDTH
    ),
    HeadlineValue(83, "auc_ci_half_width", "table6", "auc_half_width", ("model",), domain=_HALF_WIDTH),
    HeadlineValue(
        85, "binned_median_pi_hat_rank_correlation", "pi_by_mass", "rho_binned", ("model",), domain=_CORRELATION
    ),
    HeadlineValue(
        86, "spearman_label_dropped_mass", "bounds_model", "rho_label_dropped_mass", ("model",), domain=_CORRELATION
    ),
    HeadlineValue(87, "D", "deep_layers", "median_D", ("model", "layer"), domain=_POSITIVE),
    HeadlineValue(87, "dropped_mass", "deep_layers", "median_dropped_mass", ("model", "layer"), domain=_SHARE),
    HeadlineValue(
        88, "median_geometric_ratio_reference", "table8", "median_geo_ratio", _MODEL_BUDGET, domain=_POSITIVE
    ),
    HeadlineValue(88, "median_leverage_ratio_reference", "table8", "median_lev_ratio", _MODEL_BUDGET, domain=_POSITIVE),
    HeadlineValue(
        88,
        "median_geometric_ratio_s32",
        "table8",
        "median_geo_ratio",
        _MODEL_BUDGET,
        {"budget": (32,)},
        domain=_POSITIVE,
    ),
    HeadlineValue(
        88,
        "median_leverage_ratio_s32",
        "table8",
        "median_lev_ratio",
        _MODEL_BUDGET,
        {"budget": (32,)},
        domain=_POSITIVE,
    ),
    HeadlineValue(89, "median_n_swaps", "table8", "median_n_swaps", _MODEL_BUDGET, domain=_COUNT),
    HeadlineValue(
        96, "median_balancing_share", "table1", "median_balancing_share", _MODEL_BUDGET, _NATIVE, ci=True, domain=_SHARE
    ),
    HeadlineValue(
        96,
        "balancing_beats_top_mass_10pct_share",
        "table1",
        "balancing_beats_10pct_share",
        _MODEL_BUDGET,
        _NATIVE,
        domain=_SHARE,
    ),
    HeadlineValue(
        96,
        "dropped_mass_fall",
        "table1",
        "dropped_mass_fall",
        ("model",),
        {"budget": "largest_native"},
        note="1 / the median over rows of m_s / m_8 at the largest native budget",
        domain=_RATIO,
    ),
    HeadlineValue(98, "auc_bound_2dm", "bound_auc", "auc_bound_2dm", ("model",), ci=True, domain=_SHARE),
    HeadlineValue(98, "auc_bound_var", "bound_auc", "auc_bound_var", ("model",), ci=True, domain=_SHARE),
    HeadlineValue(98, "auc_dropped_mass", "bound_auc", "auc_dropped_mass", ("model",), ci=True, domain=_SHARE),
    HeadlineValue(
        99, "spearman_bound_2dm_es_top", "bounds_model", "rho_bound_2dm_es_top", ("model",), domain=_CORRELATION
    ),
    HeadlineValue(
        99, "spearman_bound_var_es_top", "bounds_model", "rho_bound_var_es_top", ("model",), domain=_CORRELATION
    ),
    HeadlineValue(
        99, "spearman_bound_2dm_kappa_hat", "bounds_model", "rho_bound_2dm_kappa_hat", ("model",), domain=_CORRELATION
    ),
    HeadlineValue(
        99, "spearman_bound_var_kappa_hat", "bounds_model", "rho_bound_var_kappa_hat", ("model",), domain=_CORRELATION
    ),
    HeadlineValue(
        99,
        "spearman_dropped_mass_kappa_hat",
        "bounds_model",
        "rho_dropped_mass_kappa_hat",
        ("model",),
        domain=_CORRELATION,
    ),
    HeadlineValue(
        100,
        "kendall_tau_family_order",
        "family_order",
        "min_kendall_tau",
        ("budget",),
        n_column="n_families",
        domain=_CORRELATION,
    ),
)
