"""How many instances a configuration plans: from the config itself, and from snakemake's dry-run.

An *instance* is one sampled query row of one query head at one enumerated budget (spec §0), so a
captured document of a model contributes ``layers x heads x rows_per_head x len(budgets.enumerated)``
instances; the paper's checksums (111,744 for the four headline families, 56,448 for Qwen2.5-7B at
16,384 tokens) count the *primary slice*, the first :data:`PRIMARY_DOCS` documents of each corpus.

Two ways to the same table, so that a test can hold the workflow's DAG against the arithmetic:

:func:`planned_instances`
    From a resolved configuration alone: ``study.models x study.corpora``, each model's declared
    shape (``declared: {layers, heads}``) and its documents (``documents:`` with the model's own
    ``documents:`` on top, as :class:`trustmass.plan.Study` resolves them for the workflow).
:func:`instances_from_dryrun`
    From the text of ``snakemake --dry-run``: the jobs of the capture rule that snakemake actually
    planned, one per (model, corpus, doc) read from its ``wildcards:`` line, each multiplied by the
    model's declared shape.  The job count is checked against the ``Job stats:`` table, so output
    printed with ``--quiet`` (no job list) is an error rather than a count of zero.

Both return a polars frame with one row per (model, corpus); :func:`summed` adds columns up over a
set of models.  ``python -m trustmass.cli.plan --configfile config/paper.yaml`` prints the table.

Shapes come from ``declared:`` because a plan is made before any model is fetched (a dry-run must
not touch the hub); the capture stage checks the declared shape against the model's own config
before it computes anything (``scripts/capture.py``), so a wrong ``declared:`` cannot go unnoticed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from trustmass.plan import PlanError, Study

__all__ = [
    "PRIMARY_DOCS",
    "DryRunParseError",
    "documents_for_model",
    "instances_from_dryrun",
    "model_shape",
    "paper_plan",
    "planned_captures",
    "planned_instances",
    "planned_manifest",
    "resolve_config",
    "summed",
]

#: the primary slice: the first three documents of every corpus (spec §2.2)
PRIMARY_DOCS = 3

#: the columns of a plan, in order
COLUMNS = [
    "model",
    "corpus",
    "layers",
    "heads",
    "rows_per_head",
    "budgets",
    "doc_tokens",
    "docs",
    "instances",
    "primary_docs",
    "primary_instances",
]

_REPO = Path(__file__).resolve().parents[3]  # src/trustmass/cli/instances.py -> the repository


class DryRunParseError(ValueError):
    """The dry-run text does not list the jobs needed to count instances."""


# --------------------------------------------------------------------------------------------------
# configuration


def resolve_config(*configfiles: str | Path, base: str | Path | None = None, schema: str | Path | None = None) -> dict:
    """``config.yaml`` with ``configfiles`` merged on top, as ``snakemake --configfile`` does, validated.

    The merge is snakemake's own (:func:`snakemake.utils.update_config`: nested mappings merge, lists
    and scalars are replaced); validation, defaults and the cross-key checks are the workflow's start-up
    (:func:`trustmass.cli.startup.start`).
    """
    from snakemake.utils import update_config

    from trustmass.cli.startup import start

    base = Path(base) if base is not None else _REPO / "config.yaml"
    schema = Path(schema) if schema is not None else _REPO / "workflow" / "schemas" / "config.schema.yaml"
    config = _read_yaml(base)
    for path in configfiles:
        update_config(config, _read_yaml(path))
    return start(config, schema)  # as workflow/rules/common.smk starts


def _read_yaml(path: str | Path) -> dict:
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a config file must be a mapping, got {type(data).__name__}")
    return data


def documents_for_model(config: Mapping[str, Any], model: str) -> dict:
    """``documents:`` with the model's own ``documents:`` overrides on top (:meth:`trustmass.plan.Study.documents_for_model`)."""
    try:
        settings = Study(config).documents_for_model(model)
    except PlanError as exc:
        raise KeyError(str(exc)) from None
    for key in ("doc_tokens", "n_docs"):
        if key not in settings:
            raise KeyError(
                f"config: documents.{key} is missing; resolve the config first (trustmass.plumbing.config.validate_config)"
            )
    return settings


def model_shape(config: Mapping[str, Any], model: str, shapes: Mapping[str, Mapping[str, Any]] | None = None) -> dict:
    """``{layers, heads}`` of a model: ``shapes[model]`` if given (e.g. read with model_shapes), else ``declared:``."""
    source = (shapes or {}).get(model) or _model_entry(config, model).get("declared") or {}
    missing = [k for k in ("layers", "heads") if k not in source]
    if missing:
        raise KeyError(
            f"model {model!r}: no {' or '.join(missing)} to plan with; fix: add `declared: {{layers: L, heads: H}}` "
            f"to models.{model} (the capture checks it against the model's config), or pass its shapes"
        )
    return {"layers": int(source["layers"]), "heads": int(source["heads"])}


