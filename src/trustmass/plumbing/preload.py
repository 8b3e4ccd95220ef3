"""A preloaded fork server for a local run's jobs: the libraries imported once per run, not once per job.

Every rule script starts a fresh Python, and a job that loads a model pays 5-7 s of imports (torch,
transformers' ``torch._dynamo`` and ``torch.distributed.tensor``, kvpress) before its own work; a study's
statistics and tables pay about a second each (docs/run-time.md).  Here the first job of a run starts a
server that imports those libraries (:data:`PRELOAD`) and waits; each later job's process (the *client*,
:func:`delegate`, first thing in :func:`trustmass.plumbing.rule_io.run_rule`) hands its script to the server,
which forks a child that runs the script as the job's own process would: the client's working directory,
environment, ``sys.argv``, ``sys.path`` and standard streams, and no ``trustmass`` module imported before
the script's (so the job-end check of declared code sees what the job ran).  The child reports its pid and
its exit status to the client over the socket; the client forwards the signals snakemake sends it and exits
with the child's status.  A child whose client disappears kills itself.

What makes a fork equal to a fresh process here: the server has imported only third-party packages, run no
parallel kernel (one thread, checked before it serves: a forked OpenMP pool would hang) and its environment is
the job's, byte for byte (the socket's name is a hash of the environment after
:func:`~trustmass.plumbing.determinism.restore_job_threads`, the interpreter and ``sys.path``): every variable
a library reads when it loads (the pinned BLAS threads and kernels, ``HF_HUB_OFFLINE``, ...) had the job's
value.  Anything else runs the job in its own process as before: ``TRUSTMASS_PRELOAD=0``, no run pid (a
script run outside snakemake), a SLURM job, a server still importing, or one that refused (it says why in
``<socket>.state``).  The server exits with the snakemake process that started its run
(``TRUSTMASS_RUN_PID``, set by the workflow) or after :data:`IDLE_S` seconds without a job.
"""

from __future__ import annotations

import array
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["PRELOAD", "RUN_PID_ENV", "delegate", "serve", "socket_path"]

#: what the server imports: what the jobs import, heaviest first (a name that fails to import is skipped).  Not
#: polars nor kvpress: polars starts its allocator's and its spill cleaner's threads on import, and kvpress
#: imports pyarrow (through datasets), which starts its allocator's; a fork copies none of them
PRELOAD = (
    "torch",
    "transformers",
    "transformers.masking_utils",
    "transformers.models.auto.modeling_auto",
    "transformers.models.llama.modeling_llama",
    "accelerate",
    "numpy",
    "scipy.optimize",
    "scipy.stats",
    "numba",
    "matplotlib.pyplot",
    "safetensors.torch",
    "jsonschema",
    "yaml",
    "snakemake.script",
)
#: set by the workflow's process (workflow/rules/common.smk) for its jobs: the run the server belongs to
RUN_PID_ENV = "TRUSTMASS_RUN_PID"
#: ``0`` runs every job in its own process
SWITCH_ENV = "TRUSTMASS_PRELOAD"
#: set in a forked child, so that its run_rule runs the job instead of delegating again
_CHILD_ENV = "TRUSTMASS_PRELOADED_CHILD"
#: a server with no job for this long exits
IDLE_S = 300.0
#: a server that refused to serve (it says why in its state file) is not started again for this long
REFUSAL_S = 3600.0


def socket_path(environ: dict[str, str] | None = None) -> Path:
    """Where the server for this interpreter, ``sys.path`` and environment listens."""
    environ = dict(os.environ if environ is None else environ)
    environ.pop(_CHILD_ENV, None)
    key = json.dumps([sys.executable, sys.path[1:], sorted(environ.items())])
    digest = hashlib.sha256(key.encode()).hexdigest()[:20]
    return Path(tempfile.gettempdir()) / f"trustmass-preload-{os.getuid()}" / f"{digest}.sock"


def _wanted() -> bool:
    return (
        sys.platform.startswith("linux")
        and os.environ.get(SWITCH_ENV, "1") != "0"
        and _CHILD_ENV not in os.environ
        and os.environ.get(RUN_PID_ENV, "").isdigit()
        and "SLURM_JOB_ID" not in os.environ
    )


# ---------------------------------------------------------------------------------------------- the client


