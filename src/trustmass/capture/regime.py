"""The attention regime of captured rows: how spread out, how peaked, how sink-bound they are.

Per captured row ``p`` (one query head's attention over the ``n`` keys it can see):

``entropy``         H(p) / log(n), with H(p) = -sum_j p_j log p_j: 1 for a uniform row, 0 for a row on one
                    key (and 0 for a row that sees a single key, where log n = 0);
``max_weight``      max_j p_j (1/n for a uniform row);
``token0_weight``   p_0, the weight on the first token (the attention sink).

``n`` is what the row's causal mask leaves: ``position + 1`` keys, at most the layer's sliding window.
A shard's numbers are means over its rows (every layer, query head and sampled row weighs the same,
so they are also the means over layers and heads); :func:`regime_frame` pools documents by their rows.
The sanity-check controls (randomised weights, shuffled text) are told apart from the trained model by
these numbers.  Reads shards through :mod:`trustmass.contracts.shards` (no torch).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

import numpy as np

from trustmass.contracts.shards import read_layer, read_metadata

__all__ = ["REGIME_COLUMNS", "regime_frame", "row_regime", "shard_regime"]

#: the regime numbers, in the order the frame holds them
REGIME_COLUMNS = ("entropy", "max_weight", "token0_weight")


def row_regime(p: np.ndarray, n_keys: np.ndarray) -> dict[str, np.ndarray]:
    """The three numbers of every row of ``p`` ``[..., N]`` (rows sum to 1), each seeing ``n_keys`` ``[...]`` keys."""
    p = np.asarray(p, dtype=np.float64)
    n_keys = np.broadcast_to(np.asarray(n_keys, dtype=np.float64), p.shape[:-1])
    terms = np.zeros_like(p)
    np.multiply(p, np.log(p, where=p > 0, out=np.zeros_like(p)), out=terms, where=p > 0)  # 0 log 0 = 0
    entropy = -terms.sum(-1)
    log_n = np.log(np.maximum(n_keys, 1.0))
    normalised = np.divide(entropy, log_n, out=np.zeros_like(entropy), where=log_n > 0)
    return {"entropy": normalised, "max_weight": p.max(-1), "token0_weight": p[..., 0]}


def shard_regime(path: str | os.PathLike) -> dict:
    """``{n_rows, entropy, max_weight, token0_weight}``: the means over every captured row of one shard."""
    metadata = read_metadata(path)
    sums, n_rows = dict.fromkeys(REGIME_COLUMNS, 0.0), 0
    for layer, info in sorted(metadata["layers"].items(), key=lambda item: int(item[0])):
        arrays = read_layer(path, int(layer), ["positions", "p"])
        p, positions = arrays["p"], arrays["positions"]  # [Hq, R, N], [Hkv, R]
        group = int(info["group_size"])
        n_keys = positions[np.arange(p.shape[0]) // group] + 1  # [Hq, R]: causal
        if info.get("window"):
            n_keys = np.minimum(n_keys, int(info["window"]))
        for name, values in row_regime(p, n_keys).items():
            sums[name] += float(values.sum())
        n_rows += p.shape[0] * p.shape[1]
    if not n_rows:
        raise ValueError(f"{os.fspath(path)}: the shard holds no captured rows; re-capture the document")
    return {"n_rows": n_rows, **{name: total / n_rows for name, total in sums.items()}}


def regime_frame(entries: Iterable[Mapping]):
    """One row per (arm, model, corpus): the regime of its documents' captured rows, pooled row by row.

    ``entries``: one mapping per shard, ``{arm, model, corpus, doc, path}`` (the arm names the study arm,
    e.g. ``trained``, ``randomised``, ``shuffled``).  Columns: arm, model, corpus, n_rows, entropy,
    max_weight, token0_weight."""
    import polars as pl

    rows = []
    for entry in entries:
        missing = [k for k in ("arm", "model", "corpus", "doc", "path") if k not in entry]
        if missing:
            raise ValueError(f"regime_frame: an entry has no {', '.join(missing)} ({dict(entry)})")
        regime = shard_regime(entry["path"])
        rows.append(
            {
                **{k: str(entry[k]) for k in ("arm", "model", "corpus")},
                "n_rows": regime["n_rows"],
                # pooled by rows: a document weighs what it holds
                **{name: regime[name] * regime["n_rows"] for name in REGIME_COLUMNS},
            }
        )
    schema = {"arm": pl.String, "model": pl.String, "corpus": pl.String, "n_rows": pl.Int64}
    schema.update(dict.fromkeys(REGIME_COLUMNS, pl.Float64))
    frame = pl.DataFrame(rows, schema=schema)
    keys = ["arm", "model", "corpus"]
    return (
        frame.group_by(keys, maintain_order=True)
        .agg(pl.col("n_rows").sum(), *[pl.col(name).sum() for name in REGIME_COLUMNS])
        .with_columns([(pl.col(name) / pl.col("n_rows")).alias(name) for name in REGIME_COLUMNS])
        .sort(keys)
    )
