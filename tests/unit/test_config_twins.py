"""Every job-time config check has a start-up twin (issue 31, item 3): no run stops after minutes of work
for a config the workflow could have refused when it started.

Found mechanically (ast), in two ways:

- a job-time check that depends on the config alone raises ``ConfigConflict(..., fields=(...))``
  (:mod:`trustmass.core.config_conflict`): each field set must be in ``TWINS`` below, with a config that
  violates it, and the start-up checks must refuse that config naming every field;
- any other raise of the library whose message names a config key (``deploy.methods``, ``config.x`` ...)
  must be in ``NEEDS_JOB_DATA``, with the reason no start-up check can make it (it reads a tokenizer, a
  model's config.json, a corpus, rows a job wrote).

A new job-time config check therefore fails here until it is given a start-up twin (or a reason).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import yaml

from conftest import REPO
from trustmass.cli.startup import start
from trustmass.core.config_conflict import ConfigConflict
from trustmass.plumbing.config import ConfigError

SRC = REPO / "src" / "trustmass"
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
COMMON_SMK = REPO / "workflow" / "rules" / "common.smk"
SECTIONS = list(yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8")))
#: a config key in a message: ``config.<anything>`` (not config.json) or ``<top-level section>.<key>``
CONFIG_KEY = re.compile(r"(?<![\w.])(?:config\.(?!json)|(?:%s)\.[a-z_{])" % "|".join(map(re.escape, SECTIONS)))
#: where raises are not job-time checks: the tools (their checks run on the command line, before any work)
#: and the exception type itself
NOT_JOBS = ("bench/", "cli/", "core/config_conflict.py")

#: the deploy stage on, with no decomposition or replay (whose methods must be among a changed deploy.methods)
_DEPLOY = {"enabled": True, "decomposition": {"methods": []}, "replay": {"methods": []}}
_PACKAGED = {"source": "packaged", "packages": [{"name": "p", "version": "1.0"}]}

#: field set of a job-time ConfigConflict -> a config (merged over config.yaml) that violates it
TWINS: dict[tuple[str, ...], dict] = {
    ("enumeration.subset_cap",): {
        "enumeration": {"subset_cap": 4},
        "budgets": {"enumerated": [4]},
        "statistics": {"map_budget": 4},
        "certification": {"sweep": {"budget": 4}},
    },
    ("access_law.tail_rows", "access_law.dilution_rows"): {
        "access_law": {"enabled": True, "tail_rows": [4096], "dilution_rows": 4096}
    },
    ("capture.min_position", "capture.rows_per_head"): {
        "capture": {"min_position": 2040, "rows_per_head": 50},
        "task_contexts": {"enabled": False},
    },
    ("loss.continuation",): {"loss": {"continuation": 600}},
    ("loss.probe.train_docs",): {"loss": {"probe": {"enabled": True, "train_docs": 99}}},
    ("task_contexts.types",): {"task_contexts": {"types": ["recall"]}},
    ("task_contexts.retrieval_rows", "capture.rows_per_head"): {
        "task_contexts": {"enabled": True, "retrieval_rows": 6}
    },
    ("certification.certifier",): {"certification": {"certifier": "scip"}},
    ("certification.sweep.budget", "budgets.enumerated"): {"certification": {"sweep": {"budget": 64}}},
    ("diagnostics.projection.rules",): {"diagnostics": {"enabled": True, "projection": {"rules": ["snapkv"]}}},
    ("diagnostics.swaps.pairs",): {"diagnostics": {"enabled": True, "swaps": {"pairs": [["nope", "snapkv"]]}}},
    ("statistics",): {"statistics": {"map_budgett": 8}},
    ("capture.windows",): {"capture": {"windows": [2]}},
    ("models.*.gguf",): {"models": {"m": {**_PACKAGED, "gguf": {"path": "a.gguf", "chunks": ["a.part0"]}}}},
    ("deploy.prompt_format",): {"deploy": {**_DEPLOY, "prompt_format": "json"}},
    ("deploy.tasks",): {"deploy": {**_DEPLOY, "tasks": ["qa"]}},
    ("deploy.methods",): {"deploy": {**_DEPLOY, "methods": ["dense", "snapkv", "nope"]}},
    ("deploy.methods", "deploy.hub"): {"deploy": {**_DEPLOY, "hub": False, "methods": ["dense", "snapkv", "kvzap"]}},
    ("deploy.decomposition.methods",): {"deploy": {**_DEPLOY, "decomposition": {"methods": ["dense"]}}},
    ("deploy.decomposition.methods", "deploy.query_aware"): {
        "deploy": {**_DEPLOY, "query_aware": False, "decomposition": {"methods": ["snapkv"]}}
    },
    ("deploy.methods", "deploy.models"): {
        "models": {"g3": {**_PACKAGED, "declared": {"model_type": "gemma3_text"}}},
        "deploy": {**_DEPLOY, "models": ["g3"], "methods": ["dense", "snapkv", "kvzip"]},
    },
    ("deploy.benchmarks[*].tasks",): {
        "deploy": {
            **_DEPLOY,
            "hub": True,
            "benchmarks": [{"name": "lb", "format": "longbench", "path": "hub:org/{task}", "max_length": 4096}],
        }
    },
}

#: raises that name config keys but read what only a job has: (module, function) -> why no start-up twin
NEEDS_JOB_DATA: dict[tuple[str, str], str] = {
    ("deploy/job.py", "items_for"): "whether the job's model reads shuffled text (its control arm's plan); "
    "trustmass.plan.controls.arm_config already leaves the benchmarks out of that arm: an invariant, not input",
    (
        "capture/prefill.py",
        "sample_positions",
    ): "the retrieval positions a task document planted (its manifest); the design share is checked at start-up",
    ("deploy/bytes_table.py", "_check"): "the ledger rows a deploy job wrote",
    (
        "deploy/bytes_table.py",
        "bytes_summary",
    ): "the ledger rows; their config cause (snapkv missing from deploy.methods) is refused at start-up",
    (
        "deploy/external.py",
        "_records",
    ): "whether the hub serves the data set (local files are checked at start-up, deploy.names.benchmark_problems)",
    (
        "deploy/external.py",
        "benchmark_items",
    ): "the model's window (its config.json), the data set's records and the tokenized questions",
    ("deploy/job.py", "haystack_ids"): "the haystack corpus's token count under the model's tokenizer",
    (
        "deploy/metrics.py",
        "metric_for",
    ): "a record's own task field; start-up calls this same function on deploy.benchmarks[].tasks",
    ("loss/heldout.py", "heldout_document"): "the held-out chunks the tokenizer cut from the corpus",
    (
        "report/frames/deploy_claims.py",
        "statistics",
    ): "the targets asked for (the rule is only planned by name when deploy.enabled is false)",
    ("sources/documents.py", "tokenize_documents"): "the corpus's token count under the model's tokenizer",
    ("sources/needles.py", "chat_parts"): "whether the tokenizer has a chat template",
    (
        "sources/needles.py",
        "plant",
    ): "the model's window (config.json), the tokenized needles and question, the haystack's tokens and sentences",
    (
        "sources/task_contexts.py",
        "build_task_documents",
    ): "the tokenizer's special tokens, the haystack's tokens and the positions the contexts planted",
}


def _raises(path: Path):
    """(function name, raise node) of every ``raise X(...)`` in a module."""

    def visit(node, function):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = node.name
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            yield function, node
        for child in ast.iter_child_nodes(node):
            yield from visit(child, function)

    yield from visit(ast.parse(path.read_text(encoding="utf-8")), "<module>")


def _callee(call: ast.Call) -> str | None:
    return getattr(call.func, "id", None) or getattr(call.func, "attr", None)


def _field(node: ast.expr, where: str) -> str:
    """A literal field name; an f-string's replacement fields read ``*`` (``models.{model}.gguf`` -> ``models.*.gguf``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "*" for v in node.values)
    raise AssertionError(
        f"{where}: ConfigConflict fields must be written out (str or f-string literals), got {ast.dump(node)}"
    )


