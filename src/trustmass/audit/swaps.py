"""Boundary swaps on captured rows, es as the outcome (related-methods A.2).

For every sampled row of a capture shard, every swap budget and every selector pair X -> Y
(registry rules), the kept sets ``K_X`` and ``K_Y`` are the rules' own (``contract.run``) on the
row's positive-mass keys (a kept key without mass cannot change es; the audit drops them the same
way).  Where either rule keeps no key with mass (a sliding-window row whose heavy or sink keys lie
outside the window, or mass underflowed to 0) its es is undefined -- the audit records NaN -- and the
row has no records for that pair.  A swap moves a fraction of the disagreement (``boundary_swaps.swap_at_fraction``, ranked by
the row's mass): the boundary swap at each fraction, and per control seed the random swap
(unrestricted) at each fraction and the restricted one below 1 (at 1 it is ``K_Y``).

Records (:data:`COLUMNS`), one per (layer, head, row, budget, pair, kind, fraction, seed):
``es_x``, ``es_y`` and ``es`` after the swap, ``n_out`` / ``n_in`` = |D_out| / |D_in|.  The gap
recovered and the share of swap-improving boundaries are the statistics' (``report.frames.swaps``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import polars as pl

from trustmass.core import operator as op
from trustmass.core.config_conflict import ConfigConflict
from trustmass.core.selectors.boundary_swaps import BOUNDARY, RANDOM, RANDOM_RESTRICTED, swap_at_fraction
from trustmass.core.selectors.contract import run
from trustmass.core.selectors.registry import REGISTRY
from trustmass.core.selectors.selector_input import SelectorInput
from trustmass.plumbing.config import embedded_default

COLUMNS = [
    "model",
    "corpus",
    "doc",
    "layer",
    "head",
    "query_pos",
    "budget",
    "pair",
    "kind",
    "fraction",
    "seed",
    "n_out",
    "n_in",
    "es_x",
    "es_y",
    "es",
]


def pair_name(x: str, y: str) -> str:
    return f"{x}>{y}"


_DEFAULT = embedded_default()  # config.yaml: the defaults below are its values, not copies
_SWAPS = _DEFAULT["diagnostics"]["swaps"]


@dataclass(frozen=True)
class SwapSettings:
    pairs: tuple[tuple[str, str], ...] = tuple((str(x), str(y)) for x, y in _SWAPS["pairs"])
    budgets: tuple[int, ...] = tuple(_SWAPS["row_budgets"])
    fractions: tuple[float, ...] = tuple(float(f) for f in _SWAPS["fractions"])
    seeds: int = _SWAPS["seeds"]
    master_seed: int = _DEFAULT["seed"]
    windows: tuple[int, ...] = tuple(_DEFAULT["capture"]["windows"])

    def __post_init__(self):
        for pair in self.pairs:
            for name in pair:
                if name not in REGISTRY:
                    raise ConfigConflict(
                        f"diagnostics.swaps.pairs: no rule {name!r}; fix: registry names ({', '.join(REGISTRY)})",
                        fields=("diagnostics.swaps.pairs",),
                    )

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> SwapSettings:
        """From the config keys diagnostics/swaps, seed and capture/windows."""
        swaps = cfg["diagnostics"]["swaps"]
        return cls(
            pairs=tuple((str(x), str(y)) for x, y in swaps["pairs"]),
            budgets=tuple(int(b) for b in swaps["row_budgets"]),
            fractions=tuple(float(f) for f in swaps["fractions"]),
            seeds=int(swaps["seeds"]),
            master_seed=int(cfg["seed"]),
            windows=tuple(cfg["capture"]["windows"]),
        )


def _on_instance(x: SelectorInput, kept: np.ndarray) -> np.ndarray:
    """A rule's kept positions as indices among the row's positive-mass keys (zero-mass ones dropped)."""
    idx = x.instance_index[np.asarray(kept, dtype=np.int64)]
    return np.sort(idx[idx >= 0])


def row_swaps(x: SelectorInput, settings: SwapSettings, where: tuple[int, int, int]) -> list[dict]:
    """The swap records of one row (``where`` = (layer, head, query position) seeds the draws)."""
    inst, out = x.instance, []
    score = inst.p
    fractions = sorted({f for f in settings.fractions if f > 0})
    for s in settings.budgets:
        for k, (name_x, name_y) in enumerate(settings.pairs):
            if s < max(REGISTRY[name_x].min_budget, REGISTRY[name_y].min_budget):
                continue
            kept_x, kept_y = _on_instance(x, run(REGISTRY[name_x], x, s)), _on_instance(x, run(REGISTRY[name_y], x, s))
            if kept_x.size == 0 or kept_y.size == 0:  # m_A = 0 / 0: nothing to swap towards or from
                continue
            es_x, es_y = op.es(inst, kept_x), op.es(inst, kept_y)
            n_out, n_in = (
                len(set(kept_x.tolist()) - set(kept_y.tolist())),
                len(set(kept_y.tolist()) - set(kept_x.tolist())),
            )
            base = {
                "budget": s,
                "pair": pair_name(name_x, name_y),
                "n_out": n_out,
                "n_in": n_in,
                "es_x": es_x,
                "es_y": es_y,
            }

            def record(kind: str, fraction: float, seed: int | None, kept: np.ndarray) -> None:
                out.append({**base, "kind": kind, "fraction": fraction, "seed": seed, "es": op.es(inst, kept)})

            for f in fractions:
                record(BOUNDARY, f, None, swap_at_fraction(kept_x, kept_y, f, score))
            for seed in range(settings.seeds):
                rng = np.random.default_rng([settings.master_seed, seed, *where, s, k])
                for f in fractions:
                    record(RANDOM, f, seed, swap_at_fraction(kept_x, kept_y, f, score, RANDOM, rng))
                    if f < 1:
                        record(
                            RANDOM_RESTRICTED,
                            f,
                            seed,
                            swap_at_fraction(kept_x, kept_y, f, score, RANDOM_RESTRICTED, rng),
                        )
    return out


def layer_swaps(t: dict, layer: int, settings: SwapSettings) -> list[dict]:
    """Swap records of one layer (numpy arrays keyed as ``shards.read_layer``)."""
    n_q, n_kv = t["p"].shape[0], t["values"].shape[0]
    out = []
    for h in range(n_q):
        positions = t["positions"][h // (n_q // n_kv)]
        for r, pos in enumerate(positions.tolist()):
            x = SelectorInput.from_layer(t, h, r, settings.windows)
            for rec in row_swaps(x, settings, (layer, h, int(pos))):
                rec.update(layer=layer, head=h, query_pos=int(pos))
                out.append(rec)
    return out


def shard_swaps(shard_path: str, model: str, corpus: str, doc: str, settings: SwapSettings) -> pl.DataFrame:
    """Every swap record of one capture shard (:data:`COLUMNS`)."""
    from trustmass.contracts.shards import read_layer, read_metadata

    rows = []
    for layer in sorted(int(k) for k in read_metadata(shard_path)["layers"]):
        rows += layer_swaps(read_layer(shard_path, layer), layer, settings)
    schema = {"seed": pl.Int64, "fraction": pl.Float64}
    frame = pl.DataFrame(rows, schema_overrides=schema, infer_schema_length=None)
    return frame.with_columns(model=pl.lit(model), corpus=pl.lit(corpus), doc=pl.lit(doc)).select(COLUMNS)
