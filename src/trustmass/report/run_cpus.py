"""Which CPU models a run's jobs ran on, read from its provenance sidecars (``device.cpu``).

float32 results differed between an Intel and an AMD CPU at about 1e-6 with the kernel pins of
:mod:`trustmass.plumbing.determinism` until every job answered oneMKL's vendor check
(:mod:`trustmass.plumbing.mkl_vendor`; docs/reliability.md, "Across CPU models"), and a CPU without AVX2 keeps its
libraries' own kernels, so the reference check names both sides' CPUs when they differ: its differences may be
that and not a change.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

__all__ = ["cpu_note", "sidecar_cpus"]


def sidecar_cpus(root: Path, rels: Iterable[str]) -> list[str]:
    """The CPU models the provenance sidecars among ``rels`` (paths under ``root``) name, sorted."""
    cpus = set()
    for rel in rels:
        path = root / rel
        if rel.endswith(".prov.json") and path.is_file():
            try:
                cpus.add(str((json.loads(path.read_text()).get("device") or {}).get("cpu")))
            except ValueError:
                continue  # an unreadable sidecar is reported as a difference by the comparison itself
    return sorted(cpus)


def cpu_note(mine: list[str], theirs: list[str]) -> str | None:
    """A line for the check's report when the run's and the reference's CPU models differ, else None."""
    if not mine or not theirs or mine == theirs:
        return None
    return (
        f"CPU: this run's jobs ran on {', '.join(mine)}, the reference's on {', '.join(theirs)}: float32 results "
        "differ between CPU models at 1e-6 where a side ran without the pins or the answered oneMKL vendor check "
        "(docs/reliability.md, 'Across CPU models'), so differences below may be that and not a change"
    )
