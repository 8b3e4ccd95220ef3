"""Why a bound cannot close the diffuse rows: how far mu is from the hull of the light keys, per row.

    PYTHONPATH=src python benchmarks/certify/hull.py frontier40.pkl benchmarks/certify/data/frontier_final.jsonl

Per row of the run (its final best set hi = es_cert): for the lightest 50 / 25 / 12.5 / 6.25 % of the keys
(`bnb.TAIL_FRACTIONS`, the tails whose hull directions give the root's cut), dist(mu, conv{v_i}) / hi -- a
kept set of those keys alone has es >= that distance, and a relaxation that may spread the kept weight over
them cannot bound es above it -- and the root's cut at tau = 0.99 hi (`bnb.root_cut`: the first mass rank k
from which no kept set of lighter keys can have es <= tau; N - s + 1 when no direction cuts).  A Markdown table.
"""

from __future__ import annotations

import json
import pickle
import sys

import numpy as np

from trustmass.certification import bnb
from trustmass.core.operator import Instance
from trustmass.core.simplex import project_onto_hull


def main(rows_pkl: str, run_jsonl: str) -> None:
    with open(rows_pkl, "rb") as f:
        data = pickle.load(f)
    with open(run_jsonl) as f:
        run = {r["row"]: r for r in map(json.loads, f)}
    fr = bnb.TAIL_FRACTIONS
    print(
        "| # | s | N | status | gap | "
        + " | ".join(f"dist(mu, light {100 * f:g} %) / hi" for f in fr)
        + " | root cut k at 0.99 hi (of N - s + 1) |"
    )
    print("|" + "---|" * (6 + len(fr)))
    for i in sorted(run):
        r, d = run[i], data[i]
        inst = Instance.from_arrays(d["p"], d["v"])
        prep = bnb.Prepared.of(inst)
        n, hi = inst.n_keys, r["es_cert"]
        dist = []
        for f in fr:
            k = int(n * (1.0 - f))
            dist.append(float(np.linalg.norm(project_onto_hull(prep.V[k:], np.zeros(prep.V.shape[1])).point)) / hi)
        k, _ = bnb.root_cut(prep, d["s"], 0.99 * hi)
        gap = f"{100 * r['gap']:.2f} %" if r["gap"] <= 0.01 + 1e-12 else "open"
        cells = [
            str(i),
            str(d["s"]),
            f"{n:,}",
            r["status"],
            gap,
            *(f"{x:.3f}" for x in dist),
            f"{k:,} ({n - d['s'] + 1:,})",
        ]
        print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:3])
