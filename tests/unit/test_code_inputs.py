"""The job-end check (trustmass.plumbing.code_inputs): a job that ran a library module its rule does not declare
fails, naming the module, the rule and the rules file; run_rule runs it once main has returned."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import REPO
from trustmass.plumbing.code_inputs import (
    UndeclaredCodeError,
    check_code_inputs,
    declared_code,
    loaded_modules,
    undeclared_modules,
)
from trustmass.plumbing.rule_io import run_rule

SCRIPTS = REPO / "scripts"


@pytest.fixture(autouse=True)
def _restore_streams():
    out, err, hook = sys.stdout, sys.stderr, sys.excepthook
    yield
    sys.stdout, sys.stderr, sys.excepthook = out, err, hook


def loaded_files(*but: str) -> list[str]:
    return [str(path) for name, path in loaded_modules().items() if name not in but]


def smk(rule, code, tmp_path=None, **inputs):
    named = {**inputs, **({} if code is None else {"code": code})}
    log = [str((tmp_path or Path("/tmp")) / "job.log")]
    return SimpleNamespace(input=named, rule=rule, scriptdir=str(SCRIPTS), log=log, wildcards=())


def test_loaded_modules_are_the_librarys_own_with_their_files():
    loaded = loaded_modules()
    assert "trustmass.plumbing.code_inputs" in loaded and "numpy" not in loaded and "pytest" not in loaded
    assert loaded["trustmass.plumbing.code_inputs"] == (REPO / "src/trustmass/plumbing/code_inputs.py").resolve()
    fake = {"trustmass.x": SimpleNamespace(__file__=None), "trustmassive": SimpleNamespace(__file__="/a.py")}
    assert loaded_modules(fake) == {}


def test_declared_code_reads_the_input_named_code():
    assert declared_code({"code": ["a.py", "b.py"], "data": ["x"]}) == ["a.py", "b.py"]
    assert declared_code({"code": "a.py"}) == ["a.py"]  # snakemake gives a one-item list as its item
    assert declared_code(SimpleNamespace(code=["a.py"])) == ["a.py"]
    assert declared_code({"data": ["x"]}) is None


def test_run_rule_fails_a_job_that_ran_an_undeclared_module_naming_it_the_rule_and_the_file(tmp_path):
    declared = []

    def main(snakemake, started):
        import trustmass.deploy.roster  # noqa: F401 -- stands for what a job loads by dotted name

        declared.extend(loaded_files("trustmass.deploy.roster"))  # everything else this job ran is declared

    with pytest.raises(UndeclaredCodeError) as caught:
        run_rule(smk("deploy_condition", declared, tmp_path), main)
    message = str(caught.value)
    assert caught.value.modules == ["trustmass.deploy.roster"] and caught.value.rule == "deploy_condition"
    assert "rule deploy_condition ran library modules that are not among its declared code inputs" in message
    assert "trustmass.deploy.roster (" in message and "deploy/roster.py)" in message
    assert 'Fix: add "trustmass.deploy.roster" to the library_code(...)' in message
    assert message.endswith("workflow/rules/deploy.smk")


def test_run_rule_passes_a_job_whose_modules_are_all_declared(tmp_path):
    declared = []
    run_rule(smk("deploy_condition", declared, tmp_path), lambda snakemake, started: declared.extend(loaded_files()))
    assert declared


def test_a_failing_main_is_not_hidden_by_the_check(tmp_path):
    with pytest.raises(ZeroDivisionError):
        run_rule(smk("ceiling", [], tmp_path), lambda snakemake, started: 1 / 0)


def test_a_rule_without_a_code_input_is_told_to_declare_one():
    with pytest.raises(UndeclaredCodeError, match=r"rule ceiling declares no code input .*code=library_code\("):
        check_code_inputs(smk("ceiling", None))


@pytest.mark.parametrize(
    ("rule", "where"),
    [
        ("ceiling", "workflow/rules/ceiling.smk"),
        ("claims_report", "workflow/rules/report.smk"),
        ("certify_shard_shuffled_text", "workflow/rules/certification.smk"),  # a control arm's copy
        ("claims_report_randomised_weights", "workflow/rules/report.smk"),
        ("ceiling_statistics", "workflow/rules/report.smk (the catalog's generated rules)"),
        ("render_fig1", "workflow/rules/report.smk (the catalog's generated rules)"),
    ],
)
def test_the_fix_names_the_rules_file(rule, where):
    declared = loaded_files("trustmass.plumbing.rule_io")
    with pytest.raises(UndeclaredCodeError) as caught:
        check_code_inputs(smk(rule, declared))
    assert str(caught.value).endswith(where), str(caught.value)


def test_a_declared_path_matches_relative_or_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    relative = [str(Path(p).relative_to(REPO)) if Path(p).is_relative_to(REPO) else p for p in loaded_files()]
    assert undeclared_modules(relative) == {}
