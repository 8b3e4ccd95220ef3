"""The rehearsal is the paper's plan (issue 39): config/rehearsal.yaml over each of the paper's plans gives a DAG with
the paper's rules and wildcard structure -- every model, corpus, task and arm the paper's dry-run names, fewer
documents, lengths and shards -- and keeps every model's identity, so that the rehearsal cannot drift from the
configurations it rehearses.  Dry-runs only (the DAG through snakemake's API, nothing executed, nothing downloaded);
the rehearsal itself is tests/rehearsal/test_rehearsal_run.py (slow) and `make rehearse`."""

from __future__ import annotations

import pytest
import yaml

from conftest import REPO
from trustmass.cli.instances import resolve_config
from trustmass.rehearsal.dag import compare, planned_jobs, structure
from trustmass.rehearsal.plans import OVERRIDE, PLANS, config_files, paper_files

pytestmark = pytest.mark.workflow

#: the keys the override may set: counts, lengths, limits (and the deployed-only models restated, checked below)
ALLOWED = {
    "documents.doc_tokens", "documents.n_docs", "task_contexts.per_type", "statistics.bootstrap",
    "diagnostics.margin.permutations", "loss.continuation", "loss.heldout.n_docs", "loss.probe.train_docs",
    "loss.probe.steps", "certification.per_stratum", "certification.n_shards", "certification.time_limit_s",
    "certification.scip_nodes", "certification.scip_lp_iterations",
    "certification.max_solves", "certification.memory_limit_mb", "deploy.lengths", "deploy.items",
    "deploy.max_new_tokens", "deploy.replay.items", "deploy.benchmarks", "models",
}  # fmt: skip


@pytest.fixture(scope="module", params=list(PLANS))
def dags(request, tmp_path_factory):
    plan = request.param
    paper = planned_jobs(paper_files(plan), workdir=tmp_path_factory.mktemp("paper"))
    rehearsal = planned_jobs(config_files(plan), workdir=tmp_path_factory.mktemp("rehearsal"))
    return plan, paper, rehearsal


def test_the_rehearsal_dag_has_the_papers_rules_and_wildcards(dags):
    plan, paper, rehearsal = dags
    assert compare(structure(paper), structure(rehearsal)) == [], plan
    assert len(rehearsal) < len(paper)


def test_compare_names_every_kind_of_drift():
    paper = structure(
        [
            {"rule": "capture", "wildcards": {"model": "a", "corpus": "w", "doc": "0000"}},
            {"rule": "capture", "wildcards": {"model": "a", "corpus": "w", "doc": "0001"}},
            {"rule": "claims_report", "wildcards": {}},
        ]
    )
    assert compare(paper, paper) == []
    smaller = structure(
        [
            {"rule": "capture", "wildcards": {"model": "a", "corpus": "w", "doc": "0000"}},
            {"rule": "claims_report", "wildcards": {}},
        ]
    )
    assert compare(paper, smaller) == []  # fewer documents: a count
    drift = structure(
        [
            {"rule": "capture", "wildcards": {"model": "b", "corpus": "w", "doc": "0000"}},
            {"rule": "extra", "wildcards": {}},
        ]
    )
    problems = compare(paper, drift)
    assert any("claims_report: planned by the paper" in p for p in problems)
    assert any("extra: planned by the rehearsal" in p for p in problems)
    assert any("model = ['b'], the paper's ['a']" in p for p in problems)


def _leaves(node, prefix=""):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, f"{prefix}{key}.")
    else:
        yield prefix[:-1]


def test_the_override_sets_only_counts_lengths_and_limits():
    override = yaml.safe_load((REPO / OVERRIDE).read_text(encoding="utf-8"))
    keys = set(_leaves({k: v for k, v in override.items() if k != "models"})) | {"models"}
    assert keys <= ALLOWED, sorted(keys - ALLOWED)


@pytest.mark.parametrize("plan", list(PLANS))
def test_the_override_keeps_every_models_identity_and_benchmark(plan):
    paper, rehearsal = resolve_config(*map(str, paper_files(plan))), resolve_config(*map(str, config_files(plan)))
    for name, entry in paper["models"].items():
        mine = rehearsal["models"][name]
        for key in ("source", "id", "revision", "dtype", "of", "control", "roles", "lineage", "parameters_b"):
            assert mine.get(key) == entry.get(key), (name, key)
        declared = {k: v for k, v in (entry.get("declared") or {}).items() if k != "layers"}
        assert {k: v for k, v in (mine.get("declared") or {}).items() if k != "layers"} == declared, name
        assert set(mine.get("documents") or {}) == set(entry.get("documents") or {}), name
    # the deployed-only models the override restates are paper-deploy.yaml's own
    deploy = resolve_config(*map(str, paper_files("paper-deploy")))
    for name in ("llama-3.1-8b-instruct", "qwen2.5-7b-instruct", "qwen3-8b"):
        for key in ("source", "id", "revision", "dtype"):
            assert rehearsal["models"][name].get(key) == deploy["models"][name].get(key), (name, key)
    # the deployment: the paper's methods, tasks, budgets, models and prompts; the benchmarks the paper's entries,
    # only their lengths and item counts smaller
    for key in ("enabled", "methods", "tasks", "budgets", "models", "prompt_format", "hub", "contour", "decomposition"):
        assert rehearsal["deploy"][key] == paper["deploy"][key], key
    assert rehearsal["deploy"]["replay"]["methods"] == paper["deploy"]["replay"]["methods"]
    shrunk = ("max_length", "items")
    strip = lambda b: {k: v for k, v in b.items() if k not in shrunk}
    assert [strip(b) for b in rehearsal["deploy"]["benchmarks"]] == [strip(b) for b in deploy["deploy"]["benchmarks"]]
    for mine, theirs in zip(rehearsal["deploy"]["benchmarks"], deploy["deploy"]["benchmarks"]):
        assert mine["max_length"] < theirs["max_length"] and mine["items"] <= theirs["items"]
