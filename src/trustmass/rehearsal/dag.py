"""The jobs a configuration plans, read from snakemake's DAG, and their structure.

:func:`planned_jobs` builds the forced DAG of ``--configfile FILES`` (every job, as ``snakemake --dry-run
--forceall`` plans it; nothing runs, nothing is downloaded) in a process of its own, and returns each job's
rule and wildcards.  :func:`structure` keeps what a rehearsal must share with the paper: the rules, each
rule's wildcard names, and the values of the wildcards that name things (models, corpora, tasks, arms),
while the numeric ones (documents, lengths, shards) only count.  :func:`compare` says how two structures
differ: nothing, for the rehearsal against the paper, but fewer numeric values.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from trustmass.rehearsal.plans import REPO

__all__ = ["compare", "planned_jobs", "structure"]


def _dump(workdir: str, out: str, *configfiles: str) -> None:  # runs in a child process
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, DAGSettings, OutputSettings, ResourceSettings, StorageSettings

    with SnakemakeApi(OutputSettings(quiet={"all"})) as api:
        workflow_api = api.workflow(
            resource_settings=ResourceSettings(cores=1),
            config_settings=ConfigSettings(configfiles=[Path(c).resolve() for c in configfiles]),
            storage_settings=StorageSettings(),
            workdir=Path(workdir),
            snakefile=REPO / "Snakefile",
        )
        workflow_api.dag(DAGSettings(forceall=True)).printrulegraph()  # builds the DAG
        jobs = [
            {"rule": job.rule.name, "wildcards": dict(job.wildcards_dict)} for job in workflow_api._workflow.dag.jobs
        ]
    Path(out).write_text(json.dumps(jobs), encoding="utf-8")


def planned_jobs(
    configfiles: Sequence[str | Path], *, workdir: Path | None = None, env: Mapping | None = None
) -> list[dict]:
    """Every job of the forced DAG of ``configfiles`` (merged over config.yaml): ``{rule, wildcards}``."""
    with tempfile.TemporaryDirectory(prefix="rehearsal-dag-") as tmp:
        out = Path(tmp) / "jobs.json"
        files = [str(Path(c).resolve()) for c in configfiles]
        code = f"from trustmass.rehearsal.dag import _dump; _dump(*{[str(workdir or tmp), str(out), *files]!r})"
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp)
        if done.returncode != 0:
            raise RuntimeError(f"snakemake could not plan {[str(c) for c in configfiles]}:\n{done.stderr[-4000:]}")
        return json.loads(out.read_text(encoding="utf-8"))


#: wildcards whose values are numbers: a rehearsal may plan fewer of them (documents, lengths, shards)
NUMERIC = ("doc", "length", "shard")


def structure(jobs: Iterable[Mapping]) -> dict[str, dict]:
    """Per rule: its jobs, its wildcard names, the values of each naming wildcard, and how many values each
    numeric wildcard takes."""
    out: dict[str, dict] = {}
    values: dict[str, dict[str, set]] = defaultdict(lambda: defaultdict(set))
    for job in jobs:
        rule = out.setdefault(job["rule"], {"jobs": 0, "wildcards": set()})
        rule["jobs"] += 1
        rule["wildcards"].add(tuple(sorted(job["wildcards"])))
        for name, value in job["wildcards"].items():
            values[job["rule"]][name].add(str(value))
    for rule, entry in out.items():
        entry["names"] = {k: sorted(v) for k, v in values[rule].items() if k not in NUMERIC}
        entry["counts"] = {k: len(v) for k, v in values[rule].items() if k in NUMERIC}
    return out


def compare(paper: Mapping[str, dict], rehearsal: Mapping[str, dict]) -> list[str]:
    """How the rehearsal's structure departs from the paper's (empty: the same plan, smaller)."""
    problems = []
    for rule in sorted(set(paper) - set(rehearsal)):
        problems.append(f"rule {rule}: planned by the paper ({paper[rule]['jobs']} jobs), not by the rehearsal")
    for rule in sorted(set(rehearsal) - set(paper)):
        problems.append(f"rule {rule}: planned by the rehearsal ({rehearsal[rule]['jobs']} jobs), not by the paper")
    for rule in sorted(set(paper) & set(rehearsal)):
        p, r = paper[rule], rehearsal[rule]
        if p["wildcards"] != r["wildcards"]:
            problems.append(f"rule {rule}: wildcards {sorted(r['wildcards'])}, the paper's {sorted(p['wildcards'])}")
        for name in sorted(set(p["names"]) | set(r["names"])):
            if p["names"].get(name) != r["names"].get(name):
                problems.append(f"rule {rule}: {name} = {r['names'].get(name)}, the paper's {p['names'].get(name)}")
        for name, count in r["counts"].items():
            if count > p["counts"].get(name, 0):
                problems.append(
                    f"rule {rule}: {count} values of {name}, more than the paper's {p['counts'].get(name, 0)}"
                )
        if r["jobs"] > p["jobs"]:
            problems.append(f"rule {rule}: {r['jobs']} jobs, more than the paper's {p['jobs']}")
    return problems
