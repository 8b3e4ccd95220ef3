"""trustmass.cli.job_times: job wall times per rule from the sidecars the rule scripts write."""

from __future__ import annotations

import json
import sys
import time

import pytest

from trustmass.cli.job_times import main, per_rule, read_jobs, summary
from trustmass.plumbing.provenance import write_sidecar


def _job(tmp_path, monkeypatch, rule: str, outputs: list[str], started: float, argv: str) -> None:
    """One job of `rule` writing `outputs`, as rule_io does: one sidecar per output, one start stamp."""
    monkeypatch.setattr(sys, "argv", [argv])
    for name in outputs:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(name)
        write_sidecar(path, started=started, extra={"rule": rule})


def test_jobs_are_counted_once_per_job_and_summed_per_rule(tmp_path, monkeypatch):
    start = time.time() - 100.0
    # one job, two outputs (one start stamp, one generated script): one job
    _job(
        tmp_path,
        monkeypatch,
        "loss_document",
        ["loss/a.parquet", "loss/a.cells.parquet"],
        start,
        "tmp1.loss_document.py",
    )
    # a second job of the same rule started in the same second: its own script, so its own job
    _job(tmp_path, monkeypatch, "loss_document", ["loss/b.parquet"], start, "tmp2.loss_document.py")
    _job(tmp_path, monkeypatch, "capture", ["capture/0000.safetensors"], start - 50.0, "tmp3.capture.py")
    jobs = read_jobs([tmp_path])
    assert jobs.height == 3
    assert jobs.filter(jobs["rule"] == "loss_document")["outputs"].to_list() == [2, 1]
    table = per_rule(jobs)
    assert table["rule"].to_list() == ["loss_document", "capture"]  # the costlier rule first (200 s over 150 s)
    assert table["jobs"].to_list() == [2, 1]
    loss = table.row(0, named=True)
    assert loss["job_s"] == pytest.approx(200.0, abs=2.0)
    totals = summary(jobs, cores=2)
    assert totals["jobs"] == 3
    assert totals["job_s"] == pytest.approx(350.0, abs=3.0)
    assert totals["packed_s"] == pytest.approx(totals["job_s"] / 2)
    assert totals["span_s"] == pytest.approx(150.0, abs=2.0)  # first start (capture) to the last finish (now)


def test_untimed_sidecars_are_left_out_and_a_corrupt_one_is_named(tmp_path):
    out = tmp_path / "x.parquet"
    out.write_text("x")
    write_sidecar(out)  # no start stamp
    assert read_jobs([tmp_path]).height == 0
    (tmp_path / "y.parquet.prov.json").write_text(json.dumps({"format": "something else"}))
    with pytest.raises(ValueError, match=r"y\.parquet\.prov\.json: not a provenance sidecar"):
        read_jobs([tmp_path])
    with pytest.raises(FileNotFoundError, match="fix: name a results folder"):
        read_jobs([tmp_path / "missing"])
    with pytest.raises(ValueError, match="--cores 0"):
        summary(read_jobs([]), cores=0)


def test_main_filters_by_rule_and_start(tmp_path, monkeypatch, capsys):
    now = time.time()
    _job(tmp_path, monkeypatch, "capture", ["c.safetensors"], now - 3600.0, "tmp1.capture.py")
    _job(tmp_path, monkeypatch, "ceiling", ["e.parquet"], now - 10.0, "tmp2.ceiling.py")
    since = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now - 60.0))
    assert main([str(tmp_path), "--since", since]) == 0
    out = capsys.readouterr().out
    assert "| ceiling | 1 |" in out and "| capture |" not in out
    assert main([str(tmp_path), "--rule", "capture", "--cores", "1"]) == 0
    out = capsys.readouterr().out
    assert "| capture | 1 | 3,600 |" in out and "| ceiling |" not in out
    assert "over 1 cores 3,600 s" in out


def _spin(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_cpu_seconds_count_the_process_and_its_children_and_not_sleep(tmp_path):
    import multiprocessing

    out = tmp_path / "x.parquet"
    out.write_text("x")
    before = json.loads(write_sidecar(out, started=time.time()).read_text())["cpu_time_s"]
    time.sleep(0.3)  # waiting costs no CPU
    slept = json.loads(write_sidecar(out, started=time.time()).read_text())["cpu_time_s"]
    assert slept - before < 0.1
    _spin(0.3)
    child = multiprocessing.get_context("fork").Process(target=_spin, args=(0.3,))
    child.start()
    child.join()  # a child the job waited for counts too
    after = json.loads(write_sidecar(out, started=time.time()).read_text())["cpu_time_s"]
    assert after - slept >= 0.5


def test_cpu_seconds_are_summed_per_rule_and_absent_in_old_sidecars(tmp_path, monkeypatch):
    start = time.time() - 10.0
    _job(tmp_path, monkeypatch, "capture", ["a/0.safetensors", "a/1.safetensors"], start, "tmp1.capture.py")
    _job(tmp_path, monkeypatch, "capture", ["b/0.safetensors"], start, "tmp2.capture.py")
    _job(tmp_path, monkeypatch, "ceiling", ["c.parquet"], start, "tmp3.ceiling.py")
    for name, cpu in [("a/0.safetensors", 1.0), ("a/1.safetensors", 2.5), ("b/0.safetensors", 4.0)]:
        sidecar = tmp_path / f"{name}.prov.json"
        record = json.loads(sidecar.read_text())
        record["cpu_time_s"] = cpu
        sidecar.write_text(json.dumps(record))
    old = tmp_path / "c.parquet.prov.json"  # written before sidecars recorded CPU seconds
    record = json.loads(old.read_text())
    del record["cpu_time_s"]
    old.write_text(json.dumps(record))
    jobs = read_jobs([tmp_path])
    table = {row["rule"]: row for row in per_rule(jobs).iter_rows(named=True)}
    assert table["capture"]["cpu_s"] == pytest.approx(6.5)  # a job's CPU is its last sidecar's: 2.5 + 4.0
    assert table["ceiling"]["cpu_s"] is None
    assert summary(jobs, cores=2)["cpu_s"] == pytest.approx(6.5)
    assert main([str(tmp_path), "--rule", "ceiling"]) == 0
