"""Render one figure or table of the catalog (:mod:`trustmass.report.catalog`) from its statistics frames.

The draw module is imported by name (the catalog's ``module:name`` strings), so a figure's rule depends
on its stage's figure code and the style only, a table's on its stage's table layouts and the renderer only.  Numbers of the
paper a drawing shows (a shaded band, say) come from the claims file (:class:`~trustmass.report.catalog.PaperValue`).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from trustmass.report.catalog import PaperValue, output
from trustmass.report.claims.data import claim

__all__ = ["paper_value", "render"]


def paper_value(ref: PaperValue) -> Any:
    """The paper's number(s) for a drawing: a per-group entry, a (low, high) range, or the value."""
    value = claim(ref.claim).value(ref.value)
    if ref.by is not None:
        dim, key = ref.by
        entry = value.by[dim][key]
        return tuple(float(x) for x in entry) if isinstance(entry, tuple) else float(entry)
    if value.low is not None and value.high is not None:
        return (float(value.low), float(value.high))
    return float(value.value)


def render(name: str, frame_paths: Sequence[str], files: Mapping[str, str], config: Mapping[str, Any]) -> dict:
    """Draw or lay out output ``name`` into ``files`` (png, or csv + md + html); returns what the log shows."""
    out = output(name)
    frames = [pl.read_parquet(p) for p in frame_paths]
    if len(frames) != len(out.frames):
        raise ValueError(f"{name}: expected the frames {out.frames}, got {len(frames)} files")
    population = config.get("statistics", {}).get("figure_population", "primary")
    if out.kind == "figure":
        module_name, function = out.draw.split(":")
        module = importlib.import_module(module_name)
        kwargs = {key: paper_value(ref) for key, ref in out.paper_values.items()}
        module.save(getattr(module, function)(*frames, population, **kwargs), files["png"])
        return {"figure": name, "population": population, "rows": [f.height for f in frames], "paper_values": kwargs}
    module_name, layout = out.draw.split(":")
    layouts = importlib.import_module(module_name)
    threshold = config.get("labels", {}).get("kappa_threshold")
    table = layouts.write(
        layouts.LAYOUTS[layout],
        frames[0],
        files["csv"],
        files["md"],
        kappa_threshold=threshold,
        html_path=files.get("html"),
    )
    return {"table": name, "rows": table.height, "columns": table.width}
