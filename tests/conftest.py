"""Shared test helpers: where the repository is, and how to run its workflow in a scratch directory."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SNAKEFILE = REPO / "Snakefile"


def snakemake_command() -> list[str]:
    """The snakemake of the interpreter running the tests (the project venv), never one on PATH."""
    exe = Path(sys.executable).with_name("snakemake")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "snakemake"]


def planned_jobs(output: str) -> Counter:
    """Job counts from snakemake's 'Job stats:' table (dry-run or real run)."""
    jobs: Counter = Counter()
    lines = iter(output.splitlines())
    for line in lines:
        if line.strip() == "Job stats:":
            break
    for line in lines:
        parts = line.split()
        if not parts or set(parts[0]) <= {"-"} or parts[0] == "job":
            continue
        if parts[0] == "total":
            break
        if len(parts) == 2 and parts[1].isdigit():
            jobs[parts[0]] += int(parts[1])
    return jobs


class Workflow:
    """Runs this repository's Snakefile with its outputs (and .snakemake/) in a scratch directory."""

    def __init__(self, workdir: Path, env: dict[str, str] | None = None):
        self.workdir = workdir
        self.env = dict(env or {})  # over os.environ, for every call (a private copy of the library on PYTHONPATH)

    def write_config(self, name: str, text: str) -> Path:
        path = self.workdir / name
        path.write_text(text, encoding="utf-8")
        return path

    def run(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        cmd = [*snakemake_command(), "--snakefile", str(SNAKEFILE), "--directory", str(self.workdir), *args]
        env = {**os.environ, **self.env, "PYTHONUNBUFFERED": "1"}
        done = subprocess.run(
            cmd,
            cwd=self.workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        done.output = done.stdout + done.stderr  # snakemake splits its report over both
        return done


@pytest.fixture
def workflow(tmp_path) -> Workflow:
    return Workflow(tmp_path)


#: the modules that take longest (a tiny real run of the study, or many snakemake calls), collected first: under
#: pytest-xdist (`make test` runs it) a worker starts each of them at once instead of at the tail of the run
#: while the other worker has finished; without xdist the order changes nothing
LONGEST_FIRST = (
    "tests/workflow/test_end_to_end.py",
    "tests/workflow/test_paper_config.py",
    "tests/workflow/test_job_code_inputs.py",
)


def pytest_collection_modifyitems(items):
    def rank(item) -> int:
        path = item.path.relative_to(REPO).as_posix() if item.path.is_relative_to(REPO) else ""
        return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: the rest keep their order


def pytest_configure(config):
    """Under pytest-xdist, each worker's in-process torch gets its share of the cores (the workflow's jobs pin
    their own threads to 1), so that the workers' thread pools do not oversubscribe the machine."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 0)
    if os.environ.get("PYTEST_XDIST_WORKER") and workers > 1:
        import torch

        torch.set_num_threads(max(1, torch.get_num_threads() // workers))
