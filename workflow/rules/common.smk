# Shared by every stage: config validation at start-up, the study plan (trustmass.plan: every path
# pattern and every target list, as functions of the config), and the helpers rules use for their
# inputs (library code), params (config slices) and outputs (provenance sidecars).

import os
import shlex
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

try:
    from trustmass.plan import Study, layout
    from trustmass.cli.startup import start
    from trustmass.plumbing.config import ConfigError, config_slice
    from trustmass.plumbing.allocator import tune as tune_allocator
    from trustmass.plumbing.determinism import pin as pin_environment
    from trustmass.plumbing import preload
    from trustmass.plumbing.provenance import SIDECAR_SUFFIX, WORKFLOW_COMMAND_ENV, library_sources
    from trustmass.plumbing.provenance import remove_stale_temporaries
    from trustmass.plumbing.run_checks import runs_jobs, unwritable_folders
    from trustmass.plumbing.scheduler_wakeups import install as install_single_wakeup
except ImportError as exc:
    raise WorkflowError(
        f"cannot import the trustmass library ({exc}). Run snakemake from the project environment: "
        f"`make run` in {workflow.basedir} creates .venv with everything installed "
        "(or `pip install -e .` there into your own environment)."
    ) from None


# snakemake 9 multiplies its scheduler's re-evaluation timers: the workflow process's work grows with the
# square of the job count (trustmass.plumbing.scheduler_wakeups keeps one pending wake-up instead).
install_single_wakeup()

REPO = Path(workflow.basedir)  # the directory of the top-level Snakefile
CONFIG_SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"


# ---- config: validated (defaults: config.yaml alone), completed and checked across keys, once --------
try:
    _resolved_config = start(config, CONFIG_SCHEMA)
except ConfigError as exc:
    raise WorkflowError(str(exc)) from None
config.clear()
config.update(_resolved_config)

#: every file this configuration plans, stage by stage (rules take their inputs and target lists from it)
STUDY = Study(config)
#: the trained study's plan and each control arm's (trustmass.plan.controls), by arm (None: the trained study);
#: the pooled stages (certification, statistics, claims) have one rule per arm
ARM_STUDIES = {None: STUDY, **STUDY.arms()}

# Sidecars written by rule scripts record the snakemake call that asked for them (jobs inherit it).
os.environ.setdefault(WORKFLOW_COMMAND_ENV, shlex.join(["snakemake", *sys.argv[1:]]))

# One BLAS thread per process and the same kernels on every AVX2 machine (jobs inherit them): a job's
# `threads` are worker processes or torch threads it sets itself, and the kernels OpenBLAS, torch and
# MKL pick by CPU move the capture and the Frank-Wolfe selector's path (trustmass.plumbing.determinism
# says what was measured).
# A value the user exported is kept.
pin_environment(os.environ)
# Large tensors from the heap, not from fresh pages the kernel faults in and zeroes (trustmass.plumbing.allocator:
# a tenth of a deployment job's time); changes no result.
tune_allocator(os.environ)


# ---- before a run (not a dry-run): output folders writable; at its start, a killed run's temporaries gone
# here, not in onstart: snakemake refuses unwritable outputs while building the DAG, naming no fix, and
# crashes deleting old outputs of a job it reruns
if workflow.is_main_process and runs_jobs(sys.argv[1:]):
    _unwritable = unwritable_folders(layout.OUTPUT_ROOTS)
    if _unwritable:
        raise WorkflowError(_unwritable)


# A local run's jobs share one preloaded fork server, this process's child from here to the run's end: the
# libraries imported once per run, not once per job (trustmass.plumbing.preload; TRUSTMASS_PRELOAD=0: none).
_preload_server = []

onstart:
    for _path in remove_stale_temporaries(*layout.DATA_ROOTS):
        print(f"removed {_path}: a temporary of a writer that was killed", file=sys.stderr)
    if workflow.local_exec:
        _log = Path(".snakemake", "preload", f"{os.getpid()}.log")  # jobs forked, jobs turned away and why
        _preload_server.append(preload.start_server(os.environ, log=_log))


onsuccess:
    for _server in _preload_server:
        preload.stop_server(_server)


onerror:
    for _server in _preload_server:
        preload.stop_server(_server)


