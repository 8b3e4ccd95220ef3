"""What every rule script repeats, once: its log, atomic parquet outputs, provenance sidecars and
the closing summary line.  Import it first in a script (it imports nothing heavy), so that even an
import error of the science below lands in the job's log.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from trustmass.plumbing.provenance import atomic_write, write_sidecar


def start_log(smk) -> float:
    """Send stdout and stderr to the rule's log; return the start stamp for the sidecars.

    From here on an uncaught :class:`~trustmass.plumbing.errors.CleanError` (a full or read-only disk,
    an input that no longer matches its recorded sha256, ...) ends the job as :func:`clean_exit_on`
    does: its one-line message in the log and on the terminal, exit status 1, no traceback."""
    started = time.time()
    sys.stdout = sys.stderr = open(smk.log[0], "w", buffering=1)  # noqa: SIM115 -- lives as long as the job
    job = f"{getattr(smk, 'rule', 'job')} {'/'.join(str(v) for v in getattr(smk, 'wildcards', ()))}".strip()
    sys.excepthook = _clean_excepthook(job, sys.excepthook)
    return started


def run_rule(smk, main: Callable[[Any, float], None]) -> None:
    """The one entry point of every rule script: ``run_rule(snakemake, main)``.

    Puts back the BLAS thread counts the workflow chose (snakemake replaced them by the job's
    ``threads``: :func:`trustmass.plumbing.determinism.restore_job_threads`), hands the job to the run's
    preloaded fork server where there is one (:func:`trustmass.plumbing.preload.delegate`: this process then
    exits with the status of the child that ran the script from its start), answers oneMKL's vendor check
    where it would ignore ``MKL_CBWR`` (:func:`trustmass.plumbing.mkl_vendor.pin_mkl_vendor`), opens the job's log
    (:func:`start_log`), checks every declared input that has a provenance sidecar against it
    (:func:`trustmass.plumbing.inputs.verify_inputs`: a damaged or changed file stops the job before it
    reads anything), then runs ``main(smk, started)``.  If ``main`` fails with anything but a
    :class:`~trustmass.plumbing.errors.CleanError`, the parquet and safetensors inputs are probed and an
    unreadable one is reported in one line naming it and the fix; any other failure keeps its traceback.
    Once ``main`` has returned, every ``trustmass`` module the job's process ran must be among the rule's
    declared code inputs (:func:`trustmass.plumbing.code_inputs.check_code_inputs`): one that is not fails the
    job, naming the module, the rule and the rules file to declare it in.
    """
    from trustmass.plumbing.determinism import restore_job_threads
    from trustmass.plumbing.mkl_vendor import pin_mkl_vendor
    from trustmass.plumbing.preload import delegate

    restore_job_threads()  # before numpy loads: snakemake exported the job's `threads` as BLAS threads
    delegate()  # a preloaded child runs the job and this process exits with its status; or nothing happens
    pin_mkl_vendor()  # MKL_CBWR honoured on a non-Intel CPU too (imports torch there; a forked child has it done)
    from trustmass.plumbing.code_inputs import check_code_inputs
    from trustmass.plumbing.errors import CleanError
    from trustmass.plumbing.inputs import unreadable_input, verify_inputs

    started = start_log(smk)
    inputs = list(_flat(smk.input))
    _CHECKED.update(verify_inputs(inputs))  # checked_shard() of these, later in the job, does not hash again
    try:
        main(smk, started)
    except CleanError:
        raise
    except Exception as exc:
        unreadable = unreadable_input(inputs, exc)
        if unreadable is not None:
            raise unreadable from exc
        raise
    check_code_inputs(smk)


def _flat(items) -> Iterator[str]:
    """The paths of a job's inputs (Snakemake's Namedlist is a flat list; a mapping's values are its paths)."""
    for item in items.values() if isinstance(items, Mapping) else items:
        if isinstance(item, (str, os.PathLike)):
            yield os.fspath(item)
        else:
            yield from _flat(item)


