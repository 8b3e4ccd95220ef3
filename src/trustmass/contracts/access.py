"""The access-law records: one parquet file per captured (model, document), beside the shard.

Written by the capture rule (:mod:`trustmass.capture.access`) as
``results/capture/<model>/<corpus>/<doc>.access.parquet`` -- a file of its own, so the shard's bytes do
not depend on it -- and read by the access-law statistics (:mod:`trustmass.report.frames.access`).
One row per (layer, query head, law); the laws (:mod:`trustmass.core.access_law`):

=========  ==========  =====================================================================
law        tail_rows   the law
=========  ==========  =====================================================================
last       null        ``p_T``, the last prefill row
tail       K           the mean of the last K prefill rows (one row per configured K)
all        null        the full prefill mixture, ``C / T`` (normalised cumulative attention)
debiased   null        ``C_i / (T - i)`` normalised (count-debiased cumulative attention)
decode     null        ``p*``, the first greedy decode step's row over the T prompt keys,
                       renormalised (its own key's mass is ``decode_self_mass``)
=========  ==========  =====================================================================

Columns: ``tv_last`` = TV(law, p_T), ``tv_decode`` = TV(law, p*), ``mean_position`` = the law's mean
key position over T - 1, ``target_mass`` = the law's mass on the planted target keys i* (task contexts;
null elsewhere; ``target`` names them as ``start..end`` runs, ``task`` the context type).
"""

from __future__ import annotations

__all__ = ["COLUMNS", "LAWS"]

LAWS = ("last", "tail", "all", "debiased", "decode")

#: column -> polars dtype name (kept as strings: this module imports no dataframe library)
COLUMNS = {
    "model": "Utf8",
    "corpus": "Utf8",
    "doc": "Utf8",
    "doc_id": "Utf8",
    "task": "Utf8",
    "target": "Utf8",
    "n_tokens": "Int64",
    "decode_token": "Int64",
    "layer": "Int64",
    "head": "Int64",
    "kv_head": "Int64",
    "law": "Utf8",
    "tail_rows": "Int64",
    "tv_last": "Float64",
    "tv_decode": "Float64",
    "mean_position": "Float64",
    "target_mass": "Float64",
    "decode_self_mass": "Float64",
}
