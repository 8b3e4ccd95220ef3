"""The fault campaign (docs/reliability.md, "The fault campaign"): each fault injected into a tiny
real run, the error the user sees, nothing finished lost, and after the fix a rerun whose outputs
equal the uninterrupted run's.  `make test-faults` (a few minutes on 2 cores; the disk cases need
root to mount a tmpfs and are skipped, saying so, without it)."""

from __future__ import annotations

import json
import os
import stat
import time

import pytest
from campaign import (
    CERTIFIED, RECORDS, SHARDS, assert_same_as, copy_run, fill, first_error, kill_tree, log_says, make_baseline,
    remount, remove, tmpfs, wait_for,
)  # fmt: skip

pytestmark = [pytest.mark.slow, pytest.mark.workflow]

#: what the cases other than the SCIP one run: the certification (it reads every shard and record) would
#: rerun after each of them, a minute of SCIP the SCIP case covers
CAPTURED = ("captures", "records")


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    """The uninterrupted run every case is compared with (and copied from)."""
    return make_baseline(tmp_path_factory.mktemp("baseline"))


@pytest.fixture
def run(baseline, tmp_path):
    return copy_run(baseline, tmp_path / "run")


# ---- kill -9, then rerun --------------------------------------------------------------------------


def _kill_then_rerun(run, baseline, condition_of, what, targets=()):
    certified = not targets or "results/certify/shards/000.parquet" in targets
    proc = run.start(*targets)
    wait_for(condition_of(run), proc, what)
    killed = kill_tree(proc)
    assert any("python" in k for k in killed[1:]), f"no job was running when killed: {killed}"
    stale = run.snakemake(*targets)  # the lock of the killed run is still there
    assert stale.returncode != 0
    first_error(stale.output, "Error: Directory cannot be locked")
    assert "--unlock" in stale.output
    run.unlock()
    done = run.snakemake(*targets)
    assert done.returncode == 0, done.output
    assert_same_as(run, baseline, certified=certified)
    return done


def test_kill_during_capture_then_rerun(run, baseline):
    remove(run, SHARDS[1], SHARDS[1].replace(".safetensors", ".validation.parquet"), "logs/capture/tiny/words/0001.log")
    # the capture job is under way: it has read the documents and the model shapes (its log says so)
    _kill_then_rerun(run, baseline, lambda r: log_says(r, "logs/capture/tiny/words/0001.log", "shapes:"), "a running capture",
                     targets=CAPTURED)  # fmt: skip


def test_kill_during_enumeration_then_rerun(run, baseline):
    remove(run, *RECORDS, "logs/ceiling/tiny/words/0000.log", "logs/ceiling/tiny/words/0001.log")
    # the ceiling job has printed its settings: the ES_pool enumeration runs
    _kill_then_rerun(run, baseline, lambda r: log_says(r, "logs/ceiling/tiny/words/0000.log", "CeilingSettings("), "an enumeration",
                     targets=CAPTURED)  # fmt: skip


def test_kill_during_a_scip_solve_then_rerun(run, baseline):
    remove(run, CERTIFIED, "logs/certify/shard_000.log")

    def solving(r):
        said = log_says(r, "logs/certify/shard_000.log", "instances, CertificationSettings(")
        started = []

        def condition():  # the instances are being solved (the time limit is 1 s per solve): 3 s in
            if not started and said():
                started.append(time.time())
            return bool(started) and time.time() - started[0] > 3

        return condition

    _kill_then_rerun(run, baseline, solving, "a SCIP solve")


# ---- damaged inputs -------------------------------------------------------------------------------


def _refused_then_fixed(run, baseline, first_line, fix, kept):
    before = {rel: run.sha(rel) for rel in kept}
    done = run.snakemake(*CAPTURED)
    assert done.returncode != 0, done.output
    line = first_error(done.output, first_line)
    assert "fix: " in line and "Traceback" not in done.output, done.output
    assert {rel: run.sha(rel) for rel in kept} == before, "nothing already finished is lost"
    fix()
    done = run.snakemake(*CAPTURED)
    assert done.returncode == 0, done.output
    assert_same_as(run, baseline, certified=False)
    return line


def _flip_byte(path, at=None):
    data = bytearray(path.read_bytes())
    at = len(data) // 2 if at is None else at
    data[at] ^= 0x10
    path.write_bytes(bytes(data))


