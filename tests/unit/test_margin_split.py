"""The signed reference margin split (related-methods A.5, A.6; trustmass.report.frames.diagnostics):
buckets, ties counted apart, the rate gap and direction match, the permutation null, leave-one-out,
and the degenerate case named."""

import numpy as np
import polars as pl
import pytest

from trustmass.report.frames.diagnostics import margin_cells, margin_split


def tokens(ce: dict) -> pl.DataFrame:
    """Token rows (two tokens per document) whose mean NLL per (corpus, config) is ``ce``."""
    rows = []
    for (corpus, family, rule, budget), value in ce.items():
        for position in (0, 1):
            rows.append(
                {
                    "model": "m",
                    "corpus": corpus,
                    "doc": "0004",
                    "family": family,
                    "rule": rule,
                    "budget": budget,
                    "position": position,
                    "nll": value + (0.01 if position else -0.01),
                }
            )
    return pl.DataFrame(rows)


def cells_frame(margins, deltas, contents):
    return pl.DataFrame(
        {
            "model": "m",
            "corpus": contents,
            "content": contents,
            "budget": list(range(len(margins))),
            "host": "h",
            "rule": "r",
            "n_docs": 1,
            "ce_dense": 1.0,
            "ce_host": [1.0 + m for m in margins],
            "ce_rule": [1.0 + m - d for m, d in zip(margins, deltas)],
            "margin": margins,
            "delta": deltas,
            "bucket": ["positive" if m > 0 else "nonpositive" for m in margins],
            "shift": ["tie" if abs(d) <= 1e-3 else "positive" if d > 0 else "negative" for d in deltas],
            "contracts": "like_for_like",
        }
    )


def test_cells_read_ce_per_corpus_and_budget_with_margin_and_delta():
    ce = {
        ("a", "dense", None, None): 2.0,
        ("a", "margin", "value_aware_mass", 8): 2.5,
        ("a", "margin", "value_aware_mii", 8): 2.3,
        ("b", "dense", None, None): 3.0,
        ("b", "margin", "value_aware_mass", 8): 2.9995,
        ("b", "margin", "value_aware_mii", 8): 3.0,
    }
    cells = margin_cells(tokens(ce), {"a": "prose", "b": None}, "value_aware_mass", ["value_aware_mii"], 1e-3).sort(
        "corpus"
    )
    assert cells["margin"].to_list() == pytest.approx([0.5, -0.0005])
    assert cells["delta"].to_list() == pytest.approx([0.2, -0.0005])
    assert cells["bucket"].to_list() == ["positive", "nonpositive"]
    assert cells["shift"].to_list() == ["positive", "tie"]
    assert cells["content"].to_list() == ["prose", "b"]
    assert cells["contracts"].to_list() == ["like_for_like", "like_for_like"]


def test_a_perfect_split_has_gap_one_match_one_and_a_small_p():
    margins = [0.5, 0.4, 0.3, 0.2, -0.1, -0.2, -0.3, -0.4]
    deltas = [0.1, 0.2, 0.1, 0.3, -0.1, -0.2, -0.1, -0.05]
    out = margin_split(cells_frame(margins, deltas, list("abababab")), 1e-3, permutations=2000).row(0, named=True)
    assert out["rate_positive_bucket"] == 1.0 and out["rate_nonpositive_bucket"] == 0.0
    assert out["rate_gap"] == 1.0 and out["direction_match"] == 1.0
    assert out["p_gap"] < 0.05 and abs(out["null_gap_mean"]) < 0.1
    assert out["loo_gap_min"] == out["loo_gap_max"] == 1.0
    assert out["pearson_r"] > 0 and out["degenerate"] is None


def test_ties_are_counted_apart_and_left_out_of_the_match():
    margins, deltas = [0.5, 0.4, -0.1, -0.2], [0.1, 0.0005, -0.1, 0.0]
    out = margin_split(cells_frame(margins, deltas, list("abab")), 1e-3, permutations=100).row(0, named=True)
    assert out["ties_positive_bucket"] == 1 and out["ties_nonpositive_bucket"] == 1
    assert out["n_not_tied"] == 2 and out["direction_match"] == 1.0
    assert out["rate_positive_bucket"] == 0.5 and out["rate_nonpositive_bucket"] == 0.0


def test_every_host_worse_than_dense_is_named_degenerate():
    out = margin_split(cells_frame([0.5, 0.4, 0.3], [0.1, -0.1, 0.2], list("abc")), 1e-3, permutations=100).row(
        0, named=True
    )
    assert out["rate_gap"] is None and out["n_nonpositive_bucket"] == 0
    assert "no cell in the nonpositive bucket" in out["degenerate"] and "es" in out["degenerate"]
    assert out["rate_positive_bucket"] == pytest.approx(2 / 3)
    assert np.isclose(out["direction_match"], 2 / 3)