def _model_entry(config: Mapping[str, Any], model: str) -> Mapping[str, Any]:
    models = config.get("models") or {}
    if model not in models:
        raise KeyError(
            f"model {model!r} is not defined under `models:` (defined: {', '.join(sorted(models)) or 'none'})"
        )
    return models[model]


def _require(config: Mapping[str, Any], *keys: str) -> Any:
    node: Any = config
    for depth, key in enumerate(keys):
        if not isinstance(node, Mapping) or key not in node:
            raise KeyError(
                f"config has no {'.'.join(keys[: depth + 1])}; resolve the config first (trustmass.plumbing.config.validate_config)"
            )
        node = node[key]
    return node


# --------------------------------------------------------------------------------------------------
# the plan from the configuration


def planned_instances(
    config: Mapping[str, Any],
    study: Mapping[str, Sequence[str]] | None = None,
    shapes: Mapping[str, Mapping[str, Any]] | None = None,
) -> pl.DataFrame:
    """Instances per (model, corpus) of ``study`` (default ``config["study"]``), from the config alone."""
    study = _require(config, "study") if study is None else study
    rows = []
    for model in study["models"]:
        documents = documents_for_model(config, model)
        for corpus in study["corpora"]:
            if corpus not in (config.get("corpora") or {}):
                raise KeyError(f"corpus {corpus!r} is not defined under `corpora:`")
            rows.append(_plan_row(config, model, corpus, range(int(documents["n_docs"])), documents, shapes))
    return _frame(rows)


def _plan_row(config, model: str, corpus: str, docs: Iterable[int], documents: Mapping, shapes) -> dict:
    docs = sorted(docs)
    shape = model_shape(config, model, shapes)
    rows_per_head = int(_require(config, "capture", "rows_per_head"))
    budgets = len(_require(config, "budgets", "enumerated"))
    per_doc = shape["layers"] * shape["heads"] * rows_per_head * budgets
    primary = sum(1 for d in docs if d < PRIMARY_DOCS)
    return {
        "model": model,
        "corpus": corpus,
        **shape,
        "rows_per_head": rows_per_head,
        "budgets": budgets,
        "doc_tokens": int(documents["doc_tokens"]),
        "docs": len(docs),
        "instances": per_doc * len(docs),
        "primary_docs": primary,
        "primary_instances": per_doc * primary,
    }


def _frame(rows: list[dict]) -> pl.DataFrame:
    schema = {c: (pl.String if c in ("model", "corpus") else pl.Int64) for c in COLUMNS}
    return pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)


def summed(frame: pl.DataFrame, models: Iterable[str] | None = None) -> dict[str, int]:
    """Totals of the count columns (docs, instances, primary_docs, primary_instances), over ``models`` if given."""
    if models is not None:
        models = list(models)
        unknown = sorted(set(models) - set(frame["model"]))
        if unknown:
            raise KeyError(f"models {unknown} are not in the plan (planned: {sorted(set(frame['model']))})")
        frame = frame.filter(pl.col("model").is_in(models))
    return {c: int(frame[c].sum()) for c in ("docs", "instances", "primary_docs", "primary_instances")}


# --------------------------------------------------------------------------------------------------
# the plan from a dry-run

_JOB_HEADER = re.compile(r"^(?:local)?(?:rule|checkpoint) (?P<rule>[A-Za-z_][A-Za-z0-9_]*):\s*$")
_WILDCARDS = re.compile(r"^\s+wildcards: (?P<items>.+?)\s*$")
_WILDCARD_ITEM = re.compile(r"\s*(?P<key>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>[^,]*)")


def planned_jobs(output: str) -> dict[str, int]:
    """Job counts per rule from snakemake's ``Job stats:`` table."""
    counts: dict[str, int] = {}
    lines = iter(output.splitlines())
    for line in lines:
        if line.strip() == "Job stats:":
            break
    else:
        return counts
    for line in lines:
        parts = line.split()
        if not parts or set(parts[0]) <= {"-"} or parts[0] == "job":
            continue
        if parts[0] == "total" or len(parts) != 2 or not parts[1].isdigit():
            break
        counts[parts[0]] = counts.get(parts[0], 0) + int(parts[1])
    return counts


