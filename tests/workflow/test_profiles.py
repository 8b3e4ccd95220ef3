"""The cluster profile loads, and every rule it configures exists (or is a known GPU rule to come)."""

import importlib.util

import pytest
import yaml

from conftest import REPO, planned_jobs

pytestmark = pytest.mark.workflow

SLURM_PROFILE = REPO / "profiles" / "slurm"
DEFAULT_PROFILE = REPO / "profiles" / "default"
# The rules that run the model; the slurm profile gives each a GPU (snakemake ignores set-resources
# for rules that do not exist, which is why a misspelled name must be caught here).
GPU_RULES = {"capture", "loss_document", "loss_curvature", "probe_train", "deploy_condition", "deploy_replay"}

needs_slurm_plugin = pytest.mark.skipif(
    importlib.util.find_spec("snakemake_executor_plugin_slurm") is None,
    reason="snakemake-executor-plugin-slurm is not installed (pip install -e '.[slurm]')",
)


def _profile(path):
    return yaml.safe_load((path / "config.yaml").read_text(encoding="utf-8"))


@needs_slurm_plugin
def test_slurm_profile_dry_run(workflow):
    done = workflow.run("--dry-run", "--profile", str(SLURM_PROFILE))
    assert done.returncode == 0, done.output
    assert "Using profiles" in done.output and "profiles/slurm" in done.output
    assert {"worked_examples", "bench_enumeration"} <= set(planned_jobs(done.output))


def test_slurm_profile_names_only_existing_or_planned_rules(workflow):
    done = workflow.run("--list-rules")
    assert done.returncode == 0, done.output
    rules = {line.split()[0] for line in done.stdout.splitlines() if line and not line.startswith(" ")}
    assert {"all", "worked_examples", "bench_enumeration"} <= rules, done.output
    configured = set(_profile(SLURM_PROFILE)["set-resources"])
    unknown = configured - rules
    assert not unknown, f"profiles/slurm set-resources names rules that do not exist: {sorted(unknown)}"
    assert GPU_RULES <= rules


def test_slurm_profile_gives_every_gpu_rule_a_gpu():
    resources = _profile(SLURM_PROFILE)["set-resources"]
    for rule in GPU_RULES:
        assert resources[rule].get("gpu") == 1 or "gpu" in str(resources[rule].get("gres", "")), rule
    assert "slurm_account" not in (_profile(SLURM_PROFILE).get("default-resources") or {})  # the user's


def test_default_profile_does_not_cap_cluster_threads():
    # snakemake applies profiles/default on top of --profile profiles/slurm; a `cores` there would
    # cap every cluster job's threads at the core count of the machine running snakemake
    assert "cores" not in _profile(DEFAULT_PROFILE)
