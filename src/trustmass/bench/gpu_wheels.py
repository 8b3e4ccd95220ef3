"""The small wheels the GPU check carries to a machine that has only torch, Triton and numpy.

The check needs transformers (random-weight models for the capture and the claims' prefills) and,
for the compiled-kernel tests, pytest.  Their wheels (and the pure-python packages they import) come
to about 25 MB -- within one device call's 64 MiB -- where the polars runtime alone is 54 MB.

``python -m trustmass.bench.gpu_wheels download .gpu-wheels`` (``make gpu-wheels``; needs the
package index) fetches them, pinned to the versions of this project's venv, for CPython 3.10-3.13
on x86-64 Linux.  On the GPU machine :func:`install` (``python -m trustmass.bench gpu --wheels
.gpu-wheels``) unpacks every compatible wheel whose distribution is not installed there into
``.gpu-site/`` and appends that folder to ``sys.path`` -- no pip, no network, and nothing the
machine already has is shadowed.  A wheel is a zip archive of the files pip would copy; unpacking it
is an install without the entry-point scripts (the check needs none).
"""

from __future__ import annotations

import argparse
import importlib
import re
import subprocess
import sys
import zipfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

#: distributions carried (import names differ for some: pyyaml -> yaml, typing_extensions, ...)
CARRIED = (
    "transformers",
    "tokenizers",
    "huggingface_hub",
    "safetensors",
    "regex",
    "pyyaml",
    "tqdm",
    "packaging",
    "httpx",
    "httpcore",
    "h11",
    "anyio",
    "idna",
    "certifi",
    "click",
    "filelock",
    "fsspec",
    "typing_extensions",
    "pytest",
    "pluggy",
    "iniconfig",
    "pygments",
)
#: CPython versions a compiled wheel is fetched for (the GPU machine's python is not known here)
PYTHONS = ("3.10", "3.11", "3.12", "3.13")
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64")
_WHEEL = re.compile(
    r"^(?P<dist>[^-]+)-(?P<ver>[^-]+)(-(?P<build>\d[^-]*))?-(?P<py>[^-]+)-(?P<abi>[^-]+)-(?P<plat>[^-]+)\.whl$"
)


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def download(dest: str | Path, pythons=PYTHONS, dists=CARRIED) -> dict:
    """Fetch the carried wheels (no dependencies resolved: the list is the closure) into ``dest``."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    pins = []
    for dist in dists:
        try:
            pins.append(f"{dist}=={version(dist)}")
        except PackageNotFoundError:
            pins.append(dist)
    failed = {}
    for py in pythons:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--dest",
            str(dest),
            "--implementation",
            "cp",
            "--python-version",
            py,
            *[f"--platform={p}" for p in PLATFORMS],
            *pins,
        ]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:  # one pin without a wheel for this python: fetch one by one, unpinned where needed
            for pin in pins:
                for spec in dict.fromkeys((pin, pin.split("==")[0])):
                    if subprocess.run([*cmd[: -len(pins)], spec], capture_output=True, text=True).returncode == 0:
                        break
                else:
                    failed.setdefault(py, []).append(pin)
    files = sorted(dest.glob("*.whl"))
    return {
        "dest": str(dest),
        "pins": pins,
        "wheels": [f.name for f in files],
        "megabytes": round(sum(f.stat().st_size for f in files) / 2**20, 1),
        "failed": failed,
    }


def compatible(filename: str, py: tuple[int, int] | None = None, machine: str = "x86_64") -> bool:
    """Whether a wheel file installs on this CPython (tags read from its name; Linux only)."""
    match = _WHEEL.match(filename)
    if match is None:
        return False
    major, minor = py or sys.version_info[:2]
    own = f"cp{major}{minor}"
    pys, abis, plats = (match[k].split(".") for k in ("py", "abi", "plat"))
    if "any" in plats:
        return any(p in ("py3", f"py{major}{minor}", own) or p.startswith("py3") for p in pys)
    if not any(machine in p and "linux" in p for p in plats):
        return False
    if "abi3" in abis:
        return any(p.startswith("cp3") and int(p[3:]) <= minor for p in pys)
    return own in pys and own in abis


def install(wheels: str | Path, site: str | Path) -> dict:
    """Unpack the compatible wheels in ``wheels`` whose distribution this python lacks into ``site``,
    and append ``site`` to ``sys.path``.  Returns what was unpacked, found present, or skipped."""
    wheels, site = Path(wheels), Path(site)
    site.mkdir(parents=True, exist_ok=True)
    if str(site) not in sys.path:
        sys.path.append(str(site))
    importlib.invalidate_caches()
    report = {"wheels": str(wheels), "site": str(site), "unpacked": [], "present": [], "incompatible": []}
    if not wheels.is_dir():
        report["missing"] = f"{wheels} does not exist (make gpu-wheels on a machine with the package index)"
        return report
    chosen: dict[str, Path] = {}
    for path in sorted(wheels.glob("*.whl")):
        dist = _norm(_WHEEL.match(path.name)["dist"]) if _WHEEL.match(path.name) else None
        if dist is None or not compatible(path.name):
            report["incompatible"].append(path.name)
            continue
        chosen.setdefault(dist, path)
    for dist, path in sorted(chosen.items()):
        try:
            report["present"].append(f"{dist}=={version(dist)}")
            continue
        except PackageNotFoundError:
            pass
        _unpack(path, site)
        report["unpacked"].append(path.name)
    importlib.invalidate_caches()
    return report


def _unpack(path: Path, site: Path) -> None:
    with zipfile.ZipFile(path) as archive:
        for member in archive.namelist():
            parts = member.split("/")
            if len(parts) > 2 and parts[0].endswith(".data") and parts[1] in ("purelib", "platlib"):
                target = site.joinpath(*parts[2:])  # <dist>.data/purelib/... installs at the top
            elif parts[0].endswith(".data"):
                continue  # scripts, headers, data: not needed by the check
            else:
                target = site.joinpath(*parts)
            if member.endswith("/"):
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(member) as src, open(target, "wb") as out:
                out.write(src.read())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trustmass.bench.gpu_wheels", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    get = sub.add_parser("download", help="fetch the carried wheels (needs the package index)")
    get.add_argument("dest", nargs="?", default=".gpu-wheels")
    put = sub.add_parser("install", help="unpack them into a folder appended to sys.path (the GPU machine)")
    put.add_argument("wheels", nargs="?", default=".gpu-wheels")
    put.add_argument("--site", default=".gpu-site")
    args = parser.parse_args(argv)
    if args.command == "download":
        report = download(args.dest)
        print(f"{len(report['wheels'])} wheels, {report['megabytes']} MB in {report['dest']}")
        for py, err in report["failed"].items():
            print(f"python {py}: no wheel for {', '.join(err)}", file=sys.stderr)
        return 1 if len(report["failed"]) == len(PYTHONS) else 0
    report = install(args.wheels, args.site)
    print(
        f"unpacked {len(report['unpacked'])}, present {len(report['present'])}, incompatible {len(report['incompatible'])}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
