"""A committed reference run and the check of a new run against it.

``save`` copies a run's small outputs -- every figure and table file, every statistics frame, the
claims report -- with their provenance sidecars into a reference folder, and writes
``MANIFEST.json`` (each file's sha256 and size, the run's code version and config files).
``check`` compares a run's ``results/`` with a reference and prints every difference:

* bitwise first; a file that differs is then compared by kind:
* statistics frames (``.parquet``) and tables (``.csv``): the same columns and rows, float columns
  within ``rtol`` / ``atol`` (NaN equal to NaN), other columns exactly except the numbers printed in
  a string (a JSON ``context``, a claim's reason), which are compared as numbers (:func:`texts_close`);
* ``claims.json``: each claim's status, direction and size exactly and its values as JSON (floats, and
  numbers inside strings, within tolerance); claims that read timed stages are listed, not compared;
* a statistic listed in :data:`TOLERANCES` is compared with its own stated tolerance (the report
  prints each, with its reason);
* figures (``.png``): pixel by pixel; the share of pixels that differ is reported, and counts as a
  difference above ``pixel_share`` (a figure drawn from frames equal within tolerance can move a
  line by a pixel);
* provenance sidecars: the config slice and seeds exactly (times, hosts and code versions are
  recorded, not compared); the Markdown and HTML renderings of a table are not compared separately
  (they are drawn from its CSV).

``readme`` fills the README's opening block (Figures 1-4 linking to their sidecars, the claims
summary) from a reference folder, so the README shows what the committed run regenerated.

Outputs that record seconds or depend on wall-clock limits (:data:`TIMED`: the SCIP certification
under time limits, deployment timing, the enumeration benchmark) are listed and not compared: a rerun
on another machine or under other load changes them by design.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import shutil
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

#: outputs that record seconds or depend on wall-clock limits, found by comparing two runs (the
#: SLURM test compares with the same list): provenance sidecars (wall time), the benchmark, SCIP
#: under time limits (certification, Table 7, the sweep and the claims built on them), the
#: deployment rows and what reads their seconds (timing)
TIMED = re.compile(
    r"(\.prov\.json|/bench/enumeration\.json|/certify/.*|/stats/(table7|sweep|headline_certification|"
    r"deploy_timing|headline_deploy)\.parquet|/tables/(table7_certification|deploy_timing)\.\w+|"
    r"/tables/sweep_cap_widening\.\w+|/deploy/.*\.parquet|/claims\.(md|html|json))$"
)
#: claim stages (trustmass.report.claims.model.STAGES) whose values read timed outputs, not compared in
#: claims.json: the certification under its time limits (Table 7, the sweep) and deployment timing
TIMED_STAGES = frozenset({"CERT", "TIME"})
#: what a reference holds, relative to the run's folder
KEPT = (
    "results/figures/*.png",
    "results/tables/*.csv",
    "results/tables/*.md",
    "results/stats/*.parquet",
    "results/claims.md",
    "results/claims.json",
    "results/controls/*/stats/*.parquet",  # the sanity-check controls' statistics and claims (trustmass.plan.controls)
    "results/controls/*/claims.md",
    "results/controls/*/claims.json",
)
SIDECAR = ".prov.json"
MANIFEST = "MANIFEST.json"
#: the most a reference may hold (the issue: small outputs only)
MAX_BYTES = 8_000_000


#: statistics compared with their own tolerance instead of ``rtol``: name (a frame's or table's
#: column, or a claim value's name) -> (rtol, why).  Empty: with the pinned BLAS kernel and threads
#: (trustmass.plumbing.determinism) every statistic measured so far repeats bitwise on AVX2 machines.
#: A statistic goes here only with a measurement that shows it legitimately moves, and the reason.
TOLERANCES: dict[str, tuple[float, str]] = {}
#: a number printed in text: sign, digits, decimals, exponent
NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")


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


def save(run: Path, reference: Path, configs: list[Path]) -> dict:
    """Copy the run's kept outputs (and the config files) into ``reference``; write its manifest."""
    files = kept_files(run)
    if not files:
        raise SystemExit(f"reference: no outputs under {run / 'results'}; run the workflow first (make run)")
    total = sum((run / f).stat().st_size for f in files)
    if total > MAX_BYTES:
        raise SystemExit(f"reference: {total:,} bytes of outputs exceed {MAX_BYTES:,}; keep the reference small")
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


