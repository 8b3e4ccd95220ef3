"""The dress rehearsal itself (issue 39; `make rehearse`, docs/rehearsal.md): every rule of the paper's plans executed
once, offline, over the rehearsal's local Hugging Face cache, and every rule planned among the rules executed.
About 23 minutes on 2 cores (docs/rehearsal.md, "Measured"): `make test-slow`."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import REPO

pytestmark = [pytest.mark.slow, pytest.mark.workflow]


def test_the_rehearsal_runs_every_rule_of_the_papers_plans_offline(tmp_path):
    root = tmp_path / "rehearsal"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "trustmass.rehearsal",
            "run",
            "--dir",
            str(root),
            "--cores",
            os.environ.get("CORES", "all"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-4000:]
    assert "; equal" in done.stdout, done.stdout[-6000:]
    summary = json.loads((root / "rehearsal-run.json").read_text(encoding="utf-8"))
    assert summary["network_attempts"] == [] and all(r["returncode"] == 0 for r in summary["runs"])
