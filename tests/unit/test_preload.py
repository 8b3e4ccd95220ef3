"""The preloaded fork server (trustmass.plumbing.preload): a job handed to it runs as its own process would."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from trustmass.plumbing import preload

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork server is Linux-only")

#: a job script: delegates first (as run_rule does), then reports what its process looks like
JOB = """
import json, os, sys, time
from trustmass.plumbing.preload import delegate
delegate()
import random
import torch
mode = sys.argv[1]
report = {"pid": os.getpid(), "ppid": os.getppid(), "argv": sys.argv[1:], "cwd": os.getcwd(),
          "trustmass": sorted(m for m in sys.modules if m.startswith("trustmass")),
          "random": random.random(), "torch": torch.rand(1).item(), "threads": torch.get_num_threads()}
print(json.dumps(report))
print("to stderr", file=sys.stderr)
if mode == "raise":
    raise ValueError("the job failed")
if mode == "sleep":
    open(sys.argv[2], "w").write(str(os.getpid()))
    time.sleep(60)
sys.exit(int(mode))
"""


@pytest.fixture(scope="module")
def server():
    """A run's environment (its owner: a sleeping process we end), the job script, and the started server."""
    short = Path(tempfile.mkdtemp(prefix="tm-", dir="/tmp"))  # a socket's path has at most 107 bytes
    owner = subprocess.Popen(["sleep", "600"])
    env = {**os.environ, "TMPDIR": str(short), preload.RUN_PID_ENV: str(owner.pid), "OMP_NUM_THREADS": "1"}
    env.pop(preload.SWITCH_ENV, None)
    env.pop("SLURM_JOB_ID", None)
    script = short / "job.py"
    script.write_text(JOB, encoding="utf-8")
    first = run(env, script, "3")  # no server yet: runs here and starts one
    sock = Path(str(socket_path_in(env)))
    deadline = time.monotonic() + 120
    while not sock.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert sock.exists(), sock.with_suffix(".state").read_text() if sock.with_suffix(".state").exists() else ""
    yield env, script, first, sock, owner
    owner.kill()
    owner.wait()


def socket_path_in(env: dict) -> Path:
    code = "from trustmass.plumbing.preload import socket_path; print(socket_path())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def run(env, script, *args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(script), *args],
        env=env,
        cwd=cwd or script.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )


def report_of(done: subprocess.CompletedProcess) -> dict:
    return json.loads(done.stdout.splitlines()[0])


def server_pid(sock: Path) -> int:
    return int(sock.with_suffix(".state").read_text().split("pid ")[1].rstrip(")\n"))


def test_the_first_job_runs_in_its_own_process_and_starts_the_server(server):
    _env, _script, first, sock, _owner = server
    assert first.returncode == 3
    assert report_of(first)["ppid"] == os.getpid()  # this test's child: not forked by a server
    assert sock.with_suffix(".state").read_text().startswith("serving")


def test_a_later_job_runs_in_a_forked_child_as_its_own_process_would(server, tmp_path):
    env, script, first, sock, _owner = server
    done = run(env, script, "4", "extra", cwd=tmp_path)
    assert done.returncode == 4, done.stderr
    report = report_of(done)
    assert report["ppid"] == server_pid(sock)  # forked by the server
    assert (report["argv"], report["cwd"]) == (["4", "extra"], str(tmp_path))
    assert done.stderr.strip() == "to stderr"  # the client's own streams
    # no library module the job did not import itself, and one BLAS/torch thread as in a fresh process
    assert (
        report["trustmass"]
        == report_of(first)["trustmass"]
        == ["trustmass", "trustmass.plumbing", "trustmass.plumbing.preload"]
    )
    assert report["threads"] == report_of(first)["threads"] == 1
    # fresh seeds per job, as per process
    again = report_of(run(env, script, "0"))
    assert (again["random"], again["torch"]) != (report["random"], report["torch"])


def test_an_uncaught_exception_prints_its_traceback_and_exits_1(server):
    env, script, _first, _sock, _owner = server
    done = run(env, script, "raise")
    assert done.returncode == 1
    assert "ValueError: the job failed" in done.stderr and "Traceback" in done.stderr


def test_killing_the_client_kills_the_child(server, tmp_path):
    env, script, _first, _sock, _owner = server
    pid_file = tmp_path / "child.pid"
    client = subprocess.Popen([sys.executable, str(script), "sleep", str(pid_file)], env=env, cwd=tmp_path)
    deadline = time.monotonic() + 60
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    child = int(pid_file.read_text())
    assert child != client.pid
    client.kill()  # as snakemake kills a job
    client.wait()
    deadline = time.monotonic() + 10
    while Path(f"/proc/{child}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]


def test_a_terminated_client_forwards_the_signal(server, tmp_path):
    env, script, _first, _sock, _owner = server
    pid_file = tmp_path / "child.pid"
    client = subprocess.Popen(
        [sys.executable, str(script), "sleep", str(pid_file)], env=env, cwd=tmp_path, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 60
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    client.send_signal(signal.SIGTERM)
    _out, err = client.communicate(timeout=30)
    assert client.returncode == 1 and "ended without an exit status" in err


def test_the_server_leaves_with_its_run(server):
    _env, _script, _first, sock, owner = server
    pid = server_pid(sock)
    owner.kill()
    owner.wait()
    deadline = time.monotonic() + 15
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not sock.exists()


@pytest.mark.parametrize(
    ("change", "wanted"),
    [
        ({}, True),
        ({preload.SWITCH_ENV: "0"}, False),
        ({preload.RUN_PID_ENV: None}, False),
        ({"SLURM_JOB_ID": "7"}, False),
        ({preload._CHILD_ENV: "1"}, False),
    ],
)
def test_who_delegates(monkeypatch, change, wanted):
    monkeypatch.setenv(preload.RUN_PID_ENV, "12")
    for name in (preload.SWITCH_ENV, "SLURM_JOB_ID", preload._CHILD_ENV):
        monkeypatch.delenv(name, raising=False)
    for name, value in change.items():
        if value is None:
            monkeypatch.delenv(name)
        else:
            monkeypatch.setenv(name, value)
    assert preload._wanted() is wanted


def test_a_different_environment_is_a_different_server():
    base = {"A": "1", preload.RUN_PID_ENV: "12"}
    assert preload.socket_path(base) == preload.socket_path(dict(base))
    assert preload.socket_path(base) != preload.socket_path({**base, "OPENBLAS_CORETYPE": "Haswell"})
    assert preload.socket_path(base) == preload.socket_path({**base, preload._CHILD_ENV: "1"})
