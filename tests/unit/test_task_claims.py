"""The task-context claims (42-47) as declarations: every value read, and the retrieval-vs-background and
task-map-vs-prose-map comparisons flagged where both arms cannot differ (hand-built frames)."""

from __future__ import annotations

import polars as pl
from unit.headline_dimensions import assert_dimensions, rows_of

from trustmass.report.engine import POOLED, StatisticsSettings, frame_from_rows
from trustmass.report.frames import tasks as T

SETTINGS = StatisticsSettings(bootstrap=0, map_budget=8)


def contexts(p90: dict[str, float] | None = None, model: str = "m") -> pl.DataFrame:
    """``task_contexts`` at s = 8 for one model and the pool: rows all / retrieval / background."""
    p90 = {"all": 1.3, "retrieval": 1.2, "background": 1.4, **(p90 or {})}
    rows = []
    for who in (model, POOLED):
        for role in T.ROLES:
            rows.append(
                dict(population="all", model=who, budget=8, rows=role, models=model, n=30, n_docs=3, n_degenerate=0)
                | dict(median_c_hat=0.03, median_c_hat_low=0.02, median_c_hat_high=0.04, p90_kappa_hat=p90[role])
                | dict(value_aware_rate=0.1, value_aware_bal_rate=0.02, auc_dropped_mass=0.8, retrieval_share=1 / 3)
            )
    return frame_from_rows(rows, T.TASK_CONTEXTS_SCHEMA)


def cells(task_flat: list[bool], prose_flat: list[bool], model: str = "m") -> pl.DataFrame:
    n = len(task_flat)
    return pl.DataFrame(
        {
            "model": [model] * n,
            "budget": [8] * n,
            "layer": [0] * n,
            "head": list(range(n)),
            "task_dropped_mass": [0.1 * (i + 1) for i in range(n)],
            "prose_dropped_mass": [0.1 * (i + 1) for i in range(n)],
            "task_flat": task_flat,
            "prose_flat": prose_flat,
            "n_task": [10] * n,
            "n_prose": [10] * n,
        },
        schema=T.TASK_MAP_SCHEMA,
    )


MIXED = [True, False, True, False]


def head(table: pl.DataFrame, cell_map: pl.DataFrame) -> pl.DataFrame:
    return T.headline(T.claim_frames(table, cell_map, SETTINGS))


def test_every_task_declaration_reads_a_row():
    out = head(contexts(), cells(MIXED, MIXED))
    assert_dimensions(out)
    assert set(zip(out["claim_id"], out["value_name"], strict=True)) == {(s.claim, s.value) for s in T.HEADLINE}
    assert out["uninformative"].null_count() == out.height
    assert rows_of(out, 42, "pooled_c_hat")["models"].to_list() == ["m"]  # the pool's models, not "(pooled)"
    assert rows_of(out, 43, "p90_headroom_ratio_retrieval_vs_background")["estimate"].to_list() == [1.2 / 1.4]
    for spec in T.HEADLINE:
        for x in rows_of(out, spec.claim, spec.value)["estimate"]:
            assert spec.domain[0] <= x <= spec.domain[1], (spec.claim, spec.value, x)


def test_a_headroom_ratio_with_both_p90s_at_the_floor_is_flagged():
    floor = head(contexts({"retrieval": 1.0, "background": 1.0}), cells(MIXED, MIXED))
    for value in ("p90_headroom_ratio_retrieval_vs_background", "p90_headroom_ratio_ceiling"):
        got = rows_of(floor, 43, value)
        assert got["estimate"].to_list() == [1.0] and got["uninformative"].to_list() == [T.BOTH_AT_FLOOR]
    one = head(contexts({"retrieval": 1.3, "background": 1.0}), cells(MIXED, MIXED))  # only one arm at the floor
    assert rows_of(one, 43, "p90_headroom_ratio_retrieval_vs_background")["uninformative"].to_list() == [None]


def test_a_label_agreement_of_two_one_label_maps_is_flagged():
    flat = head(contexts(), cells([True] * 4, [True] * 4))
    agreement = rows_of(flat, 47, "map_label_agreement")
    assert agreement["estimate"].to_list() == [1.0] and agreement["uninformative"].to_list() == [T.ONE_LABEL_EACH]
    opposite = head(contexts(), cells([True] * 4, [False] * 4))
    assert rows_of(opposite, 47, "map_label_agreement")["uninformative"].to_list() == [T.ONE_LABEL_EACH]
    one_sided = head(contexts(), cells([True] * 4, MIXED))  # the prose map has both labels: the agreement speaks
    got = rows_of(one_sided, 47, "map_label_agreement")
    assert got["estimate"].to_list() == [0.5] and got["uninformative"].to_list() == [None]
