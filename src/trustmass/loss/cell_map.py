"""The map the loss stage switches on (paper spec §1.7): per (layer, query head), the median over
the cell's captured rows of the least dropped mass ``m̄_s`` at the map budget; a cell is *flat*
when that median exceeds the flat-mass threshold (0.25 at s = 8).

Read straight from the capture shards of the map documents -- the rows and the arithmetic of the
ceiling records (``least_dropped_mass`` of the row's operator instance), so the flags equal
Figure 2's on the same documents (tested) -- so the loss jobs need not wait for the ceiling.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import polars as pl

from trustmass.contracts.shards import read_layer, read_metadata
from trustmass.core.operator import least_dropped_mass
from trustmass.core.selectors.selector_input import SelectorInput

MAP_SCHEMA = {
    "layer": pl.Int64,
    "head": pl.Int64,
    "n_rows": pl.Int64,
    "median_dropped_mass": pl.Float64,
    "flat": pl.Boolean,
    "budget": pl.Int64,
    "flat_mass": pl.Float64,
}


def row_dropped_masses(shard: str | os.PathLike, budget: int) -> dict[tuple[int, int], list[float]]:
    """``m̄_s`` of every captured row of one shard, keyed by (layer, query head)."""
    meta = read_metadata(shard)
    windows = tuple(meta["options"]["windows"])
    out: dict[tuple[int, int], list[float]] = {}
    for layer in sorted(int(k) for k in meta["layers"]):
        t = read_layer(shard, layer, ("positions", "p", "values", "keys"))
        for head in range(t["p"].shape[0]):
            for r in range(t["p"].shape[1]):
                x = SelectorInput.from_layer(t, head, r, windows)
                out.setdefault((layer, head), []).append(least_dropped_mass(x.instance, budget))
    return out


def cell_map(shards: Sequence[str | os.PathLike], budget: int, flat_mass: float) -> pl.DataFrame:
    """One row per cell: median ``m̄_s`` over every row of every shard, and the flat flag."""
    if not shards:
        raise ValueError("the map needs at least one capture shard (the map documents)")
    pooled: dict[tuple[int, int], list[float]] = {}
    for shard in shards:
        for cell, values in row_dropped_masses(shard, budget).items():
            pooled.setdefault(cell, []).extend(values)
    rows = []
    for (layer, head), values in sorted(pooled.items()):
        median = float(np.median(values))
        rows.append(
            {
                "layer": layer,
                "head": head,
                "n_rows": len(values),
                "median_dropped_mass": median,
                "flat": median > flat_mass,
                "budget": int(budget),
                "flat_mass": float(flat_mass),
            }
        )
    return pl.DataFrame(rows, schema=MAP_SCHEMA)


def flat_cells(frame: pl.DataFrame, n_layers: int, n_heads: int) -> np.ndarray:
    """The flat flags as a bool grid ``[layers, query heads]`` (a cell missing from the map is an error)."""
    grid = np.zeros((n_layers, n_heads), dtype=bool)
    seen = np.zeros_like(grid)
    for layer, head, flat in frame.select("layer", "head", "flat").iter_rows():
        if layer >= n_layers or head >= n_heads:
            raise ValueError(f"the map has cell ({layer}, {head}) outside the model's {n_layers} x {n_heads} heads")
        grid[layer, head], seen[layer, head] = bool(flat), True
    if not seen.all():
        missing = np.argwhere(~seen)[:3].tolist()
        raise ValueError(f"the map lacks cells of the model, e.g. {missing}; was it computed for another model?")
    return grid
