"""The capture shard contract: what the capture writer writes, the torch-free reader reads back
bit for bit, and the stages that read shards never import torch or the capture code."""

import json
import subprocess
import sys

import numpy as np
import pytest
import torch
from capture.tiny_models import tiny_model

from trustmass.capture import prefill as cap
from trustmass.capture import shards as writer
from trustmass.contracts import shards as contract

OPTIONS = cap.CaptureOptions(rows_per_head=2, min_position=30)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """(capture, shard path) of one random-token document captured with the tiny GQA Llama."""
    cap.register()
    model = tiny_model("llama", cap.ATTENTION_NAME)
    ids = torch.randint(0, 96, (64,), generator=torch.Generator().manual_seed(2))
    capture = cap.capture_document(model, ids, "tiny", "d0", OPTIONS)
    path = tmp_path_factory.mktemp("contract") / "s.safetensors"
    writer.write_shard(capture, path)
    return capture, str(path)


def test_the_numpy_reader_returns_what_the_writer_wrote(written):
    capture, path = written
    meta = contract.read_metadata(path)
    assert meta == json.loads(json.dumps(capture.metadata))
    layers = sorted(int(k) for k in meta["layers"])
    assert layers == [0, 1]
    for layer in layers:
        arrays = contract.read_layer(path, layer)
        assert sorted(arrays) == sorted(contract.FIELDS)
        for field, array in arrays.items():
            written_tensor = capture.tensors[contract.tensor_name(layer, field)]
            assert type(array) is np.ndarray, field
            assert array.dtype == (np.int64 if field == "positions" else np.float32), field
            assert array.dtype == written_tensor.numpy().dtype and np.array_equal(array, written_tensor.numpy()), field


def test_named_fields_only(written):
    _, path = written
    assert sorted(contract.read_layer(path, 1, ["p", "positions"])) == ["p", "positions"]


def test_a_missing_field_or_layer_names_it_and_what_is_there(written):
    _, path = written
    with pytest.raises(ValueError, match=r"layer 1 has no field\(s\) attention.*holds acc_mass, keys"):
        contract.read_layer(path, 1, ["p", "attention"])
    with pytest.raises(ValueError, match=r"layer 7 has no field.*read_metadata"):
        contract.read_layer(path, 7)


def test_a_file_that_is_not_a_shard_is_refused(tmp_path):
    from safetensors.numpy import save_file

    path = tmp_path / "other.safetensors"
    save_file({"x": np.zeros(2, dtype=np.float32)}, str(path))
    with pytest.raises(ValueError, match="not a capture shard"):
        contract.read_metadata(path)


# Every stage that reads shards, exercised end to end in a fresh interpreter.
READ_EVERY_WAY = """
import sys
from trustmass.contracts.shards import read_layer, read_metadata
from trustmass.ceiling.records import CeilingSettings, shard_records
from trustmass.audit.records import AuditSettings, shard_audit
from trustmass.certification.runner import load_instance
from trustmass.bench.certify_rows import shard_rows

path = sys.argv[1]
read_layer(path, 0)
ceiling = shard_records(path, "tiny", "words", "0000", CeilingSettings(enumerated=(2,), native=(4,), native_extra=1))
audit = shard_audit(path, ceiling, "tiny", "words", "0000", AuditSettings(enumerated=(2,), native=(4,)))
row = shard_rows(path)[0]
instance, positions = load_instance(path, row["layer"], row["head"], row["kv_head"], row["query_pos"])
assert ceiling.height and audit.height and len(positions)
print(sorted(m for m in sys.modules if m == "torch" or m.startswith(("trustmass.capture", "trustmass.kernels"))))
"""


def test_reading_shards_in_every_stage_imports_neither_torch_nor_capture(written):
    _, path = written
    done = subprocess.run([sys.executable, "-c", READ_EVERY_WAY, path], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
