"""The allocation panel (paper App B.6, claim 97): per-cell budgets at a matched total.

A *cell* is (layer, query head).  An allocator gives every cell c an integer budget b_c >= 1 with

    sum_c b_c = unit * n_cells                                   (matched total, exactly)

and each sampled row of the cell is then scored at its cell's budget: es(A) = ||g_A|| / p(A) with
A the selector's kept set of size b_c (top-mass A*_b, or balancing from A*_b inside C_b).  The
panel compares the pooled error (the mean es over every row of every cell and document)

    Delta es(alloc) = pooled(alloc) - pooled(uniform)

with a paired cell-cluster bootstrap: each resample draws cells with replacement and evaluates
every allocator on the same cells (``core.stats.bootstrap_replicates``).

Allocators (all share :func:`apportion`: floor at 1, largest remainder, ties by cell order):

* ``uniform``: b_c = unit.
* ``map_proportional`` [C, spec §6]: b_c proportional to the cell's median m̄_s (the dropped mass
  of top-mass at the map budget s, ``statistics.map_budget``, 8 in the paper; over the cell's rows of
  every document).
* ``mass_greedy`` (Ada-KV style): a *slice* is one sampled row index of one document, i.e. the
  k-th row of every cell.  Per slice, the masses of all cells' rows are pooled and the global top
  unit * n_cells entries taken (ties: cell order, then the row's mass order); n_c(slice) counts
  the cell's entries.  b_c is the mean of n_c over the slices, re-apportioned to integers (the
  means already sum to the total, so only the rounding and the floor at 1 move budget).  The rows
  of a slice sit at different query positions (capture samples positions per KV head and layer).
* ``pyramid`` (PyramidKV's arithmetic sequence): layer l of L gets the weight
  w_l = max - l (max - min) / (L - 1), min = unit / beta, max = 2 unit - min (mean unit, largest
  at layer 0); every head of a layer shares w_l and the weights are apportioned to the total.

Budgets are not capped at a row's visible keys: a row whose budget reaches its positive-mass
keys keeps them all (es = 0) and the excess is not redistributed.  The rows capture samples sit at
positions >= ``min_position`` (256 by default), far above the budgets these allocators give.

Balancing's candidate pool at an arbitrary budget [C]: ``pool="subset_cap"`` (default) takes
e(s) from ``PoolRule().extra(s)`` at every s (24/12/6/4 at 4/8/16/32 and smoothly in between:
e(5) = 24, e(9) = 11, e(12) = 8, e(64) = 3), so a cell moved off the unit budget keeps a pool of
comparable reach; ``pool="registry"`` uses ``Balancing().extra`` (e(s) at 4/8/16/32, 4 elsewhere),
the audit's convention, under which every budget off the enumerated ones gets a smaller pool.

Two passes over the shards, each streaming by layer: the first reads the masses (m̄_s and the
sorted masses for mass-greedy), the allocators run, the second scores every row at the union of
the budgets its cell needs (each (row, selector, budget) once, shared by allocators and units).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from trustmass.core.enumeration import PoolRule, candidate_pool
from trustmass.core.operator import Instance, dropped_mass, es, top_k, top_mass
from trustmass.core.selectors.balancing import balancing
from trustmass.core.selectors.ceiling_rules import Balancing
from trustmass.core.selectors.selector_input import SelectorInput
from trustmass.core.stats import bootstrap_replicates, median, percentile_interval

__all__ = [
    "ALLOCATORS",
    "COLUMNS",
    "SELECTORS",
    "MassTable",
    "PanelData",
    "allocate",
    "apportion",
    "map_proportional",
    "mass_greedy",
    "panel",
    "panel_rows",
    "pool_extra",
    "pyramid",
    "row_errors",
    "shard_panel",
    "summarize",
    "uniform",
]

ALLOCATORS = ("uniform", "map_proportional", "mass_greedy", "pyramid")
SELECTORS = ("balancing", "top_mass")
#: PyramidKV's default beta (min layer weight = unit / beta)
PYRAMID_BETA = 20.0
COLUMNS = [
    "model",
    "unit",
    "selector",
    "allocator",
    "pool",
    "n_cells",
    "n_rows",
    "n_slices",
    "pooled_es",
    "pooled_es_uniform",
    "delta_es",
    "delta_lo",
    "delta_hi",
    "budget_min",
    "budget_max",
    "B",
    "seed",
]


# ------------------------------------------------------------------------------- allocators


def apportion(weights, total: int, minimum: int = 1) -> np.ndarray:
    """Integers b (shape of ``weights``) with sum b = total, b >= minimum, b ~ proportional to w.

    Water-filling: shares total_free * w_c / sum w over the free cells; cells whose share falls
    below ``minimum`` are fixed at it and the rest re-shared, until none falls below.  Then
    largest-remainder rounding of the shares, ties to the earlier cell (flat order).  All-zero
    free weights share equally.
    """
    w = np.asarray(weights, dtype=np.float64)
    flat = w.reshape(-1)
    n = flat.shape[0]
    if n == 0 or not np.all(np.isfinite(flat)) or np.any(flat < 0):
        raise ValueError("apportion needs a nonempty array of finite weights >= 0")
    if int(total) < minimum * n:
        raise ValueError(f"total {total} cannot give {n} cells at least {minimum} each")
    fixed = np.zeros(n, dtype=bool)
    while True:
        free_total = int(total) - minimum * int(fixed.sum())
        wf = np.where(fixed, 0.0, flat)
        scale = wf.sum()
        share = np.where(fixed, float(minimum), free_total * (wf / scale if scale > 0 else (~fixed) / (~fixed).sum()))
        low = ~fixed & (share < minimum)
        if not low.any():
            break
        fixed |= low
    out = np.floor(share).astype(np.int64)
    left = int(total) - int(out.sum())
    order = np.lexsort((np.arange(n), -(share - out)))  # largest remainder, then cell order
    out[order[: max(left, 0)]] += 1
    return out.reshape(w.shape)


def uniform(shape: tuple[int, int], unit: int) -> np.ndarray:
    """b_c = unit in every cell of the (layers, heads) grid."""
    return np.full(shape, int(unit), dtype=np.int64)


def map_proportional(m8: np.ndarray, unit: int) -> np.ndarray:
    """b_c proportional to the cell's median m̄_8 (grid ``m8``), total unit * n_cells."""
    m8 = np.asarray(m8, dtype=np.float64)
    return apportion(m8, int(unit) * m8.size)


