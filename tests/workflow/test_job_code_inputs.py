"""Every code input declared, checked by the job itself (trustmass.plumbing.code_inputs), and no rule rerun by a
setting that only schedules it (trustmass.plumbing.config.SCHEDULING_KEYS).

Without running the study: the default and panel DAGs are built through snakemake's API (``dag_jobs.py``), and
each distinct job's imports -- its script's, and the loads by dotted name its configuration drives -- are run in a
child process that then runs the job-end check against the job's declared code inputs (``job_imports.py``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

pytestmark = pytest.mark.workflow

HERE = Path(__file__).resolve().parent
DAGS = {"default": (), "panel": ("config/cpu-panel.yaml",)}
#: scripts whose jobs load modules by dotted name: their jobs differ by rule, params and wildcards, not by code alone
BY_NAME = ("deploy_condition.py", "deploy_replay.py", "statistics.py", "render.py")
#: a settings overlay that changes only what schedules jobs (a cluster time limit, a job's memory request)
SCHEDULING_ONLY = """\
certification:
  runtime_min: 31
models:
  smollm2-135m:
    mem_mb: 3100
"""
#: (rule, module) pairs: a rule's declared code inputs with one of its modules left out must fail the check naming
#: it -- the two issue 38 found: a module the script imports, and one the deployment roster loads by dotted name
LEFT_OUT = [("claims_report", "trustmass.report.html_page"), ("deploy_condition", "trustmass.deploy.h2o_press")]


def dag_jobs(workdir: Path, *configfiles: str) -> list[dict]:
    out = workdir / "jobs.json"
    done = subprocess.run(
        [sys.executable, str(HERE / "dag_jobs.py"), str(workdir), str(out), *configfiles],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return json.loads(out.read_text(encoding="utf-8"))


def job_key(job: dict) -> str:
    """Jobs that would import the same: same script and declared code, and for a loader by dotted name the same
    rule, params and wildcards."""
    name = Path(job["script"]).name
    parts = [job["script"], job["code"]]
    if name in BY_NAME:
        parts += [job["rule"], job["params"], job["wildcards"]]
    return json.dumps(parts, sort_keys=True)


def without(code: list[str], module: str) -> list[str]:
    tail = module.split(".")[1:]
    ends = ("/".join(tail) + ".py", "/".join([*tail, "__init__.py"]))
    kept = [p for p in code if not p.endswith(ends)]
    assert len(kept) == len(code) - 1, f"{module} is not among the code inputs {code}"
    return kept


@pytest.fixture(scope="module")
def workdirs(tmp_path_factory) -> dict[str, Path]:
    return {name: tmp_path_factory.mktemp(name) for name in DAGS}


@pytest.fixture(scope="module")
def dags(workdirs) -> dict[str, list[dict]]:
    return {name: dag_jobs(workdirs[name], *(str(REPO / c) for c in configs)) for name, configs in DAGS.items()}


@pytest.fixture(scope="module")
def simulated(dags, tmp_path_factory) -> dict[str, dict]:
    """The job-end check of every distinct job of both DAGs, and of the LEFT_OUT cases: key -> result."""
    jobs = {}
    for name, dag in dags.items():
        for job in dag:
            if job["script"]:
                jobs.setdefault(job_key(job), {**job, "dag": name})
    for rule, module in LEFT_OUT:
        job = next(j for j in dags["default"] if j["rule"] == rule)
        jobs[f"left out {module}"] = {**job, "code": without(job["code"], module)}
    work = tmp_path_factory.mktemp("imports")
    (work / "jobs.json").write_text(json.dumps(list(jobs.values())), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(HERE / "job_imports.py"), str(work / "jobs.json"), str(work / "out.json")],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    results = json.loads((work / "out.json").read_text(encoding="utf-8"))
    return {key: {**job, **result} for (key, job), result in zip(jobs.items(), results, strict=True)}


def test_every_job_of_the_default_and_panel_dags_runs_only_declared_code(simulated):
    ran = [r for key, r in simulated.items() if not key.startswith("left out")]
    assert {r["dag"] for r in ran} == set(DAGS)
    errors = [f"{r['dag']} {r['rule']}: {r['error']}" for r in ran if r.get("error")]
    assert not errors, "\n".join(errors)
    failing = sorted({f"{r['dag']}: {r['message']}" for r in ran if r["undeclared"]})
    assert not failing, "\n".join(failing)


def test_every_rule_with_a_script_declares_its_code(dags):
    missing = sorted(
        {f"{name}: {j['rule']}" for name, dag in dags.items() for j in dag if j["script"] and not j["code"]}
    )
    assert not missing, f"rules without a `code` input: {missing}"


@pytest.mark.parametrize(("rule", "module"), LEFT_OUT, ids=[m for _, m in LEFT_OUT])
def test_a_module_left_out_of_the_declared_code_fails_the_check_naming_it(simulated, rule, module):
    result = simulated[f"left out {module}"]
    assert not result.get("error"), result.get("error")
    assert result["undeclared"] == [module]
    smk = "report.smk" if rule == "claims_report" else "deploy.smk"
    assert f"rule {rule} ran library modules" in result["message"], result["message"]
    assert f'Fix: add "{module}" to the library_code(...)' in result["message"]
    assert f"workflow/rules/{smk}" in result["message"]


def test_no_rule_takes_a_scheduling_only_setting_as_a_param(dags):
    found = []
    for name, dag in dags.items():
        for job in dag:
            text = json.dumps(job["params"])
            if '"runtime_min"' in text or '"mem_mb"' in text:
                found.append(f"{name}: {job['rule']}")
    assert not found, f"params with a scheduling-only setting: {sorted(set(found))}"


def test_changing_only_scheduling_settings_reruns_nothing(dags, workdirs, tmp_path):
    """What snakemake's rerun triggers compare (params and the input set, per output; the files and the scripts
    are the same) is the same with ``certification.runtime_min`` and a model's ``mem_mb`` changed: over a
    complete run, a run with the overlay plans no job.  Same working directory: inputs are recorded as paths
    relative to it."""
    overlay = tmp_path / "scheduling.yaml"
    overlay.write_text(SCHEDULING_ONLY, encoding="utf-8")
    changed = dag_jobs(workdirs["default"], str(overlay))

    def recorded(dag):
        return {tuple(j["output"]): (j["rule"], j["params_recorded"], j["input_recorded"]) for j in dag}

    before, after = recorded(dags["default"]), recorded(changed)
    assert before.keys() == after.keys(), "the overlay changed the planned jobs"
    differ = sorted({before[k][0] for k in before if before[k] != after[k]})
    assert not differ, f"rules whose params or inputs change with a scheduling-only setting: {differ}"
    # and the overlay did reach the jobs it schedules
    assert {j["resources"]["runtime"] for j in changed if j["rule"] == "certify_shard"} == {31}
    converted = [j for j in changed if j["rule"] == "prepare_model" and j["wildcards"]["model"] == "smollm2-135m"]
    assert {j["resources"]["mem_mb"] for j in converted} == {3100}
