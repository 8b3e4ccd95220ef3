"""glibc's allocator settings for the jobs: large tensors reuse the heap instead of fresh pages.

glibc serves an allocation above its mmap threshold (128 KiB, raised as such blocks are freed, to at most
32 MiB) with a fresh ``mmap`` and returns it on ``free``; every page of the next one is faulted in and
zeroed by the kernel again.  A job whose tensors exceed that -- attention logits of 32 heads over 512 x 512
positions are 32 MiB, a deployment job makes thousands -- spends a large share of its time in the kernel:
measured on this project's 2-core machine, 100 softmax-attention products of that size took 10.6 s (4.4 s
of it system time, 2.5 million page faults) and 6.2 s (0.1 s, 82 thousand) with the settings below; the
default study's SmolLM2 deployment job 100.7 s and 91.5 s (system time 10.1 and 1.4 s).  Both thresholds
at 4 GiB keep freed memory in the process for its next allocation (a job's peak memory is what it was;
it is returned when the job ends).  Values change no result: only where memory comes from.

glibc reads them when a process starts, so they are set in the workflow's environment, which the jobs
(and the preloaded fork server: ``trustmass.plumbing.preload``) inherit; other C libraries ignore them.
A value the user exported is kept.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

__all__ = ["GLIBC_MALLOC", "tune"]

_FOUR_GIB = str(4 << 30)
#: the variables glibc's malloc reads at start-up (tunables glibc.malloc.mmap_threshold / trim_threshold)
GLIBC_MALLOC = {"MALLOC_MMAP_THRESHOLD_": _FOUR_GIB, "MALLOC_TRIM_THRESHOLD_": _FOUR_GIB}


def tune(environ: MutableMapping[str, str] = os.environ) -> dict[str, str]:
    """Set :data:`GLIBC_MALLOC` in ``environ`` where not already set (child processes inherit it)."""
    for name, value in GLIBC_MALLOC.items():
        environ.setdefault(name, value)
    return {name: environ[name] for name in GLIBC_MALLOC}
