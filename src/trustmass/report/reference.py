"""A committed reference run and the check of a new run against it.

``save`` copies a run's small outputs -- every figure and table file, every statistics frame, the
deployment rows, the certification's manifest, results and sweep rows, the claims report -- with their
provenance sidecars into a reference folder, and writes ``MANIFEST.json`` (each file's sha256 and size,
the run's code version and config files).  ``check`` compares a run's ``results/`` with a reference and
prints every difference:

* bitwise first; a file that differs is then compared by kind (:func:`compare_file`):
* statistics frames and deployment rows (``.parquet``) and tables (``.csv``): the same columns and
  rows, float columns within ``rtol`` / ``atol`` (NaN equal to NaN), other columns exactly except the
  numbers printed in a string (a JSON ``context``, a claim's reason), which are compared as numbers
  (:func:`texts_close`) -- every column but the timing columns (:data:`TIMING_COLUMNS`: seconds, and
  ratios of seconds, by name), and in a headline frame every cell but the estimate of a claim value
  that is a time (``timing: true`` in ``data/claims.yaml``);
* ``claims.json``: every claim and value as JSON (floats, and numbers inside strings, within
  tolerance), but the values that read seconds (``timing: true``) and what aggregates them (their
  claim's status, direction and size); the summary and the counts are compared without those claims;
* a statistic listed in :data:`TOLERANCES` is compared with its own stated tolerance (the report
  prints each, with its reason);
* figures (``.png``): pixel by pixel; the share of pixels that differ is reported, and counts as a
  difference above ``pixel_share`` (a figure drawn from frames equal within tolerance can move a
  line by a pixel);
* provenance sidecars: the config slice and seeds exactly (wall times, hosts and code versions are
  recorded, not compared);
* the Markdown and HTML renderings of a table or of the claims report (:data:`RENDERED`) are drawn
  from its CSV or ``claims.json`` and compared there, not separately.

Left out whole (:data:`TIMED`): the enumeration benchmark (every number it holds is a rate) and the outputs
of a stage whose outcomes depend on the machine's speed (:data:`LOAD_DEPENDENT`: none since the certification
stops on work budgets, issue 38).  The report lists everything it left out.

``readme`` fills the README's opening block (Figures 1-4 linking to their sidecars, the claims
summary) from a reference folder, so the README shows what the committed run regenerated.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

from trustmass.report.readme_block import MANIFEST, write_readme_block
from trustmass.report.run_cpus import cpu_note, sidecar_cpus
from trustmass.report.text_numbers import numbers_close, texts_close

#: columns (of a frame or table) and keys (of a JSON record) that hold seconds or a ratio of seconds, each
#: with the writers that record it: the only parts of an output the check leaves out -- everything else
#: in the file is compared.  Found by reading every writer of a kept output (``time.perf_counter`` /
#: ``time.time`` in src/ and scripts/: the rest write seconds only into provenance sidecars, whose wall
#: times are not compared, or into logs).  ``save`` refuses an output with a column whose name says
#: seconds (:data:`SECONDS_NAME`) that is not here, and tests/unit/test_reference.py checks every output
#: of both committed references and every ``timing: true`` claim value's column, so a new timing column
#: cannot slip into the comparison unnoticed (nor into the references).
TIMING_COLUMNS: dict[str, str] = {
    "prefill_s": "deployment rows (deploy.runner.run_item: the shared dense prefill), replay rows "
    "(deploy.replay.replay_rows: a method's prefill as kvpress ships it), deploy_timing (its mean)",
    "score_s": "deployment rows (a method's score calls and kept-set selection), deploy_timing",
    "decode_s": "deployment rows (the greedy decode), deploy_timing",
    "dense_prefill_s": "replay rows (the plain prefill)",
    "cost_over_dense": "replay rows: prefill_s / dense_prefill_s",
    "replay_prefill_s": "deploy_timing (report.frames.deploy): the replay rows' median prefill_s",
    "replay_cost_over_dense": "deploy_timing: the replay rows' median cost_over_dense (claims 69, 115)",
    "seconds": "certification shards and certified.parquet (certification.runner: an instance's solve), "
    "sweep rows (certification.runner.sweep_rows: one pool enumeration)",
    "enumeration_seconds": "certification shards, certified.parquet (the pool enumeration)",
    "max_solve_seconds": "certification shards, certified.parquet (the longest solve)",
    "median_seconds": "Table 7 and the sweep (report.frames.certification)",
    "max_seconds": "Table 7",
}
#: a column or key whose name says it holds seconds (or a rate per second): it must be a timing column
SECONDS_NAME = re.compile(r"(_s|_ms|_per_s)$|(^|_)(seconds|secs|sec|wall|elapsed|time)(_|$)")
#: a headline frame's (trustmass.report.headline) cells that hold a claim value's estimate: left out on
#: the rows of a value that is a time (``timing: true``); the row itself (its group, counts, source) is compared
HEADLINE_ESTIMATE = ("estimate", "low", "high")

#: outputs left out whole: the enumeration benchmark (rates, and meets_50M_per_core decided on one), and
#: the provenance sidecars' wall times, hosts and code versions (a sidecar's config and seeds are compared:
#: :func:`compare_file`).  The SLURM test (tests/cluster) allows a bitwise difference only here, in a
#: timing column, or in a still load-dependent output.
TIMED = re.compile(r"(\.prov\.json|/bench/enumeration\.json)$")
#: the outputs of a stage whose results (not only their seconds) depend on the machine's speed, by the
#: stage (a key of trustmass.report.declared.DECLARING_MODULES: the claim values it declares are left out
#: of claims.json with them)
LOAD_DEPENDENT_OUTPUTS: dict[str, str] = {
    "certification": r"/certify/(certified|shards/\d+)\.parquet|/stats/(table7|headline_certification)\.parquet"
    r"|/tables/table7_certification\.\w+",
}
#: the stages whose outcomes still depend on the machine's speed: none.  The certification was one while it
#: stopped its solves at certification.time_limit_s; since issue 38 it stops on work budgets (bnb's work units,
#: SCIP's nodes and LP iterations), the seconds only a safety net whose hit is its own status (``safety_stop``),
#: so Table 7, the certification headline, certified.parquet and the CERT claims read from them are compared
#: but for their timing columns.  A stage that comes to depend on the clock again is named here, with its
#: outputs in LOAD_DEPENDENT_OUTPUTS, and every report lists what it leaves out.
LOAD_DEPENDENT: tuple[str, ...] = ()
#: renderings of a compared file, compared there: a table's Markdown and HTML (report.tables.write renders
#: them from the table it writes as CSV) and the claims report's (rendered from the dict written as claims.json)
RENDERED = re.compile(r"(/tables/[^/]+\.(md|html)|/claims\.(md|html))$")
#: what a reference holds, relative to the run's folder
KEPT = (
    "results/figures/*.png",
    "results/tables/*.csv",
    "results/tables/*.md",
    "results/stats/*.parquet",
    "results/deploy/*/*.parquet",  # the replay rows of each deployment model
    "results/deploy/*/*/*.parquet",  # the deployment rows: answers, kept entries and bytes (and their seconds)
    "results/certify/*.parquet",  # the manifest, the certification's results, the sweep rows
    "results/claims.md",
    "results/claims.json",
    "results/controls/*/stats/*.parquet",  # the sanity-check controls' statistics and claims (trustmass.plan.controls)
    "results/controls/*/certify/*.parquet",
    "results/controls/*/claims.json",
)
SIDECAR = ".prov.json"
#: the most a reference may hold (small outputs only; 8 MB until the controls' two arms added their statistics,
#: certification and claims.json: the default's came to 8.9 MB with every study corpus controlled, the CPU
#: panel's to 13.4 MB, three claims.json of 1.5-1.8 MB among them)
MAX_BYTES = 16_000_000


#: statistics compared with their own tolerance instead of ``rtol``: name (a frame's or table's
#: column, or a claim value's name) -> (rtol, why).  Empty: with the pinned BLAS kernel and threads
#: (trustmass.plumbing.determinism) every statistic measured so far repeats bitwise on AVX2 machines.
#: A statistic goes here only with a measurement that shows it legitimately moves, and the reason.
TOLERANCES: dict[str, tuple[float, str]] = {}
#: a number printed in text: sign, digits, decimals, exponent


@dataclass(frozen=True)
class Difference:
    path: str
    what: str


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def kept_files(run: Path) -> list[Path]:
    """The outputs a reference keeps, relative to ``run``, each with its sidecar where it has one."""
    files = sorted({p for pattern in KEPT for p in run.glob(pattern) if p.is_file()})
    sidecars = [p.with_name(p.name + SIDECAR) for p in files if p.with_name(p.name + SIDECAR).is_file()]
    return [p.relative_to(run) for p in sorted(files + sidecars)]


def unlisted_timing_columns(frame) -> list[str]:
    """The numeric columns of a polars frame whose name says seconds (:data:`SECONDS_NAME`) but that are no
    timing column: a comparison would hold them to tolerance, and a rerun fail on the clock."""
    return [
        name
        for name, dtype in frame.schema.items()
        if SECONDS_NAME.search(name) and name not in TIMING_COLUMNS and dtype.is_numeric()
    ]


def _read_frame(path: Path):
    import polars as pl

    return pl.read_parquet(path) if path.suffix == ".parquet" else pl.read_csv(path, infer_schema_length=None)


def save(run: Path, reference: Path, configs: list[Path]) -> dict:
    """Copy the run's kept outputs (and the config files) into ``reference``; write its manifest.

    Refuses a kept frame or table with a column whose name says seconds that is not a timing column
    (:data:`TIMING_COLUMNS`): name it there first, or the check would compare the clock."""
    files = kept_files(run)
    if not files:
        raise SystemExit(f"reference: no outputs under {run / 'results'}; run the workflow first (make run)")
    total = sum((run / f).stat().st_size for f in files)
    if total > MAX_BYTES:
        raise SystemExit(f"reference: {total:,} bytes of outputs exceed {MAX_BYTES:,}; keep the reference small")
    unlisted = {
        str(rel): cols
        for rel in files
        if rel.suffix in (".parquet", ".csv") and (cols := unlisted_timing_columns(_read_frame(run / rel)))
    }
    if unlisted:
        raise SystemExit(
            "reference: columns whose name says seconds are not timing columns: "
            + "; ".join(f"{rel}: {', '.join(cols)}" for rel, cols in unlisted.items())
            + "; fix: add each to TIMING_COLUMNS (trustmass.report.reference) with its writer, or rename it"
        )
    if reference.exists():
        shutil.rmtree(reference)
    for rel in files:
        (reference / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(run / rel, reference / rel)
    for config in configs:
        (reference / "config").mkdir(parents=True, exist_ok=True)
        shutil.copy2(config, reference / "config" / config.name)
    claims = run / "results" / "claims.json.prov.json"
    code = json.loads(claims.read_text())["code"] if claims.is_file() else None
    manifest = {
        "saved_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "code": code,
        "configs": [c.as_posix() for c in configs],  # as given: config.yaml, config/cpu-panel.yaml
        "files": {str(rel): {"sha256": _sha256(run / rel), "bytes": (run / rel).stat().st_size} for rel in files},
    }
    (reference / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


# -- comparison ------------------------------------------------------------------------------------


def compare_json(got, want, rtol: float, atol: float, where: str = "", skip: frozenset[str] = frozenset()) -> list[str]:
    """Every place two JSON values differ (numbers, and numbers printed in strings, within tolerance); the
    keys in ``skip`` (timing keys) are not compared, at any depth."""
    if isinstance(want, dict) and isinstance(got, dict):
        out = [f"{where}/{k}: missing" for k in want if k not in got]
        out += [f"{where}/{k}: not in the reference" for k in got if k not in want]
        return out + [
            d
            for k in want
            if k in got and k not in skip
            for d in compare_json(got[k], want[k], rtol, atol, f"{where}/{k}", skip)
        ]
    if isinstance(want, list) and isinstance(got, list):
        if len(got) != len(want):
            return [f"{where}: {len(got)} entries, the reference has {len(want)}"]
        return [
            d
            for i, (g, w) in enumerate(zip(got, want, strict=True))
            for d in compare_json(g, w, rtol, atol, f"{where}[{i}]", skip)
        ]
    numbers = (int, float)
    if (
        isinstance(want, numbers)
        and isinstance(got, numbers)
        and not isinstance(want, bool)
        and not isinstance(got, bool)
    ):
        return (
            []
            if numbers_close(float(got), float(want), rtol, atol)
            else [f"{where}: {got!r}, the reference has {want!r}"]
        )
    if isinstance(want, str) and isinstance(got, str):
        return [] if texts_close(got, want, rtol, atol) else [f"{where}: {got!r}, the reference has {want!r}"]
    return [] if got == want else [f"{where}: {got!r}, the reference has {want!r}"]


def tolerance(name: str, rtol: float) -> float:
    """The rtol a statistic is compared with: its own (:data:`TOLERANCES`) or the default."""
    return TOLERANCES[name][0] if name in TOLERANCES else rtol


@lru_cache(maxsize=None)
def timing_values() -> frozenset[tuple[int, str]]:
    """(claim id, value name) of every claim value that is a time or a ratio of times (``timing: true``)."""
    from trustmass.report.claims.data import load_claims

    return frozenset((c.id, v.name) for c in load_claims() for v in c.values if v.timing)


@lru_cache(maxsize=None)
def left_out_values(load_dependent: tuple[str, ...] = ()) -> dict[tuple[int, str], str]:
    """(claim id, value name) -> why the check leaves it out of claims.json: it reads seconds, or it is read
    from a stage in ``load_dependent`` (:data:`LOAD_DEPENDENT`)."""
    out = dict.fromkeys(timing_values(), "timing")
    if load_dependent:
        from trustmass.report.declared import declarations

        for stage, specs in declarations(load_dependent).items():
            for spec in specs:
                out.setdefault((spec.claim, spec.value), f"{stage}: load-dependent")
    return out


def _timing_rows(frame):
    """A bool per row: the row of a headline frame (claim_id, value_name) holds a value that is a time."""
    import numpy as np

    if not {"claim_id", "value_name"} <= set(frame.columns):
        return None
    timed = timing_values()
    return np.array([(c, v) in timed for c, v in zip(frame["claim_id"].to_list(), frame["value_name"].to_list())])


def _cells_differ(g, w, rtol: float, atol: float):
    """A bool per row: the two series' cells differ (floats within tolerance, NaN equal to NaN; numbers
    printed in strings compared as numbers; lists and structs as JSON)."""
    import numpy as np
    import polars as pl

    if g.dtype.is_float() and w.dtype.is_float():
        a, b = g.to_numpy().astype(float), w.to_numpy().astype(float)
        return ~(np.isclose(a, b, rtol=rtol, atol=atol) | (np.isnan(a) & np.isnan(b)))
    if g.dtype.is_nested() or w.dtype.is_nested():
        return np.array([bool(compare_json(x, y, rtol, atol)) for x, y in zip(g.to_list(), w.to_list())], dtype=bool)
    a, b = g.cast(pl.String).fill_null("\0null"), w.cast(pl.String).fill_null("\0null")
    bad = ~(a == b).to_numpy()
    for r in np.flatnonzero(bad):  # numbers printed in a string (a JSON context) compare as numbers
        bad[r] = not texts_close(a[int(r)], b[int(r)], rtol, atol)
    return bad


def compare_frames(got, want, rtol: float, atol: float, limit: int = 5, left_out: list | None = None) -> list[str]:
    """Every column in which two polars frames differ (floats within tolerance), a few rows each.

    The frames must have the same columns and rows; the values of a timing column (:data:`TIMING_COLUMNS`)
    are not compared, nor, in a headline frame, the estimate of a value that is a time (``timing: true``):
    ``left_out`` (a list) receives what was left out."""
    import numpy as np

    if got.columns != want.columns:
        return [f"columns {got.columns}, the reference has {want.columns}"]
    if got.height != want.height:
        return [f"{got.height} rows, the reference has {want.height}"]
    skipped = [name for name in want.columns if name in TIMING_COLUMNS]
    timed_rows = _timing_rows(want)
    if timed_rows is not None and timed_rows.any():
        mine = _timing_rows(got)
        if not np.array_equal(mine, timed_rows):  # the same rows hold the timings (compared below, by claim_id)
            timed_rows = timed_rows | mine
        skipped += [
            f"{name} of {int(timed_rows.sum())} timing rows" for name in HEADLINE_ESTIMATE if name in want.columns
        ]
    if left_out is not None:
        left_out += skipped
    out = []
    for name in want.columns:
        if name in TIMING_COLUMNS:
            continue
        g, w = got[name], want[name]
        bad = _cells_differ(g, w, tolerance(name, rtol), atol)
        if timed_rows is not None and name in HEADLINE_ESTIMATE:
            bad &= ~timed_rows
        if bad.any():
            rows = np.flatnonzero(bad)
            cell = (lambda s, r: s[r].to_list()) if g.dtype.is_nested() else (lambda s, r: s[r])  # a list as a list
            shown = ", ".join(f"row {r}: {cell(g, int(r))!r} vs {cell(w, int(r))!r}" for r in rows[:limit])
            out.append(
                f"column {name!r}: {len(rows)} of {len(bad)} rows differ ({shown}{', ...' if len(rows) > limit else ''})"
            )
    return out


def compare_images(got: Path, want: Path) -> tuple[float, str | None]:
    """(share of pixels that differ, or 1.0 when the sizes differ; a note)."""
    import numpy as np
    from PIL import Image

    a, b = np.asarray(Image.open(got).convert("RGBA")), np.asarray(Image.open(want).convert("RGBA"))
    if a.shape != b.shape:
        return 1.0, f"size {a.shape[1]}x{a.shape[0]}, the reference is {b.shape[1]}x{b.shape[0]}"
    return float((a != b).any(axis=-1).mean()), None


def _without(x, ids: set[int]):
    """The claims summary without the claims in ``ids`` (every list in it is a list of claim ids)."""
    if isinstance(x, dict):
        return {k: _without(v, ids) for k, v in x.items()}
    if isinstance(x, list):
        return [i for i in x if i not in ids]
    return x


#: a claim's keys that aggregate its values' answers: compared only when every value of the claim is
CLAIM_AGGREGATES = ("status", "direction", "size", "analogue")


def compare_claims(
    got: dict, want: dict, rtol: float, atol: float, load_dependent: tuple[str, ...] | None = None
) -> tuple[list[str], list[str]]:
    """(every difference between two claims reports, what was left out).

    Every claim is compared -- its text, stage, every value as JSON (numbers within tolerance) -- but a value
    that reads seconds (``timing: true``) or comes from a load-dependent stage (``load_dependent``, default
    :data:`LOAD_DEPENDENT`), and, in a claim with such a value, what aggregates it (:data:`CLAIM_AGGREGATES`).
    The report's summary and counts are compared without the claims that hold such a value."""
    left = left_out_values(tuple(LOAD_DEPENDENT if load_dependent is None else load_dependent))
    mine = {c["id"]: c for c in got.get("claims", [])}
    out, skipped, partial = [], [], set()
    theirs_ids = [c["id"] for c in want.get("claims", [])]
    out += [f"claim {cid}: not in the reference" for cid in mine if cid not in set(theirs_ids)]
    for claim in want.get("claims", []):
        cid = claim["id"]
        if cid not in mine:
            out.append(f"claim {cid}: missing")
            continue
        values, theirs = mine[cid].get("values"), claim.get("values")
        names = [v.get("name") if isinstance(v, dict) else None for v in theirs or []]
        why = {n: left[(cid, n)] for n in names if (cid, n) in left}
        if why:
            partial.add(cid)
            everything = len(why) == len(names)
            skipped.append(
                f"{cid} ({'every value' if everything else ', '.join(why)}: {', '.join(sorted(set(why.values())))})"
            )
        keys = [k for k in claim if k != "values" and not (why and k in CLAIM_AGGREGATES)]
        out += [f"claim {cid}: {k} missing" for k in keys if k not in mine[cid]]
        for k in keys:
            if k in mine[cid]:
                out += [f"claim {cid}{d}" for d in compare_json(mine[cid][k], claim[k], rtol, atol, f"/{k}")]
        if isinstance(values, list) and isinstance(theirs, list):
            got_names = [v.get("name") if isinstance(v, dict) else None for v in values]
            if got_names != names:
                out.append(f"claim {cid}: values {got_names}, the reference has {names}")
                continue
            for i, (v, w) in enumerate(zip(values, theirs, strict=True)):
                if names[i] in why:
                    continue
                own = tolerance(names[i], rtol)
                out += [f"claim {cid}{d}" for d in compare_json(v, w, own, atol, f"[{i}]")]
        else:
            out += [f"claim {cid}{d}" for d in compare_json(values, theirs, rtol, atol, "")]
    for key in want:
        if key == "claims":
            continue
        if key not in got:
            out.append(f"{key}: missing")
        elif key == "summary":
            out += compare_json(_without(got[key], partial), _without(want[key], partial), rtol, atol, "/summary")
        elif key == "counts":
            out += compare_json(_counts_without(got, partial), _counts_without(want, partial), rtol, atol, "/counts")
        else:
            out += compare_json(got[key], want[key], rtol, atol, f"/{key}")
    return out, skipped


