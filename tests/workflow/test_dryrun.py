"""Dry-runs of the default configuration: the DAG, the workflow profile, single targets."""

import pytest

from conftest import planned_jobs

pytestmark = pytest.mark.workflow

STAGE0 = {"worked_examples", "bench_enumeration"}


def test_default_dry_run_plans_every_job_and_uses_the_workflow_profile(workflow):
    done = workflow.run("--dry-run")
    assert done.returncode == 0, done.output
    jobs = planned_jobs(done.output)
    assert STAGE0 <= set(jobs), done.output
    assert jobs["all"] == 1
    assert "workflow specific profile" in done.output and "profiles/default" in done.output


@pytest.mark.parametrize("target", ["bench", "results/bench/enumeration.json"])
def test_one_target_builds_only_what_it_needs(workflow, target):
    done = workflow.run("--dry-run", target)
    assert done.returncode == 0, done.output
    jobs = planned_jobs(done.output)
    assert "bench_enumeration" in jobs, done.output
    assert "worked_examples" not in jobs, done.output


def test_library_code_is_an_input_of_the_rules_that_run_it(workflow):
    # editing the library must rerun exactly the outputs that depend on it (mtime trigger)
    done = workflow.run("--dry-run", "--forceall", "bench")
    assert done.returncode == 0, done.output
    inputs = [line for line in done.output.splitlines() if line.strip().startswith("input:")]
    assert any(
        "trustmass/bench/enumeration.py" in line and "trustmass/core/enumeration.py" in line for line in inputs
    ), done.output
    assert not any("trustmass/selfcheck/" in line for line in inputs), done.output


def test_an_extra_configfile_is_merged_over_the_default(workflow):
    override = workflow.write_config("override.yaml", "enumeration:\n  extra_override: {32: 6}\n")
    done = workflow.run("--dry-run", "--configfile", str(override))
    assert done.returncode == 0, done.output


def test_a_real_run_without_cores_says_how_to_fix_it(workflow):
    done = workflow.run("bench")
    assert done.returncode != 0
    assert "--cores" in done.output
