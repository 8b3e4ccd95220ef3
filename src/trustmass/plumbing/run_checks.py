"""Checks made when a run starts (common.smk, ``onstart``): before any job, not in a dry-run."""

from __future__ import annotations

import os
from collections.abc import Iterable

__all__ = ["runs_jobs", "unwritable_folders"]

#: folders listed by name before the rest are counted
_SHOWN = 3
#: snakemake options under which a call runs no job (a dry-run, a listing, a report, metadata work)
_NO_JOBS = frozenset(
    {
        "--dry-run",
        "--dryrun",
        "--unlock",
        "--list",
        "--list-rules",
        "--list-target-rules",
        "--lt",
        "--summary",
        "--detailed-summary",
        "--lint",
        "--dag",
        "--d3dag",
        "--rulegraph",
        "--filegraph",
        "--report",
        "--cleanup-metadata",
        "--cleanup-shadow",
        "--list-changes",
        "--lc",
        "--list-input-changes",
        "--li",
        "--list-params-changes",
        "--lp",
        "--list-code-changes",
        "--list-untracked",
        "--lu",
        "--print-compilation",
        "--containerize",
        "--archive",
        "--delete-all-output",
        "--delete-temp-output",
        "--help",
        "--version",
    }
)
_NO_JOBS_SHORT = frozenset("nlSh")


def runs_jobs(argv: Iterable[str]) -> bool:
    """Whether a snakemake command line (without the program) runs jobs."""
    for arg in argv:
        if arg == "--":
            break
        if arg.split("=", 1)[0] in _NO_JOBS:
            return False
        if arg.startswith("-") and not arg.startswith("--") and arg[1:].isalpha() and _NO_JOBS_SHORT & set(arg[1:]):
            return False  # -n, -pn, -S, ...
    return True


def unwritable_folders(roots: Iterable[str | os.PathLike]) -> str | None:
    """A message naming the folders below ``roots`` (themselves included) this process cannot write
    (a read-only mount, an immutable folder, missing permissions) and the fix; ``None`` if all can.

    Jobs write their outputs there, and snakemake deletes a job's old outputs before rerunning it:
    on a folder it cannot write, both fail with a traceback after the DAG is built.  ``os.access``
    sees read-only mounts and immutable folders even for root."""
    bad = []
    for root in roots:
        if not os.path.isdir(root):
            continue
        for folder, dirs, _ in os.walk(root):
            if not os.access(folder, os.W_OK | os.X_OK):
                bad.append(folder)
                dirs[:] = []
    if not bad:
        return None
    named = ", ".join(f"{b}/" for b in bad[:_SHOWN]) + (f" and {len(bad) - _SHOWN} more" if len(bad) > _SHOWN else "")
    return (
        f"cannot write to {named} (read-only file system or no write permission): the jobs write their outputs "
        "there and nothing would be produced; fix: make it writable (remount it read-write, chmod u+w, chattr -i), "
        "or run in a writable folder with --directory (finished outputs there are kept as they are)"
    )
