"""The rule boundary's input checks: every input a job declares is checked before the job reads it.

Two checks, the same for every rule and every kind of file (shards, documents, held-out documents,
records, frames, manifests, maps):

:func:`verify_inputs`
    Each input that has a provenance sidecar (``<input>.prov.json``: every file a finished job wrote)
    is hashed and compared with the sha256 the sidecar recorded.  A file changed since -- truncated,
    a bit flipped, overwritten -- stops the job before it reads anything, with an
    :class:`~trustmass.plumbing.errors.IntegrityError` naming the file, both hashes and the rule that
    writes it again.
:func:`unreadable_input`
    When a job fails anyway, the parquet and safetensors inputs are read one by one to find one that
    cannot be read (only on that failure path, so it costs nothing when the job succeeds); the failure then becomes
    one line naming it and the fix, instead
    of a reader's traceback that names no file.

:func:`trustmass.plumbing.rule_io.run_rule` runs both around every rule script.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from trustmass.plumbing.errors import CleanError
from trustmass.plumbing.integrity import verify_output
from trustmass.plumbing.provenance import sidecar_path

__all__ = ["UnreadableInputError", "data_inputs", "unreadable_input", "verify_inputs"]

#: inputs that are code or text the job parses itself (checked by Snakemake's own code tracking)
_NOT_DATA = (".py", ".smk")


class UnreadableInputError(CleanError):
    """An input file cannot be read (its format is broken), named with the fix."""


def data_inputs(paths: Iterable[str | os.PathLike]) -> list[str]:
    """The data files among a job's inputs (code left out), each once, in order."""
    out: dict[str, None] = {}
    for path in paths:
        path = os.fspath(path)
        if not path.endswith(_NOT_DATA):
            out.setdefault(path, None)
    return list(out)


def producer_fix(path: str | os.PathLike) -> str:
    """The fix for a damaged output of the pipeline: delete it and let the rule that wrote it (named in its
    sidecar, where readable) write it again."""
    path = os.fspath(path)
    rule = None
    try:
        rule = (json.loads(sidecar_path(path).read_text(encoding="utf-8")).get("extra") or {}).get("rule")
    except (OSError, ValueError, AttributeError):
        pass
    by = f"rule {rule} writes it again" if rule else "the rule that wrote it writes it again"
    return f"delete it (rm {path} {sidecar_path(path)}) and rerun snakemake: {by}"


def verify_inputs(paths: Iterable[str | os.PathLike]) -> list[str]:
    """Check every input that has a sidecar against the sha256 the sidecar recorded; return those checked.

    Inputs without a sidecar (user files: a local model folder, a benchmark's data) are not the pipeline's
    and are left to the code that reads them."""
    checked = []
    for path in data_inputs(paths):
        if Path(path).is_file() and sidecar_path(path).is_file():
            verify_output(path, fix=producer_fix(path))
            checked.append(path)
    return checked


def unreadable_input(
    paths: Iterable[str | os.PathLike], error: BaseException | None = None
) -> UnreadableInputError | None:
    """The first parquet or safetensors input that cannot be opened, as an error naming it and the fix
    (``error``: the failure that prompted the search, quoted when the probe's own message is empty)."""
    for path in data_inputs(paths):
        problem = _probe(path)
        if problem is not None:
            fix = (
                producer_fix(path)
                if sidecar_path(path).is_file()
                else "replace it with a readable copy (or fix its path in the config)"
            )
            return UnreadableInputError(f"{path} cannot be read ({problem or error}); fix: {fix}")
    return None


def _probe(path: str) -> str | None:
    """None if the whole file reads; else what went wrong (one line)."""
    try:
        if path.endswith(".parquet"):
            import pyarrow.parquet as pq

            pq.read_table(path)
        elif path.endswith(".safetensors"):
            from safetensors import safe_open

            with safe_open(path, framework="pt") as handle:  # torch: bf16 tensors have no numpy dtype
                for key in handle.keys():
                    handle.get_tensor(key)
        else:
            return None
    except FileNotFoundError:
        return "it does not exist"
    except Exception as exc:  # noqa: BLE001 -- any reader failure is the finding
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
    return None