def _close(a: float, b: float, rtol: float, atol: float) -> bool:
    if isinstance(a, float) and isinstance(b, float) and (math.isnan(a) and math.isnan(b) or math.isinf(a) and a == b):
        return True  # NaN equals NaN, an infinity its own sign (inf - inf is NaN)
    return abs(a - b) <= atol + rtol * abs(b)


def _last_place(text: str) -> float:
    """One unit in the last printed decimal of a number without exponent ("2.945": 0.001), else 0."""
    if "e" in text.lower() or "." not in text:
        return 0.0
    decimals = len(text.split(".", 1)[1])
    return 10.0**-decimals if 0 < decimals < 15 else 0.0


def texts_close(got: str, want: str, rtol: float, atol: float) -> bool:
    """Two strings equal but for the numbers printed in them, each within tolerance.

    The text between the numbers must match exactly.  A number printed to a few decimals (a claim's
    "regenerated 2.945") may also differ by one unit in its last printed place when both are printed
    to the same decimals: a value within ``rtol`` can round either side of a printed digit.
    """
    if got == want:
        return True
    if NUMBER.split(got) != NUMBER.split(want):
        return False
    for a, b in zip(NUMBER.findall(got), NUMBER.findall(want), strict=True):
        x, y = float(a), float(b)
        place = _last_place(a) if _last_place(a) == _last_place(b) else 0.0
        if not (_close(x, y, rtol, atol) or abs(x - y) <= place * (1 + 1e-9)):
            return False
    return True


def compare_json(got, want, rtol: float, atol: float, where: str = "") -> list[str]:
    """Every place two JSON values differ (numbers, and numbers printed in strings, within tolerance)."""
    if isinstance(want, dict) and isinstance(got, dict):
        out = [f"{where}/{k}: missing" for k in want if k not in got]
        out += [f"{where}/{k}: not in the reference" for k in got if k not in want]
        return out + [d for k in want if k in got for d in compare_json(got[k], want[k], rtol, atol, f"{where}/{k}")]
    if isinstance(want, list) and isinstance(got, list):
        if len(got) != len(want):
            return [f"{where}: {len(got)} entries, the reference has {len(want)}"]
        return [
            d
            for i, (g, w) in enumerate(zip(got, want, strict=True))
            for d in compare_json(g, w, rtol, atol, f"{where}[{i}]")
        ]
    numbers = (int, float)
    if (
        isinstance(want, numbers)
        and isinstance(got, numbers)
        and not isinstance(want, bool)
        and not isinstance(got, bool)
    ):
        return [] if _close(float(got), float(want), rtol, atol) else [f"{where}: {got!r}, the reference has {want!r}"]
    if isinstance(want, str) and isinstance(got, str):
        return [] if texts_close(got, want, rtol, atol) else [f"{where}: {got!r}, the reference has {want!r}"]
    return [] if got == want else [f"{where}: {got!r}, the reference has {want!r}"]


def tolerance(name: str, rtol: float) -> float:
    """The rtol a statistic is compared with: its own (:data:`TOLERANCES`) or the default."""
    return TOLERANCES[name][0] if name in TOLERANCES else rtol


