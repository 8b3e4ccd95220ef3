"""What the fault tests share: a finished tiny run to copy, runs that can be killed, fault injections
and comparisons with the uninterrupted run."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import psutil

from conftest import REPO, SNAKEFILE, Workflow, snakemake_command

sys.path.insert(0, str(REPO / "tests" / "workflow"))  # the tiny study (tiny_study.py: TINY, tiny_study_config)
from tiny_study import TINY  # noqa: E402

from trustmass.certification.runner import CERTIFIED_SCHEMA, TIMING_COLUMNS  # noqa: E402

SHARDS = ["results/capture/tiny/words/0000.safetensors", "results/capture/tiny/words/0001.safetensors"]
VALIDATION = [s.replace(".safetensors", ".validation.parquet") for s in SHARDS]
RECORDS = ["results/ceiling/tiny/words/0000.parquet", "results/ceiling/tiny/words/0001.parquet"]
CERTIFIED = "results/certify/shards/000.parquet"
MANIFEST = "results/certify/manifest.parquet"
#: the loss stage of the tiny study: its held-out chunking, the one held-out document, the probe
HELDOUT = "resources/heldout/tiny/words.safetensors"
LOSS_TOKENS = ["results/loss/tiny/words/0002.parquet", "results/loss/tiny/words/0002.cells.parquet"]
PROBE = ["results/loss/tiny/probe.safetensors", "results/loss/tiny/probe_recall.parquet"]
LOSS = [*LOSS_TOKENS, *PROBE]
TARGETS = ["captures", "records", CERTIFIED]  # the stages of `all` the campaign covers
#: columns of a certified shard that do not depend on the clock: all but the seconds (the work budget decides)
CERT_COLUMNS = [c for c in CERTIFIED_SCHEMA if c not in TIMING_COLUMNS]
#: where the tests note the first error line each case showed (for the table in docs/reliability.md), if set
SEEN = os.environ.get("TRUSTMASS_FAULTS_SEEN")


class Run(Workflow):
    """A tiny-study run folder: snakemake with its config, started to finish or to be killed."""

    def __init__(self, workdir: Path):
        super().__init__(workdir)
        self.config = workdir / "tiny.yaml"

    def command(self, *args: str) -> list[str]:
        return [*snakemake_command(), "--snakefile", str(SNAKEFILE), "--directory", str(self.workdir), *args]

    def snakemake(self, *targets: str, configs=(), cores: str = "2", timeout: float = 600):
        return self.run(
            "--cores",
            cores,
            *(targets or TARGETS),
            "--configfile",
            str(self.config),
            *map(str, configs),
            timeout=timeout,
        )

    def start(self, *targets: str) -> subprocess.Popen:
        log = open(self.workdir / f"started-{time.time_ns()}.log", "w")  # noqa: SIM115 -- closed with the process
        cmd = self.command("--cores", "2", *(targets or TARGETS), "--configfile", str(self.config))
        proc = subprocess.Popen(
            cmd,
            cwd=self.workdir,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            start_new_session=True,
        )
        proc.log_path = Path(log.name)
        return proc

    def unlock(self):
        done = self.run("--unlock", *TARGETS, "--configfile", str(self.config))
        assert done.returncode == 0, done.output

    def sha(self, rel: str) -> str:
        return hashlib.sha256((self.workdir / rel).read_bytes()).hexdigest()

    def files(self, under: str = "results") -> dict[str, str]:
        """sha256 of every file below ``under`` (relative paths)."""
        root = self.workdir / under
        return {
            p.relative_to(self.workdir).as_posix(): self.sha(p.relative_to(self.workdir).as_posix())
            for p in sorted(root.rglob("*"))
            if p.is_file()
        }

    def temporaries(self) -> list[Path]:
        return [p for root in ("results", "resources") for p in (self.workdir / root).rglob("*") if ".tmp" in p.name]


def make_baseline(folder: Path) -> Run:
    """The uninterrupted run: the tiny study's capture shards, ceiling records and certified shard."""
    from tiny_study import tiny_study_config

    run = Run(folder)
    run.config.write_text(TINY + tiny_study_config(folder), encoding="utf-8")
    done = run.snakemake()
    assert done.returncode == 0, done.output
    return run


