"""A job never imports the checkout's ``kernels/`` folder as the top-level ``kernels`` package (issue 39, found by the
rehearsal): snakemake puts the Snakefile's folder on every job's ``sys.path``, transformers probes for the Hugging
Face ``kernels`` package on import, and so every job that loaded a model ran trustmass's kernels under that name,
loaded ``trustmass.kernels`` with them and failed the job-end check of its declared code inputs (every
``prepare_model`` of the paper's configurations).  ``run_rule`` takes the checkout's root off ``sys.path`` first."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import REPO
from trustmass.plumbing.rule_io import drop_checkout_roots


def test_the_checkout_root_leaves_the_path_and_nothing_else(tmp_path):
    other = tmp_path / "lib"
    other.mkdir()
    path = [str(other), str(REPO), "/nowhere", str(REPO)]
    assert drop_checkout_roots(path) == [str(REPO)]
    assert path == [str(other), "/nowhere"]


def _loaded_after_transformers(drop: bool) -> list[str]:
    code = (
        "import json, sys\n"
        f"sys.path.append({str(REPO)!r})  # what snakemake's script preamble does\n"
        + ("from trustmass.plumbing.rule_io import drop_checkout_roots; drop_checkout_roots()\n" if drop else "")
        + "import transformers.activations\n"
        "print(json.dumps(sorted(m for m in sys.modules if m == 'kernels' or m.startswith('trustmass.kernels'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd="/")
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_transformers_loads_the_checkouts_kernels_only_with_the_root_on_the_path():
    assert "trustmass.kernels" in _loaded_after_transformers(drop=False)  # the hazard, as a job had it
    assert _loaded_after_transformers(drop=True) == []