def delegate() -> None:
    """Run this job's script in a preloaded child and exit with its status; return (having done nothing)
    where no server can take it, so that the caller runs the job in this process."""
    if not _wanted():
        return
    path = socket_path()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(path))
    except OSError:
        conn.close()
        _start_server(path)
        return
    with conn:
        request = {"argv": sys.argv, "cwd": os.getcwd(), "path": sys.path, "env": dict(os.environ)}
        fds = array.array("i", [0, 1, 2])
        reader = conn.makefile("rb")
        try:
            conn.sendmsg([json.dumps(request).encode() + b"\n"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
            first = reader.readline()
        except OSError:
            first = b""
        if not first:  # the server went away before forking: nothing ran, the job runs here
            return
        child = json.loads(first)["pid"]
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(signum, lambda s, _f: _forward(child, s))
        last = reader.readline()
    if not last:
        print(f"the job's preloaded process {child} ended without an exit status (killed?)", file=sys.stderr)
        os._exit(1)
    os._exit(int(json.loads(last)["status"]))


def _forward(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _start_server(path: Path) -> None:
    """Start the server for ``path`` unless one holds its lock (starting or serving) or one refused lately."""
    import fcntl

    state = path.with_suffix(".state")
    try:
        path.parent.mkdir(mode=0o700, exist_ok=True)
        with open(path.with_suffix(".lock"), "a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return  # a server is importing (or serving, and the connection raced its start)
        if _refused_lately(state):
            return
        owner = os.environ[RUN_PID_ENV]
        with open(path.with_suffix(".log"), "ab") as log:
            subprocess.Popen(  # noqa: S603 -- our own interpreter and module
                [sys.executable, "-m", "trustmass.plumbing.preload", str(path), owner],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
                close_fds=True,
                cwd=path.parent,
            )
    except OSError:
        return  # no server: every job runs in its own process, as without one


def _refused_lately(state: Path) -> bool:
    try:
        return (
            state.read_text(encoding="utf-8").startswith("refused") and time.time() - state.stat().st_mtime < REFUSAL_S
        )
    except OSError:
        return False


# ---------------------------------------------------------------------------------------------- the server


def serve(path: Path, owner: int) -> None:
    """Import :data:`PRELOAD`, then fork a child per connection until ``owner`` exits or :data:`IDLE_S` pass idle."""
    import fcntl
    import importlib

    state = path.with_suffix(".state")
    lock = open(path.with_suffix(".lock"), "w")  # noqa: SIM115 -- held for the server's life
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another server for this key
    signal.signal(signal.SIGTERM, lambda _s, _f: sys.exit(0))  # leave through the clean-up below
    state.write_text(f"starting (pid {os.getpid()})\n", encoding="utf-8")
    sys.path[:] = [p for p in sys.path if p not in ("", str(path.parent))]
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 -- a job that needs it reports its own error
            print(f"preload: {name} not imported ({type(exc).__name__}: {exc})", flush=True)
    threads = len(os.listdir("/proc/self/task"))
    if threads != 1:
        state.write_text(f"refused: {threads} threads after the imports; a fork would copy one of them\n")
        return
    path.unlink(missing_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(64)
    server.settimeout(1.0)
    state.write_text(f"serving (pid {os.getpid()})\n", encoding="utf-8")
    children: set[int] = set()
    idle_since = time.monotonic()
    try:
        while True:
            children -= _reaped(children)
            if not _alive(owner) or (not children and time.monotonic() - idle_since > IDLE_S):
                break
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            idle_since = time.monotonic()
            pid = os.fork()
            if pid == 0:
                server.close()
                lock.close()
                _child(conn)  # never returns
            conn.close()
            children.add(pid)
    finally:
        path.unlink(missing_ok=True)
        state.unlink(missing_ok=True)


def _reaped(children: set[int]) -> set[int]:
    done = set()
    for pid in children:
        try:
            if os.waitpid(pid, os.WNOHANG)[0]:
                done.add(pid)
        except ChildProcessError:
            done.add(pid)
    return done


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# ---------------------------------------------------------------------------------------------- the child


def _child(conn: socket.socket) -> None:
    """Become the job's process, run its script, report the status, exit."""
    import atexit

    status = 1
    try:
        message, fds, _flags, _addr = conn.recvmsg(1 << 20, socket.CMSG_SPACE(3 * array.array("i").itemsize))
        request = _request(conn, message)
        received = array.array("i")
        for _level, _type, data in fds:
            received.frombytes(data[: len(data) - len(data) % received.itemsize])
        for target, fd in zip((0, 1, 2), received, strict=True):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        os.environ[_CHILD_ENV] = "1"
        sys.argv[:] = request["argv"]
        sys.path[:] = request["path"]
        for name in [n for n in sys.modules if n == "trustmass" or n.startswith("trustmass.")]:
            del sys.modules[name]  # the job imports its own (the job-end check reads sys.modules)
        _reseed()
        atexit._clear()  # the server's exit handlers are not the job's
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGCHLD):
            signal.signal(signum, signal.SIG_DFL if signum != signal.SIGINT else signal.default_int_handler)
        conn.sendall(json.dumps({"pid": os.getpid()}).encode() + b"\n")
        _die_with_client(conn)
        status = _run_script(request["argv"][0])
    except BaseException:  # noqa: BLE001 -- reported as the job's failure
        import traceback

        traceback.print_exc()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001, S110 -- a closed stream has nothing left to write
            pass
    try:
        conn.sendall(json.dumps({"status": status}).encode() + b"\n")
    finally:
        os._exit(status)


def _reseed() -> None:
    """Draw fresh seeds where a new process would have (the server's would otherwise repeat in every job):
    Python's ``random``, numpy's global state and torch's default generator (each process of ours starts it
    from a different seed: seen).  A job that wants repeatable draws seeds them itself, as before."""
    import random

    random.seed()
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        numpy_random.seed()
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.seed()


def _request(conn: socket.socket, message: bytes) -> dict:
    while not message.endswith(b"\n"):
        more = conn.recv(1 << 20)
        if not more:
            raise ConnectionError("the client closed before its request was complete")
        message += more
    return json.loads(message)


def _die_with_client(conn: socket.socket) -> None:
    """Kill this process when the client's end of the socket closes (snakemake killed the job)."""
    import threading

    def watch() -> None:
        try:
            conn.recv(1)
        except OSError:
            pass
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="preload-client-watch", daemon=True).start()


def _run_script(script: str) -> int:
    """Run ``script`` as ``python script`` would; its exit status."""
    import atexit
    import runpy

    try:
        runpy.run_path(script, run_name="__main__")
        status = 0
    except SystemExit as exc:
        status = _exit_status(exc.code)
    except BaseException:  # noqa: BLE001 -- as the interpreter: the hook prints it, status 1
        sys.excepthook(*sys.exc_info())
        status = 1
    atexit._run_exitfuncs()
    return status


def _exit_status(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


if __name__ == "__main__":
    serve(Path(sys.argv[1]), int(sys.argv[2]))