def _counts_without(report: dict, ids: set[int]) -> dict:
    """The report's counts of claims by status, less the claims in ``ids`` (each counted under its own status)."""
    counts = dict(report.get("counts") or {})
    for claim in report.get("claims", []):
        if claim["id"] in ids and isinstance(counts.get(claim.get("status")), int):
            counts[claim["status"]] -= 1
    return counts


def _compare_sidecars(got: Path, want: Path) -> list[str]:
    a, b = json.loads(got.read_text()), json.loads(want.read_text())
    return [f"sidecar {key}: differs from the reference's" for key in ("config", "seeds") if a.get(key) != b.get(key)]


def load_dependent_output(rel: str, load_dependent: tuple[str, ...] | None = None) -> str | None:
    """The still load-dependent stage whose output ``rel`` is, or None."""
    for stage in LOAD_DEPENDENT if load_dependent is None else load_dependent:
        if re.search(f"({LOAD_DEPENDENT_OUTPUTS[stage]})$", "/" + rel):
            return stage
    return None


@dataclass
class Compared:
    """How :func:`compare_file` compared one file: ``kind`` (frame, table, claims, json, image, sidecar;
    or rendered, timed, load-dependent: not compared here), its differences and what it left out."""

    kind: str
    differences: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)


def compare_file(
    mine: Path, theirs: Path, rel: str, rtol: float = 1e-6, atol: float = 1e-9, pixel_share: float = 0.005
) -> Compared:
    """Compare one output with the reference's copy by its kind (see the module docstring); ``rel`` its
    path under the run (``results/...``)."""
    if rel.endswith(SIDECAR):
        return Compared("sidecar", _compare_sidecars(mine, theirs), ["wall times, hosts, code versions"])
    if TIMED.search("/" + rel):
        return Compared("timed")
    stage = load_dependent_output(rel)
    if stage is not None:
        return Compared("load-dependent", left_out=[f"{stage}: load-dependent"])
    if RENDERED.search("/" + rel):
        return Compared("rendered")
    if rel.endswith("claims.json"):
        found, left = compare_claims(json.loads(mine.read_text()), json.loads(theirs.read_text()), rtol, atol)
        return Compared("claims", found, left)
    if rel.endswith((".parquet", ".csv")):
        left: list[str] = []
        found = compare_frames(_read_frame(mine), _read_frame(theirs), rtol, atol, left_out=left)
        return Compared("frame" if rel.endswith(".parquet") else "table", found, left)
    if rel.endswith(".json"):
        got, want = json.loads(mine.read_text()), json.loads(theirs.read_text())
        return Compared("json", compare_json(got, want, rtol, atol, skip=frozenset(TIMING_COLUMNS)))
    if rel.endswith(".png"):
        share, note = compare_images(mine, theirs)
        return Compared("image", [note or f"{share:.2%} of the pixels differ"] if share > pixel_share else [])
    return Compared("bytes", ["differs bitwise (a file of this kind is compared by its bytes)"])


