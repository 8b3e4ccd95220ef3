"""Run the rehearsal: the cache built, then each plan (:data:`~trustmass.rehearsal.plans.PLANS`) through snakemake
as a user runs the paper, with ``config/rehearsal.yaml`` after the paper's files, ``HF_HUB_OFFLINE=1`` and
``HF_HOME`` at the rehearsal's cache, every network connection of the workflow's Python refused and recorded
(the guard of tests/workflow/test_paper_config.py).  The plans run one after the other in one working directory
(``<root>/work``), as a user runs the content run after the ten-arm run in the same checkout: paper-content.yaml's
wikitext shards are the ten-arm run's very files, so the content run reuses them instead of capturing them again.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from trustmass.rehearsal.plans import PLANS, REPO, config_files

__all__ = ["GUARD", "WORKDIR", "environment", "run_plan", "snakemake_command"]

#: the plans' one working directory under the rehearsal's root
WORKDIR = "work"

Log = Callable[[str], None]

#: put first on the PYTHONPATH of the workflow and every job: each remote connection is written to
#: $TRUSTMASS_NETWORK_LOG and refused (loopback stays open)
GUARD = '''\
"""The rehearsal's network guard (trustmass.rehearsal.run): record and refuse every remote connection."""
import os
import socket

_LOG = os.environ.get("TRUSTMASS_NETWORK_LOG")
_LOOPBACK = {None, "localhost", "127.0.0.1", "::1", b"localhost", b"127.0.0.1"}


def _refuse(what):
    with open(_LOG, "a", encoding="utf-8") as fh:
        fh.write(f"pid {os.getpid()}: {what}\\n")
    raise OSError(f"network access refused by the rehearsal's guard: {what}")


if _LOG:
    _connect, _connect_ex, _getaddrinfo = socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo

    def _remote(sock, address):
        return sock.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in _LOOPBACK

    def connect(self, address):
        if _remote(self, address):
            _refuse(f"connect {address!r}")
        return _connect(self, address)

    def connect_ex(self, address):
        if _remote(self, address):
            _refuse(f"connect_ex {address!r}")
        return _connect_ex(self, address)

    def getaddrinfo(host, *args, **kwargs):
        if host not in _LOOPBACK:
            _refuse(f"getaddrinfo {host!r}")
        return _getaddrinfo(host, *args, **kwargs)

    socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo = connect, connect_ex, getaddrinfo
'''


def environment(root: Path, hf_home: Path) -> dict[str, str]:
    """The jobs' environment: the rehearsal's HF cache, offline, the guard first on PYTHONPATH."""
    guard = root / "guard"
    guard.mkdir(parents=True, exist_ok=True)
    (guard / "sitecustomize.py").write_text(GUARD, encoding="utf-8")
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_")) and k != "TRANSFORMERS_CACHE"
    }
    env.update(
        HF_HOME=str(hf_home),
        HF_HUB_OFFLINE="1",
        TRUSTMASS_NETWORK_LOG=str(root / "network.log"),
        PYTHONPATH=os.pathsep.join([str(guard), *filter(None, [os.environ.get("PYTHONPATH")])]),
        PYTHONUNBUFFERED="1",
    )
    return env


def snakemake_command(
    plan: str, workdir: Path, cores: str, cache: Path, extra: Sequence[str] = (), repo: Path = REPO
) -> list[str]:
    """The plan's snakemake call: the paper's files then the override, the shared download cache (pip wheels, Debian
    packages), everything else as a user types it."""
    exe = Path(sys.executable).with_name("snakemake")
    return [
        *([str(exe)] if exe.exists() else [sys.executable, "-m", "snakemake"]),
        "--snakefile", str(repo / "Snakefile"),
        "--directory", str(workdir),
        "--cores", str(cores),
        "--keep-going",
        *extra,  # targets and options before the list-valued options below, which would take them in
        "--configfile", *[str(f) for f in config_files(plan, repo)],
        "--config", f"cache_dir={cache}",
    ]  # fmt: skip


def run_plan(
    plan: str, root: Path, hf_home: Path, cores: str, cache: Path, extra: Sequence[str] = (), log: Log = print
) -> dict:
    """Run one plan in ``root/work``; its return code, seconds, CPU seconds and log file."""
    workdir = root / WORKDIR
    workdir.mkdir(parents=True, exist_ok=True)
    cmd = snakemake_command(plan, workdir, cores, cache, extra)
    log(f"rehearsal {plan}: {' '.join(cmd)}")
    started, before = time.time(), _children_cpu()
    with open(root / f"{plan}.log", "w", encoding="utf-8") as out:
        done = subprocess.run(cmd, cwd=workdir, env=environment(root, hf_home), stdout=out, stderr=subprocess.STDOUT)
    seconds, cpu = time.time() - started, _children_cpu() - before
    log(
        f"rehearsal {plan}: exit {done.returncode} after {seconds / 60:.1f} min, {cpu / 60:.1f} CPU-min "
        f"(log {root / f'{plan}.log'})"
    )
    return {
        "plan": plan,
        "returncode": done.returncode,
        "seconds": round(seconds, 1),
        "cpu_seconds": round(cpu, 1),
        "log": str(root / f"{plan}.log"),
    }


def _children_cpu() -> float:
    """CPU seconds (user + system) of every finished child process: snakemake and its jobs.  Beside the wall time,
    it tells how much of a run's time was its own work on a machine shared with others."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def rehearse(
    root: Path,
    plans: Iterable[str] = tuple(PLANS),
    *,
    cores: str = "all",
    cache: Path | None = None,
    fresh: bool = False,
    rebuild: bool = False,
    extra: Sequence[str] = (),
    log: Log = print,
) -> dict:
    """Build the cache (unless built), run every plan, and write ``root/rehearsal-run.json``."""
    from trustmass.rehearsal.build import MANIFEST, build

    root = Path(root).resolve()
    plans = list(plans)
    if fresh and root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True, exist_ok=True)
    cache = Path(cache or REPO / "resources" / "cache").resolve()
    hf_home = root / "hf-home"
    started = time.time()
    if rebuild or not (hf_home / MANIFEST).is_file():
        manifest = build(hf_home, list(PLANS), cache=cache, log=log)
        log(
            f"rehearsal cache: {len(manifest['models'])} models, {len(manifest['datasets'])} datasets in {manifest['seconds']:.0f} s"
        )
    built = time.time() - started
    runs = [run_plan(plan, root, hf_home, cores, cache, extra, log) for plan in plans]
    summary = {
        "plans": plans,
        "build_seconds": round(built, 1),
        "runs": runs,
        "seconds": round(time.time() - started, 1),
    }
    network = root / "network.log"
    summary["network_attempts"] = network.read_text(encoding="utf-8").splitlines() if network.exists() else []
    (root / "rehearsal-run.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary
