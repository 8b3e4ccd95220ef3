"""The layouts of the certification stage's tables (Table 7 and the cap-widening sweep).

How each statistics frame becomes the table the paper prints, rendered by the one renderer
(:mod:`trustmass.report.tables`):

- Table 7 (certification substitution) and the cap-widening sweep: per budget / per extra-key setting.
"""

from __future__ import annotations

from trustmass.report.tables import Column, TableLayout, write

__all__ = ["LAYOUTS", "write"]


# ============================================================================================ Table 7 and the sweep

TABLE7_COLUMNS = (
    Column("improved", "improved", None),
    Column("solved", "n_solved", None),
    Column("unsolved", "n_unsolved", None),
    Column("undecided", "n_undecided", None),
    Column("safety stop", "n_safety_stop", None),
    Column("confirmed", "n_confirmed", None),
    Column("f_hi", "f_hi", 4),
    Column("median ĉ", "median_c_hat", 4),
    Column("cap at f_hi", "cap_f_hi", 4),
    Column("cap (unsolved as improved)", "cap_unsolved", 4),
    Column("manifest ĉ before", "manifest_median_c_hat_before", 4),
    Column("after", "manifest_median_c_hat_after", 4),
    Column("opt beats bal >1% before", "beats_bal_before", 4),
    Column("after", "beats_bal_after", 4),
    Column("κ̂_bal = 1", "kappa_hat_bal_eq_1", 4),
    Column("κ̂_bal median cap", "median_kappa_hat_bal_cap", 4),
    Column("records", "n_records", None),
    Column("documents", "n_docs", None),
    Column("certifier", "certifier", None),
)
SWEEP_COLUMNS = (
    Column("subsets", "subsets", None),
    Column("instances", "n", None),
    Column("κ̂ > thr", "label_rate", 4),
    Column("median ĉ", "median_c_hat", 4),
    Column("shift", "median_gap_shift", 4),
    Column("shift (rel.)", "median_gap_shift_rel", 4),
    Column("ES_pool lower than e_min", "improved_over_base", 4),
)


def _sorted_by(*keys: str):
    return lambda frame: frame.sort(list(keys))


LAYOUTS: dict[str, TableLayout] = {
    "table7": TableLayout(
        "Table 7 — certification substitution",
        _sorted_by("budget"),
        ("budget",),
        TABLE7_COLUMNS,
        (
            "improved: the solver found a set more than 1% below ES_pool. undecided: the work budget ran out first; "
            "safety stop: the seconds safety net stopped it (a clock-dependent row). "
            "f_hi: Wilson-95 upper bound on the improvement rate. "
            "Caps: the median ĉ after raising at most a fraction f_hi of the values (distribution-free). "
            "certifier: SCIP bisection (paper) is the paper's MISOCP protocol; branch-and-bound is "
            "trustmass.certification.bnb (certification.certifier).",
        ),
    ),
    "sweep": TableLayout(
        "Cap-widening sweep at s = 32",
        _sorted_by("extra"),
        ("extra",),
        SWEEP_COLUMNS,
        ("e: candidate keys beyond A*_s; subsets: C(s + e, s). shift: the median ĉ's change from the smallest e.",),
        key_headers=(("extra", "e"),),
    ),
}
