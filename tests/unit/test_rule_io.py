"""The rule-script glue: log redirection, atomic parquet, one sidecar per output."""

import json
import sys
from types import SimpleNamespace

import polars as pl

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
