"""The environment that makes a job's floating point the same on every machine like ours.

Two runs of the same code on the same inputs agree bitwise only if every reduction adds in the same
order.  Measured on the CPU panel's records (docs/reliability.md, "The reference check"):

* BLAS threads: one per process (a job's ``threads`` are worker processes or torch threads it sets
  itself).  Snakemake exports ``threads`` into every job's OMP/OpenBLAS/MKL/... thread counts, over
  whatever the workflow set, so the job sets them back (:func:`restore_job_threads`, first thing in
  ``run_rule``) before numpy loads: each of a 2-worker ceiling job's workers otherwise starts two
  OpenBLAS threads that spin on 2 cores (the shard's records took 22.5 s instead of 7.9 s).
* The BLAS kernel: numpy's and scipy's OpenBLAS (and numba's ``@`` and ``lstsq``, through scipy) pick
  their kernels by CPU at start-up (DYNAMIC_ARCH).  An AVX-512 EPYC takes the SkylakeX kernels, an
  AVX2 one the Zen kernels; their dot products round differently (1e-16 relative), and the
  path-following selectors, whose argmins have near-ties, then take other paths: of the panel's
  102,060 SmolLM2 records recomputed with the Haswell kernels, ``es_geo`` moved beyond 1e-6 on 106
  (up to 3x), ``ef_fw`` and ``pi_hat`` on 40 (up to 30%), ``es_bal`` on 4, and Table 8's
  ``median_geo_ratio`` at s = 32 from 3.16254 to 3.16448 (the issue's ``p99_pi_hat`` and claims
  moved the same way).  ``OPENBLAS_CORETYPE=Haswell`` gives every AVX2 machine the same kernels
  (on 3,024 records the Zen kernels gave bitwise the Haswell ones' values; so did numpy with its
  AVX-512 loops disabled and numba compiled for Haswell).
* torch's kernels (the capture's float32 prefill): ATen dispatches its vectorised loops by CPU, and
  MKL its own paths; a capture with AVX-512 loops differed from one with AVX2 loops in 207 of 240
  tensors (1e-7 absolute), and MKL's path moved two more.  ``ATEN_CPU_CAPABILITY=avx2`` and
  ``MKL_CBWR=AVX2`` (MKL's conditional numerical reproducibility) fix both on every AVX2 machine
  (oneDNN's ISA cap changed nothing: not pinned).  Capture time: 11.4 s with AVX-512, 11.5-14 s pinned.
  oneMKL honours ``MKL_CBWR`` only on an Intel CPU; every job answers its vendor check so that it holds on
  the others too (:mod:`trustmass.plumbing.mkl_vendor`).

Values the user exported are kept (``setdefault``), so a run can opt out; the sidecars record what
each job ran with (:func:`recorded`).
"""

from __future__ import annotations

import json
import os
from collections.abc import MutableMapping

__all__ = [
    "BLAS_THREAD_VARIABLES",
    "KERNELS",
    "KERNEL_VARIABLE",
    "PINNED_THREADS_ENV",
    "cpu_flags",
    "cpuinfo_field",
    "pin",
    "pinned",
    "recorded",
    "restore_job_threads",
]

#: the BLAS thread counts pinned to one per process: every one snakemake sets to a job's ``threads``
BLAS_THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "GOTO_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)
#: where the workflow's process keeps the thread counts it chose, for its jobs to restore
PINNED_THREADS_ENV = "TRUSTMASS_BLAS_THREADS"
#: OpenBLAS's kernel override (recorded in every sidecar)
KERNEL_VARIABLE = "OPENBLAS_CORETYPE"
#: the kernels every AVX2+FMA x86-64 CPU runs: OpenBLAS's, torch's ATen loops and MKL's paths
KERNELS = {KERNEL_VARIABLE: "Haswell", "ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2"}
_KERNEL_NEEDS = frozenset({"avx2", "fma"})


def cpuinfo_field(name: str, path: str = "/proc/cpuinfo") -> str:
    """The first value of field ``name`` in /proc/cpuinfo (empty where the file or the field is missing)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith(name):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def cpu_flags(path: str = "/proc/cpuinfo") -> frozenset[str]:
    """The CPU's feature flags (empty where /proc/cpuinfo is missing or has none: not Linux x86)."""
    return frozenset(cpuinfo_field("flags", path).split())


def pinned(flags: frozenset[str] | None = None) -> dict[str, str]:
    """The variables a job runs with: one BLAS thread, and the AVX2 kernels where the CPU runs them
    (forcing them on a CPU without AVX2 would stop a job with an illegal instruction; such a machine
    keeps the libraries' own choice, and its runs may differ from the reference)."""
    out = {name: "1" for name in BLAS_THREAD_VARIABLES}
    if _KERNEL_NEEDS <= (cpu_flags() if flags is None else flags):
        out.update(KERNELS)
    return out


def pin(environ: MutableMapping[str, str] = os.environ, flags: frozenset[str] | None = None) -> dict[str, str]:
    """Set :func:`pinned` in ``environ`` where not already set (jobs inherit it); returns what holds now."""
    for name, value in pinned(flags).items():
        environ.setdefault(name, value)
    environ[PINNED_THREADS_ENV] = json.dumps({name: environ[name] for name in BLAS_THREAD_VARIABLES})
    return recorded(environ)


def restore_job_threads(environ: MutableMapping[str, str] = os.environ) -> None:
    """In a job: put back the thread counts :func:`pin` chose, which snakemake replaced by the job's
    ``threads``.  Call it before numpy (or torch) loads; outside the workflow it changes nothing."""
    chosen = environ.get(PINNED_THREADS_ENV)
    if chosen:
        environ.update(json.loads(chosen))


def recorded(environ: MutableMapping[str, str] = os.environ) -> dict[str, str | None]:
    """What the sidecars record: each pinned variable as the job saw it (None: unset)."""
    return {name: environ.get(name) for name in (*BLAS_THREAD_VARIABLES, *KERNELS)}
