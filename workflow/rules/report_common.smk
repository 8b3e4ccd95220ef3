# Helpers for the reporting layer (workflow/rules/report.smk): the catalog of figures and tables,
# the statistics rules' frames, the caption quotes.  Functions and constants only.

import importlib.resources
import os

from trustmass.report.catalog import HEADLINE_FRAMES, OUTPUTS, STATISTICS, stats_path
from trustmass.report.claims.data import claim as _claim
from trustmass.report.frames.gpu import GPU_CHECK

CLAIMS_FILE = str(importlib.resources.files("trustmass").joinpath("data", "claims.yaml"))
#: stages whose results this workflow produces (the rest are "not produced yet")
PRODUCED_STAGES = ["THY", "CAP", "INST", "STAT", "CERT", "AUD", "LOSS"] + (["TASK"] if config["task_contexts"]["enabled"] else []) + [
    stage for stage, on in (("PROBE", config["loss"]["probe"]["enabled"]), ("CURV", config["loss"]["curvature"]["enabled"])) if on
] + (["DEP", "BYTES", "RETR", "TIME"] if config["deploy"]["enabled"] else [])
#: the statistics rules of stages switched off, their frames, and the outputs and claims that remain
_OFF_RULES = (
    (set() if config["deploy"]["enabled"] else {"deploy_statistics"})
    | (set() if config["task_contexts"]["enabled"] else {"task_statistics"})
    | (set() if config["diagnostics"]["enabled"] else {"diagnostics_statistics"})
    | (set() if config["access_law"]["enabled"] else {"access_statistics"})
    | (set() if os.path.isfile(os.path.join(workflow.basedir, GPU_CHECK)) else {"gpu_statistics"})  # make gpu-check, committed
)
_OFF_FRAMES = {f for r in STATISTICS if r.name in _OFF_RULES for f in r.frames}
ACTIVE_OUTPUTS = [o for o in OUTPUTS if not set(o.frames) & _OFF_FRAMES]
ACTIVE_HEADLINE_FRAMES = [f for f in HEADLINE_FRAMES if f not in _OFF_FRAMES]
STATISTICS_CONFIG = ("seed", "labels", "statistics", "study/headline", "study/models", "study/corpora")
STATISTICS_RULES = {r.name: r for r in STATISTICS}


def paper_quotes(ids):
    """The paper's claim texts for a caption (RST-escaped)."""
    escape = str.maketrans({"*": "\\*", "|": "\\|"})
    return [f"claim {i}: {_claim(i).text.translate(escape)}" for i in ids]


def frames_of(rule_name):
    """The statistics frames a statistics rule writes, as named outputs (+ their sidecars)."""
    paths = {name: stats_path(name) for name in STATISTICS_RULES[rule_name].frames}
    return {**paths, "prov": [prov(p) for p in paths.values()]}