def pyramid(shape: tuple[int, int], unit: int, beta: float = PYRAMID_BETA) -> np.ndarray:
    """PyramidKV's linear profile: w_l = max - l (max - min)/(L-1), min = unit/beta,
    max = 2 unit - min (layer 0 largest, mean unit), apportioned to unit * n_cells."""
    n_layers, n_heads = shape
    low = unit / float(beta)
    high = 2.0 * unit - low
    steps = np.arange(n_layers) * ((high - low) / (n_layers - 1) if n_layers > 1 else 0.0)
    weights = np.repeat((high - steps)[:, None], n_heads, axis=1)
    return apportion(weights, int(unit) * n_layers * n_heads)


def mass_greedy(table: MassTable, unit: int) -> np.ndarray:
    """Ada-KV-style budgets: per slice the global top unit * n_cells masses over all cells' rows;
    b_c = mean over slices of the cell's count, apportioned to integers (module docstring)."""
    n_cells = table.n_cells
    total = int(unit) * n_cells
    counts = np.zeros(n_cells)
    for rows in table.slices():
        lengths = np.array([table.masses[i].shape[0] for i in rows])
        if lengths.sum() < total:
            raise ValueError(f"a slice holds {lengths.sum()} masses, fewer than the total budget {total}")
        pooled = np.concatenate([table.masses[i] for i in rows])
        owner = np.repeat(table.cell[rows], lengths)
        counts += np.bincount(owner[top_k(pooled, total)], minlength=n_cells)
    return apportion((counts / table.n_slices).reshape(table.shape), total)


def allocate(table: MassTable, unit: int, beta: float = PYRAMID_BETA) -> dict[str, np.ndarray]:
    """Every allocator's (layers, heads) budget grid at ``unit``, in ALLOCATORS order."""
    return {
        "uniform": uniform(table.shape, unit),
        "map_proportional": map_proportional(table.cell_m8(), unit),
        "mass_greedy": mass_greedy(table, unit),
        "pyramid": pyramid(table.shape, unit, beta),
    }


