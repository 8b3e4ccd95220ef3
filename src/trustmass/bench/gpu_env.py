"""The GPU check's environment: a source tree without an install, carried wheels, the device, pytest.

The check (:mod:`trustmass.bench.gpu`) runs on a machine that has torch, Triton and numpy but not this
project's environment (no ``pip install -e .``, no polars, no snakemake).  This module makes that work
and is itself import-light (standard library only at the top; torch is imported inside functions):

* :func:`install_kernels_finder` -- ``trustmass.kernels`` lives in ``<repo>/kernels`` (pyproject's
  ``package-dir``), which ``PYTHONPATH=src`` alone does not map; a meta-path finder, consulted only
  after the normal import system found nothing, maps it.  :func:`subprocess_env` gives child processes
  (pytest, and the interpreter cases pytest starts) the same mapping through a ``sitecustomize``.
* :func:`import_capture` -- ``trustmass.capture.prefill`` imports ``trustmass.capture.access``, which
  imports polars at module level (outside this module's scope, issue 28 item 3); where polars is
  missing, a stub that raises on any use stands in for it, and the result says so.
* :func:`device_info`, :class:`Timer` (CUDA events, median of repeats), :func:`run_pytest`.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]  # src/trustmass/bench/gpu_env.py -> the repository
KERNELS_DIR = REPO / "kernels"


# --------------------------------------------------------------------------------------------------
# trustmass.kernels from a source tree


class _KernelsFinder(importlib.abc.MetaPathFinder):
    """Finds ``trustmass.kernels`` in ``<repo>/kernels`` (its submodules then follow its ``__path__``)."""

    def find_spec(self, name, path=None, target=None):
        if name != "trustmass.kernels" or not (KERNELS_DIR / "__init__.py").exists():
            return None
        return importlib.util.spec_from_file_location(
            name, KERNELS_DIR / "__init__.py", submodule_search_locations=[str(KERNELS_DIR)]
        )


def install_kernels_finder() -> str:
    """Make ``import trustmass.kernels`` work from a source checkout; returns how it resolves."""
    if any(isinstance(f, _KernelsFinder) for f in sys.meta_path):
        return "source tree (kernels/)"
    try:
        found = importlib.util.find_spec("trustmass.kernels")
    except (ImportError, ValueError):
        found = None
    if found is not None:
        return "installed"
    sys.meta_path.append(_KernelsFinder())  # last: an installed trustmass.kernels always wins
    return "source tree (kernels/)"


_SITECUSTOMIZE = """\
# written by trustmass.bench.gpu_env: trustmass.kernels from the source tree in child processes
try:
    from trustmass.bench.gpu_env import install_kernels_finder
    install_kernels_finder()
except Exception:  # noqa: BLE001 -- never break an interpreter's start-up
    pass
