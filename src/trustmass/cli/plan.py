"""What a configuration plans: instances per (model, corpus), the certification manifest, the claims'
counts (``--claims``) and the projected cost (``--costs``).

``python -m trustmass.cli.plan --configfile config/paper.yaml [--claims | --costs]``.  The counting lives in
:mod:`trustmass.cli.instances` (re-exported here), the cost projection in :mod:`trustmass.cli.costs`.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from trustmass.cli import instances
from trustmass.cli.costs import GPU_JSON, print_costs
from trustmass.cli.instances import *  # noqa: F403 -- the planner's functions, importable from here as before
from trustmass.cli.instances import (
    PRIMARY_DOCS,
    paper_plan,
    planned_instances,
    planned_manifest,
    resolve_config,
    summed,
)

__all__ = [*instances.__all__, "main"]  # the re-exported names and the command line


def _print_paper_plan(config: Mapping[str, Any]) -> int:
    rows = paper_plan(config)
    for r in rows:
        mark = "=" if r["equal"] else ("scale only" if r["planned"] is None else "differs")
        print(
            f"claim {r['claim']:>3} {r['value']:<32} paper {r['paper']!s:<16} planned {r['planned']!s:<16} {mark}: {r['how']}"
        )
    planned = [r for r in rows if r["planned"] is not None]
    print(f"{sum(r['equal'] for r in planned)} of {len(planned)} planned numbers are the paper's")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trustmass.cli.plan", description=__doc__.split("\n\n")[0])
    parser.add_argument("--configfile", nargs="*", default=[], help="files merged over config.yaml, in order")
    parser.add_argument(
        "--claims",
        action="store_true",
        help="the claim values the configuration sets (counts, sizes, shares s/N) against the paper's numbers",
    )
    parser.add_argument(
        "--costs",
        action="store_true",
        help="jobs per stage and projected GPU-/CPU-hours from measured per-unit costs (trustmass.cli.costs)",
    )
    parser.add_argument(
        "--gpu-json", default=None, help="--costs: the GPU check's JSON (default benchmarks/gpu/gpu-check.json)"
    )
    args = parser.parse_args(argv)
    config = resolve_config(*args.configfile)
    if args.claims:
        return _print_paper_plan(config)
    if args.costs:
        return print_costs(config, args.gpu_json or GPU_JSON)
    frame = planned_instances(config)
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=200, thousands_separator=","):
        print(frame)
    totals = summed(frame)
    print(
        f"total: {totals['docs']:,} documents, {totals['instances']:,} instances; "
        f"primary slice (first {PRIMARY_DOCS} docs): {totals['primary_instances']:,} instances"
    )
    cert = planned_manifest(config)
    print(
        f"certification manifest: {cert['instances']:,} instances ({len(cert['families'])} headline families, "
        f"{cert['per_budget']:,} per budget) in {cert['shards']} shards, a budget of {cert['budget_s']:.3g} s per solve "
        f"(safety net {cert['time_limit_s']:g} s), "
        f"certifier {cert['certifier']}"
    )
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