def _clean_excepthook(job: str, fallback):
    from trustmass.plumbing.errors import CleanError

    def hook(kind, exc, tb):
        if isinstance(exc, CleanError):
            _report(job, exc)
            return
        fallback(kind, exc, tb)

    return hook


def _report(job: str, exc: BaseException) -> None:
    print(f"error: {exc}")
    print(f"{job}: {exc}", file=sys.__stderr__)


@contextmanager
def clean_exit_on(*errors: type[BaseException], job: str) -> Iterator[None]:
    """End the job cleanly on an expected error raised in the block: bad input whose message already
    names the file or field and the fix.  The message goes to the log and, prefixed with ``job``, to
    the terminal (where snakemake shows a failing job's stderr), and the job exits with status 1
    without a traceback.  Any other error propagates as usual."""
    try:
        yield
    except errors as exc:
        _report(job, exc)
        sys.exit(1)


def write_parquet(frame, path: str | os.PathLike) -> None:
    """Write a polars frame to ``path`` atomically (no half-written output on failure)."""
    with atomic_write(path) as tmp:
        frame.write_parquet(tmp)


def read_parquets(paths: Iterable[str | os.PathLike], columns: list[str] | None = None, how: str = "vertical_relaxed"):
    """Every file of an input list as one polars frame (``how``: polars' concat mode; ``diagonal_relaxed``
    for frames whose columns differ)."""
    import polars as pl  # here, not at the top: the log must be open before anything heavy imports

    return pl.concat([pl.read_parquet(path, columns=columns) for path in paths], how=how)


def capture_path(model: str, corpus: str, doc: str) -> str:
    """The capture shard of one document (:data:`trustmass.plan.layout.CAPTURE_SHARD`)."""
    from trustmass.plan.layout import CAPTURE_SHARD

    return CAPTURE_SHARD.format(model=model, corpus=corpus, doc=doc)


def checked_shard(path: str | os.PathLike) -> str:
    """``path``, after checking the capture shard against the sha256 its sidecar recorded (an
    :class:`~trustmass.plumbing.errors.IntegrityError` naming it and the fix if it changed since)."""
    from trustmass.plumbing.integrity import verify_output

    path = os.fspath(path)
    if path not in _CHECKED:
        verify_output(path, fix=f"delete it (rm {path}*) and rerun: the capture rule writes it again")
        _CHECKED.add(path)
    return path


def checked_shards(paths: Iterable[str | os.PathLike]) -> list[str]:
    """:func:`checked_shard` of every path."""
    return [checked_shard(p) for p in paths]


def checked_capture_path(model: str, corpus: str, doc: str) -> str:
    """:func:`capture_path`, checked (:func:`checked_shard`) the first time it is asked for."""
    return checked_shard(capture_path(model, corpus, doc))


_CHECKED: set[str] = set()


def finish(
    smk,
    outputs: Iterable[str | os.PathLike],
    inputs: Iterable[str | os.PathLike],
    config: Mapping[str, Any],
    started: float,
    summary: Mapping[str, Any] | None = None,
    seeds: Mapping[str, Any] | None = None,
    **extra: Any,
) -> None:
    """Print the summary, write a sidecar next to every output (same inputs, config slice, start,
    the rule's name, the summary and ``extra``), print "ok"."""
    if summary is not None:
        print(f"summary: {dict(summary)}")
        extra = {"summary": dict(summary), **extra}
    inputs = list(inputs)
    for path in outputs:
        write_sidecar(
            path, inputs=inputs, config_slice=config, seeds=seeds, started=started, extra={"rule": smk.rule, **extra}
        )
    print("ok")


__all__ = [
    "capture_path",
    "checked_capture_path",
    "checked_shard",
    "checked_shards",
    "clean_exit_on",
    "finish",
    "run_rule",
    "start_log",
    "write_parquet",
]
