"""The fault campaign (docs/reliability.md, "The fault campaign"): each fault injected into a tiny
real run, the error the user sees, nothing finished lost, and after the fix a rerun whose outputs
equal the uninterrupted run's.  `make test-faults` (a few minutes on 2 cores; the disk cases need
root to mount a tmpfs and are skipped, saying so, without it)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import time

import pytest
from campaign import (
    CERTIFIED,
    HELDOUT,
    LOSS,
    LOSS_TOKENS,
    MANIFEST,
    PROBE,
    RECORDS,
    SHARDS,
    Run,
    assert_same_as,
    change_token,
    checkout_copy,
    copy_run,
    extend_baseline,
    fill,
    first_error,
    fix_named_in,
    flip_bytes,
    kill_tree,
    log_says,
    make_baseline,
    remount,
    remove,
    tmpfs,
    wait_for,
)

from conftest import snakemake_command

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


@pytest.fixture(scope="module")
def loss_baseline(baseline, tmp_path_factory):
    """The uninterrupted run taken through the loss stage (held-out documents, map, probe, the loss of the
    held-out document): what the held-out and probe cases damage and compare with."""
    return extend_baseline(baseline, tmp_path_factory.mktemp("loss-baseline") / "run", *LOSS)


@pytest.fixture
def loss_run(loss_baseline, tmp_path):
    return copy_run(loss_baseline, tmp_path / "run")


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
    _kill_then_rerun(
        run,
        baseline,
        lambda r: log_says(r, "logs/capture/tiny/words/0001.log", "shapes:"),
        "a running capture",
        targets=CAPTURED,
    )


def test_kill_during_enumeration_then_rerun(run, baseline):
    remove(run, *RECORDS, "logs/ceiling/tiny/words/0000.log", "logs/ceiling/tiny/words/0001.log")
    # the ceiling job has printed its settings: the ES_pool enumeration runs
    _kill_then_rerun(
        run,
        baseline,
        lambda r: log_says(r, "logs/ceiling/tiny/words/0000.log", "CeilingSettings("),
        "an enumeration",
        targets=CAPTURED,
    )


def test_kill_during_a_scip_solve_then_rerun(run, baseline):
    remove(run, CERTIFIED, "logs/certify/shard_000.log")

    def solving(r):
        said = log_says(r, "logs/certify/shard_000.log", "instances, CertificationSettings(")
        started = []

        def condition():  # the instances are being solved: 3 s in
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
        run,
        baseline,
        f"ceiling tiny/words/0001: {SHARDS[1]} has changed since it was written",
        fix=lambda: remove(run, SHARDS[1]),
        kept=[SHARDS[0], RECORDS[0], "resources/documents/tiny/words.safetensors"],
    )
    assert "truncated" in line
    assert f"fix: delete it (rm {SHARDS[1]} {SHARDS[1]}.prov.json) and rerun snakemake: rule capture" in line


def test_a_bit_flipped_capture_shard_is_refused(run, baseline):
    # a flip in the data region: safetensors reads it without complaint, the records would be wrong
    _flip_byte(run.workdir / SHARDS[0])
    line = _refused_then_fixed(
        run,
        baseline,
        f"ceiling tiny/words/0000: {SHARDS[0]} has changed since it was written",
        fix=lambda: remove(run, SHARDS[0]),
        kept=[SHARDS[1], RECORDS[1]],
    )
    assert "rule capture writes it again" in line


def test_a_model_file_whose_sha256_no_longer_matches_is_refused(run, baseline):
    weights = run.workdir / "resources/models/tiny/model.safetensors"
    data = bytearray(weights.read_bytes())  # the link's target is shared with the baseline: replace the link
    data[len(data) // 2] ^= 0x10
    weights.unlink()
    weights.write_bytes(bytes(data))
    remove(run, SHARDS[1])  # a capture to redo
    line = _refused_then_fixed(
        run,
        baseline,
        "capture tiny/words/0001: resources/models/tiny/model.safetensors has changed since it was written",
        fix=lambda: shutil.rmtree(run.workdir / "resources/models/tiny"),
        kept=[SHARDS[0], RECORDS[0]],
    )
    assert "resources/models/tiny/trustmass_source.json (written when the model was prepared) recorded" in line
    assert "fix: prepare the model again: delete the folder (rm -r resources/models/tiny) and rerun" in line


def test_a_corrupt_document_tokenisation_is_refused(run, baseline):
    documents = run.workdir / "resources/documents/tiny/words.safetensors"
    _flip_byte(documents, at=documents.stat().st_size - 3)  # an id of the last document
    line = _refused_then_fixed(
        run,
        baseline,
        "capture tiny/words/",
        fix=lambda: remove(run, "resources/documents/tiny/words"),
        kept=["resources/corpora/words/corpus.txt", "resources/models/tiny/trustmass_source.json"],
    )
    assert "resources/documents/tiny/words.safetensors has changed since it was written" in line
    rel = "resources/documents/tiny/words.safetensors"
    assert f"fix: delete it (rm {rel} {rel}.prov.json) and rerun snakemake: rule tokenize_documents" in line


# ---- the rule boundary: every declared input checked against its sidecar, paths relative ---------


def _refused_at_the_boundary(run, targets, job, damaged, kept, forcerun=()):
    """Run ``targets`` (forcing ``forcerun``): the job ``job`` stops on the damaged input in one line that
    names it, both hashes and the rule that writes it again, with no traceback; ``kept`` unchanged and
    nothing half-written.  Then the fix the line names, applied: the rerun completes."""
    before = {rel: run.sha(rel) for rel in kept}
    done = run.snakemake(*targets, *(["--forcerun", *forcerun] if forcerun else []))
    assert done.returncode != 0, done.output
    line = first_error(done.output, f"{job}: {damaged} has changed since it was written")
    assert "fix: delete it (rm " in line and "writes it again" in line, line
    assert "Traceback" not in done.output, done.output
    assert {rel: run.sha(rel) for rel in kept} == before, "nothing already finished is lost"
    assert run.temporaries() == [], "nothing half-written is left"
    assert fix_named_in(line, run) == [damaged, f"{damaged}.prov.json"]
    done = run.snakemake(*targets)
    assert done.returncode == 0, done.output
    return line


def _same_files(run, baseline, *rels):
    for rel in rels:
        assert run.sha(rel) == baseline.sha(rel), rel


def test_a_changed_heldout_token_is_refused(loss_run, loss_baseline):
    # one id of the held-out document changed to another word: the file reads, the shapes are right,
    # the loss would be computed on a different text (before the rule boundary: loss_document exited 0)
    change_token(loss_run.workdir / HELDOUT, vocabulary=64)
    line = _refused_at_the_boundary(
        loss_run,
        LOSS_TOKENS[:1],
        "loss_document tiny/words/0002",
        HELDOUT,
        kept=[*SHARDS, "results/loss/tiny/map.parquet", *PROBE, "resources/heldout/tiny/words.json"],
    )
    assert "rule tokenize_heldout writes it again" in line
    _same_files(loss_run, loss_baseline, HELDOUT, *LOSS_TOKENS)


def test_a_flipped_shard_is_refused_by_the_probe(loss_run, loss_baseline):
    # 64 bytes of the probe's training shard flipped, its mtime kept: snakemake sees no change, and the
    # probe reruns alone when forced (as a loss.probe change would rerun it); before the rule boundary
    # it exited 0 and its sidecar recorded the damaged hash as its input
    flip_bytes(loss_run.workdir / SHARDS[0])
    line = _refused_at_the_boundary(
        loss_run,
        PROBE,
        "probe_train tiny",
        SHARDS[0],
        kept=[SHARDS[1], *RECORDS, *LOSS_TOKENS],
        forcerun=["probe_train"],
    )
    assert "rule capture writes it again" in line
    _same_files(loss_run, loss_baseline, SHARDS[0], *PROBE)
    assert_same_as(loss_run, loss_baseline, shards=SHARDS[:1], records=[], certified=False)


def test_a_truncated_ceiling_record_is_refused(run, baseline):
    # before the rule boundary: polars' "parquet: File out of specification", naming no file and no fix
    record = run.workdir / RECORDS[0]
    record.write_bytes(record.read_bytes()[: record.stat().st_size // 2])
    line = _refused_at_the_boundary(run, [MANIFEST], "certify_manifest", RECORDS[0], kept=[*SHARDS, RECORDS[1]])
    assert "truncated" in line and "rule ceiling writes it again" in line
    _same_files(run, baseline, MANIFEST)
    assert_same_as(run, baseline, records=RECORDS, certified=False)


def _snakemake_in(checkout, *args):
    """Snakemake run in a checkout, as a user runs it there: its Snakefile, its library first on the path."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(checkout / "src"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [*snakemake_command(), *args],
        cwd=checkout,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=900,
    )
    done.output = done.stdout + done.stderr
    return done