# ------------------------------------------------------------------------------- rows


def _masses(x: SelectorInput) -> np.ndarray:
    """The row's positive masses renormalised in float64 (the operator instance's p)."""
    p = x.p64[x.positive]
    return p / p.sum()


def row_masses(x: SelectorInput, keep: int, map_budget: int) -> tuple[float, np.ndarray]:
    """(m̄_{map_budget}, the row's `keep` largest masses in descending order) from p alone."""
    p = _masses(x)
    mass_only = Instance(p=p, v=np.empty((p.shape[0], 0)))  # dropped_mass reads p only
    m_bar = dropped_mass(mass_only, top_k(p, map_budget))
    return m_bar, p[top_k(p, keep)]


def pool_extra(pool: str) -> Callable[[int], int]:
    """e(s) of balancing's candidate pool at any budget: 'subset_cap' or 'registry' (docstring)."""
    if pool == "subset_cap":
        return PoolRule().extra
    if pool == "registry":
        return Balancing().extra
    raise ValueError(f"pool must be 'subset_cap' or 'registry', got {pool!r}")


def row_errors(inst: Instance, budgets: Iterable[int], selector: str, extra: Callable[[int], int]) -> dict[int, float]:
    """es of the selector's kept set at each budget b (s = min(b, N)): top-mass es(A*_s), or
    balancing from A*_s inside C_s with e = extra(s) extras."""
    out = {}
    for b in sorted({int(b) for b in budgets}):
        s = min(b, inst.n_keys)
        if selector == "top_mass":
            out[b] = es(inst, top_mass(inst, s))
        elif selector == "balancing":
            out[b] = balancing(inst, s, candidate_pool(inst, s, extra(s))).es
        else:
            raise ValueError(f"selector must be one of {SELECTORS}, got {selector!r}")
    return out


# ------------------------------------------------------------------------------- tables


@dataclass
class MassTable:
    """Pass one: per row its cell (flat index into the (layers, heads) grid), slice, m̄_s at the map
    budget s (``statistics.map_budget``) and descending masses; rows appended in the order the scoring
    pass will visit them."""

    shape: tuple[int, int]
    map_budget: int
    cell: list | np.ndarray = field(default_factory=list)
    slice: list | np.ndarray = field(default_factory=list)
    m8: list | np.ndarray = field(default_factory=list)
    masses: list = field(default_factory=list)

    def add(self, cell: int, slice_: int, x: SelectorInput, keep: int) -> None:
        m_bar, top = row_masses(x, keep, self.map_budget)
        self.cell.append(cell)
        self.slice.append(slice_)
        self.m8.append(m_bar)
        self.masses.append(top)

    def freeze(self) -> MassTable:
        """Arrays instead of lists; every cell must hold one row per slice."""
        self.cell, self.slice, self.m8 = (np.asarray(a) for a in (self.cell, self.slice, self.m8))
        pairs = np.unique(np.stack([self.cell, self.slice]), axis=1).shape[1]
        if pairs != self.cell.shape[0] or pairs != self.n_cells * self.n_slices:
            raise ValueError("every cell needs exactly one row per slice (row index and document)")
        return self

    @property
    def n_cells(self) -> int:
        return self.shape[0] * self.shape[1]

    @property
    def n_slices(self) -> int:
        return int(np.unique(self.slice).shape[0])

    def slices(self) -> Iterator[np.ndarray]:
        """Row indices of each slice, ordered by cell."""
        for k in np.unique(self.slice):
            rows = np.flatnonzero(self.slice == k)
            yield rows[np.argsort(self.cell[rows], kind="stable")]

    def cell_m8(self) -> np.ndarray:
        """The map: the median m̄_8 of each cell's rows, as a (layers, heads) grid."""
        return np.array([median(self.m8[self.cell == c]) for c in range(self.n_cells)]).reshape(self.shape)


