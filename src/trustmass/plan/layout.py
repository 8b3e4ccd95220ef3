"""Every file the study reads or writes, as one path pattern each.

The patterns use Snakemake's ``{wildcard}`` syntax, so the rules take them as outputs unchanged and the
target lists of :mod:`trustmass.plan.study` format them; nothing else in the project spells a path of
``resources/``, ``results/`` or ``logs/``.  Relative to the workflow's working directory.

This module imports nothing: every layer may read it.
"""

from __future__ import annotations

__all__ = [
    "ACCESS_RECORDS",
    "ALLOCATION",
    "AUDIT",
    "BENCH_ENUMERATION",
    "CACHE_DIR",
    "CAPTURE_SHARD",
    "CAPTURE_VALIDATION",
    "CEILING",
    "CELLS",
    "CERT",
    "CERTIFIED",
    "CERTIFY_MANIFEST",
    "CERTIFY_SHARD",
    "CLAIMS",
    "CORPUS_RECORD",
    "CORPUS_TEXT",
    "CURVATURE",
    "DATA_ROOTS",
    "DEPLOY_REPLAY",
    "DEPLOY_ROWS",
    "DIAGNOSTICS",
    "DOCUMENTS",
    "DOCUMENTS_MANIFEST",
    "HELDOUT",
    "HELDOUT_MANIFEST",
    "LOGS",
    "LOSS_MAP",
    "LOSS_TOKENS",
    "MODEL_CONFIG",
    "MODEL_SOURCE",
    "OUTPUT_ROOTS",
    "PROBE",
    "PROBE_RECALL",
    "PROJECTION_ROWS",
    "STATS_DIR",
    "SWAP_ROWS",
    "SWEEP_ROWS",
    "WORKED_EXAMPLES",
    "fill",
    "log",
    "stats_path",
]

#: the folders a run writes (checked writable before it starts)
OUTPUT_ROOTS = ("results", "resources", "logs")
#: the folders whose killed writers' temporaries a run removes at its start
DATA_ROOTS = ("results", "resources")
#: downloads (pip wheels, Debian packages, hub snapshots), unless the config sets cache_dir
CACHE_DIR = "resources/cache"

# ---- sources: a model as a Hugging Face folder, a corpus as one text file, documents per (model, corpus)
MODEL_CONFIG = "resources/models/{model}/config.json"
MODEL_SOURCE = (
    "resources/models/{model}/trustmass_source.json"  # origin, load dtype, shapes (sources.models.SOURCE_RECORD)
)
CORPUS_TEXT = "resources/corpora/{corpus}/corpus.txt"
CORPUS_RECORD = "resources/corpora/{corpus}/corpus.json"
DOCUMENTS = "resources/documents/{model}/{corpus}.safetensors"
DOCUMENTS_MANIFEST = "resources/documents/{model}/{corpus}.json"
HELDOUT = "resources/heldout/{model}/{corpus}.safetensors"
HELDOUT_MANIFEST = "resources/heldout/{model}/{corpus}.json"

# ---- capture and ceiling: one shard and one record file per captured document
CAPTURE_SHARD = "results/capture/{model}/{corpus}/{doc}.safetensors"
CAPTURE_VALIDATION = "results/capture/{model}/{corpus}/{doc}.validation.parquet"
ACCESS_RECORDS = "results/capture/{model}/{corpus}/{doc}.access.parquet"
CEILING = "results/ceiling/{model}/{corpus}/{doc}.parquet"

# ---- the audit and its row diagnostics
AUDIT = "results/audit/{model}/{corpus}/{doc}.parquet"
SWAP_ROWS = "results/audit/{model}/{corpus}/{doc}.swaps.parquet"
PROJECTION_ROWS = "results/audit/{model}/{corpus}/{doc}.projection.parquet"

# ---- certification
CERT = "results/certify"
CERTIFY_MANIFEST = f"{CERT}/manifest.parquet"
CERTIFY_SHARD = f"{CERT}/shards/{{shard}}.parquet"
SWEEP_ROWS = f"{CERT}/sweep_rows.parquet"
CERTIFIED = f"{CERT}/certified.parquet"

# ---- the held-out loss
LOSS_MAP = "results/loss/{model}/map.parquet"
LOSS_TOKENS = "results/loss/{model}/{corpus}/{doc}.parquet"
CELLS = "results/loss/{model}/{corpus}/{doc}.cells.parquet"
CURVATURE = "results/loss/{model}/{corpus}/{doc}.curvature.parquet"
DIAGNOSTICS = "results/loss/{model}/{corpus}/{doc}.diagnostics.parquet"
ALLOCATION = "results/loss/{model}/allocation.parquet"
PROBE = "results/loss/{model}/probe.safetensors"
PROBE_RECALL = "results/loss/{model}/probe_recall.parquet"

# ---- deployment
DEPLOY_ROWS = "results/deploy/{model}/{task}/{length}.parquet"
DEPLOY_REPLAY = "results/deploy/{model}/replay.parquet"

# ---- self-check, benchmark, statistics, claims
WORKED_EXAMPLES = "results/selfcheck/worked_examples.json"
BENCH_ENUMERATION = "results/bench/enumeration.json"
STATS_DIR = "results/stats"
CLAIMS = {"html": "results/claims.html", "md": "results/claims.md", "json": "results/claims.json"}

#: each rule's log (rules generated from the report catalog log to logs/report/<rule>.log)
LOGS = {
    "prepare_model": "logs/sources/prepare_model/{model}.log",
    "prepare_corpus": "logs/sources/prepare_corpus/{corpus}.log",
    "tokenize_documents": "logs/sources/tokenize_documents/{model}/{corpus}.log",
    "task_documents": "logs/sources/task_documents/{model}.log",
    "capture": "logs/capture/{model}/{corpus}/{doc}.log",
    "ceiling": "logs/ceiling/{model}/{corpus}/{doc}.log",
    "audit": "logs/audit/{model}/{corpus}/{doc}.log",
    "row_diagnostics": "logs/audit/row_diagnostics/{model}/{corpus}/{doc}.log",
    "certify_manifest": "logs/certify/manifest.log",
    "certify_shard": "logs/certify/shard_{shard}.log",
    "certify_sweep": "logs/certify/sweep.log",
    "tokenize_heldout": "logs/loss/tokenize_heldout/{model}/{corpus}.log",
    "loss_map": "logs/loss/map/{model}.log",
    "loss_document": "logs/loss/document/{model}/{corpus}/{doc}.log",
    "loss_curvature": "logs/loss/curvature/{model}/{corpus}/{doc}.log",
    "loss_diagnostics": "logs/loss/diagnostics/{model}/{corpus}/{doc}.log",
    "allocation_panel": "logs/loss/allocation/{model}.log",
    "probe_train": "logs/loss/probe/{model}.log",
    "deploy_condition": "logs/deploy/condition/{model}/{task}/{length}.log",
    "deploy_replay": "logs/deploy/replay/{model}.log",
    "worked_examples": "logs/selfcheck/worked_examples.log",
    "bench_enumeration": "logs/bench/enumeration.log",
}


def log(rule: str) -> str:
    """The log of a rule: its entry in :data:`LOGS`, else ``logs/report/<rule>.log`` (the reporting rules)."""
    return LOGS.get(rule, f"logs/report/{rule}.log")


def stats_path(frame: str) -> str:
    """Where a statistics frame is written."""
    return f"{STATS_DIR}/{frame}.parquet"


class _Keep(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def fill(pattern: str, **values: object) -> str:
    """``pattern`` with some wildcards filled in and the others left for Snakemake (``{model}`` stays)."""
    return pattern.format_map(_Keep(values))
