# Helpers for the reporting layer (workflow/rules/report.smk): the catalog of figures and tables,
# the statistics rules' inputs, params and switches, the caption quotes.  Functions and constants only.

import importlib.resources
import os

from trustmass.report.catalog import GPU_CHECK, HEADLINE_FRAMES, OUTPUTS, STATISTICS, stats_path
from trustmass.report.claims.data import claim as _claim

CLAIMS_FILE = str(importlib.resources.files("trustmass").joinpath("data", "claims.yaml"))
#: stages whose results this workflow produces (the rest are "not produced yet")
PRODUCED_STAGES = ["THY", "CAP", "INST", "STAT", "CERT", "AUD", "LOSS"] + (["TASK"] if config["task_contexts"]["enabled"] else []) + [
    stage for stage, on in (("PROBE", config["loss"]["probe"]["enabled"]), ("CURV", config["loss"]["curvature"]["enabled"])) if on
] + (["DEP", "BYTES", "RETR", "TIME"] if config["deploy"]["enabled"] else [])
STATISTICS_RULES = {r.name: r for r in STATISTICS}


def paper_quotes(ids):
    """The paper's claim texts for a caption (RST-escaped)."""
    escape = str.maketrans({"*": "\\*", "|": "\\|"})
    return [f"claim {i}: {_claim(i).text.translate(escape)}" for i in ids]


def statistics_inputs(entry):
    """The input path lists of a statistics rule, by the names its catalog entry gives them.
    The one place that maps those names to the workflow's helpers (common.smk, *_common.smk)."""
    lists = {
        "study_records": study_records,
        "headline_records": headline_records,
        "headline_audit_records": lambda: [AUDIT.format(model=m, corpus=c, doc=d) for m, c, d in headline_documents()],
        "headline_model_sources": lambda: sorted({model_source_record(m) for m, _, _ in headline_documents()}),
        "certification_manifest": lambda: f"{CERT}/manifest.parquet",
        "certify_shard_outputs": certify_shard_outputs,
        "sweep_rows": lambda: f"{CERT}/sweep_rows.parquet",
        "loss_outputs": loss_outputs,
        "allocation_outputs": allocation_outputs,
        "probe_outputs": lambda: [f"results/loss/{m}/probe_recall.parquet" for m in probe_models()],
        "curvature_outputs": curvature_outputs,
        "cells_outputs": cells_outputs,
        "deploy_outputs": deploy_outputs,
        "replay_outputs": replay_outputs,
        "task_records": task_records,
        "task_manifests": task_manifests,
        "headline_swap_rows": lambda: [SWAP_ROWS.format(model=m, corpus=c, doc=d) for m, c, d in headline_documents()],
        "headline_projection_rows": lambda: [PROJECTION_ROWS.format(model=m, corpus=c, doc=d) for m, c, d in headline_documents()],
        "diagnostics_outputs": diagnostics_outputs,
        "study_access_records": study_access_records,
        "worked_examples": lambda: "results/selfcheck/worked_examples.json",
        "gpu_check": lambda: os.path.join(workflow.basedir, GPU_CHECK),
    }
    unknown = sorted(set(entry.inputs.values()) - set(lists))
    if unknown:
        raise ValueError(f"{entry.name}: unknown input lists {unknown} in its catalog entry; fix: add them to statistics_inputs "
                         "(workflow/rules/report_common.smk)")
    return {name: lists[key]() for name, key in entry.inputs.items()}


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
