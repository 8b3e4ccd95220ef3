"""The rule boundary: every input with a sidecar is checked before a job reads it; an unreadable input is named."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import polars as pl
import pytest
import torch
from safetensors.torch import save_file

from trustmass.plumbing.code_inputs import loaded_modules
from trustmass.plumbing.errors import IntegrityError
from trustmass.plumbing.inputs import UnreadableInputError, unreadable_input, verify_inputs
from trustmass.plumbing.provenance import write_sidecar
from trustmass.plumbing.rule_io import run_rule


def written(path, rule="ceiling"):
    """A parquet output of a finished job: the file and its sidecar."""
    pl.DataFrame({"x": list(range(1000)), "y": [0.5] * 1000}).write_parquet(path)
    write_sidecar(path, extra={"rule": rule})
    return str(path)


def flip(path, at=100, n=8):
    data = bytearray(open(path, "rb").read())
    data[at : at + n] = bytes(b ^ 0xFF for b in data[at : at + n])
    open(path, "wb").write(bytes(data))


def truncate(path, keep=0.5):
    data = open(path, "rb").read()
    open(path, "wb").write(data[: int(len(data) * keep)])


def job(tmp_path, inputs):
    """A job reading ``inputs`` whose declared code is every library module loaded here (the job-end check's part is
    tests/unit/test_code_inputs.py)."""
    code = [str(path) for path in loaded_modules().values()]
    return SimpleNamespace(
        input={"data": inputs, "code": code}, log=[str(tmp_path / "job.log")], rule="statistics", wildcards=()
    )


@pytest.fixture(autouse=True)
def _restore_streams():
    out, err, hook = sys.stdout, sys.stderr, sys.excepthook
    yield
    sys.stdout, sys.stderr, sys.excepthook = out, err, hook


def test_an_input_changed_since_it_was_written_is_refused_naming_its_rule(tmp_path):
    path = written(tmp_path / "records.parquet")
    assert verify_inputs([path, "src/x.py"]) == [path]
    flip(path)
    with pytest.raises(
        IntegrityError, match=r"records\.parquet has changed since it was written.*rule ceiling writes it again"
    ):
        verify_inputs([path])


def test_inputs_without_a_sidecar_are_not_the_pipelines_and_pass(tmp_path):
    path = tmp_path / "user.parquet"
    pl.DataFrame({"x": [1]}).write_parquet(path)
    assert verify_inputs([str(path)]) == []


def test_an_unreadable_parquet_or_safetensors_input_is_named(tmp_path):
    good = written(tmp_path / "good.parquet")
    bad = tmp_path / "bad.parquet"
    pl.DataFrame({"x": [1, 2, 3]}).write_parquet(bad)
    truncate(bad)
    shard = tmp_path / "shard.safetensors"
    save_file({"a": torch.zeros(64)}, str(shard))
    assert unreadable_input([good, str(shard)]) is None
    err = unreadable_input([good, str(bad)])
    assert isinstance(err, UnreadableInputError) and f"{bad} cannot be read" in str(err) and "fix:" in str(err)
    truncate(shard, keep=0.3)
    assert f"{shard} cannot be read" in str(unreadable_input([str(shard)]))


def test_run_rule_checks_before_main_and_names_what_main_could_not_read(tmp_path):
    good = written(tmp_path / "good.parquet")
    ran = []
    run_rule(job(tmp_path, [good]), lambda smk, started: ran.append(started))
    assert ran, "main runs when every input checks out"

    flip(good)
    with pytest.raises(IntegrityError):
        run_rule(job(tmp_path, [good]), lambda smk, started: pytest.fail("main must not run on a damaged input"))

    bad = tmp_path / "user.parquet"
    pl.DataFrame({"x": [1, 2, 3]}).write_parquet(bad)
    truncate(bad)
    with pytest.raises(UnreadableInputError, match="user.parquet cannot be read"):
        run_rule(job(tmp_path, [str(bad)]), lambda smk, started: pl.read_parquet(bad))

    with pytest.raises(ZeroDivisionError):  # a bug keeps its traceback
        run_rule(job(tmp_path, []), lambda smk, started: 1 / 0)
