"""Inputs checked against the sha256 recorded when they were written, before a job reads them.

An output of the pipeline carries its sha256 in its provenance sidecar (``<output>.prov.json``,
:mod:`trustmass.plumbing.provenance`); a prepared model folder lists the sha256 of every file in
its ``trustmass_source.json``.  A file that no longer matches -- truncated by a full disk, a bit
flipped in storage or transfer, overwritten by hand -- is refused with an
:class:`~trustmass.plumbing.errors.IntegrityError` naming the file, both hashes and the fix,
instead of being read into results that look fine.  Hashing streams the file once (about a second
per GB).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from trustmass.plumbing.errors import IntegrityError
from trustmass.plumbing.provenance import sha256_path, sidecar_path

__all__ = ["verify_files", "verify_output"]


def verify_output(path: str | os.PathLike, fix: str, recorded_inputs: Iterable[str | os.PathLike] = ()) -> str:
    """Check ``path`` against the sha256 in its sidecar, and each of ``recorded_inputs`` against the
    sha256 the same sidecar records for it (a file written beside the output, e.g. a manifest);
    return the output's sha256.  ``fix``: what to do when it does not match ("delete it and rerun")."""
    path = Path(path)
    sidecar = sidecar_path(path)
    record = _sidecar(path, sidecar, fix)
    got = _check(path, (record.get("output") or {}).get("sha256"), f"its sidecar {sidecar}", fix)
    inputs = {os.path.normpath(r.get("path", "")): r.get("sha256") for r in record.get("inputs") or []}
    for extra in recorded_inputs:
        key = os.path.normpath(os.fspath(extra))
        if key not in inputs:
            raise IntegrityError(f"{sidecar} records no sha256 for {extra}, so {extra} cannot be checked; fix: {fix}")
        _check(Path(extra), inputs[key], f"{sidecar}", fix)
    return got


def verify_files(folder: str | os.PathLike, hashes: Mapping[str, str], where: str, fix: str) -> None:
    """Check every file ``hashes`` lists (relative to ``folder``, links followed) against its sha256;
    ``where`` names the record that holds the hashes."""
    folder = Path(folder)
    for rel, want in sorted(hashes.items()):
        _check(folder / rel, want, where, fix)


def _sidecar(path: Path, sidecar: Path, fix: str) -> dict:
    if not path.exists():
        raise IntegrityError(f"{path} does not exist; fix: {fix}")
    try:
        record = json.loads(sidecar.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise IntegrityError(
            f"{path} has no provenance sidecar {sidecar.name}, so it cannot be checked (it was not written by a "
            f"finished job); fix: {fix}"
        ) from None
    except (OSError, ValueError) as exc:
        raise IntegrityError(f"{sidecar}: unreadable provenance sidecar ({exc}); fix: {fix}") from None
    if not isinstance(record, dict):
        raise IntegrityError(f"{sidecar}: not a provenance sidecar (a JSON object); fix: {fix}")
    return record


def _check(path: Path, want: str | None, where: str, fix: str) -> str:
    if not want:
        raise IntegrityError(f"{where} records no sha256 for {path}, so it cannot be checked; fix: {fix}")
    try:
        got = sha256_path(path)
    except FileNotFoundError:
        raise IntegrityError(f"{path} is missing (listed in {where}); fix: {fix}") from None
    if got != want:
        size = path.stat().st_size if path.is_file() else None
        raise IntegrityError(
            f"{path} has changed since it was written: its sha256 is {got[:16]}..., {where} recorded {want[:16]}... "
            f"({'now ' + str(size) + ' bytes; ' if size is not None else ''}truncated, damaged or overwritten); fix: {fix}"
        )
    return got