"""


def subprocess_env(extra_paths: list[str] | None = None) -> dict[str, str]:
    """The environment of a child python: ``src/``, the carried wheels' folder and a ``sitecustomize``
    mapping ``trustmass.kernels`` on its path; compiled kernels (``TRITON_INTERPRET`` and
    ``TRUSTMASS_KERNELS`` unset)."""
    boot = Path(tempfile.mkdtemp(prefix="trustmass-gpu-boot-"))
    (boot / "sitecustomize.py").write_text(_SITECUSTOMIZE, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "TRUSTMASS_KERNELS")}
    parts = [str(boot), str(REPO / "src"), *(extra_paths or []), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in parts if p)
    return env


# --------------------------------------------------------------------------------------------------
# the capture without polars


class _Unavailable(types.ModuleType):
    """A stand-in for a package that is not installed: importing it works, using it raises."""

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise ImportError(
            f"{self.__name__} is not installed here (stubbed by the GPU check); {self.__name__}.{attr} is unavailable"
        )


def import_capture():
    """``(trustmass.capture.prefill, note)``; ``note`` names the stub when polars had to be stubbed."""
    try:
        import trustmass.capture.prefill as prefill

        return prefill, None
    except ImportError as exc:
        if "polars" not in str(exc):
            raise
    for name in [m for m in sys.modules if m.startswith("trustmass.capture")]:
        del sys.modules[name]
    sys.modules["polars"] = _Unavailable("polars")
    import trustmass.capture.prefill as prefill

    return prefill, (
        "polars stubbed: src/trustmass/capture/prefill.py imports src/trustmass/capture/access.py, which imports "
        "polars at module level (the access-law frame); the capture itself never uses it"
    )


# --------------------------------------------------------------------------------------------------
# the device


def _nvidia_smi() -> dict:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return {}
    try:
        out = subprocess.run(
            [exe, "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    first = [p.strip() for p in out.splitlines()[0].split(",")] if out.strip() else []
    return dict(zip(("name", "driver", "memory"), first))


def _driver_from_proc() -> str | None:
    try:
        text = Path("/proc/driver/nvidia/version").read_text(encoding="utf-8")
    except OSError:
        return None
    for word in text.split():
        if word.count(".") >= 1 and word.replace(".", "").isdigit():
            return word
    return None


def _version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def git_state() -> dict:
    """The checkout's commit and whether the tree differs from it (None outside a git checkout)."""
    exe = shutil.which("git")
    if exe is None or not (REPO / ".git").exists():
        return {"commit": None, "dirty": None}
    try:
        commit = subprocess.run(
            [exe, "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=20
        ).stdout.strip()
        dirty = subprocess.run(
            [exe, "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True, text=True, timeout=20
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit or None, "dirty": bool(dirty)}


def device_info(device: str) -> dict:
    """GPU name, driver, CUDA, torch, Triton (and transformers, python) of the machine measured."""
    import torch

    info = {
        "device": device,
        "name": None,
        "driver": None,
        "cuda": torch.version.cuda,
        "torch": torch.__version__,
        "triton": _version("triton"),
        "transformers": _version("transformers"),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "capability": None,
        "memory_gib": None,
        "multiprocessors": None,
    }
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        smi = _nvidia_smi()
        info.update(
            name=torch.cuda.get_device_name(0),
            driver=smi.get("driver") or _driver_from_proc(),
            capability=".".join(map(str, torch.cuda.get_device_capability(0))),
            memory_gib=round(props.total_memory / 2**30, 1),
            multiprocessors=props.multi_processor_count,
        )
    else:
        info["name"] = f"CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} cores visible)"
    return info


# --------------------------------------------------------------------------------------------------
# timing


class Timer:
    """Median milliseconds of repeated calls: CUDA events on a GPU, ``perf_counter`` on the CPU.

    One warm-up call (it compiles the Triton kernels), then as many timed calls as fit in
    ``budget_s`` (at least one, at most ``repeats``): a 10-second call is timed once, a 1 ms call
    ``repeats`` times."""

    def __init__(self, device: str, repeats: int = 5, budget_s: float = 3.0):
        self.device, self.repeats, self.budget_s = device, repeats, budget_s

    def sync(self) -> None:
        if self.device == "cuda":
            import torch

            torch.cuda.synchronize()

    def __call__(self, fn, repeats: int | None = None) -> dict:
        import torch

        t0 = time.perf_counter()
        fn()
        self.sync()
        warm = time.perf_counter() - t0
        limit = self.repeats if repeats is None else repeats
        n = max(1, min(limit, int(self.budget_s / max(warm, 1e-6))))
        times = []
        for _ in range(n):
            if self.device == "cuda":
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                end.synchronize()
                times.append(float(start.elapsed_time(end)))
            else:
                t1 = time.perf_counter()
                fn()
                times.append((time.perf_counter() - t1) * 1e3)
        return {"median_ms": statistics.median(times), "repeats": n, "warmup_ms": warm * 1e3, "all_ms": times}


# --------------------------------------------------------------------------------------------------
# pytest in a child process


def run_pytest(paths: list[str], timeout_s: float, extra_paths: list[str] | None = None) -> dict:
    """``pytest -q <paths>`` in a child python with compiled kernels: pass/fail counts from its
    JUnit XML, the failing tests' names and first message lines; ``{"status": "pytest missing"}``
    where pytest is not installed."""
    if importlib.util.find_spec("pytest") is None:
        return {"status": "pytest missing", "paths": paths}
    missing = [p for p in paths if not (REPO / p.split("::")[0]).exists()]
    if missing:
        return {"status": "not run", "reason": f"{', '.join(missing)} does not exist", "paths": paths}
    xml = Path(tempfile.mkdtemp(prefix="trustmass-gpu-pytest-")) / "junit.xml"
    cmd = [sys.executable, "-m", "pytest", *paths, "-q", "-p", "no:cacheprovider", f"--junitxml={xml}"]
    started = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        cwd=REPO,
        env=subprocess_env(extra_paths),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=max(1.0, timeout_s))
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # pytest and the interpreters it started
        output, _ = proc.communicate()
        return {
            "status": "timeout",
            "timeout_s": timeout_s,
            "paths": paths,
            **_progress_counts(output),
            "output_tail": output[-2000:],
        }
    result = {
        "status": "ran",
        "exit_code": proc.returncode,
        "wall_s": time.perf_counter() - started,
        "paths": paths,
        "output_tail": output[-2000:],
    }
    result.update(_junit_counts(xml))
    return result


def _progress_counts(output: str) -> dict:
    """Counts read from pytest's ``-q`` progress lines (``..F.s  [ 40%]``): what a killed run had done."""
    lines = output.splitlines()
    marks = "".join((line.split("[")[0].split() or [""])[-1] for line in lines if line.rstrip().endswith("%]"))
    last = lines[-1].strip() if lines else ""
    if last and set(last) <= set(".FEsxX"):  # the unfinished line the run was killed in
        marks += last
    return {
        "passed": marks.count("."),
        "failed": marks.count("F"),
        "errors": marks.count("E"),
        "skipped": marks.count("s"),
        "failures": [],
        "counts_from": "progress lines of the killed run",
    }


def _junit_counts(xml: Path) -> dict:
    import xml.etree.ElementTree as ET

    if not xml.exists():
        return {"passed": None, "failed": None, "errors": None, "skipped": None, "failures": []}
    root = ET.parse(xml).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    total = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
    failures = []
    for case in root.iter("testcase"):
        for bad in list(case.findall("failure")) + list(case.findall("error")):
            message = (bad.get("message") or "").strip().splitlines()
            failures.append(
                {"test": f"{case.get('classname')}::{case.get('name')}", "message": message[0][:300] if message else ""}
            )
    passed = total["tests"] - total["failures"] - total["errors"] - total["skipped"]
    return {
        "passed": passed,
        "failed": total["failures"],
        "errors": total["errors"],
        "skipped": total["skipped"],
        "failures": failures[:30],
    }


def dumps(obj) -> str:
    """JSON with non-finite floats written as null (the check's JSON is strict JSON)."""
    return json.dumps(_finite(obj), indent=2)


def _finite(obj):
    if isinstance(obj, float):
        return obj if obj == obj and obj not in (float("inf"), float("-inf")) else None
    if isinstance(obj, dict):
        return {str(k): _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


__all__ = [
    "REPO",
    "Timer",
    "device_info",
    "dumps",
    "git_state",
    "import_capture",
    "install_kernels_finder",
    "run_pytest",
    "subprocess_env",
]
