"""Failures the user can fix, reported as one line that names the file or field and the fix.

A rule script that raises one of these (uncaught) ends with that line in its log and on the terminal
and exit status 1, without a traceback (:func:`trustmass.plumbing.rule_io.start_log` installs the
hook).  Any other exception keeps its traceback: it is a bug, and the traceback is what finds it.
"""

from __future__ import annotations

import errno
import os

__all__ = ["CleanError", "DiskError", "IntegrityError", "disk_error"]


class CleanError(RuntimeError):
    """An expected failure whose message already says what is wrong, where, and the fix."""


class DiskError(CleanError):
    """An output cannot be written: the disk is full, or the folder is read-only or not writable."""

    def __init__(self, message: str, path: str | os.PathLike, errno_: int | None = None):
        super().__init__(message)
        self.path = os.fspath(path)
        self.errno = errno_


class IntegrityError(CleanError):
    """An input on disk no longer matches the sha256 recorded when it was written."""


#: errno -> (what happened, the fix)
_DISK_ERRNOS = {
    errno.ENOSPC: ("the disk is full", "free space on that file system (or point the results elsewhere) and rerun"),
    errno.EDQUOT: (
        "the disk quota is exceeded",
        "free space within your quota (or point the results elsewhere) and rerun",
    ),
    errno.EROFS: (
        "the file system is read-only",
        "make the folder writable (remount it read-write) or run in a writable --directory",
    ),
    errno.EACCES: (
        "permission denied",
        "make the folder writable (chmod u+w, or chattr -i) or run in a writable --directory",
    ),
    errno.EPERM: (
        "the operation is not permitted (an immutable folder?)",
        "make the folder writable (chattr -i, chmod u+w) or run in a writable --directory",
    ),
}


def disk_error(exc: BaseException, target: str | os.PathLike) -> DiskError | None:
    """The :class:`DiskError` for an ``OSError`` of a full, read-only or unwritable disk while
    writing ``target`` (found in ``exc`` or the exceptions it wraps); ``None`` for anything else."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        code = getattr(exc, "errno", None) if isinstance(exc, OSError) else None
        if code is None:
            code = _errno_in_text(str(exc))
        if code in _DISK_ERRNOS:
            what, fix = _DISK_ERRNOS[code]
            folder = os.path.dirname(os.path.abspath(target))
            return DiskError(f"cannot write {os.fspath(target)}: {what} (at {folder}); fix: {fix}", target, code)
        exc = exc.__cause__ or exc.__context__
    return None


def _errno_in_text(text: str) -> int | None:
    """Writers implemented in Rust or C++ (safetensors, polars) raise their own types whose message
    carries the OS error: "No space left on device (os error 28)"."""
    for code in _DISK_ERRNOS:
        if f"os error {code})" in text or os.strerror(code) in text:
            return code
    return None
