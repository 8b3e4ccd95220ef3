"""Provenance sidecars and atomic writes.

Every output the pipeline writes gets a sidecar ``<output>.prov.json`` recording what it was made
from and with: sha256 of every input (and of the output itself), the resolved config slice the rule
read, the code version (``git describe``), the versions of the numerical stack, the device, seeds,
wall time, host, UTC timestamp and command line.  Nothing is ever left half-written: outputs and
sidecars go to a temporary file in the same directory and are renamed into place only on success
(:func:`atomic_write`).

Nothing here imports torch: its version is read from the package metadata, and the CUDA device is
recorded only if the calling code already imported torch.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from trustmass.plumbing.determinism import BLAS_THREAD_VARIABLES, KERNELS
from trustmass.plumbing.errors import disk_error
from trustmass.plumbing.mkl_vendor import STATUS_ENV as MKL_VENDOR_STATUS_ENV

__all__ = [
    "SIDECAR_SUFFIX",
    "atomic_write",
    "code_version",
    "device_info",
    "package_versions",
    "remove_stale_temporaries",
    "sha256_path",
    "sidecar_path",
    "write_json",
    "write_sidecar",
]

SIDECAR_SUFFIX = ".prov.json"
SIDECAR_FORMAT = "trustmass.plumbing.provenance/1"
#: distributions whose versions every sidecar records (besides python and trustmass itself)
PACKAGES = ("torch", "transformers", "numpy", "snakemake", "numba", "polars", "scipy")
#: set by the workflow (common.smk) so that sidecars written by rule scripts name the snakemake call
WORKFLOW_COMMAND_ENV = "TRUSTMASS_WORKFLOW_COMMAND"
# BLAS_THREAD_VARIABLES (imported above, from trustmass.plumbing.determinism): the BLAS thread counts the
# workflow sets to one per process, recorded in every sidecar's device with the kernel pins (KERNELS)
_CHUNK = 1 << 20


# --------------------------------------------------------------------------------------------------
# atomic writes


@contextmanager
def atomic_write(path: str | os.PathLike, directory: bool = False) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` if the block succeeds.

    Write the output to the yielded path (any writer: ``open``, ``np.save``, ``df.write_parquet``,
    ``save_file``...).  On success it is flushed to disk and renamed over ``path`` in one step; on
    an exception it is removed and the exception propagates, so ``path`` is either the complete new
    file or untouched.  The temporary name keeps the target's suffix (``.tmp.json``) for writers
    that infer the format from it.  With ``directory=True`` the yielded path is an empty directory
    that replaces ``path`` (an existing directory at ``path`` is removed after the swap).

    The temporary's name records the writing process (``.<name>.<pid>@<host>.*.tmp*``): one left by a
    writer that was killed (``kill -9``, a node lost) is removed by the next write of the same
    target, and by :func:`remove_stale_temporaries` at the start of a run.  A full, read-only or
    unwritable disk raises :class:`~trustmass.plumbing.errors.DiskError`, whose message names the
    output and the fix.
    """
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale(target.parent, target.name)
        prefix, suffix = f".{target.name}.{os.getpid()}@{_HOST}.", f".tmp{target.suffix}"
        if directory:
            tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=prefix, suffix=".tmp"))
        else:
            fd, name = tempfile.mkstemp(dir=target.parent, prefix=prefix, suffix=suffix)
            os.close(fd)
            tmp = Path(name)
    except OSError as exc:
        raise disk_error(exc, target) or exc from None
    try:
        yield tmp
        if not tmp.exists():
            raise FileNotFoundError(f"atomic_write: the writer removed {tmp} instead of writing {target}")
        _make_durable(tmp)
        _apply_umask(tmp, directory)
        if directory and target.exists():
            old = target.with_name(f".{target.name}.old-{os.getpid()}@{_HOST}.tmp")
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    except BaseException as exc:
        if tmp.is_dir() and not tmp.is_symlink():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            tmp.unlink(missing_ok=True)
        clean = disk_error(exc, target) if isinstance(exc, Exception) else None
        if clean is not None:
            raise clean from None
        raise


_HOST = socket.gethostname().replace("/", "_") or "localhost"
#: ``.<target name>.<pid>@<host>.<random>.tmp<suffix>`` and ``.<target name>.old-<pid>@<host>.tmp``
_TEMPORARY = re.compile(
    r"^\.(?P<target>.+)\.(?:old-)?(?P<pid>\d+)@(?P<host>[^/]+?)\.(?:[A-Za-z0-9_]+\.)?tmp(?:\.[^.]*)?$"
)


def _writer_is_gone(pid: int, host: str) -> bool:
    """True when the process that made a temporary is dead (on this host; another host's is left alone)."""
    if host != _HOST:
        return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


def _remove_stale(folder: Path, target_name: str | None = None) -> list[Path]:
    """Remove the temporaries in ``folder`` (of ``target_name``, or of any target) whose writer is gone."""
    removed = []
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return removed
    for entry in entries:
        match = _TEMPORARY.match(entry.name)
        if match is None or (target_name is not None and match["target"] != target_name):
            continue
        if not _writer_is_gone(int(match["pid"]), match["host"]):
            continue
        path = Path(entry.path)
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(path)
            else:
                path.unlink()
        except FileNotFoundError:
            continue
        removed.append(path)
    return removed


