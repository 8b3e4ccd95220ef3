"""The theory claims (9, 10, 79, 80, 81) from the self-check's worked examples: declared values read from the
library's own computations, on both populations."""

import json
from fractions import Fraction

import polars as pl
import pytest
from unit.declared_frames import assert_columns_exist, assert_in_domain

from trustmass.report.frames import selfcheck as S
from trustmass.selfcheck.worked_examples import worked_examples


@pytest.fixture(scope="module")
def worked():
    return worked_examples(seed=0)


def test_the_declarations_read_columns_of_the_claim_frames_and_stay_in_their_domains(worked):
    frames = S.claim_frames(worked)
    assert_columns_exist(S.HEADLINE, frames)
    assert assert_in_domain(S.HEADLINE, frames) >= len(S.HEADLINE)


def test_example_2_2_and_a_2_rows_carry_the_library_values_on_both_populations(worked):
    head = S.headline(worked)
    for population in ("primary", "all"):
        rows = head.filter(pl.col("population") == population)
        ex22 = {r["value_name"]: r["estimate"] for r in rows.filter(pl.col("claim_id") == 9).iter_rows(named=True)}
        assert ex22 == pytest.approx({"ef_2": 0.0, "es_2": 9 / 22, "es_top_mass": 0.5, "kappa": 11 / 9})
        sets = {r["by_value"]: r["estimate"] for r in rows.filter(pl.col("claim_id") == 79).iter_rows(named=True)}
        assert sets["{0 1 3}"] == pytest.approx(float(Fraction(1, 6))) and sets["{1 2}"] == pytest.approx(0.0)
        assert set(rows.filter(pl.col("claim_id") == 79)["by_key"]) == {"kept_points"}


def test_the_bound_rows_carry_the_context_their_formula_is_evaluated_at(worked):
    head = S.headline(worked).filter(pl.col("population") == "all")
    bound = head.filter(pl.col("value_name") == "ef_bound")
    assert bound.height == len(worked["theory"]["free_weight"])
    assert all(set(json.loads(c)) == {"N", "d", "s", "sigma", "D"} for c in bound["context"])
    at_d1 = head.filter(pl.col("value_name") == "ef_at_d_plus_1")
    assert at_d1.height == sum(i["s"] == i["d"] + 1 for i in worked["theory"]["free_weight"]) > 0
    for value in ("es_nonzero_minimum", "additive_inapproximability"):
        gaps = head.filter(pl.col("value_name") == value)
        assert gaps.height == len(worked["theory"]["reduction_gaps"]) and gaps["context"].str.contains('"N"').all()
