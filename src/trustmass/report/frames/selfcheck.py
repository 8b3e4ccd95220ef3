"""The theory claims the self-check regenerates (spec §9: claims 9, 10, 79, 80, 81), as headline rows.

Input: ``results/selfcheck/worked_examples.json`` (:func:`trustmass.selfcheck.worked_examples.worked_examples`):
the library's own values for Example 2.2, Example A.2 and the reduction instances, and EF(s) on
seeded random rows.  Nothing here is compared with an expected number: the claims report judges the
computed values against ``data/claims.yaml`` (exact fractions: identities).  The rows carry no model
(theory holds for every model) and are labelled with both populations.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from trustmass.report.engine import POPULATIONS
from trustmass.report.headline import headline_frame, row
from trustmass.report.statistics import Frames, Inputs, one

__all__ = ["EXAMPLE_2_2", "headline", "statistics"]

#: claim 9's values <- the quantities of the Example 2.2 section
EXAMPLE_2_2 = {"ef_2": "EF(2) = ef({1,3})", "es_2": "ES(2)", "es_top_mass": "es(A*_2)", "kappa": "kappa"}
_SET = re.compile(r"^es\(\[([0-9, ]*)\]\)$")


def _computed(section: list[dict]) -> dict[str, float]:
    return {c["quantity"]: c["computed"] for c in section}


def headline(worked: Mapping) -> pl.DataFrame:
    """Rows for claims 9 (Example 2.2), 79 (Example A.2: es of each set), 80 (EF(s) <= sigma/sqrt(s),
    EF(d+1) = 0), 81 (ES(N/2) >= 2/N^2 where it is not 0) and 10 (so no additive approximation below
    N^-2 can decide ZeroES: the nonzero ES(N/2) of the reduction clear N^-2), on both populations."""
    source = "results/selfcheck/worked_examples.json"
    rows: list[dict] = []
    for population in POPULATIONS:
        ex22 = _computed(worked["sections"]["example_2_2"])
        for value, quantity in EXAMPLE_2_2.items():
            rows.append(row(9, value, ex22[quantity], population, n_instances=1, source=f"{source}: {quantity}"))
        for quantity, computed in _computed(worked["sections"]["example_A_2"]).items():
            match = _SET.match(quantity)
            if match:
                points = "{" + " ".join(x.strip() for x in match.group(1).split(",") if x.strip()) + "}"
                rows.append(
                    row(
                        79,
                        "es_of_set",
                        computed,
                        population,
                        by={"kept_points": points},
                        n_instances=1,
                        source=f"{source}: {quantity}",
                    )
                )
        for inst in worked["theory"]["free_weight"]:
            context = {k: inst[k] for k in ("N", "d", "s", "sigma", "D")}
            rows.append(
                row(80, "ef_bound", inst["ef"], population, n_instances=1, context=context, source=f"{source}: EF(s)")
            )
            if inst["s"] == inst["d"] + 1:
                rows.append(
                    row(80, "ef_at_d_plus_1", inst["ef"], population, n_instances=1, source=f"{source}: EF(d+1)")
                )
        for gap in worked["theory"]["reduction_gaps"]:  # instances without a partition: ES(N/2) > 0
            for claim_id, value in ((81, "es_nonzero_minimum"), (10, "additive_inapproximability")):
                rows.append(
                    row(
                        claim_id,
                        value,
                        gap["es"],
                        population,
                        n_instances=1,
                        context={"N": gap["N"]},
                        source=f"{source}: ES(N/2) for u={gap['u']}",
                    )
                )
    return headline_frame(rows)


def statistics(inputs: Inputs, config: Mapping[str, Any]) -> Frames:
    """Rule ``selfcheck_statistics``: the self-check's computed values (``worked``) -> ``headline_selfcheck``."""
    frame = headline(json.loads(Path(one(inputs, "worked")).read_text(encoding="utf-8")))
    return Frames(
        {"headline_selfcheck": frame},
        summary={"rows": frame.height, "claims": sorted(set(frame["claim_id"].to_list()))},
    )