def _library_raises():
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if not rel.startswith(NOT_JOBS):
            for function, node in _raises(path):
                yield rel, function, node


def job_time_conflicts() -> dict[tuple[str, ...], list[str]]:
    """Every ``raise ConfigConflict(..., fields=(...))`` of the library: field set -> where."""
    found: dict[tuple[str, ...], list[str]] = {}
    for rel, _, node in _library_raises():
        if _callee(node.exc) != "ConfigConflict":
            continue
        where = f"src/trustmass/{rel}:{node.lineno}"
        fields = [k.value for k in node.exc.keywords if k.arg == "fields"]
        assert len(fields) == 1 and isinstance(fields[0], ast.Tuple), f"{where}: name the config keys, fields=(...)"
        found.setdefault(tuple(_field(f, where) for f in fields[0].elts), []).append(where)
    return found


def startup_problems(config: dict) -> str:
    """Every problem the start-up finds (trustmass.cli.startup.start: the workflow's and the tools')."""
    try:
        start(config, SCHEMA)
    except ConfigError as exc:
        return "\n".join(exc.problems)
    return ""


def test_every_job_time_config_conflict_has_a_start_up_twin():
    found = job_time_conflicts()
    assert len(found) >= 15  # the scan finds them (a broken scan would pass everything)
    missing = {fields: where for fields, where in found.items() if fields not in TWINS}
    assert not missing, (
        f"job-time config checks without a start-up twin: {missing}; fix: check the same fields at start-up "
        "(trustmass.plumbing.config_checks, deploy.names, loss.diagnostic_config ...), ideally through one shared "
        "function, and add a violating config to TWINS in this test"
    )
    stale = sorted(set(TWINS) - set(found))
    assert not stale, f"TWINS lists field sets no job raises any more: {stale}; fix: remove them here"