# ---- helpers --------------------------------------------------------------------------------------
def library_code(*modules):
    """Library source files the named modules run (their trustmass import closure), as inputs.

    Declared as `input: code=library_code("trustmass.x")` so that editing library code reruns exactly the
    outputs that depend on it (Snakemake tracks script files itself, not the modules they import).
    """
    try:
        return library_sources(*modules, relative_to=os.getcwd())
    except ModuleNotFoundError as exc:
        raise WorkflowError(str(exc)) from None


def params_from_config(*paths):
    """The config keys a rule reads (slash paths), nested as in config.yaml; a change reruns it."""
    return config_slice(config, *paths)


def params_of_model(*paths):
    """params_from_config for a model-keyed rule: the keys as the plan of the job's model has them (its control
    arm's for a twin, trustmass.plan.controls; the trained study's otherwise)."""
    return lambda wc: config_slice(STUDY.of(wc.model).config, *paths)


def arm_rule(name, arm):
    """The name of a pooled rule's copy in a control arm (``certify_manifest_shuffled_text``)."""
    return name if arm is None else f"{name}_{arm}"


def arm_log(name, arm):
    """The log of a pooled rule's copy in a control arm (under logs/controls/<arm>/)."""
    path = layout.log(name)
    return path if arm is None else f"logs/controls/{arm}/{path.removeprefix('logs/')}"


def prov(path):
    """The provenance sidecar written next to an output."""
    return f"{path}{SIDECAR_SUFFIX}"


#: a name of a model or corpus (a path component)
SOURCE_NAME = "[A-Za-z0-9][A-Za-z0-9._-]*"


# ---- the reporting layer: the catalog, its statistics rules' inputs, params and switches, caption quotes ----
import importlib.resources
import os

from trustmass.report.catalog import HEADLINE_FRAMES, OUTPUTS, STATISTICS, stats_path
from trustmass.report.claims.data import claim as _claim

#: the frame of the controls' attention regime (rule control_regime)
CONTROL_REGIME = "control_regime"
CLAIMS_FILE = os.path.relpath(str(importlib.resources.files("trustmass").joinpath("data", "claims.yaml")))
#: stages whose results this workflow produces (the rest are "not produced yet")
PRODUCED_STAGES = STUDY.produced_stages()
STATISTICS_RULES = {r.name: r for r in STATISTICS}


def paper_quotes(ids):
    """The paper's claim texts for a caption (RST-escaped)."""
    escape = str.maketrans({"*": "\\*", "|": "\\|"})
    return [f"claim {i}: {_claim(i).text.translate(escape)}" for i in ids]


def repository_file(path):
    """A file of this checkout (the claims file, a committed GPU check) as an input relative to the working
    directory, so that a moved or copied checkout reruns nothing."""
    return os.path.relpath(os.path.join(workflow.basedir, path))


def statistics_inputs(entry, study=STUDY):
    """The input path lists of a statistics rule: each name its catalog entry gives is a target list of the
    study plan (trustmass.plan.Study; a control arm's for its copy), or ``repo:<path>``, a file of this checkout."""
    unknown = sorted(k for k in entry.inputs.values() if not k.startswith("repo:") and not callable(getattr(study, k, None)))
    if unknown:
        raise ValueError(f"{entry.name}: unknown input lists {unknown} in its catalog entry; fix: name a method of "
                         "trustmass.plan.Study (or add one there)")
    return {name: repository_file(key.removeprefix("repo:")) if key.startswith("repo:") else getattr(study, key)()
            for name, key in entry.inputs.items()}


def statistics_params(entry, study=STUDY):
    """The workflow values a statistics rule takes besides its config slice (the entry's ``params``)."""
    values = {"content": study.corpus_contents}
    return {name: values[name]() for name in entry.params}


def active_statistics(study):
    """The statistics rules a plan runs (those of stages switched off are left out)."""
    return [r for r in STATISTICS if study.statistics_enabled(r, workflow.basedir)]


def active_headline_frames(study):
    """The headline frames a plan's claims report reads: those of its active statistics rules."""
    off = {f for r in STATISTICS if r not in active_statistics(study) for f in r.frames}
    return [f for f in HEADLINE_FRAMES if f not in off]


#: the outputs (figures and tables) whose frames the trained study computes
_OFF_FRAMES = {f for r in STATISTICS if r not in active_statistics(STUDY) for f in r.frames}
ACTIVE_OUTPUTS = [o for o in OUTPUTS if not set(o.frames) & _OFF_FRAMES]
