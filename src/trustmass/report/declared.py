"""Every stage's claim-value declarations in one registry.

Each stage's statistics rule writes ``results/stats/headline_<stage>.parquet`` from the module-level ``HEADLINE``
tuples (:class:`~trustmass.report.headline.HeadlineValue`) of its frames modules.  :data:`DECLARING_MODULES` says,
per stage, which modules (and which tuple) declare its values; :func:`declarations` imports them lazily (a frames
module pulls in its stage's dependencies) and returns every declaration by stage, so a test or a tool can walk all
claim values without running a stage.  A module listed here that does not define its tuple yet (one still being
converted from hand-written rows) is skipped and named by :func:`undeclared`.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from trustmass.report.headline import HeadlineValue

__all__ = ["DECLARING_MODULES", "declarations", "undeclared"]

_FRAMES = "trustmass.report.frames"
#: stage (``headline_<stage>``) -> (module, attribute) of each tuple of declarations it writes
DECLARING_MODULES: dict[str, tuple[tuple[str, str], ...]] = {
    "ceiling": ((f"{_FRAMES}.ceiling_claims", "HEADLINE"),),
    "audit": ((f"{_FRAMES}.audit", "HEADLINE"),),
    "certification": ((f"{_FRAMES}.certification", "HEADLINE"),),
    "sweep": ((f"{_FRAMES}.certification", "SWEEP_HEADLINE"),),
    "loss": ((f"{_FRAMES}.loss", "HEADLINE"), (f"{_FRAMES}.loss_table", "HEADLINE")),
    "tasks": ((f"{_FRAMES}.tasks", "HEADLINE"),),
    "deploy": (
        (f"{_FRAMES}.deploy", "HEADLINE"),
        (f"{_FRAMES}.deploy_claims", "HEADLINE"),
        (f"{_FRAMES}.deploy_comparison_claims", "HEADLINE"),
    ),
    "selfcheck": ((f"{_FRAMES}.selfcheck", "HEADLINE"),),
    "gpu": ((f"{_FRAMES}.gpu", "HEADLINE"),),
}


def _tuples(stages: Iterable[str]) -> Iterable[tuple[str, str, str, tuple[HeadlineValue, ...] | None]]:
    for stage in stages:
        if stage not in DECLARING_MODULES:
            raise KeyError(f"no stage {stage!r} declares claim values; the stages: {sorted(DECLARING_MODULES)}")
        for module, attribute in DECLARING_MODULES[stage]:
            yield stage, module, attribute, getattr(importlib.import_module(module), attribute, None)


def declarations(stages: Iterable[str] | None = None) -> dict[str, tuple[HeadlineValue, ...]]:
    """Every declaration of the given stages (all by default), by stage, in module order; modules without
    their tuple yet contribute none."""
    out: dict[str, tuple[HeadlineValue, ...]] = {}
    for stage, _, _, specs in _tuples(stages if stages is not None else DECLARING_MODULES):
        out[stage] = (*out.get(stage, ()), *(specs or ()))
    return out


def undeclared(stages: Iterable[str] | None = None) -> list[str]:
    """``module.ATTRIBUTE`` of every listed tuple a module does not define (yet)."""
    return [
        f"{module}.{attribute}"
        for _, module, attribute, specs in _tuples(stages if stages is not None else DECLARING_MODULES)
        if specs is None
    ]