def remove_stale_temporaries(*roots: str | os.PathLike) -> list[Path]:
    """Remove every temporary below ``roots`` left by a writer that was killed (see :func:`atomic_write`);
    return what was removed.  The workflow calls it when a run starts (common.smk, ``onstart``)."""
    removed = []
    for root in roots:
        if not os.path.isdir(root):
            continue
        for folder, dirs, _ in os.walk(root):
            removed += _remove_stale(Path(folder))
            dirs[:] = [d for d in dirs if _TEMPORARY.match(d) is None]
    return removed


def write_json(path: str | os.PathLike, data: Any) -> Path:
    """Write ``data`` as indented JSON (key order kept, trailing newline) atomically; return the path."""
    text = json.dumps(data, indent=2) + "\n"
    with atomic_write(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def _make_durable(path: Path) -> None:
    if path.is_file():
        with open(path, "rb+") as fh:
            os.fsync(fh.fileno())


def _apply_umask(path: Path, directory: bool) -> None:
    # mkstemp/mkdtemp create 0600/0700; give the output the permissions a plain open() would.
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(path, (0o777 if directory else 0o666) & ~mask)


# --------------------------------------------------------------------------------------------------
# what the sidecar records


def sha256_path(path: str | os.PathLike) -> str:
    """sha256 of a file, streamed; of a directory, a hash over its sorted relative paths and file hashes."""
    path = Path(path)
    if path.is_dir():
        digest = hashlib.sha256()
        for child in sorted(p for p in path.rglob("*") if p.is_file()):
            digest.update(child.relative_to(path).as_posix().encode() + b"\0")
            digest.update(sha256_path(child).encode() + b"\n")
        return digest.hexdigest()
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _file_record(path: str | os.PathLike) -> dict:
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"provenance: {p} does not exist, so it cannot be hashed")
    record: dict[str, Any] = {"path": os.fspath(path), "sha256": sha256_path(p)}
    if p.is_dir():
        record["files"] = sum(1 for c in p.rglob("*") if c.is_file())
    else:
        record["bytes"] = p.stat().st_size
    return record


def _git(args: list[str], cwd: Path) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def code_version(where: str | os.PathLike | None = None) -> dict:
    """The code version of the git work tree containing ``where`` (default: this package).

    ``describe`` is ``git describe --always --dirty --tags`` ("unknown" outside git, without git, or
    before the first commit); ``dirty`` is True when tracked files differ from HEAD (None when it
    cannot be told); ``untracked`` counts files git does not track yet.  Never raises.
    """
    start = Path(where) if where is not None else Path(__file__).resolve().parent
    unknown = {"describe": "unknown", "commit": None, "dirty": None, "untracked": None, "repo": None}
    if not start.exists():
        return unknown
    cwd = start if start.is_dir() else start.parent
    top = _git(["rev-parse", "--show-toplevel"], cwd)
    if not top:
        return unknown
    top_path = Path(top)
    status = _git(["status", "--porcelain", "--untracked-files=all"], top_path)
    lines = status.splitlines() if status is not None else None
    describe = _git(["describe", "--always", "--dirty", "--tags"], top_path)
    return {
        "describe": describe or "unknown",
        "commit": _git(["rev-parse", "HEAD"], top_path),
        "dirty": None if lines is None else any(not line.startswith("??") for line in lines),
        "untracked": None if lines is None else sum(line.startswith("??") for line in lines),
        "repo": top,
    }


def package_versions(names: Iterable[str] = PACKAGES) -> dict:
    """Installed versions from package metadata ("not installed" if absent); nothing is imported."""
    versions = {"python": platform.python_version()}
    for name in ("trustmass", *names):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def device_info() -> dict:
    """Platform, CPU model, core counts, memory; the CUDA device only if torch is already imported."""
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "blas_threads": {name: os.environ.get(name) for name in BLAS_THREAD_VARIABLES},
        "kernels": {name: os.environ.get(name) for name in KERNELS},
        "mkl_vendor_check": os.environ.get(MKL_VENDOR_STATUS_ENV),
    }
    try:
        import psutil

        info["memory_bytes"] = int(psutil.virtual_memory().total)
    except Exception:  # psutil missing or unsupported platform: memory is optional
        pass
    torch = sys.modules.get("torch")
    info["cuda_device"] = None
    if torch is not None:
        try:
            if torch.cuda.is_available():
                info["cuda_device"] = torch.cuda.get_device_name(torch.cuda.current_device())
                info["cuda_version"] = torch.version.cuda
        except Exception as exc:  # a broken driver must not lose the result it describes
            info["cuda_device"] = f"unavailable ({type(exc).__name__})"
    return info


def sidecar_path(output_path: str | os.PathLike) -> Path:
    """``results/x.json`` -> ``results/x.json.prov.json``."""
    return Path(os.fspath(output_path) + SIDECAR_SUFFIX)


