"""Every job of a forced dry-run's DAG, as JSON: ``python dag_jobs.py WORKDIR OUT.json [CONFIGFILE ...]``.

Builds the DAG through snakemake's API (what ``snakemake --dry-run --forceall --configfile ...`` plans) and writes,
per job: its rule, the rule's script, its declared code inputs (absolute; null where the rule has no ``code``
input), its params (JSON; ``repr`` where not JSON), wildcards, resources and outputs, and the params and inputs exactly as
snakemake's ``params`` and ``input`` rerun triggers record and compare them (``Persistence._params``/``_input``).
Run in a process of its own: the workflow imports the library, and the caller may need a clean interpreter.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _plain(value):
    try:
        json.dumps(value)
        return value
    except TypeError:
        return repr(value)


def main(workdir: str, out: str, *configfiles: str) -> None:
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import (
        ConfigSettings,
        DAGSettings,
        OutputSettings,
        ResourceSettings,
        StorageSettings,
    )

    with SnakemakeApi(OutputSettings(quiet={"all"})) as api:
        workflow_api = api.workflow(
            resource_settings=ResourceSettings(cores=1),
            config_settings=ConfigSettings(configfiles=[Path(c).resolve() for c in configfiles]),
            storage_settings=StorageSettings(),
            workdir=Path(workdir),
            snakefile=REPO / "Snakefile",
        )
        workflow_api.dag(DAGSettings(forceall=True)).printrulegraph()  # builds the DAG (the graph itself unused)
        workflow = workflow_api._workflow
        persistence = workflow.persistence
        jobs = []
        for job in workflow.dag.jobs:
            rule = job.rule
            code = getattr(job.input, "code", None) if "code" in job.input.keys() else None
            if isinstance(code, str):
                code = [code]
            script = rule.script and os.path.normpath(os.path.join(os.path.dirname(rule.snakefile), rule.script))
            jobs.append(
                {
                    "rule": rule.name,
                    "script": script,
                    "code": None if code is None else [os.path.abspath(p) for p in code],
                    "params": {name: _plain(value) for name, value in job.params.items()},
                    "wildcards": dict(job.wildcards_dict),
                    "resources": {name: _plain(value) for name, value in job.resources.items()},
                    "output": [str(f) for f in job.output],
                    "params_recorded": persistence._params(job),
                    "input_recorded": persistence._input(job),
                }
            )
    Path(out).write_text(json.dumps(jobs), encoding="utf-8")


if __name__ == "__main__":
    main(*sys.argv[1:])
