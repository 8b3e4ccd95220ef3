"""The slurm profile on a real one-node SLURM cluster (`make test-cluster`; root, Debian's slurm-wlm + munge).

start-slurm.sh installs and starts the cluster (munged, slurmctld, slurmd; no systemd, no accounting
database), stop-slurm.sh stops it by the PIDs it wrote.  The tiny end-to-end study then runs twice: on
the local executor, and through ``--profile profiles/slurm`` with real ``sbatch`` submissions.  Checked:
every non-local job was submitted to SLURM and completed there (squeue's record of the job), and the two
runs wrote the same files with the same bytes, except what records times: a file that differs must compare
equal by its kind, exactly, but for its timing columns (``trustmass.report.reference.compare_file``, as
``make check-reference`` compares), or be one the check leaves out whole; sidecars may differ (wall times,
and each run's config slice names its own workdir).

The node has no GPU and 2 cores: the profile's GPU rules (capture, the loss and deployment model runs)
get ``gpu=0`` and a memory request the node can hold, through ``--set-resources`` (which replaces the
profile's per-rule list for this run only).  Everything else is the profile as a user runs it, plus the
two options the plugin needs without an accounting database (squeue for job status, a short first poll).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, Workflow, planned_jobs
from trustmass.report.reference import compare_file  # by column, timing columns left out (as make check-reference)

sys.path.insert(0, str(REPO / "tests" / "workflow"))  # the tiny study of the end-to-end test
from tiny_study import TINY, tiny_study_config  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.cluster, pytest.mark.workflow]

HERE = Path(__file__).parent
GPU_RULES = ("capture", "loss_document", "loss_curvature", "probe_train", "deploy_condition", "deploy_replay")
SLURM_ARGS = [
    "--profile",
    str(REPO / "profiles" / "slurm"),
    "--slurm-status-command",
    "squeue",  # no slurmdbd here: sacct cannot answer (the plugin would wait forever)
    "--slurm-init-seconds-before-status-checks",
    "5",
    "--set-resources",
    *(f"{rule}:{key}={value}" for rule in GPU_RULES for key, value in (("gpu", 0), ("mem_mb", 3000), ("runtime", 30))),
]


def _tiny(workdir: Path) -> tuple[Workflow, Path]:
    wf = Workflow(workdir)
    return wf, wf.write_config("tiny.yaml", TINY + tiny_study_config(workdir))


@pytest.fixture(scope="module")
def cluster():
    if os.geteuid() != 0:
        pytest.fail("the SLURM test starts daemons and installs packages: run it as root (as CI machines are)")
    start = time.perf_counter()
    subprocess.run(["bash", str(HERE / "start-slurm.sh")], check=True, timeout=600)
    print(f"SLURM cluster up in {time.perf_counter() - start:.1f} s")
    yield
    subprocess.run(["bash", str(HERE / "stop-slurm.sh")], check=False, timeout=120)


def _files(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((root / "results").rglob("*"))
        if p.is_file()
    }


def _slurm_state(job_id: str) -> str:
    done = subprocess.run(["squeue", "-h", "-t", "all", "-j", job_id, "-o", "%T"], capture_output=True, text=True)
    return done.stdout.strip()


def test_the_tiny_study_through_sbatch_equals_the_local_run(cluster, tmp_path_factory):
    local, local_config = _tiny(tmp_path_factory.mktemp("local"))
    done = local.run("--cores", "2", "--configfile", str(local_config), timeout=1800)
    assert done.returncode == 0, done.output[-4000:]
    remote, remote_config = _tiny(tmp_path_factory.mktemp("slurm"))
    start = time.perf_counter()
    done = remote.run(*SLURM_ARGS, "--configfile", str(remote_config), timeout=3600)
    print(f"slurm run: {time.perf_counter() - start:.0f} s")
    assert done.returncode == 0, done.output[-6000:]

    # every job that is not a local rule went through sbatch and completed as a SLURM job
    submitted = re.findall(r"submitted with SLURM jobid (\d+)", done.output)
    jobs = planned_jobs(done.output)  # the run's "Job stats" table
    on_head = len(re.findall(r"^localrule \w+:", done.output, flags=re.M))
    remote_jobs = sum(n for rule, n in jobs.items() if rule != "total") - on_head
    print(f"jobs: {remote_jobs} submitted to SLURM, {on_head} local rules on the head node")
    assert remote_jobs > 10 and len(submitted) == remote_jobs, (len(submitted), remote_jobs, on_head)
    states = {job: _slurm_state(job) for job in submitted}
    print("SLURM jobs:", " ".join(f"{job}={state}" for job, state in states.items()))
    assert set(states.values()) == {"COMPLETED"}, states

    # the same files with the same bytes, except the seconds: a file that differs compares equal but for its
    # timing columns (exactly: rtol = atol = 0), or is one the reference check leaves out whole; sidecars
    # differ anyway (wall times, and the config slice names each run's own workdir: the tiny model's path)
    mine, theirs = _files(local.workdir), _files(remote.workdir)
    assert mine.keys() == theirs.keys(), sorted(mine.keys() ^ theirs.keys())
    differ = sorted(name for name in mine if mine[name] != theirs[name] and not name.endswith(".prov.json"))
    compared = {
        name: compare_file(local.workdir / name, remote.workdir / name, name, rtol=0.0, atol=0.0, pixel_share=0.0)
        for name in differ
    }
    kinds = {name: c.kind for name, c in compared.items()}
    unexplained = {name: c.differences for name, c in compared.items() if c.differences}
    print(f"{len(mine)} files, {len(differ)} differ: {kinds}")
    assert unexplained == {}, unexplained
