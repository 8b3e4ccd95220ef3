"""The loss stage's map equals Figure 2's flags on the same documents, and the held-out check."""

import json

import numpy as np
import polars as pl
import pytest

from trustmass.ceiling.records import CeilingSettings, shard_records
from trustmass.loss.cell_map import cell_map, flat_cells
from trustmass.loss.heldout import heldout_document
from trustmass.report.engine import StatisticsSettings
from trustmass.report.frames.ceiling import fig2


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    from capture.tiny_models import tiny_shard

    return [
        tiny_shard(tmp_path_factory.mktemp(f"map{k}"), n_tokens=90, rows_per_head=3, min_position=30, seed=k)
        for k in (1, 2)
    ]


@pytest.mark.parametrize("flat_mass", [0.05, 0.25, 0.5])
def test_map_equals_figure2_flags(shards, flat_mass):
    settings = CeilingSettings(enumerated=(4, 8), native=())
    records = pl.concat([shard_records(p, "tiny", "c", f"{k:04d}", settings) for k, p in enumerate(shards)])
    figure = fig2(records, StatisticsSettings(flat_mass=flat_mass, bootstrap=0, primary_docs=2))
    figure = figure.filter(pl.col("population") == "all").sort(["layer", "head"])
    ours = cell_map(shards, 8, flat_mass).sort(["layer", "head"])
    assert ours["median_dropped_mass"].to_list() == pytest.approx(figure["median_dropped_mass"].to_list(), abs=1e-12)
    assert ours["flat"].to_list() == figure["flat"].to_list()
    grid = flat_cells(ours, 2, 4)
    assert grid.sum() == int(ours["flat"].sum())


def test_flat_cells_refuses_a_map_of_another_model(shards):
    frame = cell_map(shards[:1], 8, 0.25)
    with pytest.raises(ValueError, match="outside the model"):
        flat_cells(frame, 1, 4)
    with pytest.raises(ValueError, match="lacks cells"):
        flat_cells(frame, 3, 4)


def _manifest(path, ranges, sha="abc"):
    docs = np.zeros((len(ranges), 4), dtype=np.int64)
    from safetensors.numpy import save_file

    save_file({"input_ids": docs}, str(path))
    records = [{"id": f"c-{i:04d}", "corpus_tokens": list(r)} for i, r in enumerate(ranges)]
    path.with_suffix(".json").write_text(json.dumps({"documents": records, "corpus_sha256": sha}))


def test_heldout_document_must_follow_the_capture_text(tmp_path):
    _manifest(tmp_path / "capture.safetensors", [(0, 4), (4, 8)])
    _manifest(tmp_path / "heldout.safetensors", [(0, 3), (3, 6), (6, 9), (9, 12)])
    ids, record = heldout_document(tmp_path / "heldout.safetensors", tmp_path / "capture.json", "0003")
    assert record["corpus_tokens"] == [9, 12] and ids.shape == (4,)
    with pytest.raises(ValueError, match="inside the capture documents' text.*re-run tokenize_heldout"):
        heldout_document(tmp_path / "heldout.safetensors", tmp_path / "capture.json", "0002")
    with pytest.raises(ValueError, match="holds 4 held-out chunks"):
        heldout_document(tmp_path / "heldout.safetensors", tmp_path / "capture.json", "0007")