def test_a_truncated_capture_shard_is_refused(run, baseline):
    shard = run.workdir / SHARDS[1]
    shard.write_bytes(shard.read_bytes()[: shard.stat().st_size // 2])
    line = _refused_then_fixed(
        run, baseline, f"ceiling tiny/words/0001: {SHARDS[1]} has changed since it was written",
        fix=lambda: remove(run, SHARDS[1]), kept=[SHARDS[0], RECORDS[0], "resources/documents/tiny/words.safetensors"],
    )
    assert f"fix: delete it (rm {SHARDS[1]}*) and rerun" in line and "truncated" in line


def test_a_bit_flipped_capture_shard_is_refused(run, baseline):
    # a flip in the data region: safetensors reads it without complaint, the records would be wrong
    _flip_byte(run.workdir / SHARDS[0])
    line = _refused_then_fixed(
        run, baseline, f"ceiling tiny/words/0000: {SHARDS[0]} has changed since it was written",
        fix=lambda: remove(run, SHARDS[0]), kept=[SHARDS[1], RECORDS[1]],
    )
    assert "the capture rule writes it again" in line


def test_a_model_file_whose_sha256_no_longer_matches_is_refused(run, baseline):
    weights = run.workdir / "resources/models/tiny/model.safetensors"
    data = bytearray(weights.read_bytes())  # the link's target is shared with the baseline: replace the link
    data[len(data) // 2] ^= 0x10
    weights.unlink()
    weights.write_bytes(bytes(data))
    remove(run, SHARDS[1])  # a capture to redo
    line = _refused_then_fixed(
        run, baseline, "capture tiny/words/0001: resources/models/tiny/model.safetensors has changed since it was written",
        fix=lambda: __import__("shutil").rmtree(run.workdir / "resources/models/tiny"), kept=[SHARDS[0], RECORDS[0]],
    )
    assert "resources/models/tiny/trustmass_source.json (written when the model was prepared) recorded" in line
    assert "fix: prepare the model again: delete the folder (rm -r resources/models/tiny) and rerun" in line


def test_a_corrupt_document_tokenisation_is_refused(run, baseline):
    documents = run.workdir / "resources/documents/tiny/words.safetensors"
    _flip_byte(documents, at=documents.stat().st_size - 3)  # an id of the last document
    line = _refused_then_fixed(
        run, baseline, "capture tiny/words/", fix=lambda: remove(run, "resources/documents/tiny/words"),
        kept=["resources/corpora/words/corpus.txt", "resources/models/tiny/trustmass_source.json"],
    )
    assert "resources/documents/tiny/words.safetensors has changed since it was written" in line
    assert "fix: delete it (rm resources/documents/tiny/words.*) and rerun" in line


# ---- the disk -------------------------------------------------------------------------------------


def test_a_full_disk_is_one_clean_error_and_loses_nothing(run, baseline):
    remove(run, RECORDS[1])
    with tmpfs(run.workdir / "results") as results:
        filler = fill(results)
        kept = run.files()
        done = run.snakemake(*CAPTURED)
        assert done.returncode != 0
        line = first_error(done.output, "ceiling tiny/words/0001: cannot write")
        assert f"cannot write {RECORDS[1]}: the disk is full" in line and "fix: free space" in line
        assert "Traceback" not in done.output, done.output
        assert run.files() == kept and run.temporaries() == []  # nothing lost, nothing half-written
        filler.unlink()
        done = run.snakemake(*CAPTURED)
        assert done.returncode == 0, done.output
        assert_same_as(run, baseline, certified=False)


def test_a_read_only_results_folder_stops_the_run_before_any_job(run, baseline):
    remove(run, RECORDS[1])
    with tmpfs(run.workdir / "results") as results:
        kept = run.files()
        remount(results, "ro")
        done = run.snakemake(*CAPTURED)
        assert done.returncode != 0
        line = first_error(done.output, "cannot write to results/")
        assert "read-only file system or no write permission" in line and "fix: make it writable" in line
        assert "Traceback" not in done.output and "localrule ceiling" not in done.output, done.output
        assert run.files() == kept
        remount(results, "rw")
        done = run.snakemake(*CAPTURED)
        assert done.returncode == 0, done.output
        assert_same_as(run, baseline, certified=False)


# ---- two runs, the configuration, the sources ----------------------------------------------------


def test_two_runs_at_once_in_the_same_folder(run, baseline):
    remove(run, CERTIFIED, "logs/certify/shard_000.log")  # the first run's job: about a minute of SCIP
    first = run.start()
    wait_for(log_says(run, "logs/certify/shard_000.log", "certify shard 0:"), first, "the first run's job")
    second = run.snakemake()
    assert second.returncode != 0, second.output
    first_error(second.output, "Error: Directory cannot be locked")
    assert first.wait(timeout=600) == 0, first.log_path.read_text()[-3000:]
    assert_same_as(run, baseline)


def test_an_impossible_budget_is_refused_at_start_up(run):
    kept = run.files()
    bad = run.write_config("bad.yaml", "budgets:\n  native: [40, 100]\n")
    done = run.snakemake(configs=[bad])
    assert done.returncode != 0
    line = first_error(done.output, "  - config.budgets.native: 100 above capture.min_position 40")
    assert "fix: budgets of at most 40, or capture.min_position: 100 or more" in line
    assert "Job stats:" not in done.output and run.files() == kept


def test_a_missing_corpus_package_names_the_corpus_and_the_fix(run, tmp_path):
    # an apt-get that finds no such package (as the Debian archive answers for a name it lacks), so
    # that the case runs the same without network; a real run prints the same first line (docs/reliability.md)
    tools = tmp_path / "bin"
    tools.mkdir()
    fake = tools / "apt-get"
    fake.write_text('#!/bin/sh\n[ "$1" = update ] && exit 0\necho "E: Unable to locate package $2" >&2\nexit 100\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    kept = run.files("results")
    bad = run.write_config("gone.yaml", "corpora:\n  gone: {source: debian, package: r-cran-no-such-package, reader: r-lazyload}\n")
    env_path = os.environ["PATH"]
    os.environ["PATH"] = f"{tools}{os.pathsep}{env_path}"
    try:
        done = run.run("--cores", "2", "resources/corpora/gone/corpus.txt", "--configfile", str(run.config), str(bad))
    finally:
        os.environ["PATH"] = env_path
    assert done.returncode != 0
    line = first_error(done.output, "prepare_corpus gone: corpus 'gone': the Debian archive has no package r-cran-no-such-package")
    assert "Traceback" not in done.output, done.output
    assert "fix: check `package:`/`version:`" in done.output
    assert run.files("results") == kept and not (run.workdir / "resources/corpora/gone/corpus.txt").exists()
    assert json.loads((run.workdir / f"{SHARDS[0]}.prov.json").read_text())["output"]["sha256"] == run.sha(SHARDS[0])
