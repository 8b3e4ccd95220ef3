"""A preloaded fork server for a local run's jobs: the libraries imported once per run, not once per job.

Every rule script starts a fresh Python, and a job that loads a model pays 4-6 CPU-s of imports (torch,
transformers' ``torch._dynamo`` and ``torch.distributed.tensor``, scipy) before its own work; a study's
statistics and tables pay about a second each (docs/run-time.md).  The workflow's process starts this server
when a local run starts (:func:`start_server`, its ``onstart``) and stops it when the run ends
(:func:`stop_server`, ``onsuccess``/``onerror``; killed, the server leaves with the run's process): it imports
the libraries (:data:`PRELOAD`) and waits.  Each job's process (the *client*, :func:`delegate`, first thing in
:func:`trustmass.plumbing.rule_io.run_rule`) hands its script to the server, which forks a child that runs the
script as the job's own process would: the client's working directory, environment, ``sys.argv``,
``sys.path`` and standard streams, fresh random seeds, and no ``trustmass`` module imported before the
script's (the job-end check of declared code reads ``sys.modules``).  The child reports its pid and its exit
status to the client over the socket; the client forwards the signals snakemake sends it and exits with the
child's status.  A child whose client disappears kills itself.  Being the workflow's child, the server and
the jobs it forked count in the run's CPU time (``/usr/bin/time make run``, the rehearsal's CPU minutes).

What makes a fork equal to a fresh process here: the server has imported only third-party packages and run no
parallel kernel (one thread, checked before it serves: a fork copies no other thread, and a copied OpenMP
pool hangs), and it serves a job only if the job's environment is its own, but for the variables snakemake
sets per job that no library reads when it loads (:data:`PER_JOB`; the BLAS thread counts are put back by
:func:`~trustmass.plumbing.determinism.restore_job_threads` before this check): every variable read at
load time (the pinned BLAS threads and kernels, ``HF_HUB_OFFLINE``, ...) had the job's value.  Any other job
runs in its own process as before, and so does every job with ``TRUSTMASS_PRELOAD=0``, in a SLURM job, or
while the server is still importing; the server's log (``.snakemake/preload/<pid>.log`` in the workflow's
folder) says how many jobs it forked and which it turned away.
"""

from __future__ import annotations

import array
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["PRELOAD", "SOCKET_ENV", "delegate", "serve", "socket_path", "start_server", "stop_server"]

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
#: set by the workflow's process for its jobs: where the run's server listens
SOCKET_ENV = "TRUSTMASS_PRELOAD_SOCKET"
#: ``0`` runs every job in its own process
SWITCH_ENV = "TRUSTMASS_PRELOAD"
#: set in a forked child, so that its run_rule runs the job instead of delegating again
_CHILD_ENV = "TRUSTMASS_PRELOADED_CHILD"
#: what differs per job and no library reads at import: the temporary folder snakemake sets (the child reads it
#: again) and the shell's bookkeeping of the command that started the job (the child has the job's values),
#: its prompts included: a virtual environment's `activate` exports PS1, and the /bin/sh (dash) that starts each
#: job resets an exported PS1 to its own default, so every job of an activated shell differed in it (seen)
PER_JOB = frozenset(
    {"TMPDIR", "TMP", "TEMP", "TEMPDIR", "PWD", "OLDPWD", "_", "SHLVL", "PS1", "PS2", "PS4", _CHILD_ENV}
)
#: a server with no job for this long exits
IDLE_S = 600.0


def socket_path() -> Path:
    """Where the server of the run whose process this is listens."""
    return Path(tempfile.gettempdir()) / f"trustmass-preload-{os.getuid()}" / f"{os.getpid()}.sock"


def _wanted() -> bool:
    return (
        sys.platform.startswith("linux")
        and os.environ.get(SWITCH_ENV, "1") != "0"
        and _CHILD_ENV not in os.environ
        and bool(os.environ.get(SOCKET_ENV))
        and "SLURM_JOB_ID" not in os.environ
    )


def environment_differences(job: dict[str, str], server: dict[str, str]) -> list[str]:
    """The variables (names only) whose values differ between a job's environment and the server's."""
    names = (set(job) | set(server)) - PER_JOB
    return sorted(name for name in names if job.get(name) != server.get(name))


# ---------------------------------------------------------------------------------------------- the client


def delegate() -> None:
    """Run this job's script in a preloaded child and exit with its status; return (having done nothing)
    where no server takes it, so that the caller runs the job in this process."""
    if not _wanted():
        return
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(os.environ[SOCKET_ENV])
    except OSError:  # no server (yet): this job runs here
        conn.close()
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
        if not first:  # turned away, or the server went before forking: nothing ran, the job runs here
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


# ---------------------------------------------------------------------------------------------- the server