def compare_frames(got, want, rtol: float, atol: float, limit: int = 5) -> list[str]:
    """Every column in which two polars frames differ (floats within tolerance), a few rows each."""
    import numpy as np
    import polars as pl

    if got.columns != want.columns:
        return [f"columns {got.columns}, the reference has {want.columns}"]
    if got.height != want.height:
        return [f"{got.height} rows, the reference has {want.height}"]
    out = []
    for name in want.columns:
        g, w = got[name], want[name]
        if g.dtype.is_float() and w.dtype.is_float():
            a, b = g.to_numpy().astype(float), w.to_numpy().astype(float)
            bad = ~(np.isclose(a, b, rtol=tolerance(name, rtol), atol=atol) | (np.isnan(a) & np.isnan(b)))
        else:
            a, b = g.cast(pl.String).fill_null("\0null"), w.cast(pl.String).fill_null("\0null")
            bad = ~(a == b).to_numpy()
            for r in np.flatnonzero(bad):  # numbers printed in a string (a JSON context) compare as numbers
                bad[r] = not texts_close(a[int(r)], b[int(r)], tolerance(name, rtol), atol)
        if bad.any():
            rows = np.flatnonzero(bad)
            shown = ", ".join(f"row {r}: {g[int(r)]!r} vs {w[int(r)]!r}" for r in rows[:limit])
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


def _compare_claims(got: dict, want: dict, rtol: float, atol: float) -> tuple[list[str], list[int]]:
    mine = {c["id"]: c for c in got.get("claims", [])}
    out, skipped = [], []
    for claim in want.get("claims", []):
        cid = claim["id"]
        if TIMED_STAGES & set(claim.get("stage", [])):
            skipped.append(cid)
            continue
        if cid not in mine:
            out.append(f"claim {cid}: missing")
            continue
        for key in ("status", "direction", "size"):
            if mine[cid].get(key) != claim.get(key):
                out.append(f"claim {cid}: {key} {mine[cid].get(key)!r}, the reference has {claim.get(key)!r}")
        values, theirs = mine[cid]["values"], claim["values"]
        if isinstance(values, list) and isinstance(theirs, list) and len(values) == len(theirs):
            for i, (v, w) in enumerate(zip(values, theirs, strict=True)):
                own = tolerance(w.get("name"), rtol) if isinstance(w, dict) else rtol
                out += [f"claim {cid}{d}" for d in compare_json(v, w, own, atol, f"[{i}]")]
        else:
            out += [f"claim {cid}{d}" for d in compare_json(values, theirs, rtol, atol, "")]
    return out, skipped


def _compare_sidecars(got: Path, want: Path) -> list[str]:
    a, b = json.loads(got.read_text()), json.loads(want.read_text())
    return [f"sidecar {key}: differs from the reference's" for key in ("config", "seeds") if a.get(key) != b.get(key)]


@dataclass
class Report:
    equal: int = 0
    close: int = 0
    timed: list[str] | None = None
    not_compared_claims: list[int] | None = None
    differences: list[Difference] | None = None


def check(run: Path, reference: Path, rtol: float = 1e-6, atol: float = 1e-9, pixel_share: float = 0.005) -> Report:
    """Compare the run's outputs with the reference's (see the module docstring)."""
    import polars as pl

    manifest_path = reference / MANIFEST
    if not manifest_path.is_file():
        raise SystemExit(
            f"reference: {manifest_path} not found; save one first (python -m trustmass.report.reference save)"
        )
    files = json.loads(manifest_path.read_text())["files"]
    report = Report(timed=[], not_compared_claims=[], differences=[])

    def differ(rel: str, what: str) -> None:
        report.differences.append(Difference(rel, what))

    for rel, entry in files.items():
        mine, theirs = run / rel, reference / rel
        if not mine.is_file():
            differ(rel, "missing from the run")
            continue
        if _sha256(mine) == entry["sha256"]:
            report.equal += 1
            continue
        if rel.endswith(SIDECAR):
            found = _compare_sidecars(mine, theirs)
        elif rel.endswith("claims.json"):
            found, report.not_compared_claims = _compare_claims(
                json.loads(mine.read_text()), json.loads(theirs.read_text()), rtol, atol
            )
        elif TIMED.search("/" + rel):
            report.timed.append(rel)
            continue
        elif rel.endswith(".parquet"):
            found = compare_frames(pl.read_parquet(mine), pl.read_parquet(theirs), rtol, atol)
        elif rel.endswith(".csv"):
            found = compare_frames(pl.read_csv(mine), pl.read_csv(theirs), rtol, atol)
        elif rel.endswith(".png"):
            share, note = compare_images(mine, theirs)
            found = [note or f"{share:.2%} of the pixels differ"] if share > pixel_share else []
        else:  # a table's Markdown: rendered from its CSV, compared there
            found = []
        for what in found:
            differ(rel, what)
        if not found:
            report.close += 1
    return report