def planned_captures(output: str, rule: str = "capture") -> pl.DataFrame:
    """(model, corpus, doc) of every ``rule`` job in the text of ``snakemake --dry-run``.

    Reads each job block (``rule capture:`` ... ``wildcards: model=..., corpus=..., doc=...``) and
    checks the number of jobs found against the ``Job stats:`` table.
    """
    jobs: list[dict[str, str]] = []
    current = None
    for line in output.splitlines():
        header = _JOB_HEADER.match(line)
        if header:
            current = header["rule"]
            continue
        if not line.strip():
            current = None
            continue
        match = _WILDCARDS.match(line)
        if match and current == rule:
            jobs.append({m["key"]: m["value"].strip() for m in _WILDCARD_ITEM.finditer(match["items"])})
            current = None  # one wildcards line per job
    stated = planned_jobs(output).get(rule, 0)
    if not stated and not jobs:
        if "Job stats:" not in output and "Nothing to be done" not in output:
            raise DryRunParseError(
                "the dry-run output has no 'Job stats:' table; was it run with --dry-run (and not --quiet)?"
            )
        return pl.DataFrame(schema={"model": pl.String, "corpus": pl.String, "doc": pl.String})
    if len(jobs) != stated:
        raise DryRunParseError(
            f"the dry-run lists {len(jobs)} '{rule}' job(s) with wildcards but its Job stats table says {stated}; "
            "run snakemake --dry-run without --quiet so that every job is printed"
        )
    bad = [j for j in jobs if not {"model", "corpus", "doc"} <= set(j)]
    if bad:
        raise DryRunParseError(f"'{rule}' jobs without model/corpus/doc wildcards: {bad[:3]}")
    frame = pl.DataFrame([{k: j[k] for k in ("model", "corpus", "doc")} for j in jobs])
    duplicated = frame.filter(frame.is_duplicated())
    if duplicated.height:
        raise DryRunParseError(f"'{rule}' jobs listed twice: {duplicated.unique().rows()[:3]}")
    return frame.sort("model", "corpus", "doc")


def instances_from_dryrun(
    output: str,
    config: Mapping[str, Any],
    rule: str = "capture",
    shapes: Mapping[str, Mapping[str, Any]] | None = None,
) -> pl.DataFrame:
    """Instances per (model, corpus) of the study's ``rule`` jobs the dry-run planned (same columns as
    planned_instances); the task contexts' jobs (``task_contexts.corpus``: a population of their own) are left out."""
    jobs = planned_captures(output, rule)
    tasks = config.get("task_contexts") or {}
    if tasks.get("enabled") and jobs.height:
        jobs = jobs.filter(pl.col("corpus") != tasks.get("corpus", "tasks"))
    rows = []
    for (model, corpus), group in jobs.group_by(["model", "corpus"], maintain_order=True):
        docs = []
        for doc in group["doc"]:
            if not doc.isdigit():
                raise DryRunParseError(
                    f"'{rule}' job {model}/{corpus}/{doc}: the doc wildcard is not a document number"
                )
            docs.append(int(doc))
        rows.append(_plan_row(config, model, corpus, docs, documents_for_model(config, model), shapes))
    return _frame(rows).sort("model", "corpus")


def planned_manifest(config: Mapping[str, Any]) -> dict[str, Any]:
    """The certification manifest a configuration plans: headline families x enumerated budgets x
    dropped-mass deciles x ``certification.per_stratum`` instances (a stratum with fewer records gives
    all it has, which the paper's scale never meets), the safety net's seconds per solve and the
    seconds its work budget stands for (`trustmass.certification.budget_seconds`)."""
    from trustmass.certification import budget_seconds
    from trustmass.certification.manifest import N_DECILES

    study = _require(config, "study")
    families = (study.get("headline") or {}).get("models") or study["models"]
    budgets = _require(config, "budgets", "enumerated")
    cert = _require(config, "certification")
    per_stratum = int(cert["per_stratum"])
    return {
        "families": list(families),
        "instances": len(families) * len(budgets) * N_DECILES * per_stratum,
        "per_budget": len(families) * N_DECILES * per_stratum,
        "time_limit_s": float(cert["time_limit_s"]),
        "budget_s": budget_seconds(cert),
        "shards": int(cert["n_shards"]),
        "certifier": str(cert.get("certifier", "bnb")),
    }


# --------------------------------------------------------------------------------------------------
# command line


# --------------------------------------------------------------------------------------------------
# the paper's configuration-set numbers


def paper_plan(config: Mapping[str, Any]) -> list[dict]:
    """Each claim value set by the configuration (``configured:`` in data/claims.yaml) that the paper
    states as a number or span, next to what ``config`` plans for it: ``planned`` (None where the config
    fixes only its scale), ``equal`` (the plan is the paper's number; spans within its printed digits)."""
    from trustmass.report.claims.configured import implied
    from trustmass.report.claims.data import load_claims
    from trustmass.report.claims.model import half_unit

    out = []
    for claim in load_claims():
        for value in claim.values:
            if value.configured is None or value.unit not in ("count", "billions"):
                continue  # the paper's counts and sizes (a share s/N is set, but measured, not planned)
            got = implied(value.configured, config)
            if value.low is not None:
                paper: Any = (float(value.low), float(value.high))
                equal = isinstance(got.value, tuple) and all(
                    abs(g - p) <= half_unit(x) for g, p, x in zip(got.value, paper, (value.low, value.high))
                )
            elif value.value is not None:
                paper = float(value.value)
                equal = got.value is not None and not isinstance(got.value, tuple) and float(got.value) == paper
            else:
                continue
            out.append(
                {
                    "claim": claim.id,
                    "value": value.name,
                    "paper": paper,
                    "planned": got.value,
                    "equal": equal,
                    "how": got.how,
                }
            )
    return out
