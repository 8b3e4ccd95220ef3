"""The theory claims the self-check regenerates (spec §9: claims 9, 10, 79, 80, 81), as headline rows.

Input: ``results/selfcheck/worked_examples.json`` (:func:`trustmass.selfcheck.worked_examples.worked_examples`):
the library's own values for Example 2.2, Example A.2 and the reduction instances, and EF(s) on
seeded random rows.  Nothing here is compared with an expected number: the claims report judges the
computed values against ``data/claims.yaml`` (exact fractions: identities).  The rows carry no model
(theory holds for every model) and are labelled with both populations.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from trustmass.report.engine import POPULATIONS
from trustmass.report.headline import HeadlineValue, declared_rows, headline_frame
from trustmass.report.statistics import Frames, Inputs, one

__all__ = ["EXAMPLE_2_2", "HEADLINE", "claim_frames", "headline", "statistics"]

#: claim 9's values <- the quantities of the Example 2.2 section
EXAMPLE_2_2 = {"ef_2": "EF(2) = ef({1,3})", "es_2": "ES(2)", "es_top_mass": "es(A*_2)", "kappa": "kappa"}
_SET = re.compile(r"^es\(\[([0-9, ]*)\]\)$")
#: es and EF are norms (>= 0); kappa = es(A*) / ES >= 1 since ES is the minimum over every s-set
_NORM, _RATIO = (0.0, math.inf), (1.0, math.inf)

#: the theory claims' values, each read from a frame of :func:`claim_frames` (one row per instance and population)
HEADLINE: tuple[HeadlineValue, ...] = (
    *(
        HeadlineValue(9, value, "example_2_2", value, (), domain=_RATIO if value == "kappa" else _NORM)
        for value in EXAMPLE_2_2
    ),
    HeadlineValue(79, "es_of_set", "example_A_2", "es", ("kept_points",), domain=_NORM),
    HeadlineValue(80, "ef_bound", "free_weight", "ef", (), context=("N", "d", "s", "sigma", "D"), domain=_NORM),
    HeadlineValue(80, "ef_at_d_plus_1", "free_weight", "ef", (), {"s_is_d_plus_1": True}, domain=_NORM),
    HeadlineValue(81, "es_nonzero_minimum", "reduction_gaps", "es", (), context=("N",), domain=_NORM),
    HeadlineValue(
        10,
        "additive_inapproximability",
        "reduction_gaps",
        "es",
        (),
        context=("N",),
        note="no additive approximation below N^-2 decides ZeroES when every nonzero ES(N/2) clears N^-2",
        domain=_NORM,
    ),
)


def _computed(section: list[dict]) -> dict[str, float]:
    return {c["quantity"]: c["computed"] for c in section}


def _kept_points(quantity: str) -> str | None:
    """``es([0, 2])`` -> ``{0 2}`` (claim 79's set, written by point values); None for other quantities."""
    match = _SET.match(quantity)
    if not match:
        return None
    return "{" + " ".join(x.strip() for x in match.group(1).split(",") if x.strip()) + "}"


def claim_frames(worked: Mapping) -> dict[str, pl.DataFrame]:
    """The self-check's computed values as frames, each row on both populations (theory holds for every
    model): ``example_2_2`` (claim 9: one row), ``example_A_2`` (79: es per kept set), ``free_weight`` (80: EF(s)
    on seeded random rows, with N, d, s, sigma, D) and ``reduction_gaps`` (81, 10: ES(N/2) of the reduction
    instances without a partition, with N)."""
    ex22 = _computed(worked["sections"]["example_2_2"])
    sets = [(_kept_points(q), es) for q, es in _computed(worked["sections"]["example_A_2"]).items()]
    theory = worked["theory"]
    rows: dict[str, list[dict]] = {
        "example_2_2": [{**{value: ex22[q] for value, q in EXAMPLE_2_2.items()}}],
        "example_A_2": [{"kept_points": points, "es": es} for points, es in sets if points is not None],
        "free_weight": [
            {**{k: inst[k] for k in ("N", "d", "s", "sigma", "D", "ef")}, "s_is_d_plus_1": inst["s"] == inst["d"] + 1}
            for inst in theory["free_weight"]
        ],
        "reduction_gaps": [{"N": gap["N"], "es": gap["es"]} for gap in theory["reduction_gaps"]],
    }
    return {
        name: pl.DataFrame(
            [{"population": population, **r, "n": 1} for population in POPULATIONS for r in rs],
            infer_schema_length=None,
        )
        for name, rs in rows.items()
    }


def headline(worked: Mapping) -> pl.DataFrame:
    """Rows for claims 9 (Example 2.2), 79 (Example A.2: es of each set), 80 (EF(s) <= sigma/sqrt(s),
    EF(d+1) = 0), 81 (ES(N/2) >= 2/N^2 where it is not 0) and 10 (so no additive approximation below
    N^-2 can decide ZeroES: the nonzero ES(N/2) of the reduction clear N^-2), on both populations."""
    return headline_frame(declared_rows(HEADLINE, claim_frames(worked)))


def statistics(inputs: Inputs, config: Mapping[str, Any]) -> Frames:
    """Rule ``selfcheck_statistics``: the self-check's computed values (``worked``) -> ``headline_selfcheck``."""
    frame = headline(json.loads(Path(one(inputs, "worked")).read_text(encoding="utf-8")))
    return Frames(
        {"headline_selfcheck": frame},
        summary={"rows": frame.height, "claims": sorted(set(frame["claim_id"].to_list()))},
    )
