"""The sampled rows of a capture shard, as the certification benchmarks draw them (spec §3.4).

* :func:`shard_rows` -- every sampled (layer, head, kv_head, query_pos) row with its number of
  positive-mass keys (the N of the instance `certification.load_instance` builds);
* :func:`shard_records` -- manifest input from those rows: one record per (row, budget) with its
  dropped mass, for `certification.manifest.manifest` (`trustmass.bench.certify_compare`).

Both benchmarks (`trustmass.bench.certify`, `trustmass.bench.certify_compare`) read rows through
this module, so their imports point one way: certify -> certify_compare -> certify_rows.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from trustmass.certification import manifest as M
from trustmass.contracts.shards import read_layer, read_metadata
from trustmass.core.enumeration import extras_for_budget

__all__ = ["shard_records", "shard_rows"]


def shard_rows(shard: str, min_keys: int = 0) -> list[dict]:
    """Every sampled (layer, head, kv_head, query_pos) row of a capture shard with >= min_keys keys.

    ``n_keys`` counts the row's positive-mass keys, the N of the instance `load_instance` builds.
    """
    rows = []
    for layer in sorted(int(k) for k in read_metadata(shard)["layers"]):
        t = read_layer(shard, layer, ["positions", "p"])
        n_q, n_kv = t["p"].shape[0], t["positions"].shape[0]
        group = n_q // n_kv
        for h in range(n_q):
            kv = h // group
            for r, i in enumerate(t["positions"][kv].tolist()):
                n = int(np.count_nonzero(t["p"][h, r, : i + 1] > 0))
                if n >= min_keys:
                    rows.append({"layer": layer, "head": h, "kv_head": kv, "query_pos": int(i), "n_keys": n})
    return rows


def shard_records(shard: str, min_keys: int, budgets) -> pl.DataFrame:
    """Manifest input from a capture shard: one row per (sampled row with >= min_keys keys, budget)
    with its dropped mass 1 - p(A*_s); the record columns the manifest does not stratify on are NaN.

    ``corpus`` is the shard's path as given: the key its rows are reloaded by, unique where file names
    are not (``austen/0000.safetensors`` and ``stdlib/0000.safetensors``).
    """
    meta = read_metadata(shard)
    rows = []
    by_layer: dict[int, list] = {}
    for it in shard_rows(shard, min_keys):
        by_layer.setdefault(it["layer"], []).append(it)
    for layer, items in sorted(by_layer.items()):
        t = read_layer(shard, layer, ["positions", "p"])
        for it in items:
            r = t["positions"][it["kv_head"]].tolist().index(it["query_pos"])
            p = np.sort(t["p"][it["head"], r, : it["query_pos"] + 1].astype(np.float64))[::-1]
            p = p[p > 0] / p[p > 0].sum()
            for s in budgets:
                rows.append(
                    {
                        "model": meta["model"],
                        "corpus": shard,
                        "doc": meta["doc"],
                        "layer": layer,
                        "head": it["head"],
                        "kv_head": it["kv_head"],
                        "query_pos": it["query_pos"],
                        "budget": int(s),
                        "dropped_mass": float(1.0 - p[: int(s)].sum()),
                        "pool_extra": extras_for_budget(int(s)),
                    }
                )
    f = pl.DataFrame(rows)
    nan = [c for c in M.RECORD_COLUMNS if c not in f.columns]
    return f.with_columns([pl.lit(float("nan")).alias(c) for c in nan])
