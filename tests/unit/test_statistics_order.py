"""The ceiling statistics do not depend on the order of the records' rows nor on polars' thread count
(issue 31, item 5: a fresh clone must reproduce the reference; a seeded bootstrap whose draws follow
a hash order, or a reduction over rows in arrival order, would move with them)."""

import itertools
import json
import os
import subprocess
import sys

import numpy as np
import polars as pl
import pytest

from trustmass.report.engine import HeadlinePopulation, StatisticsSettings
from trustmass.report.frames import ceiling as S

SETTINGS = StatisticsSettings(bootstrap=50)


def synthetic_records(seed=0) -> pl.DataFrame:
    """Ceiling records of two models, two corpora, four documents, a few cells, every budget."""
    rng = np.random.default_rng(seed)
    rows = []
    cells = itertools.product(
        ("a", "b"), ("prose", "code"), ("0000", "0001", "0002", "0003"), range(5), range(2), (100, 200, 300)
    )
    for (model, corpus, doc, layer, head, pos), budget in itertools.product(cells, (4, 8, 16, 32, 64)):
        enum = budget <= 32
        es_top, u = float(rng.uniform(0.5, 2.0)), rng.uniform(0.05, 1.0, size=8)
        es_pool = es_top * (0.3 + 0.7 * float(u[0]))
        ef = es_pool * float(u[1])
        row = {
            "model": model,
            "corpus": corpus,
            "doc": doc,
            "layer": layer,
            "head": head,
            "kv_head": 0,
            "group_size": 2,
            "query_pos": pos,
            "n_keys": pos + 1,
            "budget": budget,
            "dropped_mass": float(u[2]) / 2,
            "D": 3.0,
            "sigma": 1.0,
            "phi": float(u[3]),
            "es_top": es_top,
            "es_bal": es_top * float(u[4]),
            "n_swaps": int(rng.integers(0, 5)),
            "es_vote": 3 * float(u[5]),
            "bound_2dm": 4.0,
            "bound_var": 3.0,
            "enumerated": enum,
            "pool_extra": 8,
            "n_subsets": 10,
        }
        enumerated = {
            "es_pool": es_pool,
            "kappa_hat": es_top / es_pool,
            "c_hat": 1 - es_pool / es_top,
            "kappa_hat_bal": 1 + float(u[6]),
            "ef_fw": ef,
            "pi_hat": es_pool / ef,
            "es_geo": 4 * float(u[7]),
            "es_lev": 6 * float(u[7]) ** 2,
            "es_geo_pool": 4 * float(u[6]),
            "es_lev_pool": 6 * float(u[5]),
        }
        rows.append(row | {k: (v if enum else None) for k, v in enumerated.items()})
    return pl.DataFrame(rows, infer_schema_length=None)


def frames_of(records: pl.DataFrame) -> dict[str, pl.DataFrame]:
    population = HeadlinePopulation(models=("a", "b"), corpus="prose")
    return S.summarize(records, SETTINGS, population)


def test_every_ceiling_frame_is_bitwise_the_same_for_shuffled_rows():
    records = synthetic_records()
    want = frames_of(records)
    for seed in (1, 2):
        got = frames_of(records.sample(fraction=1.0, shuffle=True, seed=seed))
        for name in want:
            assert got[name].equals(want[name], null_equal=True), f"{name} moved when the records' rows were shuffled"


_CHILD = """
import json, sys
sys.path[:0] = {path!r}
from test_statistics_order import frames_of, synthetic_records
frames = frames_of(synthetic_records())
print(json.dumps({{name: f.write_json() for name, f in frames.items()}}))
"""


@pytest.mark.parametrize("threads", ["1", "8"])
def test_every_ceiling_frame_is_bitwise_the_same_under_any_polars_thread_count(threads):
    """POLARS_MAX_THREADS is read when polars loads: a fresh interpreter per count."""
    here = os.path.dirname(__file__)
    code = _CHILD.format(path=[here, *sys.path])
    env = {**os.environ, "POLARS_MAX_THREADS": threads}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    got = json.loads(out.strip().splitlines()[-1])
    want = {name: f.write_json() for name, f in frames_of(synthetic_records()).items()}
    assert got == want
