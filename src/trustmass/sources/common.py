"""What models, corpora and documents share: the error type, hashing, name checks, subprocesses."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path

__all__ = ["SOURCE_RECORD", "SourceError", "check_name", "require_tool", "run_tool", "sha256_bytes", "sha256_file"]

#: written into every prepared model folder (:mod:`trustmass.sources.models`): where it came from, its files' sha256
SOURCE_RECORD = "trustmass_source.json"

_CHUNK = 1 << 20
#: names of models and corpora become directory names and Snakemake wildcards
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class SourceError(RuntimeError):
    """A model, corpus or document set cannot be prepared; the message names what and the fix."""


def sha256_file(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check_name(kind: str, name: str) -> str:
    """Model and corpus names are used as folder names: letters, digits, '.', '_', '-'."""
    if not isinstance(name, str) or not _NAME.match(name) or name in (".", ".."):
        raise SourceError(
            f"{kind} name {name!r} cannot be used as a folder name; use letters, digits, '.', '_' and '-' "
            "(starting with a letter or digit), e.g. 'smollm2-135m'"
        )
    return name


def require_tool(tool: str, what: str, fix: str) -> str:
    """The absolute path of an executable, or a SourceError saying what needed it and the way out."""
    found = shutil.which(tool)
    if found is None:
        raise SourceError(f"{what} needs the `{tool}` command, which is not on PATH here. {fix}")
    return found


def run_tool(
    args: Sequence[str], *, cwd: str | os.PathLike | None = None, timeout: float = 1800
) -> subprocess.CompletedProcess:
    """Run a command without a shell, capturing its output (never raises on a non-zero exit)."""
    return subprocess.run(
        list(args),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "LC_ALL": "C"},
    )


def tail(text: str, lines: int = 12) -> str:
    """The last lines of a tool's output, indented, for error messages."""
    kept = [line for line in text.strip().splitlines() if line.strip()][-lines:]
    return "\n".join(f"    {line}" for line in kept)


def link_or_copy(src: Path, dst: Path) -> None:
    """Hard-link ``src`` to ``dst`` (same file system), else copy it."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


@contextmanager
def quiet_progress_bars():
    """transformers' per-file and per-tensor bars would flood a rule's log."""
    from transformers.utils import logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if bars:
            hf_logging.enable_progress_bar()