@dataclass
class Report:
    equal: int = 0
    close: int = 0
    timed: list[str] | None = None
    load_dependent: list[str] | None = None
    rendered: list[str] | None = None
    not_compared_claims: list[str] | None = None
    left_out: dict[str, list[str]] | None = None  # file -> its timing columns (and rows) not compared
    differences: list[Difference] | None = None
    cpus: tuple[list[str], list[str]] = ((), ())  # the CPUs the run's and the reference's sidecars name


def check(run: Path, reference: Path, rtol: float = 1e-6, atol: float = 1e-9, pixel_share: float = 0.005) -> Report:
    """Compare the run's outputs with the reference's (see the module docstring)."""
    manifest_path = reference / MANIFEST
    if not manifest_path.is_file():
        raise SystemExit(
            f"reference: {manifest_path} not found; save one first (python -m trustmass.report.reference save)"
        )
    files = json.loads(manifest_path.read_text())["files"]
    report = Report(timed=[], load_dependent=[], rendered=[], not_compared_claims=[], left_out={}, differences=[])
    for rel, entry in files.items():
        mine, theirs = run / rel, reference / rel
        if not mine.is_file():
            report.differences.append(Difference(rel, "missing from the run"))
            continue
        if _sha256(mine) == entry["sha256"]:
            report.equal += 1
            continue
        compared = compare_file(mine, theirs, rel, rtol, atol, pixel_share)
        if compared.kind in ("timed", "load-dependent", "rendered"):
            getattr(report, compared.kind.replace("-", "_")).append(rel)
            continue
        if compared.kind == "claims":
            report.not_compared_claims += [f"{rel}: {what}" for what in compared.left_out]
        elif compared.left_out and compared.kind != "sidecar":
            report.left_out[rel] = compared.left_out
        report.differences += [Difference(rel, what) for what in compared.differences]
        if not compared.differences:
            report.close += 1
    report.cpus = (sidecar_cpus(run, files), sidecar_cpus(reference, files))
    return report


