"""Every input is checked where it is read: every file a rule writes has a provenance sidecar, and every
rule's script enters through ``run_rule``, which checks each declared input that has one
(``trustmass.plumbing.inputs``; unit-tested in tests/unit/test_rule_inputs.py).  Together: no rule reads a
pipeline file without comparing it with the sha256 recorded when it was written."""

from __future__ import annotations

import re

import pytest

from conftest import REPO

pytestmark = pytest.mark.workflow

SIDECAR = ".prov.json"
JOB = re.compile(r"^(?:local)?rule (\S+):$")
FIELD = re.compile(r"^\s+(input|output): (.*)$")


def planned_jobs(workflow, *args):
    done = workflow.run("-n", "--forceall", "--cores", "1", *args)
    assert done.returncode == 0, done.output[-3000:]
    jobs, job = [], None
    for line in done.stdout.splitlines():
        if m := JOB.match(line):
            job = {"rule": m.group(1), "input": [], "output": []}
            jobs.append(job)
        elif job is not None and (m := FIELD.match(line)):
            job[m.group(1)] = m.group(2).split(", ")
        elif not line.strip():
            job = None
    assert jobs, done.output[-2000:]
    return jobs


@pytest.mark.parametrize(
    "configs", [(), ("config/cpu-panel.yaml", "config/deploy-cpu.yaml")], ids=["default", "panel+deploy"]
)
def test_every_planned_input_written_by_a_rule_has_a_sidecar(workflow, configs):
    args = ["--configfile", *(str(REPO / c) for c in configs)] if configs else []
    jobs = planned_jobs(workflow, *args)
    written = {path for job in jobs for path in job["output"]}
    missing = sorted(
        f"{job['rule']}: {path}"
        for job in jobs
        for path in job["output"]
        if not path.endswith(SIDECAR) and path + SIDECAR not in written
    )
    assert not missing, "outputs without a sidecar (their readers could not check them): " + "; ".join(missing[:20])
    read = {path for job in jobs for path in job["input"]}
    assert {p for p in read if p in written}, "the parse found no pipeline file read by a rule"


def test_every_rule_script_enters_through_run_rule():
    rules = sorted((REPO / "workflow" / "rules").glob("*.smk"))
    scripts = {name for rule in rules for name in re.findall(r'"\.\./\.\./scripts/(\w+\.py)"', rule.read_text())}
    assert scripts, "no script: directives found"
    for name in sorted(scripts):
        text = (REPO / "scripts" / name).read_text(encoding="utf-8")
        assert "run_rule(snakemake, main)" in text, f"scripts/{name} does not enter through run_rule (inputs unchecked)"
        assert "start_log(" not in text, f"scripts/{name} opens its log itself instead of through run_rule"
