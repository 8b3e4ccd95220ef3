"""Where a run's time went: job wall times and CPU seconds per rule, read back from the provenance sidecars.

Every rule script writes a sidecar (``<output>.prov.json``) with the job's start, finish, wall time, the CPU
seconds its process had used (``cpu_time_s``; absent in sidecars written before it was recorded) and rule
name (``extra.rule``, :mod:`trustmass.plumbing.rule_io`).  The CPU seconds are the measure to compare across
runs: a job beside others on the same cores takes longer, but no more CPU.  A job with several outputs
writes several sidecars; they share the job's generated script (``command.argv``) and start stamp,
so one job is one ``(rule, argv, started)`` key and its wall time the largest of its sidecars'.

``python -m trustmass.cli.job_times results [--cores 2]`` prints one row per rule -- jobs, summed
job-seconds, summed CPU-seconds, median and largest job -- and the totals: summed job-seconds, the span from the first
start to the last finish (wall time when the jobs ran in one sitting; with several sittings the gaps
between them count too), and summed job-seconds over the cores (the wall time of a perfectly packed
schedule).  ``--since`` keeps the jobs that started at or after an ISO time (one sitting of a
resumed run).  Jobs that were not rerun keep the sidecars of the run that made them: the table
describes the outputs present, which may come from several runs.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path

import polars as pl

__all__ = ["read_jobs", "per_rule", "summary", "main"]

SIDECAR_GLOB = "*.prov.json"


def _utc(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def read_jobs(roots: Iterable[str | Path]) -> pl.DataFrame:
    """One row per job found under `roots`: rule, started, finished (UTC datetimes), wall_s, outputs.

    A sidecar written without a start stamp (``started_utc`` null: no job time to tell) is left out;
    one that is not JSON, or lacks the provenance fields, is an error naming the file."""
    jobs: dict[tuple, dict] = {}
    for root in roots:
        root = Path(root)
        if not root.exists():
            raise FileNotFoundError(f"{root}: no such folder; fix: name a results folder of a run (e.g. results)")
        for path in sorted(root.rglob(SIDECAR_GLOB)):
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
                rule = (record.get("extra") or {}).get("rule", "(no rule recorded)")
                started, finished = record["started_utc"], record["finished_utc"]
                if started is None:
                    continue
                wall = float(record["wall_time_s"])
                cpu = record.get("cpu_time_s")
                cpu = None if cpu is None else float(cpu)
                argv = tuple((record.get("command") or {}).get("argv") or ())
            except (ValueError, KeyError, TypeError) as err:
                raise ValueError(
                    f"{path}: not a provenance sidecar ({err}); fix: delete it and rerun the rule that writes it"
                ) from err
            key = (rule, argv, started)
            job = jobs.setdefault(
                key,
                {
                    "rule": rule,
                    "started": _utc(started),
                    "finished": _utc(finished),
                    "wall_s": wall,
                    "cpu_s": cpu,
                    "outputs": 0,
                },
            )
            job["finished"] = max(job["finished"], _utc(finished))
            job["wall_s"] = max(job["wall_s"], wall)
            if cpu is not None:  # the last sidecar a job writes has used the most
                job["cpu_s"] = cpu if job["cpu_s"] is None else max(job["cpu_s"], cpu)
            job["outputs"] += 1
    schema = {
        "rule": pl.Utf8,
        "started": pl.Datetime("us", "UTC"),
        "finished": pl.Datetime("us", "UTC"),
        "wall_s": pl.Float64,
        "cpu_s": pl.Float64,
        "outputs": pl.Int64,
    }
    return pl.DataFrame(list(jobs.values()), schema=schema).sort("started")


def per_rule(jobs: pl.DataFrame) -> pl.DataFrame:
    """rule, jobs, job_s (summed wall), cpu_s (summed; null where no job recorded it), median_s, max_s (wall);
    the costliest rule first."""
    return (
        jobs.group_by("rule")
        .agg(
            pl.len().alias("jobs"),
            pl.col("wall_s").sum().alias("job_s"),
            pl.when(pl.col("cpu_s").is_not_null().any()).then(pl.col("cpu_s").sum()).alias("cpu_s"),
            pl.col("wall_s").median().alias("median_s"),
            pl.col("wall_s").max().alias("max_s"),
        )
        .sort(["job_s", "rule"], descending=[True, False])
    )


def summary(jobs: pl.DataFrame, cores: int) -> dict:
    """jobs, job_s, cpu_s (null if no job recorded it), span_s (first start to last finish), packed_s
    (job_s / cores)."""
    if cores < 1:
        raise ValueError(f"--cores {cores}: fix: a positive number of cores")
    if jobs.height == 0:
        return {"jobs": 0, "job_s": 0.0, "cpu_s": None, "span_s": 0.0, "packed_s": 0.0}
    job_s = float(jobs["wall_s"].sum())
    cpu_s = float(jobs["cpu_s"].sum()) if jobs["cpu_s"].is_not_null().any() else None
    span = (jobs["finished"].max() - jobs["started"].min()).total_seconds()
    return {"jobs": jobs.height, "job_s": job_s, "cpu_s": cpu_s, "span_s": span, "packed_s": job_s / cores}


def _markdown(table: pl.DataFrame, totals: dict, cores: int) -> str:
    lines = ["| rule | jobs | job-seconds | CPU-seconds | median s | max s |", "|---|---:|---:|---:|---:|---:|"]
    for row in table.iter_rows(named=True):
        lines.append(
            f"| {row['rule']} | {row['jobs']} | {row['job_s']:,.0f} | {_seconds(row['cpu_s'])} | {row['median_s']:,.1f} "
            f"| {row['max_s']:,.1f} |"
        )
    lines.append(
        f"\n{totals['jobs']} jobs, {totals['job_s']:,.0f} job-seconds ({totals['job_s'] / 3600:.2f} h), "
        f"{_seconds(totals['cpu_s'])} CPU-seconds; "
        f"span first start to last finish {totals['span_s']:,.0f} s; job-seconds over {cores} cores {totals['packed_s']:,.0f} s"
    )
    return "\n".join(lines)


def _seconds(value: float | None) -> str:
    return "--" if value is None else f"{value:,.0f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trustmass.cli.job_times", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "roots", nargs="*", default=["results"], help="folders searched for sidecars (default: results)"
    )
    parser.add_argument("--cores", type=int, default=2, help="cores the job-seconds are divided over (default 2)")
    parser.add_argument("--since", help="keep jobs started at or after this ISO time (UTC unless it names a zone)")
    parser.add_argument("--rule", action="append", default=[], help="keep only this rule (repeatable)")
    args = parser.parse_args(argv)
    jobs = read_jobs(args.roots)
    if args.since:
        since = datetime.fromisoformat(args.since)
        since = since if since.tzinfo else since.replace(tzinfo=_utc("2000-01-01T00:00:00Z").tzinfo)
        jobs = jobs.filter(pl.col("started") >= since)
    if args.rule:
        jobs = jobs.filter(pl.col("rule").is_in(args.rule))
    print(_markdown(per_rule(jobs), summary(jobs, args.cores), args.cores))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