@dataclass
class PanelData:
    """Everything the panel frame is computed from: the rows' cells, the budget grids per unit
    and allocator, and each row's es per selector at the budgets its cell needs."""

    model: str
    pool: str
    table: MassTable
    budgets: dict[int, dict[str, np.ndarray]]
    errors: dict[str, list[dict[int, float]]] = field(default_factory=dict)

    def needed(self, cell: int) -> set[int]:
        """The union of the cell's budgets over units and allocators."""
        return {int(grid.flat[cell]) for by_alloc in self.budgets.values() for grid in by_alloc.values()}

    def score(self, x: SelectorInput, row: int, selectors: Sequence[str]) -> None:
        """Each selector's es of row `row` (input x) at every budget its cell needs."""
        extra = pool_extra(self.pool)
        for sel in selectors:
            self.errors.setdefault(sel, []).append(
                row_errors(x.instance, self.needed(int(self.table.cell[row])), sel, extra)
            )

    def row_es(self, selector: str, unit: int, allocator: str) -> np.ndarray:
        """es of every row at its cell's budget under (unit, allocator)."""
        grid = self.budgets[unit][allocator].reshape(-1)
        errs = self.errors[selector]
        return np.array([errs[i][int(grid[c])] for i, c in enumerate(self.table.cell.tolist())])


def _prepare(table: MassTable, units: Sequence[int], beta: float, model: str, pool: str) -> PanelData:
    pool_extra(pool)  # fail early on a bad name
    budgets = {int(u): allocate(table, int(u), beta) for u in units}
    return PanelData(model=model, pool=pool, table=table, budgets=budgets)


# ------------------------------------------------------------------------------- statistics


def summarize(data: PanelData, B: int = 1000, seed: int = 0, level: float = 0.95) -> pl.DataFrame:
    """The panel frame (COLUMNS): per (unit, selector, allocator) the pooled es (mean over rows),
    Delta es against uniform and its paired cell-cluster bootstrap percentile interval; one set of
    resamples per (unit, selector), shared by its allocators."""
    out = []
    cells = data.table.cell
    for unit in data.budgets:
        for sel in data.errors:
            frame = {"cell": cells, **{a: data.row_es(sel, unit, a) for a in ALLOCATORS}}

            def deltas(d):
                return np.array([d[a].mean() - d["uniform"].mean() for a in ALLOCATORS])

            reps = bootstrap_replicates(frame, deltas, cluster="cell", B=B, seed=seed, columns=["cell", *ALLOCATORS])
            low, high = percentile_interval(reps, level)
            estimate = deltas(frame)
            for k, a in enumerate(ALLOCATORS):
                grid = data.budgets[unit][a]
                out.append(
                    {
                        "model": data.model,
                        "unit": int(unit),
                        "selector": sel,
                        "allocator": a,
                        "pool": data.pool,
                        "n_cells": data.table.n_cells,
                        "n_rows": int(cells.shape[0]),
                        "n_slices": data.table.n_slices,
                        "pooled_es": float(frame[a].mean()),
                        "pooled_es_uniform": float(frame["uniform"].mean()),
                        "delta_es": float(estimate[k]),
                        "delta_lo": float(low[k]),
                        "delta_hi": float(high[k]),
                        "budget_min": int(grid.min()),
                        "budget_max": int(grid.max()),
                        "B": int(B),
                        "seed": int(seed),
                    }
                )
    return pl.DataFrame(out).select(COLUMNS)


def panel_rows(data: PanelData) -> pl.DataFrame:
    """One record per (row, unit, selector, allocator): layer position, head, slice, budget, es."""
    layer, head = np.divmod(data.table.cell, data.table.shape[1])
    parts = []
    for unit, by_alloc in data.budgets.items():
        for sel in data.errors:
            for a, grid in by_alloc.items():
                parts.append(
                    pl.DataFrame(
                        {
                            "unit": int(unit),
                            "selector": sel,
                            "allocator": a,
                            "layer": layer,
                            "head": head,
                            "slice": data.table.slice,
                            "budget": grid.reshape(-1)[data.table.cell],
                            "es": data.row_es(sel, unit, a),
                        }
                    )
                )
    return pl.concat(parts)


# ------------------------------------------------------------------------------- entry points


def _as_tuple(x) -> tuple:
    return (x,) if isinstance(x, (int, str, np.integer)) else tuple(x)


