"""trustmass.cli.plan: instance counts from a config, and from the text of a snakemake dry-run."""

from __future__ import annotations

import polars as pl
import pytest

from conftest import REPO
from trustmass.cli.plan import (
    PRIMARY_DOCS,
    DryRunParseError,
    documents_for_model,
    instances_from_dryrun,
    main,
    model_shape,
    planned_captures,
    planned_instances,
    resolve_config,
    summed,
)
from trustmass.plumbing.config import validate_config

SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"


def resolved(**overrides) -> dict:
    config = {
        "models": {
            "a": {"source": "local", "path": "/nowhere/a", "declared": {"layers": 3, "heads": 4, "kv_heads": 2}},
            "b": {
                "source": "hub",
                "id": "org/b",
                "declared": {"layers": 2, "heads": 5},
                "documents": {"doc_tokens": 1024, "n_docs": 2},
            },
        },
        "corpora": {"x": {"source": "python-stdlib"}, "y": {"source": "local", "path": "/nowhere/y"}},
        "documents": {"doc_tokens": 512, "n_docs": 5},
        "capture": {"rows_per_head": 6},
        "budgets": {"enumerated": [4, 8, 16]},
        "certification": {"sweep": {"budget": 16}},  # the sweep widens an enumerated budget
        "study": {"models": ["a", "b"], "corpora": ["x", "y"]},
    }
    config.update(overrides)
    return validate_config(config, SCHEMA)


def test_instances_are_layers_heads_rows_docs_budgets():
    plan = planned_instances(resolved())
    assert plan.columns[:2] == ["model", "corpus"] and plan.height == 4
    a = plan.filter((pl.col("model") == "a") & (pl.col("corpus") == "x")).row(0, named=True)
    assert (a["layers"], a["heads"], a["rows_per_head"], a["budgets"], a["docs"], a["doc_tokens"]) == (
        3,
        4,
        6,
        3,
        5,
        512,
    )
    assert a["instances"] == 3 * 4 * 6 * 3 * 5 == 1080
    assert (a["primary_docs"], a["primary_instances"]) == (PRIMARY_DOCS, 3 * 4 * 6 * 3 * 3)
    # b overrides documents: 2 docs of 1,024 tokens, so its primary slice is both documents
    b = plan.filter((pl.col("model") == "b") & (pl.col("corpus") == "y")).row(0, named=True)
    assert (b["doc_tokens"], b["docs"], b["primary_docs"]) == (1024, 2, 2)
    assert b["instances"] == b["primary_instances"] == 2 * 5 * 6 * 3 * 2 == 360


def test_summed_over_all_or_some_models():
    plan = planned_instances(resolved())
    assert summed(plan) == {
        "docs": 14,
        "instances": 2 * (1080 + 360),
        "primary_docs": 10,
        "primary_instances": 2 * (648 + 360),
    }
    assert summed(plan, ["b"])["instances"] == 720
    with pytest.raises(KeyError, match="'c'"):
        summed(plan, ["a", "c"])


def test_an_explicit_study_and_shapes_win():
    config = resolved()
    plan = planned_instances(config, study={"models": ["a"], "corpora": ["y"]}, shapes={"a": {"layers": 1, "heads": 1}})
    assert plan.rows() == [("a", "y", 1, 1, 6, 3, 512, 5, 90, 3, 54)]


def test_a_model_without_a_declared_shape_cannot_be_planned():
    config = resolved()
    del config["models"]["b"]["declared"]
    with pytest.raises(KeyError, match=r"model 'b'.*declared"):
        planned_instances(config)
    assert model_shape(config, "b", {"b": {"layers": 7, "heads": 2}}) == {"layers": 7, "heads": 2}


def test_undefined_names_and_unresolved_configs_are_errors():
    with pytest.raises(KeyError, match="'zz' is not defined under `models:`"):
        planned_instances(resolved(), study={"models": ["zz"], "corpora": ["x"]})
    with pytest.raises(KeyError, match="corpus 'zz'"):
        planned_instances(resolved(), study={"models": ["a"], "corpora": ["zz"]})
    with pytest.raises(KeyError, match="resolve the config first"):
        documents_for_model({"models": {"a": {}}}, "a")


# ---- dry-run text ----------------------------------------------------------------------------------


def job(rule: str, wildcards: str | None, local: bool = False) -> str:
    lines = [
        "[Sun Nov 29 13:29:56 2026]",
        f"{'localrule' if local else 'rule'} {rule}:",
        "    input: resources/models/a/config.json",
        "    output: results/x",
        "    jobid: 1",
        "    reason: Missing output files: results/x",
    ]
    if wildcards is not None:
        lines.append(f"    wildcards: {wildcards}")
    lines += ["    resources: tmpdir=/tmp, mem_mb=8000, gpu=1", "Shell command: None", ""]
    return "\n".join(lines)


