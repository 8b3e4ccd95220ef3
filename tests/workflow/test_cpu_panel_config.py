"""config/cpu-panel.yaml: three packaged models x three local corpora x 3 documents (the primary slice) of 4,096
tokens, with the loss and deployment slices: one sitting on 2 cores."""

from __future__ import annotations

import polars as pl
import pytest
import yaml
from test_paper_config import assert_planned_offline, offline_dry_run

from conftest import REPO, planned_jobs
from trustmass.cli.plan import (
    instances_from_dryrun,
    planned_captures,
    planned_instances,
    resolve_config,
    summed,
)
from trustmass.plumbing.config import validate_config

pytestmark = pytest.mark.workflow

PANEL = REPO / "config" / "cpu-panel.yaml"
PACKAGED = REPO / "config" / "models-packaged.yaml"
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
MODELS = ["smollm2-135m", "gemma3-270m", "qwen2.5-coder-0.5b"]
CORPORA = ["austen", "stdlib", "handbook-fr"]
N_DOCS = 3  # the primary slice (paper: 20; config/loss-cpu.yaml sets 20 for its probe)


def _yaml(path):
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def panel_config() -> dict:
    return resolve_config(PANEL)


def test_panel_models_are_the_packaged_entries_pins_included():
    panel, packaged = _yaml(PANEL)["models"], _yaml(PACKAGED)["models"]
    assert list(panel) == MODELS == list(packaged)
    for name in MODELS:
        entry = {k: v for k, v in panel[name].items() if k != "roles"}  # roles are the study's, not the model's
        assert entry == packaged[name], f"{name}: config/cpu-panel.yaml and config/models-packaged.yaml differ"


def test_panel_config_is_valid(panel_config):
    assert validate_config(_yaml(PANEL), SCHEMA)
    assert panel_config["study"] == {
        "models": MODELS,
        "corpora": CORPORA,
        "headline": {"models": MODELS, "corpus": "austen"},
    }
    roles = {m: panel_config["models"][m]["roles"] for m in MODELS}
    assert roles == {
        "smollm2-135m": ["second_family"],
        "gemma3-270m": ["qk_norm_family"],
        "qwen2.5-coder-0.5b": ["reference"],
    }
    assert (panel_config["documents"]["doc_tokens"], panel_config["documents"]["n_docs"]) == (4096, N_DOCS)
    assert all(not panel_config["models"][m].get("documents") for m in MODELS)  # no per-model overrides
    assert set(CORPORA) <= set(panel_config["corpora"])  # defined in config.yaml, merged


def test_panel_dry_run_plans_every_capture_offline(tmp_path, panel_config):
    run, done = offline_dry_run(tmp_path, "--configfile", str(PANEL))
    assert_planned_offline(run, done)  # packaged wheels and Debian packages: planned, not fetched
    jobs = planned_jobs(done.output)
    # every model has a randomised-weights and a shuffled-text twin (the controls: every corpus, 2 documents each)
    twins, control_docs = 2 * len(MODELS), panel_config["controls"]["documents"]["n_docs"]
    assert (jobs["prepare_model"], jobs["prepare_corpus"], jobs["tokenize_documents"]) == (
        3 + twins,
        3,
        (3 + twins) * len(CORPORA),
    )
    tasks = len(panel_config["task_contexts"]["types"]) * panel_config["task_contexts"]["per_type"]
    assert jobs["task_documents"] == 3 + twins  # the task contexts of each headline family and of its twins
    trained_captures = len(MODELS) * (len(CORPORA) * N_DOCS + tasks)
    assert jobs["capture"] == jobs["ceiling"] == trained_captures + twins * (control_docs * len(CORPORA) + tasks)
    # the loss slice on every model and twin, the deployment slice on the two instruction-tuned readers (and both
    # their twins)
    assert jobs["loss_document"] == (len(MODELS) + twins) * len(CORPORA) and jobs["probe_train"] == len(MODELS) + twins
    assert jobs["deploy_condition"] == 2 + 2 * 2
    assert jobs["certify_manifest"] == 1 and jobs["certify_manifest_randomised_weights"] == 1
    captures = planned_captures(done.output).filter(pl.col("corpus") != "tasks", pl.col("model").is_in(MODELS))
    assert sorted(set(captures["model"])) == sorted(MODELS) and sorted(set(captures["corpus"])) == sorted(CORPORA)
    assert sorted(set(captures["doc"])) == [f"{i:04d}" for i in range(N_DOCS)]
    from_dag = instances_from_dryrun(done.output, panel_config).filter(pl.col("model").is_in(MODELS))
    assert from_dag.equals(planned_instances(panel_config).sort("model", "corpus"))
    heads = 30 * 9 + 18 * 4 + 24 * 14  # SmolLM2, Gemma 3, Qwen2.5-Coder: layers x query heads
    totals = summed(from_dag)
    assert totals["instances"] == totals["primary_instances"] == heads * 6 * 4 * N_DOCS * len(CORPORA) == 146_448


