"""The library modules each job would run, checked as the job itself checks them, without running the study.

``python job_imports.py JOBS.json OUT.json``: JOBS.json is a list of jobs (``dag_jobs.py``'s fields: rule, script,
code, params, wildcards).  For each, a child process forked from this one (which has imported only what every
job imports first, ``trustmass.plumbing.rule_io``, and the third-party packages, so that the children start fast)
does what the job's process does before its end, as far as imports go:

* every import statement of the rule's script, at module level and inside its functions (``main`` imports
  lazily), in source order;
* the loads by dotted name that the job's configuration drives, through the library's own loaders
  (:data:`BY_NAME`: the deployment roster's press classes, the catalog's statistics function and draw module);

then runs the job-end check, :func:`trustmass.plumbing.code_inputs.check_code_inputs`, against the job's declared
code inputs.  OUT.json: per job, ``undeclared`` (module names) and ``message`` (the check's), or ``error``.

A script whose job loads library modules by dotted name adds its loader to :data:`BY_NAME`; one that does not is
still caught by the job-end check of its first real run.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import sys
import traceback
from pathlib import Path
from types import SimpleNamespace

from trustmass.plumbing.rule_io import run_rule  # noqa: F401 -- what every job imports first

#: third-party packages the jobs import, loaded once here so that each forked child only imports library code
PRELOAD = (
    "numpy",
    "polars",
    "scipy",
    "torch",
    "transformers",
    "kvpress",
    "matplotlib.pyplot",
    "safetensors.torch",
    "numba",
    "jsonschema",
)


def _deploy_condition(job: dict) -> None:
    """deploy_condition builds each method's press (trustmass.deploy.runner), loaded from the roster's dotted name."""
    from trustmass.deploy.job import deploy_for, methods_of

    run, decomposition = methods_of(deploy_for(job["params"]["config"]["deploy"], job["wildcards"]["task"]))
    for found in [*run, *decomposition]:
        if found.press_factory is not None:
            found.press_factory(0.5)


def _deploy_replay(job: dict) -> None:
    """deploy_replay builds the replayed methods' presses as kvpress ships them (trustmass.deploy.replay)."""
    from trustmass.deploy.methods import method, shipped_press

    deploy = job["params"]["config"]["deploy"]
    for name in (deploy.get("replay") or {}).get("methods") or ():
        shipped_press(method(name, hub=bool(deploy["hub"])), 0.5)


def _statistics(job: dict) -> None:
    """A statistics rule imports the function its catalog entry names (params.statistics: a control arm's copy
    names its entry too; trustmass.report.statistics.function_of)."""
    from trustmass.report.catalog import statistics_rule
    from trustmass.report.statistics import function_of

    function_of(statistics_rule(job["params"]["statistics"]))


def _render(job: dict) -> None:
    """A render rule imports the draw or layout module its catalog output names (trustmass.report.render)."""
    from trustmass.report.catalog import output

    importlib.import_module(output(job["params"]["output"]).draw.split(":")[0])


#: script -> what its job loads by dotted name, as a function of the job
BY_NAME = {
    "deploy_condition.py": _deploy_condition,
    "deploy_replay.py": _deploy_replay,
    "statistics.py": _statistics,
    "render.py": _render,
}


def script_imports(script: str) -> list[ast.stmt]:
    """Every import statement of a script, wherever it stands, in source order."""
    tree = ast.parse(Path(script).read_text(encoding="utf-8"), filename=script)
    found = [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]
    return sorted(found, key=lambda node: (node.lineno, node.col_offset))


def simulate(job: dict) -> dict:
    """In this process: the job's imports and loads by name, then the job-end check."""
    from trustmass.plumbing.code_inputs import UndeclaredCodeError, check_code_inputs, undeclared_modules

    for node in script_imports(job["script"]):
        exec(compile(ast.Module(body=[node], type_ignores=[]), job["script"], "exec"), {})
    loader = BY_NAME.get(os.path.basename(job["script"]))
    if loader is not None:
        loader(job)
    code = job["code"]
    smk = SimpleNamespace(
        input={} if code is None else {"code": code}, rule=job["rule"], scriptdir=str(Path(job["script"]).parent)
    )
    try:
        check_code_inputs(smk)
    except UndeclaredCodeError as exc:
        return {"undeclared": exc.modules, "message": str(exc)}
    return {"undeclared": list(undeclared_modules(code or [])), "message": None}


def in_child(job: dict) -> dict:
    """:func:`simulate` in a forked child, so that no job sees another's imports."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read)
        try:
            result = simulate(job)
        except BaseException:  # noqa: BLE001 -- reported to the parent, whatever it is
            result = {"error": traceback.format_exc(limit=8)}
        with os.fdopen(write, "w") as out:
            json.dump(result, out)
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as got:
        text = got.read()
    os.waitpid(pid, 0)
    return json.loads(text) if text else {"error": "the child wrote nothing"}


def main(jobs_file: str, out_file: str) -> None:
    for name in PRELOAD:
        importlib.import_module(name)
    jobs = json.loads(Path(jobs_file).read_text(encoding="utf-8"))
    results = [{"rule": job["rule"], **in_child(job)} for job in jobs]
    Path(out_file).write_text(json.dumps(results), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