def print_report(report: Report, reference: Path, out=None) -> None:
    out = out or sys.stdout
    print(
        f"reference {reference}: {report.equal} files bitwise equal, {report.close} equal within tolerance, "
        f"{len(report.timed)} timed (not compared), {len(report.differences)} differences",
        file=out,
    )
    for name, (rtol, why) in TOLERANCES.items():
        print(f"  own tolerance: {name} within rtol {rtol:g} ({why})", file=out)
    for rel in report.timed:
        print(f"  timed, not compared: {rel}", file=out)
    if report.not_compared_claims:
        print(
            f"  claims reading timed stages, not compared: {', '.join(map(str, report.not_compared_claims))}", file=out
        )
    for d in report.differences:
        print(f"  DIFFERS {d.path}: {d.what}", file=out)


# -- the README's opening block ------------------------------------------------------------------

BEGIN, END = "<!-- reference:begin -->", "<!-- reference:end -->"
#: the figures the README opens with, in order (their files under results/figures/)
README_FIGURES = ("fig1_ceiling.png", "fig2_map.png", "fig3_method_headroom.png", "fig4_redirect.png")


def run_command(configs: list[str]) -> str:
    """The command that regenerates a run of these config files (config.yaml is always read first)."""
    overlays = [c for c in configs if c != "config.yaml"]
    return f"snakemake --cores all --configfile {' '.join(overlays)}" if overlays else "make run"


def readme_block(reference: Path, root: Path = Path(".")) -> str:
    """The README's opening: the reference run's Figures 1-4 (each linking to its provenance sidecar)
    and its claims summary, computed from the reference folder (``reference``: relative to ``root``,
    the README's folder)."""
    manifest = json.loads((root / reference / MANIFEST).read_text(encoding="utf-8"))
    claims = json.loads((root / reference / "results" / "claims.json").read_text(encoding="utf-8"))
    code = manifest.get("code") or {}
    lines = [
        BEGIN,
        "",
        f"Regenerated by `{run_command(manifest['configs'])}` (code `{code.get('describe', '?')}`), "
        f"kept in `{reference.as_posix()}/`; click a figure for its provenance.",
        "",
    ]
    for name in README_FIGURES:
        path = reference / "results" / "figures" / name
        if (root / path).is_file():
            lines.append(f"[![{name}]({path.as_posix()})]({path.as_posix()}{SIDECAR})")
    from trustmass.report.claims.markdown import readme_lines

    answered = claims["counts"].get("answered", 0)
    lines += [
        "",
        f"**What reproduced** ({answered} of {len(claims['claims'])} claims answered; "
        f"`{reference.as_posix()}/results/claims.md` has every one, its values and cells; the key: "
        '"The claims report" below). ' + "; ".join(claims.get("mapping") or []) + ".",
        "",
    ]
    lines += readme_lines(claims)
    lines += ["", END]
    return "\n".join(lines)


def write_readme_block(readme: Path, reference: Path) -> bool:
    """Replace the block between the markers in ``readme``; True when it changed."""
    text = readme.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{readme}: no {BEGIN} ... {END} block to fill")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = head + readme_block(reference, readme.parent) + tail
    readme.write_text(new, encoding="utf-8")
    return new != text


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