def print_report(report: Report, reference: Path, out=None) -> None:
    out = out or sys.stdout
    print(
        f"reference {reference}: {report.equal} files bitwise equal, {report.close} equal within tolerance "
        f"(timing columns left out), {len(report.rendered)} renderings compared through their CSV or claims.json, "
        f"{len(report.timed)} timed and {len(report.load_dependent)} load-dependent (not compared), "
        f"{len(report.differences)} differences",
        file=out,
    )
    if note := cpu_note(*report.cpus):
        print(f"  {note}", file=out)
    for name, (rtol, why) in TOLERANCES.items():
        print(f"  own tolerance: {name} within rtol {rtol:g} ({why})", file=out)
    for rel, columns in report.left_out.items():
        print(f"  timing columns not compared: {rel}: {', '.join(columns)}", file=out)
    for rel in report.timed:
        print(f"  timed, not compared: {rel}", file=out)
    for rel in report.load_dependent:
        print(f"  load-dependent (LOAD_DEPENDENT: {', '.join(LOAD_DEPENDENT)}), not compared: {rel}", file=out)
    for what in report.not_compared_claims:
        print(f"  claims not compared: {what}", file=out)
    for d in report.differences:
        print(f"  DIFFERS {d.path}: {d.what}", file=out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trustmass.report.reference", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("save", help="copy a run's small outputs into a reference folder")
    s.add_argument("--run", default=".", help="the folder holding results/ (default: here)")
    s.add_argument("--reference", required=True)
    s.add_argument("--config", action="append", default=[], help="a config file of the run (repeatable)")
    c = sub.add_parser("check", help="compare a run with a reference; exit 1 on any difference")
    c.add_argument("--run", default=".")
    c.add_argument("--reference", required=True)
    c.add_argument("--rtol", type=float, default=1e-6)
    c.add_argument("--atol", type=float, default=1e-9)
    c.add_argument("--pixel-share", type=float, default=0.005, help="share of a figure's pixels that may differ")
    r = sub.add_parser("readme", help="fill the README's opening block (figures, claims summary) from a reference")
    r.add_argument("--reference", required=True, help="the reference folder, relative to the README's folder")
    r.add_argument("--readme", default="README.md")
    args = parser.parse_args(argv)
    if args.command == "readme":
        changed = write_readme_block(Path(args.readme), Path(args.reference))
        print(f"{args.readme}: opening block {'rewritten' if changed else 'already current'} from {args.reference}")
        return 0
    if args.command == "save":
        manifest = save(Path(args.run), Path(args.reference), [Path(c) for c in args.config])
        size = sum(f["bytes"] for f in manifest["files"].values())
        print(f"reference {args.reference}: {len(manifest['files'])} files, {size:,} bytes")
        return 0
    report = check(Path(args.run), Path(args.reference), args.rtol, args.atol, args.pixel_share)
    print_report(report, Path(args.reference))
    return 1 if report.differences else 0


if __name__ == "__main__":
    sys.exit(main())