def dry_run(jobs: list[str], stats: dict[str, int]) -> str:
    table = ["Job stats:", "job        count", "-------  -------"]
    table += [f"{rule:<10} {n:>6}" for rule, n in stats.items()]
    table += [f"total      {sum(stats.values()):>6}", "", ""]
    return "Building DAG of jobs...\n" + "\n".join(table) + "\n" + "\n".join(jobs) + "\nThis was a dry-run (flag -n).\n"


CAPTURES = [("a", "x", "0000"), ("a", "x", "0001"), ("a", "x", "0004"), ("b", "y", "0001")]


def capture_dry_run(captures=CAPTURES, stated=None) -> str:
    jobs = [job("prepare_model", "model=a", local=True), job("bench", None)]
    jobs += [job("capture", f"model={m}, corpus={c}, doc={d}") for m, c, d in captures]
    jobs += [job("ceiling", f"model={m}, corpus={c}, doc={d}") for m, c, d in captures[:1]]
    stats = {"prepare_model": 1, "bench": 1, "capture": len(captures) if stated is None else stated, "ceiling": 1}
    return dry_run(jobs, stats)


def test_planned_captures_reads_every_capture_job():
    frame = planned_captures(capture_dry_run())
    assert frame.rows() == sorted(CAPTURES)
    assert planned_captures(capture_dry_run(), rule="ceiling").rows() == [CAPTURES[0]]
    with pytest.raises(DryRunParseError, match="without model/corpus/doc"):  # prepare_model has {model} only
        planned_captures(capture_dry_run(), rule="prepare_model")


def test_instances_from_dryrun_counts_the_jobs_not_the_config():
    config = resolved()
    plan = instances_from_dryrun(capture_dry_run(), config)
    assert plan.rows(named=True) == [
        {
            "model": "a",
            "corpus": "x",
            "layers": 3,
            "heads": 4,
            "rows_per_head": 6,
            "budgets": 3,
            "doc_tokens": 512,
            "docs": 3,
            "instances": 3 * 216,
            "primary_docs": 2,
            "primary_instances": 2 * 216,
        },
        {
            "model": "b",
            "corpus": "y",
            "layers": 2,
            "heads": 5,
            "rows_per_head": 6,
            "budgets": 3,
            "doc_tokens": 1024,
            "docs": 1,
            "instances": 180,
            "primary_docs": 1,
            "primary_instances": 180,
        },
    ]
    # a DAG that plans exactly the configured documents agrees with the config's arithmetic
    every = [(m, c, f"{d:04d}") for m, n in (("a", 5), ("b", 2)) for c in ("x", "y") for d in range(n)]
    assert instances_from_dryrun(capture_dry_run(every), config).equals(
        planned_instances(config).sort("model", "corpus")
    )


def test_output_without_the_job_list_is_an_error_not_zero():
    quiet = dry_run([], {"capture": 4})  # `--quiet`: the stats table, no job blocks
    with pytest.raises(DryRunParseError, match="says 4"):
        planned_captures(quiet)
    with pytest.raises(DryRunParseError, match="says 5"):
        planned_captures(capture_dry_run(stated=5))
    with pytest.raises(DryRunParseError, match="no 'Job stats:'"):
        planned_captures("Building DAG of jobs...\n")
    assert planned_captures(
        "Building DAG of jobs...\nNothing to be done (all requested files are present and up to date).\n"
    ).is_empty()


def test_duplicated_and_malformed_jobs_are_errors():
    with pytest.raises(DryRunParseError, match="listed twice"):
        planned_captures(capture_dry_run([CAPTURES[0], CAPTURES[0]]))
    with pytest.raises(DryRunParseError, match="not a document number"):
        instances_from_dryrun(capture_dry_run([("a", "x", "first")]), resolved())


# ---- configs merged as snakemake merges them -------------------------------------------------------


def test_resolve_config_merges_mappings_and_replaces_lists(tmp_path):
    extra = tmp_path / "extra.yaml"
    extra.write_text(
        "study: {corpora: [stdlib]}\ndocuments: {n_docs: 7}\ncapture: {rows_per_head: 2}\n"
        "task_contexts: {retrieval_rows: 1}\n",
        encoding="utf-8",
    )
    config = resolve_config(extra)
    assert config["study"] == {
        "models": ["smollm2-135m"],
        "corpora": ["stdlib"],
        "headline": {"models": [], "corpus": None},
    }  # list replaced, models kept
    assert config["documents"] == {"doc_tokens": 2048, "n_docs": 7, "bos": "tokenizer-default", "shuffle": False}
    assert "smollm2-135m" in config["models"] and config["capture"]["min_position"] == 256
    plan = planned_instances(config)
    assert plan.rows() == [("smollm2-135m", "stdlib", 30, 9, 2, 4, 2048, 7, 30 * 9 * 2 * 4 * 7, 3, 30 * 9 * 2 * 4 * 3)]


def test_default_config_plan_and_command_line(capsys):
    # config.yaml: SmolLM2-135M (30 x 9) on three corpora, 3 documents, 6 rows, 4 budgets
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "smollm2-135m" in out and f"{3 * 30 * 9 * 6 * 3 * 4:,} instances" in out
