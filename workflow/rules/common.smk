# Shared by every stage: config validation at start-up, and the helpers rules use for their
# inputs (library code), params (config slices) and outputs (provenance sidecars).
# Helper functions live here, not as lambdas inside rules.

import os
import shlex
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

try:
    from trustmass.plumbing.config import ConfigError, config_slice, validate_config
    from trustmass.plumbing.provenance import SIDECAR_SUFFIX, WORKFLOW_COMMAND_ENV, library_sources
except ImportError as exc:
    raise WorkflowError(
        f"cannot import the trustmass library ({exc}). Run snakemake from the project environment: "
        f"`make run` in {workflow.basedir} creates .venv with everything installed "
        "(or `pip install -e .` there into your own environment)."
    ) from None


REPO = Path(workflow.basedir)  # the directory of the top-level Snakefile
CONFIG_SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"


# ---- config: validate the merged configuration once, fill in the schema defaults ----------------
try:
    _resolved_config = validate_config(config, CONFIG_SCHEMA)
except ConfigError as exc:
    raise WorkflowError(str(exc)) from None
config.clear()
config.update(_resolved_config)

# Sidecars written by rule scripts record the snakemake call that asked for them (jobs inherit it).
os.environ.setdefault(WORKFLOW_COMMAND_ENV, shlex.join(["snakemake", *sys.argv[1:]]))


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


def prov(path):
    """The provenance sidecar written next to an output."""
    return f"{path}{SIDECAR_SUFFIX}"