def write_sidecar(
    output_path: str | os.PathLike,
    inputs: Iterable[str | os.PathLike] = (),
    config_slice: Mapping[str, Any] | None = None,
    seeds: Mapping[str, Any] | None = None,
    started: float | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``<output_path>.prov.json`` atomically and return its path.

    ``output_path`` must already be written (its sha256 is recorded); so must every input.
    ``started`` is a :func:`time.time` stamp taken when the work began (wall time = now - started).
    """
    now = time.time()
    record = {
        "format": SIDECAR_FORMAT,
        "output": _file_record(output_path),
        "inputs": [_file_record(p) for p in inputs],
        "config": dict(config_slice) if config_slice is not None else {},
        "seeds": dict(seeds) if seeds is not None else None,
        "code": code_version(),
        "versions": package_versions(),
        "device": device_info(),
        "started_utc": _utc(started) if started is not None else None,
        "finished_utc": _utc(now),
        "wall_time_s": round(now - started, 6) if started is not None else None,
        "cpu_time_s": _cpu_seconds(),
        "hostname": socket.gethostname(),
        "command": {"argv": list(sys.argv), "workflow": os.environ.get(WORKFLOW_COMMAND_ENV)},
        "extra": dict(extra) if extra is not None else {},
    }
    target = sidecar_path(output_path)
    text = json.dumps(record, indent=2, default=str) + "\n"
    with atomic_write(target) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return target


def _cpu_seconds() -> float:
    """CPU seconds (user + system, every thread) this process and the children it has waited for have used so
    far: the job's cost, which another job beside it on the same cores does not stretch as it does the wall
    time (a rule's script runs in its own process, so this is the job's, imports included)."""
    t = os.times()
    return round(t.user + t.system + t.children_user + t.children_system, 3)


def _utc(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, tz=timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


# --------------------------------------------------------------------------------------------------
# which library code an output depends on


def library_sources(*modules: str, relative_to: str | os.PathLike | None = ".") -> list[str]:
    """Source files of the named ``trustmass`` modules and every ``trustmass`` module they import.

    The import closure is found statically (``ast``; nothing is imported except the top-level
    ``trustmass`` package to locate it), including the ``__init__.py`` of every package on the way.
    The workflow declares these files as rule inputs, so editing library code reruns exactly the
    outputs that depend on it, and the sidecars hash the code that made them.  Paths are returned
    sorted, relative to ``relative_to`` when they lie below it, absolute otherwise.
    """
    seen: dict[str, Path] = {}
    todo = list(modules)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = _module_file(name)
        if path is None:
            if name in modules:
                raise ModuleNotFoundError(f"library_sources: no source file for module {name!r}")
            continue  # `from trustmass.x import some_function`: not a module
        seen[name] = path
        parts = name.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # parent packages run first
        todo.extend(_imported_modules(name, path))
    files = sorted(set(seen.values()))  # resolved by _module_file
    base = Path(relative_to).resolve() if relative_to is not None else None
    out = []
    for p in files:
        if base is not None and p.is_relative_to(base):
            out.append(p.relative_to(base).as_posix())
        else:
            out.append(str(p))
    return out


@functools.lru_cache(maxsize=None)
def _module_file(name: str) -> Path | None:
    """The source file of module ``name`` (resolved), or None for a name that is no module (``trustmass.x.f``
    of ``from trustmass.x import f``).  Found once per process: a dry-run asks for the same names in every
    rule's closure, each a few stats.  A module file created later in the same process is not seen."""
    import importlib.util

    parts = name.split(".")
    if parts[0] != "trustmass":
        return None
    if len(parts) == 1:
        spec = importlib.util.find_spec("trustmass")
        return Path(spec.origin).resolve() if spec and spec.origin else None
    # locate the direct child of trustmass through the import system (handles package-dir mappings
    # such as trustmass.kernels -> kernels/ in editable installs), then descend on disk
    try:
        spec = importlib.util.find_spec(".".join(parts[:2]))
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin)
    for part in parts[2:]:
        if path.name != "__init__.py":
            return None
        package = path.parent
        if (package / part / "__init__.py").is_file():
            path = package / part / "__init__.py"
        elif (package / f"{part}.py").is_file():
            path = package / f"{part}.py"
        else:
            return None
    return path.resolve()


def _imported_modules(name: str, path: Path) -> list[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    return list(_imports_in_source(package, path.read_text(encoding="utf-8"), str(path)))


@functools.lru_cache(maxsize=None)
def _imports_in_source(package: str, text: str, filename: str) -> tuple[str, ...]:
    """The ``trustmass`` modules ``text`` imports.  Memoised on the text itself (an edited file is parsed again):
    the workflow calls :func:`library_sources` once per rule and the closures overlap, so without it one parse
    of the Snakefile parsed the same modules thousands of times (most of a dry-run's time)."""
    import ast

    tree = ast.parse(text, filename=filename)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.append(base)
            found.extend(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return tuple(m for m in found if m == "trustmass" or m.startswith("trustmass."))
