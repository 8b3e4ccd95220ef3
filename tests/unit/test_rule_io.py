"""The rule-script glue: log redirection, atomic parquet, one sidecar per output."""

import io
import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest

from trustmass.plumbing import rule_io


def test_a_rule_script_logs_writes_and_leaves_sidecars(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "stdout", sys.stdout)  # restored after the test
    monkeypatch.setattr(sys, "stderr", sys.stderr)
    smk = SimpleNamespace(log=[str(tmp_path / "job.log")], rule="demo")
    started = rule_io.start_log(smk)
    source = tmp_path / "in.txt"
    source.write_text("input")
    out = tmp_path / "out.parquet"
    rule_io.write_parquet(pl.DataFrame({"x": [1, 2]}), out)
    rule_io.finish(smk, [out], [source], {"seed": 0}, started, {"rows": 2}, settings="S")
    sys.stdout.flush()
    assert pl.read_parquet(out)["x"].to_list() == [1, 2]
    sidecar = json.loads((tmp_path / "out.parquet.prov.json").read_text())
    assert sidecar["config"] == {"seed": 0} and sidecar["inputs"][0]["path"].endswith("in.txt")
    assert sidecar["extra"] == {"rule": "demo", "summary": {"rows": 2}, "settings": "S"}
    assert (tmp_path / "job.log").read_text().splitlines() == ["summary: {'rows': 2}", "ok"]


def test_capture_path_follows_the_capture_layout():
    assert rule_io.capture_path("m", "c", "0003") == "results/capture/m/c/0003.safetensors"


def test_an_expected_error_ends_the_job_with_its_message_and_no_traceback(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "stdout", sys.stdout)
    monkeypatch.setattr(sys, "stderr", sys.stderr)
    terminal = io.StringIO()
    monkeypatch.setattr(sys, "__stderr__", terminal)
    rule_io.start_log(SimpleNamespace(log=[str(tmp_path / "job.log")], rule="demo"))
    with pytest.raises(SystemExit) as ended:
        with rule_io.clean_exit_on(KeyError, ValueError, job="demo m/c"):
            raise ValueError("field 'x' is bad; fix: set it")
    sys.stdout.flush()
    assert ended.value.code == 1
    assert (tmp_path / "job.log").read_text() == "error: field 'x' is bad; fix: set it\n"
    assert terminal.getvalue() == "demo m/c: field 'x' is bad; fix: set it\n"
    with pytest.raises(RuntimeError, match="a bug"):  # anything unexpected keeps its traceback
        with rule_io.clean_exit_on(ValueError, job="demo"):
            raise RuntimeError("a bug")


# ---- the scripts and rules that use the glue -----------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
#: scripts that still open their log and write sidecars by hand (none left: keep it that way)
NOT_YET_ON_RULE_IO: set[str] = set()


def rules_and_their_code() -> dict[str, tuple[str, set[str]]]:
    """rule name -> (script file name, modules named in its library_code(...)), from workflow/rules/*.smk."""
    found = {}
    for smk in sorted((ROOT / "workflow" / "rules").glob("*.smk")):
        for block in re.split(r"^(?=rule \w+:)", smk.read_text(), flags=re.M)[1:]:
            name = re.match(r"rule (\w+):", block).group(1)
            script = re.search(r'script:\s*"([^"]+)"', block)
            code = re.search(r"library_code\(([^)]*)\)", block)
            if script:
                found[name] = (
                    Path(script.group(1)).name,
                    set(re.findall(r'"([^"]+)"', code.group(1))) if code else set(),
                )
    return found


def test_scripts_use_the_glue_instead_of_opening_logs_by_hand():
    by_hand = {p.name for p in (ROOT / "scripts").glob("*.py") if "open(snakemake.log[0]" in p.read_text()}
    assert by_hand <= NOT_YET_ON_RULE_IO, (
        f"use trustmass.plumbing.rule_io (start_log, finish) in {sorted(by_hand - NOT_YET_ON_RULE_IO)}"
    )


def test_rules_whose_scripts_run_the_glue_declare_it_as_library_code():
    rules = rules_and_their_code()
    assert {"capture", "prepare_model", "ceiling", "worked_examples"} <= set(rules)  # the parse found the rules
    undeclared = [
        name
        for name, (script, modules) in rules.items()
        if "trustmass.plumbing.rule_io" in (ROOT / "scripts" / script).read_text()
        and "trustmass.plumbing.rule_io" not in modules
    ]
    assert undeclared == [], "add trustmass.plumbing.rule_io to these rules' library_code(...)"