def test_config_conflict_names_its_fields():
    assert ConfigConflict("x", fields=("deploy.methods",)).fields == ("deploy.methods",)
    assert isinstance(ConfigConflict("x", fields=("a",)), ValueError)  # callers that catch ValueError still do
    with pytest.raises(TypeError, match="fields"):
        ConfigConflict("x", fields=())


def test_the_default_config_passes_start_up():
    assert startup_problems({}) == ""


@pytest.mark.parametrize("fields", sorted(TWINS), ids="+".join)
def test_start_up_refuses_each_violation_naming_the_fields(fields):
    problems = startup_problems(TWINS[fields])
    assert problems, f"start-up accepts {TWINS[fields]}, which a job refuses ({fields})"
    patterns = [r"\.".join(re.escape(part).replace(r"\*", r"[^\s.]+") for part in f.split(".")) for f in fields]
    for field, pattern in zip(fields, patterns):
        assert re.search(pattern, problems), f"start-up refuses {TWINS[fields]} without naming {field}:\n{problems}"
    for line in problems.splitlines():  # refused for this conflict, not another the violating config made
        assert any(re.search(p, line) for p in patterns), f"{TWINS[fields]} also trips: {line}"


def test_start_up_runs_the_checks_this_test_runs():
    """The workflow and the command-line tools start through the same function this test calls."""
    smk = COMMON_SMK.read_text(encoding="utf-8")
    assert re.search(r"\bstart\(config, CONFIG_SCHEMA\)", smk), (
        "workflow/rules/common.smk no longer starts through trustmass.cli.startup.start"
    )
    instances = (COMMON_SMK.parents[2] / "src" / "trustmass" / "cli" / "instances.py").read_text(encoding="utf-8")
    assert "return start(config, schema)" in instances, (
        "cli.instances.resolve_config no longer starts through trustmass.cli.startup.start"
    )


def test_other_raises_naming_config_keys_need_job_data():
    flagged = set()
    for rel, function, node in _library_raises():
        if _callee(node.exc) == "ConfigConflict":
            continue
        text = " ".join(n.value for n in ast.walk(node.exc) if isinstance(n, ast.Constant) and isinstance(n.value, str))
        if CONFIG_KEY.search(text):
            flagged.add((rel, function))
            assert (rel, function) in NEEDS_JOB_DATA, (
                f"src/trustmass/{rel}:{node.lineno} ({function}) raises naming a config key: {text[:160]!r}. If the check "
                "depends on the config alone, raise ConfigConflict(..., fields=(...)) and give it a start-up twin "
                "(see TWINS); if it needs what only a job has, add it to NEEDS_JOB_DATA with the reason"
            )
    stale = sorted(set(NEEDS_JOB_DATA) - flagged)
    assert not stale, (
        f"NEEDS_JOB_DATA lists functions that no longer raise naming config keys: {stale}; fix: remove them"
    )


def test_kvzip_on_gemma3_is_refused_at_start_up_only_where_the_model_declares_it():
    change = TWINS[("deploy.methods", "deploy.models")]
    undeclared = {**change, "models": {"g3": {**_PACKAGED, "declared": {"layers": 18}}}}
    assert startup_problems(undeclared) == ""  # the job checks the loaded model (trustmass.deploy.job.check_runnable)
    other = {**change, "models": {"g3": {**_PACKAGED, "declared": {"model_type": "qwen2"}}}}
    assert startup_problems(other) == ""