def test_the_loss_overlay_plans_21_heldout_documents_per_model_and_only_the_captures_it_reads(tmp_path):
    """config/loss-cpu.yaml over the panel: the loss targets need the map's primary captures and the
    probe's training documents, not the panel's 180."""
    targets = ["fig4", "loss_table", "probe_table", "curvature_table", "allocation_table"]
    run, done = offline_dry_run(tmp_path, *targets, "--configfile", str(PANEL), str(REPO / "config" / "loss-cpu.yaml"))
    assert_planned_offline(run, done)
    jobs = planned_jobs(done.output)
    assert jobs["loss_document"] == jobs["loss_curvature"] == 3 * 21
    assert jobs["probe_train"] == 3
    # per model: 3 primary documents of each corpus (the map) plus Austen 3..11 (the probe's 12)
    assert jobs["capture"] == 3 * (9 + 9)
    assert "ceiling" not in jobs


def test_deploy_cpu_overlay_plans_the_issues_grid(tmp_path):
    from conftest import Workflow, planned_jobs
    from trustmass.cli.plan import resolve_config

    packaged, overlay = REPO / "config" / "models-packaged.yaml", REPO / "config" / "deploy-cpu.yaml"
    deploy = resolve_config(packaged, overlay)["deploy"]
    assert deploy["items"] >= 40 and deploy["budgets"] == [32, 64, 128] and deploy["lengths"] == [1024, 2048, 4096]
    assert "kvzip" in deploy["methods"] and deploy["decomposition"]["methods"]
    done = Workflow(tmp_path).run(
        "--dry-run", "table3", "table4", "table5", "bytes_table", "--configfile", str(packaged), str(overlay)
    )
    assert done.returncode == 0, done.output
    jobs = planned_jobs(done.output)
    assert jobs["deploy_condition"] == 2 * 4 * 3 and jobs["deploy_replay"] == 2


def test_the_diagnostics_overlay_plans_only_what_its_outputs_read(tmp_path):
    """config/diagnostics-cpu.yaml over the panel: the diagnostics' targets plan 3 documents per (model,
    corpus) plus 4 task contexts per model, ceilings only where the task table reads them, offline."""
    targets = [
        "fig_swaps",
        "swap_table",
        "boundary_table",
        "margin_table",
        "margin_cells_table",
        "access_table",
        "access_figure",
        "task_table",
    ]
    overlay = REPO / "config" / "diagnostics-cpu.yaml"
    run, done = offline_dry_run(tmp_path, *targets, "--configfile", str(PANEL), str(overlay))
    assert_planned_offline(run, done)
    jobs = planned_jobs(done.output)
    assert jobs["capture"] == len(MODELS) * (len(CORPORA) * 3 + 4) == 39
    assert jobs["ceiling"] == len(MODELS) * (3 + 4)  # the headline corpus (the task map's prose side) and the tasks
    assert jobs["row_diagnostics"] == len(MODELS) * 3 and jobs["loss_diagnostics"] == len(MODELS) * len(CORPORA) * 2
    assert not {"loss_document", "deploy_condition", "certify_shard", "audit"} & set(jobs)
