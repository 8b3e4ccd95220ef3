# Helpers for the reporting layer (workflow/rules/report.smk): the catalog of figures and tables,
# the statistics rules' inputs, params and switches, the caption quotes.  Functions and constants only.

import importlib.resources
import os

from trustmass.report.catalog import HEADLINE_FRAMES, OUTPUTS, STATISTICS, stats_path
from trustmass.report.claims.data import claim as _claim

CLAIMS_FILE = os.path.relpath(str(importlib.resources.files("trustmass").joinpath("data", "claims.yaml")))
#: stages whose results this workflow produces (the rest are "not produced yet")
PRODUCED_STAGES = ["THY", "CAP", "INST", "STAT", "CERT", "AUD", "LOSS"] + (["TASK"] if config["task_contexts"]["enabled"] else []) + [
    stage for stage, on in (("PROBE", config["loss"]["probe"]["enabled"]), ("CURV", config["loss"]["curvature"]["enabled"])) if on
] + (["DEP", "BYTES", "RETR", "TIME"] if config["deploy"]["enabled"] else [])
STATISTICS_RULES = {r.name: r for r in STATISTICS}


def paper_quotes(ids):
    """The paper's claim texts for a caption (RST-escaped)."""
    escape = str.maketrans({"*": "\\*", "|": "\\|"})
    return [f"claim {i}: {_claim(i).text.translate(escape)}" for i in ids]


def repository_file(path):
    """A file of this checkout (the claims file, a committed GPU check) as an input relative to the working
    directory, so that a moved or copied checkout reruns nothing."""
    return os.path.relpath(os.path.join(workflow.basedir, path))


def statistics_inputs(entry):
    """The input path lists of a statistics rule: each name its catalog entry gives is a target list of the
    study plan (trustmass.plan.Study), or ``repo:<path>``, a file of this checkout."""
    unknown = sorted(k for k in entry.inputs.values() if not k.startswith("repo:") and not callable(getattr(STUDY, k, None)))
    if unknown:
        raise ValueError(f"{entry.name}: unknown input lists {unknown} in its catalog entry; fix: name a method of "
                         "trustmass.plan.Study (or add one there)")
    return {name: repository_file(key.removeprefix("repo:")) if key.startswith("repo:") else getattr(STUDY, key)()
            for name, key in entry.inputs.items()}


def statistics_params(entry):
    """The workflow values a statistics rule takes besides its config slice (the entry's ``params``)."""
    values = {"content": lambda: {name: (c or {}).get("content") for name, c in config["corpora"].items()}}
    return {name: values[name]() for name in entry.params}


def statistics_enabled(entry):
    """Is the statistics entry switched on?  Its ``when`` is a config switch that is true, or a
    ``file:`` path that is committed."""
    if entry.when is None:
        return True
    if entry.when.startswith("file:"):
        return os.path.isfile(os.path.join(workflow.basedir, entry.when.removeprefix("file:")))
    value = config
    for key in entry.when.split("/"):
        value = value[key]
    return bool(value)


#: the statistics rules of stages switched off, their frames, and the outputs and claims that remain
_OFF_RULES = {r.name for r in STATISTICS if not statistics_enabled(r)}
_OFF_FRAMES = {f for r in STATISTICS if r.name in _OFF_RULES for f in r.frames}
ACTIVE_OUTPUTS = [o for o in OUTPUTS if not set(o.frames) & _OFF_FRAMES]
ACTIVE_HEADLINE_FRAMES = [f for f in HEADLINE_FRAMES if f not in _OFF_FRAMES]