def panel_data(
    rows_by_cell: Mapping[tuple[int, int], Sequence[SelectorInput]],
    unit: int | Sequence[int] = (8,),
    selector: str | Sequence[str] = SELECTORS,
    beta: float = PYRAMID_BETA,
    pool: str = "subset_cap",
    model: str = "",
    *,
    map_budget: int,
) -> PanelData:
    """:class:`PanelData` from rows in memory: ``rows_by_cell[(layer, head)]`` lists the cell's rows
    (with values); its k-th row of every cell forms slice k; ``map_budget`` is the s of the map's m̄_s.  Layers and heads are taken as the
    sorted distinct keys; every (layer, head) pair of that grid must be present."""
    layers = sorted({c[0] for c in rows_by_cell})
    heads = sorted({c[1] for c in rows_by_cell})
    units = _as_tuple(unit)
    keep = max(units) * len(layers) * len(heads)
    table = MassTable(shape=(len(layers), len(heads)), map_budget=int(map_budget))
    order = [
        (li * len(heads) + hi, rows_by_cell[(ly, hd)]) for li, ly in enumerate(layers) for hi, hd in enumerate(heads)
    ]
    for cell, rows in order:
        for k, x in enumerate(rows):
            table.add(cell, k, x, keep)
    data = _prepare(table.freeze(), units, beta, model, pool)
    row = 0
    for _, rows in order:
        for x in rows:
            data.score(x, row, _as_tuple(selector))
            row += 1
    return data


def panel(
    rows_by_cell: Mapping[tuple[int, int], Sequence[SelectorInput]],
    unit: int | Sequence[int] = (8,),
    selector: str | Sequence[str] = SELECTORS,
    B: int = 1000,
    seed: int = 0,
    **options,
) -> pl.DataFrame:
    """The panel frame (COLUMNS) of rows in memory (see :func:`panel_data` for ``options``)."""
    return summarize(panel_data(rows_by_cell, unit, selector, **options), B=B, seed=seed)


def _layer_inputs(path: str, layer: int, fields: Sequence[str]) -> Iterator[tuple[int, int, int, SelectorInput]]:
    """(head, row index, rows per head, row) for every sampled row of one layer of a shard."""
    from trustmass.contracts.shards import read_layer

    t = read_layer(path, layer, fields)
    n_rows = t["positions"].shape[1]
    for h in range(t["p"].shape[0]):
        for r in range(n_rows):
            yield h, r, n_rows, SelectorInput.from_layer(t, h, r)


def _shard_rows(paths: Sequence[str], layers: Sequence[int]) -> Iterator[tuple[int, int, int, SelectorInput]]:
    """(layer position, head, slice, row) over documents, layers, heads and rows; slice =
    document index * R + row index (R rows per head).  One layer in memory at a time."""
    fields = ["positions", "p", "values", "keys"]
    for d, path in enumerate(paths):
        for li, layer in enumerate(layers):
            for h, r, n_rows, x in _layer_inputs(path, layer, fields):
                yield li, h, d * n_rows + r, x


def shard_panel(
    paths: Sequence[str | os.PathLike],
    units: Sequence[int] = (8, 16),
    selectors: Sequence[str] = SELECTORS,
    model: str | None = None,
    B: int = 1000,
    seed: int = 0,
    beta: float = PYRAMID_BETA,
    pool: str = "subset_cap",
    *,
    map_budget: int,
) -> tuple[pl.DataFrame, PanelData]:
    """The panel of one model's capture shards (one per document): (frame, data); ``map_budget`` is the s
    of the map's m̄_s (``statistics.map_budget``).  Two passes,
    each streaming one layer at a time (module docstring)."""
    from trustmass.contracts.shards import read_layer, read_metadata

    paths = [os.fspath(p) for p in paths]
    meta = read_metadata(paths[0])
    layers = sorted(int(k) for k in meta["layers"])
    n_heads = read_layer(paths[0], layers[0], ["p"])["p"].shape[0]
    table = MassTable(shape=(len(layers), n_heads), map_budget=int(map_budget))
    keep = max(units) * table.n_cells
    for li, h, k, x in _shard_rows(paths, layers):
        table.add(li * n_heads + h, k, x, keep)
    data = _prepare(table.freeze(), units, beta, model or meta.get("model", ""), pool)
    for row, (_, _, _, x) in enumerate(_shard_rows(paths, layers)):
        data.score(x, row, selectors)
    return summarize(data, B=B, seed=seed), data
