"""The protections the fault campaign (tests/faults) exercises end to end, one by one: a killed
writer's temporaries, a full or read-only disk, inputs checked against their recorded sha256."""

import errno
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from trustmass.plumbing import provenance as P
from trustmass.plumbing.errors import DiskError, IntegrityError, disk_error
from trustmass.plumbing.integrity import verify_files, verify_output
from trustmass.plumbing.run_checks import unwritable_folders


def _killed_writer(target, directory=False):
    """A process that is inside atomic_write(target) (its temporary written) when it gets kill -9."""
    code = textwrap.dedent(f"""
        import sys, time
        from trustmass.plumbing.provenance import atomic_write
        with atomic_write({str(target)!r}, directory={directory}) as tmp:
            (tmp / "part" if {directory} else tmp).write_text("half")
            print("inside", flush=True)
            time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "inside"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    left = [p for p in target.parent.iterdir() if p.name.startswith(f".{target.name}.")]
    assert len(left) == 1 and ".tmp" in left[0].name, left  # what kill -9 leaves behind
    return left[0]


def test_the_next_write_removes_a_killed_writers_temporary(tmp_path):
    target = tmp_path / "out.parquet"
    _killed_writer(target)
    with P.atomic_write(target) as tmp:
        tmp.write_text("whole")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.parquet"]
    assert target.read_text() == "whole"


def test_a_run_start_removes_killed_writers_temporaries_of_any_target(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    left = [_killed_writer(tmp_path / "a" / "x.json"), _killed_writer(tmp_path / "a" / "b" / "shards", directory=True)]
    keep = tmp_path / "a" / ".y.json.1.tmp"  # not ours: no writer recorded in the name
    keep.write_text("?")
    removed = P.remove_stale_temporaries(tmp_path)
    assert sorted(removed) == sorted(left) and keep.exists()
    assert not any(p.exists() for p in left)


def test_a_live_writers_temporary_is_kept(tmp_path):
    target = tmp_path / "out.json"
    with P.atomic_write(target) as tmp:
        tmp.write_text("in progress")
        assert P.remove_stale_temporaries(tmp_path) == [] and tmp.exists()
    # another host's temporary cannot be judged from here: kept
    other = tmp_path / f".out.json.1@{P._HOST}-elsewhere.abc.tmp.json"
    other.write_text("?")
    assert P.remove_stale_temporaries(tmp_path) == [] and other.exists()


def test_a_full_disk_is_one_clean_error_naming_the_output(tmp_path):
    target = tmp_path / "sub" / "records.parquet"
    with pytest.raises(DiskError) as err:
        with P.atomic_write(target) as tmp:
            tmp.write_text("x")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp))
    assert str(err.value).startswith(f"cannot write {target}: the disk is full (at {target.parent}); fix: free space")
    assert err.value.__suppress_context__ and not list(target.parent.iterdir())  # no chained traceback, nothing left


def test_writers_that_wrap_the_os_error_in_their_own_type():
    # polars, safetensors: "... No space left on device (os error 28)" in an exception of their own
    class ComputeError(Exception):
        pass

    assert (
        disk_error(ComputeError("failed to write: No space left on device (os error 28)"), "r/x").errno == errno.ENOSPC
    )
    assert "read-only" in str(disk_error(OSError(errno.EROFS, "Read-only file system"), "r/x"))
    assert disk_error(ValueError("bad value"), "r/x") is None
    assert disk_error(OSError(errno.ENOENT, "No such file"), "r/x") is None


def test_a_folder_that_cannot_be_written_is_named(tmp_path):
    results = tmp_path / "results"
    (results / "a").mkdir(parents=True)
    assert unwritable_folders([results, tmp_path / "missing"]) is None
    if os.geteuid() == 0:
        pytest.skip("root writes a chmod 0o555 folder anyway (tests/faults covers read-only mounts)")
    (results / "a").chmod(0o555)
    try:
        message = unwritable_folders([results])
    finally:
        (results / "a").chmod(0o755)
    assert message.startswith(f"cannot write to {results / 'a'}/") and "fix: make it writable" in message


@pytest.fixture
def written(tmp_path):
    out, manifest = tmp_path / "ids.safetensors", tmp_path / "ids.json"
    out.write_bytes(b"0123456789" * 10)
    manifest.write_text("{}")
    P.write_sidecar(out, inputs=[manifest])
    return out, manifest


def test_an_output_is_checked_against_its_sidecar(written):
    out, manifest = written
    assert verify_output(out, fix="rerun", recorded_inputs=[manifest]) == P.sha256_path(out)
    out.write_bytes(out.read_bytes()[:50])  # truncated
    with pytest.raises(
        IntegrityError, match=rf"^{out} has changed since it was written: its sha256 is .*now 50 bytes; .*fix: rerun$"
    ):
        verify_output(out, fix="rerun")


def test_a_flipped_bit_and_a_changed_manifest_are_found(written):
    out, manifest = written
    data = bytearray(out.read_bytes())
    data[40] ^= 0x01
    out.write_bytes(bytes(data))
    with pytest.raises(IntegrityError, match="has changed since it was written"):
        verify_output(out, fix="rerun")
    data[40] ^= 0x01
    out.write_bytes(bytes(data))
    manifest.write_text('{"n": 1}')
    with pytest.raises(IntegrityError, match=rf"^{manifest} has changed since it was written"):
        verify_output(out, fix="rerun", recorded_inputs=[manifest])


def test_an_output_without_its_sidecar_is_refused(tmp_path):
    out = tmp_path / "x.bin"
    out.write_bytes(b"x")
    with pytest.raises(IntegrityError, match="has no provenance sidecar x.bin.prov.json.*fix: delete it"):
        verify_output(out, fix="delete it")
    with pytest.raises(IntegrityError, match="does not exist"):
        verify_output(tmp_path / "gone.bin", fix="rerun")


def test_prepared_files_are_checked_against_their_record(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"weights")
    hashes = {"model.safetensors": P.sha256_path(tmp_path / "model.safetensors")}
    verify_files(tmp_path, hashes, "the record", "prepare again")
    (tmp_path / "model.safetensors").write_bytes(b"weightz")
    with pytest.raises(
        IntegrityError, match="model.safetensors has changed since it was written: .* the record recorded"
    ):
        verify_files(tmp_path, hashes, "the record", "prepare again")
    (tmp_path / "model.safetensors").unlink()
    with pytest.raises(IntegrityError, match="model.safetensors is missing"):
        verify_files(tmp_path, hashes, "the record", "prepare again")


def test_a_rule_script_reports_a_clean_error_in_one_line(tmp_path):
    log = tmp_path / "job.log"
    code = textwrap.dedent(f"""
        from types import SimpleNamespace
        from trustmass.plumbing.rule_io import start_log
        from trustmass.plumbing.errors import IntegrityError
        start_log(SimpleNamespace(log=[{str(log)!r}], rule="ceiling", wildcards=["tiny", "words", "0000"]))
        raise IntegrityError("results/x has changed since it was written; fix: delete it")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr == "ceiling tiny/words/0000: results/x has changed since it was written; fix: delete it\n"
    assert log.read_text() == "error: results/x has changed since it was written; fix: delete it\n"
    # any other error keeps its traceback (in the log)
    done = subprocess.run(
        [sys.executable, "-c", code.replace('raise IntegrityError("', 'raise KeyError("')],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1 and "Traceback" in log.read_text()


@pytest.mark.parametrize(
    ("argv", "runs"),
    [
        (["--cores", "2", "all"], True),
        (["-pn"], False),
        (["--dry-run", "x"], False),
        (["--unlock"], False),
        (["--cores", "2", "--report", "r.html"], False),
        (["--configfile", "n.yaml", "-c2"], True),
        (["-S"], False),
    ],
)
def test_which_snakemake_calls_run_jobs(argv, runs):
    from trustmass.plumbing.run_checks import runs_jobs

    assert runs_jobs(argv) is runs
