"""oneMKL's vendor check answered "Intel" on every x86-64 CPU, so that ``MKL_CBWR=AVX2`` holds on all of them.

torch's float32 matrix products on x86-64 run on oneMKL (linked into ``libtorch_cpu.so``), and
:mod:`trustmass.plumbing.determinism` pins MKL's conditional numerical reproducibility branch
(``MKL_CBWR=AVX2``) so that every AVX2 machine computes them alike.  oneMKL honours that branch only on
Intel CPUs: on an AMD EPYC ``MKL_VERBOSE=1`` reports ``CNR:AUTO`` under ``MKL_CBWR=AVX2`` and MKL picks its
own path, which rounds products with few rows (1 and 7 of 576-1,536 columns, measured) differently.  That
was the last difference between an Intel Xeon's run of the default study and an AMD EPYC's (50 of the
trained study's output files, docs/reliability.md "Across CPU models").

MKL asks one exported function of the library, ``mkl_serv_intel_cpu_true``.  :func:`answer_intel`
rewrites its first instructions in this process's copy of the library to ``mov eax, 1; ret`` (the
code page is private to the process: the file on disk is untouched), before MKL's first call
fixes its path.  Measured on an AMD EPYC: MKL then reports ``CNR:AVX2``, and the default study's trained
outputs are those of the Intel Xeon's reference (83 files bitwise, 17 within tolerance for their seconds
columns, none different; 50 differed without it).  On an Intel CPU the function already answers 1 and
nothing is written.

:func:`pin_mkl_vendor` is what a job calls (``run_rule``, the preload server after its imports): it does
the above only where it matters (x86-64, not an Intel CPU, ``MKL_CBWR`` set), importing torch for it,
and records what holds in :data:`STATUS_ENV` (every sidecar's ``device.mkl_vendor_check``).  Where the
page cannot be made writable (a kernel that forbids writable code) the job runs as before, with MKL's
own path, and the status says so.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import platform
import sys
from collections.abc import MutableMapping
from pathlib import Path

from trustmass.plumbing.determinism import cpuinfo_field

__all__ = ["ANSWER_INTEL", "STATUS_ENV", "SYMBOL", "answer_intel", "cpu_vendor", "needed", "pin_mkl_vendor"]

#: the function oneMKL asks whether the CPU is an Intel one
SYMBOL = "mkl_serv_intel_cpu_true"
#: x86-64 machine code for ``mov eax, 1; ret``
ANSWER_INTEL = b"\xb8\x01\x00\x00\x00\xc3"
#: where a job records what holds (``answered``, ``intel cpu``, ``not needed: ...``, ``unavailable: ...``)
STATUS_ENV = "TRUSTMASS_MKL_VENDOR_CHECK"

_PROT_READ, _PROT_WRITE, _PROT_EXEC = 1, 2, 4


def cpu_vendor(path: str = "/proc/cpuinfo") -> str:
    """The CPU's ``vendor_id`` (``GenuineIntel``, ``AuthenticAMD``, ...; empty where there is none)."""
    return cpuinfo_field("vendor_id", path)


def needed(
    environ: MutableMapping[str, str] = os.environ, vendor: str | None = None, machine: str | None = None
) -> str:
    """Why the vendor check needs no answer here (``""``: it does)."""
    if (machine or platform.machine()) != "x86_64" or sys.platform != "linux":
        return "not needed: not x86-64 Linux"
    if not environ.get("MKL_CBWR"):
        return "not needed: MKL_CBWR unset"
    if (cpu_vendor() if vendor is None else vendor) == "GenuineIntel":
        return "intel cpu"
    return ""


def answer_intel(library: str | os.PathLike) -> str:
    """Make ``SYMBOL`` of the loaded ``library`` return 1 in this process; ``answered`` or why not."""
    try:
        function = getattr(ctypes.CDLL(os.fspath(library)), SYMBOL)
    except (OSError, AttributeError) as exc:
        return f"unavailable: {type(exc).__name__}: {exc}"
    address = ctypes.cast(function, ctypes.c_void_p).value
    if ctypes.string_at(address, len(ANSWER_INTEL)) == ANSWER_INTEL:
        return "answered"  # already (a forked child of the preload server, or a second call)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    start = address & ~(mmap.PAGESIZE - 1)
    length = address + len(ANSWER_INTEL) - start  # the instructions may straddle two pages
    if libc.mprotect(start, length, _PROT_READ | _PROT_WRITE | _PROT_EXEC) != 0:
        return f"unavailable: mprotect: {os.strerror(ctypes.get_errno())}"
    ctypes.memmove(address, ANSWER_INTEL, len(ANSWER_INTEL))
    libc.mprotect(start, length, _PROT_READ | _PROT_EXEC)
    return "answered"


def pin_mkl_vendor(environ: MutableMapping[str, str] = os.environ) -> str:
    """Answer MKL's vendor check where it matters (importing torch for it), record and return the status."""
    status = needed(environ)
    if not status:
        import torch  # already loaded in the preload server and its children

        status = answer_intel(Path(torch.__file__).parent / "lib" / "libtorch_cpu.so")
    environ[STATUS_ENV] = status
    return status