def start_server(environ: dict[str, str] | None = None, log: Path | None = None) -> subprocess.Popen | None:
    """In the workflow's process, when a local run starts: the server, a child of this process, listening at
    :func:`socket_path` (also exported as ``TRUSTMASS_PRELOAD_SOCKET`` for the jobs) and writing its log to
    ``log`` (default: beside the socket); None where jobs run in their own processes anyway
    (``TRUSTMASS_PRELOAD=0``, not Linux)."""
    environ = os.environ if environ is None else environ
    if not sys.platform.startswith("linux") or environ.get(SWITCH_ENV, "1") == "0":
        return None
    path = socket_path()
    log = path.with_suffix(".log") if log is None else Path(log)
    try:
        path.parent.mkdir(mode=0o700, exist_ok=True)
        log.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        environ[SOCKET_ENV] = str(path)
        with open(log, "wb") as log:
            return subprocess.Popen(  # noqa: S603 -- our own interpreter and module
                [sys.executable, "-m", "trustmass.plumbing.preload", str(path), str(os.getpid())],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                close_fds=True,
                start_new_session=True,  # a terminal's Ctrl-C reaches each job once: through its client
                cwd=path.parent,
                env=dict(environ),
            )
    except OSError as exc:
        environ.pop(SOCKET_ENV, None)
        print(f"preload: no server ({exc}); every job imports its libraries itself", file=sys.stderr)
        return None


def stop_server(server: subprocess.Popen | None) -> None:
    """End the run's server (it finishes nothing: the jobs it forked are done) and wait for it, so that its
    CPU time and its children's count in this process's."""
    if server is None or server.poll() is not None:
        return
    server.terminate()
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def serve(path: Path, owner: int) -> None:
    """Import :data:`PRELOAD`, then fork a child per job until ``owner`` exits, SIGTERM, or :data:`IDLE_S` idle."""
    import importlib

    signal.signal(signal.SIGTERM, lambda _s, _f: sys.exit(0))  # leave through the clean-up below
    sys.stdout.reconfigure(line_buffering=True)  # the log, line by line
    sys.path[:] = [p for p in sys.path if p not in ("", str(path.parent))]
    environ = dict(os.environ)  # the run's, as its jobs see it: what a job's is compared with
    started = time.monotonic()
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 -- a job that needs it reports its own error
            print(f"preload: {name} not imported ({type(exc).__name__}: {exc})")
    from trustmass.plumbing.mkl_vendor import pin_mkl_vendor

    # before any product: the children inherit the answered check (a copy of the environment: the job records it)
    print(f"preload: oneMKL's vendor check: {pin_mkl_vendor(dict(os.environ))}")
    threads = len(os.listdir("/proc/self/task"))
    if threads != 1:
        print(f"preload: refused: {threads} threads after the imports; a fork would copy one of them")
        return
    # what the imports set in the environment (torch sets TORCHINDUCTOR_CACHE_DIR): a job's own imports would
    # have set it, the child's, already done, will not
    imported = {name: value for name, value in os.environ.items() if environ.get(name) != value}
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(64)
    server.settimeout(1.0)
    print(f"preload: serving after {time.monotonic() - started:.1f} s of imports (pid {os.getpid()})")
    children: set[int] = set()
    served = turned_away = 0
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
            try:
                request, fds = _receive(conn)
            except (OSError, ValueError) as exc:  # a client that left before its request was whole
                print(f"preload: a request was lost ({exc})")
                conn.close()
                continue
            differences = environment_differences(request["env"], environ)
            if differences:
                turned_away += 1
                print(f"preload: {request['argv'][0]} runs in its own process: its {', '.join(differences)} differ")
            else:
                pid = os.fork()
                if pid == 0:
                    server.close()
                    _child(conn, {**request, "env": {**request["env"], **imported}}, fds)  # never returns
                children.add(pid)
                served += 1
            for fd in fds:  # the child has its copies; a job turned away keeps its own streams
                os.close(fd)
            conn.close()
    finally:
        path.unlink(missing_ok=True)
        for pid in children:
            os.waitpid(pid, 0)  # their CPU time counts in ours
        print(f"preload: {served} jobs forked, {turned_away} turned away")


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


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    """A client's request and the three standard streams it passed."""
    message, ancillary, _flags, _addr = conn.recvmsg(1 << 20, socket.CMSG_SPACE(3 * array.array("i").itemsize))
    fds = array.array("i")
    for _level, _type, data in ancillary:
        fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    while not message.endswith(b"\n"):
        more = conn.recv(1 << 20)
        if not more:
            raise ConnectionError("the client closed before its request was complete")
        message += more
    return json.loads(message), list(fds)


def _child(conn: socket.socket, request: dict, fds: list[int]) -> None:
    """Become the job's process, run its script, report the status, exit."""
    import atexit

    status = 1
    try:
        for target, fd in zip((0, 1, 2), fds, strict=True):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        os.environ[_CHILD_ENV] = "1"
        tempfile.tempdir = None  # read the job's TMPDIR again
        _name_process(request["argv"][0])
        sys.argv[:] = request["argv"]
        sys.path[:] = request["path"]
        for name in [n for n in sys.modules if n == "trustmass" or n.startswith("trustmass.")]:
            del sys.modules[name]  # the job imports its own (the job-end check reads sys.modules)
        _reseed()
        atexit._clear()  # the server's exit handlers are not the job's
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
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


def _name_process(script: str) -> None:
    """Name the child after its script in ``ps -o comm`` and ``top`` (snakemake's ``tmpXXXX.capture.py``:
    ``tm:capture``); its command line stays the server's."""
    name = Path(script).name.removesuffix(".py").rpartition(".")[2]
    try:
        Path("/proc/self/comm").write_text(f"tm:{name}"[:15], encoding="utf-8")
    except OSError:
        pass


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
