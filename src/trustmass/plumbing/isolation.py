"""Run one call in a child process, so a crash in native code (a SCIP segfault, an abort, the kernel's
OOM killer) ends that call only and becomes a recorded outcome instead of killing the whole job.

The child is forked (cheap: it inherits the imported modules and the loaded data), runs
``fn(*args)`` and sends the result back over a pipe.  ``isolated_call`` returns
``Outcome(ok=True, value=...)``, or ``ok=False`` with ``reason`` "crashed" (the child died without a
result: signal or exit code in ``message``), "raised" (a Python exception, its traceback in
``message``) or "timeout" (the wall-clock guard expired; the child is killed).
"""

from __future__ import annotations

import multiprocessing as mp
import signal
import traceback
from dataclasses import dataclass
from typing import Any

CRASHED = "crashed"
RAISED = "raised"
TIMEOUT = "timeout"


@dataclass(frozen=True)
class Outcome:
    ok: bool
    value: Any = None
    reason: str = ""  # "" when ok, else CRASHED / RAISED / TIMEOUT
    message: str = ""


def _child(conn, fn, args) -> None:
    try:
        result = ("ok", fn(*args))
    except BaseException as exc:  # noqa: BLE001 -- everything goes back to the parent
        result = (RAISED, f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=5)}")
    try:
        conn.send(result)
    finally:
        conn.close()


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "no exit code"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code} without a result"


def isolated_call(fn, args: tuple = (), timeout_s: float | None = None) -> Outcome:
    """``fn(*args)`` in a forked child; never raises for what happens inside the child."""
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    # not a daemon: an isolated call may isolate its own calls (certification: per instance, then
    # per solve); the parent always joins or kills the child itself
    proc = ctx.Process(target=_child, args=(send, fn, args), daemon=False)
    proc.start()
    send.close()  # the parent keeps only the reading end: EOF when the child dies
    try:
        if not recv.poll(timeout_s):
            proc.kill()
            proc.join()
            return Outcome(
                False, reason=TIMEOUT, message=f"no result after {timeout_s:.0f} s (wall-clock guard); child killed"
            )
        try:
            kind, payload = recv.recv()
        except EOFError:  # the child died before sending
            proc.join()
            return Outcome(False, reason=CRASHED, message=f"child process {_describe_exit(proc.exitcode)}")
    finally:
        recv.close()
    proc.join()
    if kind == "ok":
        return Outcome(True, value=payload)
    return Outcome(False, reason=RAISED, message=payload)


__all__ = ["CRASHED", "RAISED", "TIMEOUT", "Outcome", "isolated_call"]