def test_a_moved_checkout_reruns_nothing(baseline, tmp_path):
    # a checkout with a finished run in it (to the claims report, whose inputs include the claims file),
    # moved and then copied elsewhere: every declared input is relative to the working directory, so
    # nothing reruns (before the rule boundary claims.yaml was declared by absolute path: claims_report reran)
    checkout = checkout_copy(tmp_path / "here" / "checkout")
    (checkout / "tiny.yaml").write_text(baseline.config.read_text(), encoding="utf-8")  # models stay outside
    (checkout / "lean.yaml").write_text("deploy: {enabled: false}\ntask_contexts: {enabled: false}\n", encoding="utf-8")
    args = ["results/claims.md", "--configfile", "tiny.yaml", "lean.yaml"]
    done = _snakemake_in(checkout, "--cores", "2", *args)
    assert done.returncode == 0, done.output
    finished = Run(checkout).files()
    (tmp_path / "there").mkdir()
    moved = checkout.rename(tmp_path / "there" / "checkout")
    copied = tmp_path / "elsewhere" / "checkout"
    shutil.copytree(moved, copied, symlinks=True)  # copy2: modification times kept
    for place in (moved, copied):
        planned = _snakemake_in(place, "-n", *args)
        assert planned.returncode == 0, planned.output
        assert "Nothing to be done" in planned.output, f"{place}: jobs rerun after the move:\n{planned.output[-4000:]}"
        done = _snakemake_in(place, "--cores", "2", *args)
        assert done.returncode == 0 and "Nothing to be done" in done.output, done.output
        assert Run(place).files() == finished, "nothing rewritten"


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
    bad = run.write_config(
        "gone.yaml", "corpora:\n  gone: {source: debian, package: r-cran-no-such-package, reader: r-lazyload}\n"
    )
    env_path = os.environ["PATH"]
    os.environ["PATH"] = f"{tools}{os.pathsep}{env_path}"
    try:
        done = run.run("--cores", "2", "resources/corpora/gone/corpus.txt", "--configfile", str(run.config), str(bad))
    finally:
        os.environ["PATH"] = env_path
    assert done.returncode != 0
    first_error(
        done.output, "prepare_corpus gone: corpus 'gone': the Debian archive has no package r-cran-no-such-package"
    )
    assert "Traceback" not in done.output, done.output
    assert "fix: check `package:`/`version:`" in done.output
    assert run.files("results") == kept and not (run.workdir / "resources/corpora/gone/corpus.txt").exists()
    assert json.loads((run.workdir / f"{SHARDS[0]}.prov.json").read_text())["output"]["sha256"] == run.sha(SHARDS[0])
