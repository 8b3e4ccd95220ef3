"""The sources -> capture hand-over: a model's trustmass_source.json is a declared file of the DAG."""

from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.workflow

REPO = Path(__file__).resolve().parents[2]


def planned_files(output: str) -> dict[str, dict[str, list[str]]]:
    """rule -> {"input": [...], "output": [...]}, the files of each job a dry-run lists (one job per rule here)."""
    jobs: dict[str, dict[str, list[str]]] = {}
    current = None
    for line in output.splitlines():
        text = line.strip()
        if line.startswith("rule ") and text.endswith(":"):
            current = jobs.setdefault(text[len("rule ") : -1], {"input": [], "output": []})
        elif current is not None and text.startswith(("input:", "output:")):
            key, _, files = text.partition(":")
            current[key] = [f.strip() for f in files.split(",")]
    return jobs


def test_prepare_model_writes_the_source_record_and_capture_reads_it(workflow):
    study = yaml.safe_load((REPO / "config.yaml").read_text())["study"]
    model, corpus = study["models"][0], study["corpora"][0]
    done = workflow.run("--dry-run", "--forceall", f"results/capture/{model}/{corpus}/0000.safetensors")
    assert done.returncode == 0, done.output
    jobs = planned_files(done.output)
    record = f"resources/models/{model}/trustmass_source.json"
    assert record in jobs["prepare_model"]["output"], done.output
    assert record in jobs["capture"]["input"], done.output
