"""A job never runs the checkout's ``kernels/`` folder as the top-level ``kernels`` package (issue 39, found by the
rehearsal): snakemake puts the Snakefile's folder on every job's ``sys.path`` and transformers probes for the
Hugging Face ``kernels`` package on import, so a job that loaded a model used to load ``trustmass.kernels`` with it
and fail the job-end check of its declared code inputs (every ``prepare_model`` of the paper's configurations).
``kernels/__init__.py`` refuses to load under any name but ``trustmass.kernels``, as an absent package does."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import REPO


def test_transformers_with_the_checkout_on_the_path_loads_no_trustmass_kernels():
    code = (
        "import json, sys\n"
        f"sys.path.append({str(REPO)!r})  # what snakemake's script preamble does\n"
        "import transformers.activations\n"
        "try:\n    import kernels\nexcept ImportError as e:\n    refused = str(e)\nelse:\n    refused = ''\n"
        "print(json.dumps([refused, sorted(m for m in sys.modules if m == 'kernels' or m.startswith('trustmass'))]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd="/")
    assert done.returncode == 0, done.stderr[-3000:]
    refused, loaded = json.loads(done.stdout.splitlines()[-1])
    assert "not the top-level `kernels` package" in refused
    assert loaded == []