def extend_baseline(baseline: Run, folder: Path, *targets: str) -> Run:
    """A copy of the uninterrupted run taken further, to ``targets`` (the loss stage: held-out documents,
    loss map, probe, the per-document loss): the baseline of the cases that damage what those read."""
    run = copy_run(baseline, folder)
    done = run.snakemake(*targets)
    assert done.returncode == 0, done.output
    return run


def copy_run(baseline: Run, folder: Path) -> Run:
    """A copy of the finished run (mtimes kept: snakemake sees it as finished), models and corpus shared."""
    shutil.copytree(baseline.workdir, folder, symlinks=True, ignore=shutil.ignore_patterns("started-*.log"))
    return Run(folder)


def remove(run: Run, *outputs: str) -> None:
    """Delete outputs with their sidecars (and the job logs): jobs the next run has to do again."""
    for rel in outputs:
        for path in (run.workdir / rel).parent.glob(Path(rel).name + "*"):
            path.unlink()


def change_token(path: Path, vocabulary: int) -> tuple[int, int]:
    """One token id of a safetensors id file changed in place to another valid id (the middle of its last
    row): the file still reads, every shape is right, only the text differs.  Returns (old, new)."""
    data = bytearray(path.read_bytes())
    size = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + size])
    info = next(v for k, v in header.items() if k != "__metadata__" and v["dtype"] in ("I64", "I32"))
    width = 8 if info["dtype"] == "I64" else 4
    row = info["shape"][-1] if len(info["shape"]) > 1 else 1
    at = 8 + size + info["data_offsets"][1] - (row // 2 + 1) * width  # the middle of the last row
    old = int.from_bytes(data[at : at + width], "little", signed=True)
    new = 3 + (old - 3 + 1) % (vocabulary - 3)  # another word id (ids below 3 are <unk>, <s>, </s>)
    data[at : at + width] = new.to_bytes(width, "little", signed=True)
    path.write_bytes(bytes(data))
    return old, new


def flip_bytes(path: Path, count: int = 64) -> None:
    """``count`` bytes in the middle of ``path`` flipped in place, its modification time kept (a disk or
    a copy that damages content without touching the mtime: snakemake sees nothing changed)."""
    stat = path.stat()
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    for i in range(middle, middle + count):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def fix_named_in(line: str, run: Run) -> list[str]:
    """Apply the fix an error line names, as a user would: the files in its ``(rm ...)``, deleted."""
    match = re.search(r"fix: delete it \(rm ([^)]*)\)", line)
    assert match, f"the error names no files to delete: {line}"
    files = match.group(1).split()
    for rel in files:
        (run.workdir / rel).unlink()
    return files


def checkout_copy(folder: Path) -> Path:
    """The checkout's tracked files (as the working tree has them) copied to ``folder``, modification
    times kept, as `cp -a` or `mv` would (the venv stays where it is)."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, text=True)
    if listed.returncode != 0:
        import pytest

        pytest.skip(f"not a git checkout ({listed.stderr.strip()}): the moved-checkout case copies its tracked files")
    for rel in filter(None, listed.stdout.split("\0")):
        if (REPO / rel).is_file():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, folder / rel)
    return folder


def kill_tree(proc: subprocess.Popen) -> list[str]:
    """kill -9 snakemake and every process below it (the jobs), as a crash or an OOM killer would."""
    top = psutil.Process(proc.pid)
    tree = [top, *top.children(recursive=True)]
    names = []
    for p in tree:
        try:
            names.append(" ".join(p.cmdline()[:2]))
            p.kill()
        except psutil.NoSuchProcess:
            pass
    proc.wait(timeout=30)
    psutil.wait_procs([p for p in tree if p.is_running()], timeout=30)
    return names


def wait_for(condition, proc: subprocess.Popen, what: str, timeout: float = 300) -> None:
    deadline = time.time() + timeout
    while not condition():
        if proc.poll() is not None:
            raise AssertionError(f"the run ended before {what}:\n{proc.log_path.read_text()[-3000:]}")
        if time.time() > deadline:
            raise AssertionError(f"no {what} within {timeout} s")
        time.sleep(0.05)


def log_says(run: Run, log: str, text: str):
    path = run.workdir / log
    return lambda: path.is_file() and text in path.read_text(errors="replace")


def assert_same_as(run: Run, baseline: Run, shards=SHARDS, records=RECORDS, certified=True) -> None:
    """The run's outputs equal the uninterrupted run's: shards and their validation bitwise, records
    as frames (exactly), the certified shard on the columns SCIP's time limits do not change."""
    import polars as pl
    from polars.testing import assert_frame_equal

    from trustmass.certification.misocp import STATUSES

    for rel in [*shards, *(s.replace(".safetensors", ".validation.parquet") for s in shards)]:
        assert run.sha(rel) == baseline.sha(rel), rel
    for rel in records:
        assert_frame_equal(pl.read_parquet(run.workdir / rel), pl.read_parquet(baseline.workdir / rel))
    if certified:
        got = pl.read_parquet(run.workdir / CERTIFIED)
        want = pl.read_parquet(baseline.workdir / CERTIFIED)
        assert_frame_equal(got.select(CERT_COLUMNS), want.select(CERT_COLUMNS))
        assert got["status"].is_in(list(STATUSES)).all(), got["status"].value_counts()
    for rel in [*shards, *records, *([CERTIFIED] if certified else [])]:
        prov = json.loads((run.workdir / f"{rel}.prov.json").read_text())
        assert prov["output"]["sha256"] == run.sha(rel), rel
    assert run.temporaries() == [], "nothing half-written is left"


def first_error(output: str, starts: str) -> str:
    """The first line of snakemake's output that starts with ``starts`` (what the user sees first)."""
    for line in output.splitlines():
        if line.startswith(starts):
            seen(line)
            return line
    raise AssertionError(f"no line starts with {starts!r}:\n{output[-4000:]}")


def seen(line: str) -> None:
    import inspect

    if SEEN:
        case = next(f.function for f in inspect.stack() if f.function.startswith("test_"))
        with open(SEEN, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"test": case, "line": line}) + "\n")


@contextmanager
def tmpfs(folder: Path, size: str = "16m"):
    """``folder`` replaced by a small tmpfs holding a copy of its files, mtimes kept (a separate disk
    that can fill up or go read-only); unmounted afterwards, the folder as it was before."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        import pytest

        pytest.skip("mounting a tmpfs needs root and mount(8); the full/read-only disk cases cannot run here")
    aside = folder.with_name(folder.name + ".aside")
    folder.rename(aside)
    folder.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True, text=True
    )
    if done.returncode != 0:
        folder.rmdir()
        aside.rename(folder)
        import pytest

        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}); the full/read-only disk cases cannot run")
    try:
        shutil.copytree(aside, folder, symlinks=True, dirs_exist_ok=True, copy_function=shutil.copy2)
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)
        folder.rmdir()
        aside.rename(folder)


def remount(folder: Path, mode: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{mode}", str(folder)], check=True, capture_output=True)


def fill(folder: Path) -> Path:
    """Fill the disk of ``folder`` to the last byte with one file (returned: delete it to free the space)."""
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as fh:
        for block in (1 << 16, 1 << 10, 1):
            try:
                while True:
                    fh.write(b"\0" * block)
            except OSError:
                continue
    return filler
