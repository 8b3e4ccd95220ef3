"""The one shape of a stage's statistics: ``statistics(inputs, config) -> Frames``.

``inputs`` maps each input name of the catalog entry (:class:`~trustmass.report.catalog.StatisticsRule`)
to its list of paths; ``config`` is the config slice the entry declares (plus the workflow values it
names in ``params``).  The function returns every frame the entry declares, by name, and what their
provenance sidecars record besides (summary, seeds, extra fields).  ``scripts/statistics.py`` is the one
script of every statistics rule: it looks the entry up by the rule's name, calls :func:`compute` and
writes the frames and their sidecars.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any

from trustmass.report.catalog import StatisticsRule

__all__ = ["Frames", "Inputs", "bootstrap_seeds", "compute", "function_of", "one"]

#: a statistics function's inputs: input name -> paths
Inputs = Mapping[str, Sequence[str]]


class Frames(dict):
    """Named statistics frames (``name -> polars.DataFrame``), with what their sidecars record besides:
    ``summary`` (counts), ``seeds``, ``extra`` fields, and ``notes`` (lines for the job's log)."""

    def __init__(
        self,
        frames: Mapping[str, Any],
        *,
        summary: Mapping[str, Any] | None = None,
        seeds: Mapping[str, Any] | None = None,
        notes: Sequence[str] = (),
        **extra: Any,
    ) -> None:
        super().__init__(frames)
        self.summary = dict(summary) if summary is not None else None
        self.seeds = dict(seeds) if seeds is not None else None
        self.notes = tuple(notes)
        self.extra = extra


def bootstrap_seeds(settings) -> dict[str, int]:
    """The seeds a bootstrapped frame's sidecar records (a :class:`~trustmass.report.engine.StatisticsSettings`)."""
    return {"seed": settings.seed, "bootstrap": settings.bootstrap}


def one(inputs: Inputs, name: str) -> str:
    """The single path of input ``name``."""
    paths = list(inputs[name])
    if len(paths) != 1:
        raise ValueError(f"input {name!r}: expected one path, got {len(paths)}; fix: the catalog entry's inputs")
    return paths[0]


def function_of(entry: StatisticsRule):
    """The statistics function an entry names (``module:function``)."""
    return getattr(importlib.import_module(entry.module), entry.function)


def compute(entry: StatisticsRule, inputs: Inputs, config: Mapping[str, Any]) -> Frames:
    """Run the entry's statistics function and check it returned exactly the frames (and extra outputs)
    the entry declares."""
    frames = function_of(entry)(inputs, config)
    if not isinstance(frames, Frames):
        raise TypeError(f"{entry.module}.{entry.function} returned {type(frames).__name__}, not Frames")
    expected = set(entry.outputs)
    if set(frames) != expected:
        raise ValueError(
            f"{entry.name}: {entry.module}.{entry.function} returned frames {sorted(frames)}; the catalog "
            f"entry declares {sorted(expected)}; fix: make them agree"
        )
    return frames
