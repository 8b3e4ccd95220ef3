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
          "random": random.random(), "torch": torch.rand(1).item(), "threads": torch.get_num_threads(),
          "comm": open("/proc/self/comm").read().strip()}
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
    """A run's environment with its server started (as the workflow's onstart does), and the job script."""
    short = Path(tempfile.mkdtemp(prefix="tm-", dir="/tmp"))
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for name in (preload.SWITCH_ENV, preload.SOCKET_ENV, "SLURM_JOB_ID"):
        env.pop(name, None)
    script = short / "job.py"
    script.write_text(JOB, encoding="utf-8")
    process = preload.start_server(env, log=short / "server.log")
    sock = Path(env[preload.SOCKET_ENV])
    wait_for(sock.exists, 120, lambda: (short / "server.log").read_text())
    yield env, script, sock, process
    preload.stop_server(process)


def wait_for(condition, seconds, explain=lambda: "") -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, explain()
        time.sleep(0.1)


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


def test_a_job_runs_in_a_forked_child_as_its_own_process_would(server, tmp_path):
    env, script, _sock, process = server
    done = run(env, script, "4", "extra", cwd=tmp_path)
    assert done.returncode == 4, done.stderr
    report = report_of(done)
    assert report["ppid"] == process.pid  # forked by the server
    assert report["comm"] == "tm:job"  # named after its script in ps
    assert (report["argv"], report["cwd"]) == (["4", "extra"], str(tmp_path))
    assert done.stderr.strip() == "to stderr"  # the client's own streams
    # as a process of its own (no server) sees it: no library module the script did not import, one thread
    own = report_of(run({k: v for k, v in env.items() if k != preload.SOCKET_ENV}, script, "0"))
    assert own["ppid"] == os.getpid()
    assert report["trustmass"] == own["trustmass"] == ["trustmass", "trustmass.plumbing", "trustmass.plumbing.preload"]
    assert report["threads"] == own["threads"] == 1
    # fresh seeds per job, as per process
    again = report_of(run(env, script, "0"))
    assert again["ppid"] == process.pid
    assert (again["random"], again["torch"]) != (report["random"], report["torch"])


def test_a_job_whose_environment_differs_runs_in_its_own_process(server):
    env, script, sock, _process = server
    done = run({**env, "SOME_SETTING": "1", "TMPDIR": "/tmp"}, script, "0")
    assert done.returncode == 0 and report_of(done)["ppid"] == os.getpid()
    wait_for(lambda: "SOME_SETTING differ" in (script.parent / "server.log").read_text(), 10)
    assert "TMPDIR" not in (script.parent / "server.log").read_text()  # set per job by snakemake: not a difference


def test_an_uncaught_exception_prints_its_traceback_and_exits_1(server):
    env, script, _sock, _process = server
    done = run(env, script, "raise")
    assert done.returncode == 1
    assert "ValueError: the job failed" in done.stderr and "Traceback" in done.stderr


def test_killing_the_client_kills_the_child(server, tmp_path):
    env, script, _sock, _process = server
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
    env, script, _sock, _process = server
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


def test_stopping_the_server_waits_for_it_and_removes_its_socket(server):
    _env, script, sock, process = server
    preload.stop_server(process)
    assert process.returncode == 0 and not sock.exists()
    assert "jobs forked" in (script.parent / "server.log").read_text()


def test_the_server_leaves_with_its_run(tmp_path):
    """Killed, the workflow's process runs no onerror: its server sees it gone and exits."""
    code = (
        "import os, sys, time; from trustmass.plumbing import preload; "
        f"p = preload.start_server(dict(os.environ), log={str(tmp_path / 'server.log')!r}); "
        "print(p.pid, preload.socket_path(), flush=True); time.sleep(600)"
    )
    env = {k: v for k, v in os.environ.items() if k not in (preload.SWITCH_ENV, preload.SOCKET_ENV)}
    env["OMP_NUM_THREADS"] = "1"  # as the workflow pins it: OpenBLAS starts no threads (the server checks)
    run_process = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
    pid, sock = run_process.stdout.readline().split()
    wait_for(Path(sock).exists, 120, lambda: (tmp_path / "server.log").read_text())
    run_process.kill()
    run_process.wait()
    wait_for(lambda: not Path(f"/proc/{pid}").exists() or " Z " in Path(f"/proc/{pid}/stat").read_text(), 15)
    assert not Path(sock).exists()


@pytest.mark.parametrize(
    ("change", "wanted"),
    [
        ({}, True),
        ({preload.SWITCH_ENV: "0"}, False),
        ({preload.SOCKET_ENV: None}, False),
        ({"SLURM_JOB_ID": "7"}, False),
        ({preload._CHILD_ENV: "1"}, False),
    ],
)
def test_who_delegates(monkeypatch, change, wanted):
    monkeypatch.setenv(preload.SOCKET_ENV, "/tmp/x.sock")
    for name in (preload.SWITCH_ENV, "SLURM_JOB_ID", preload._CHILD_ENV):
        monkeypatch.delenv(name, raising=False)
    for name, value in change.items():
        if value is None:
            monkeypatch.delenv(name)
        else:
            monkeypatch.setenv(name, value)
    assert preload._wanted() is wanted


def test_environment_differences_ignore_only_the_per_job_temporary_folder():
    server = {"A": "1", "TMPDIR": "/tmp", "OPENBLAS_CORETYPE": "Haswell"}
    assert preload.environment_differences(dict(server), server) == []
    assert (
        preload.environment_differences({**server, "TMPDIR": "/scratch", "TMP": "/scratch", "_": "/bin/x"}, server)
        == []
    )
    # an activated virtual environment exports PS1 ("(.venv) "); the /bin/sh starting each job resets it ("# ")
    assert preload.environment_differences({**server, "PS1": "# "}, {**server, "PS1": "(.venv) "}) == []
    assert preload.environment_differences({**server, "OPENBLAS_CORETYPE": "Zen", "B": "2"}, server) == [
        "B",
        "OPENBLAS_CORETYPE",
    ]
    assert preload.environment_differences({"A": "1"}, server) == ["OPENBLAS_CORETYPE"]
