"""snakemake's scheduler wake-ups: one pending at a time (trustmass.plumbing.scheduler_wakeups).

Real snakemake runs of a synthetic DAG: ``--verbose`` logs ``Ready jobs`` once per pass of the
scheduler's selection loop, so the passes between two finished jobs count the wake-ups.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.workflow

SNAKEFILE = """
import os
if os.environ.get("SINGLE_WAKEUP") == "1":
    from trustmass.plumbing.scheduler_wakeups import install
    assert install()
rule all:
    input: expand("out/{{i}}.txt", i=range({jobs}))
rule one:
    output: "out/{{i}}.txt"
    shell: "sleep {sleep}; touch {{output}}"
"""


def _passes_per_finished_job(folder: Path, *, jobs: int, sleep: float, single: bool, extra=()):
    folder.mkdir()
    (folder / "Snakefile").write_text(SNAKEFILE.format(jobs=jobs, sleep=sleep))
    env = dict(os.environ, SINGLE_WAKEUP="1" if single else "0")
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "1", "--verbose", "--quiet", "rules", *extra],
        cwd=folder, env=env, capture_output=True, text=True, timeout=300,
    )
    seconds = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(list((folder / "out").iterdir())) == jobs
    counts, passes = [], 0
    for line in (done.stdout + done.stderr).splitlines():
        if "Ready jobs" in line:
            passes += 1
        elif "Finished jobid" in line:
            counts.append(passes)
            passes = 0
    assert len(counts) >= jobs, "the log no longer shows one 'Finished jobid' per job"
    return counts, seconds


def test_one_pending_wakeup_keeps_the_passes_per_job_constant(tmp_path):
    plain, _ = _passes_per_finished_job(tmp_path / "plain", jobs=16, sleep=0.3, single=False)
    fixed, _ = _passes_per_finished_job(tmp_path / "fixed", jobs=16, sleep=0.3, single=True)
    # snakemake's own timers: one more chain per finished job, so the passes grow with the job count.
    # If this fails, snakemake fixed it upstream and scheduler_wakeups can go.
    assert max(plain[-4:]) >= 5, plain
    assert max(fixed) <= 3, fixed


def test_the_rate_limit_still_holds_and_no_wakeup_is_lost(tmp_path):
    # 8 jobs at 2 per second: the limiter must hold back jobs and wake the scheduler to start them.
    counts, seconds = _passes_per_finished_job(
        tmp_path / "limited", jobs=8, sleep=0.01, single=True,
        extra=("--max-jobs-per-timespan", "2/1s"),
    )
    assert seconds >= 3.0, f"8 jobs at 2/s finished in {seconds:.1f} s: the rate limit did not hold"
    assert seconds < 60, "a lost wake-up would leave the scheduler waiting"
