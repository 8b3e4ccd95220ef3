"""The study's documents and target lists: pure functions of a resolved configuration.

:class:`Study` answers "which files does this configuration ask for?" for every stage: the workflow's
rules take their inputs and target lists from it (``workflow/rules/*.smk`` hold no loop over the config),
``python -m trustmass.cli.plan`` counts from it, and the tests hold it against the default, panel and paper
configurations without Snakemake.  Paths come from :mod:`trustmass.plan.layout`.

A document is a ``(model, corpus, doc)`` triple, ``doc`` a four-digit index into the model's chunking of
the corpus.  Stages switched off plan no files.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trustmass.plan import layout
from trustmass.plan.controls import arm_config, arm_path, arms
from trustmass.plan.deploy import DeployTargets
from trustmass.plan.headline import Headline
from trustmass.plan.loss import LossTargets
from trustmass.plan.report import ReportTargets
from trustmass.plumbing.config_checks import task_contexts_first_chunk

__all__ = ["Document", "PlanError", "Study"]

Document = tuple[str, str, str]


class PlanError(ValueError):
    """The configuration asks for something it does not define (the message names the field and the fix)."""


def _doc(i: int) -> str:
    return f"{i:04d}"


def _files(pattern: str, documents: list[Document]) -> list[str]:
    return [pattern.format(model=m, corpus=c, doc=d) for m, c, d in documents]


class Study(LossTargets, DeployTargets, ReportTargets):
    """The files one configuration plans, stage by stage (the loss, deployment and reporting parts in their mixins)."""

    def __init__(self, config: Mapping[str, Any], arm: str | None = None):
        self.config = config
        #: the control arm this plan is (None: the trained study; trustmass.plan.controls)
        self.arm = arm
        self._arms: dict[str, Study] | None = None

    # ---- the control arms ----------------------------------------------------------------------------
    def arms(self) -> dict[str, Study]:
        """Each control arm's plan (none for an arm's own plan, or without ``controls.arms``)."""
        if self._arms is None:
            self._arms = (
                {a: Study(arm_config(self.config, a), arm=a) for a in arms(self.config)} if self.arm is None else {}
            )
        return self._arms

    def of(self, model: str) -> Study:
        """The plan a model's jobs follow: its arm's for a control twin, else this one."""
        return next((s for s in self.arms().values() if model in s.config["study"]["models"]), self)

    def pooled(self, path: str) -> str:
        """A pooled output (certification, statistics, claims) of this plan's arm."""
        return arm_path(path, self.arm)

    @property
    def headline(self) -> Headline:
        return Headline.from_config(self.config)

    # ---- sources -----------------------------------------------------------------------------------
    def entry(self, block: str, name: str, what: str) -> dict:
        """The config block of one model or corpus (``block``: ``models`` or ``corpora``)."""
        entries = self.config.get(block) or {}
        if name not in entries:
            raise PlanError(
                f"{what} {name!r} is not defined under `{block}:` in the configuration "
                f"(defined: {', '.join(sorted(entries)) or 'none'}); add it there or ask for another target"
            )
        return entries[name]

    def model_params(self, model: str) -> dict:
        """What prepare_model reads: the entry without what must not rerun a conversion (`mem_mb`,
        `documents` and the claims' metadata `lineage`, `parameters_b`)."""
        skip = ("mem_mb", "documents", "lineage", "parameters_b")
        return {k: v for k, v in self.entry("models", model, "model").items() if k not in skip}

    def model_inputs(self, model: str) -> list[str]:
        """What prepare_model reads from this run: a control twin's trained model folder (trustmass.plan.controls)."""
        entry = self.entry("models", model, "model")
        if entry.get("source") != "control":
            return []
        return [layout.MODEL_CONFIG.format(model=entry["of"]), layout.MODEL_SOURCE.format(model=entry["of"])]

    def model_mem_mb(self, model: str) -> int:
        """Peak memory of a conversion: fp32 weights twice plus the GGUF, about 4 GB for 0.5B parameters."""
        return int(self.entry("models", model, "model").get("mem_mb", 6000))

    def documents_for_model(self, model: str) -> dict:
        """`documents:` with the model's own `documents:` overrides on top (e.g. 16,384-token chunks for one arm)."""
        settings = dict(self.config.get("documents") or {})
        settings.update(self.entry("models", model, "model").get("documents") or {})
        return settings

    def shuffle_seed(self, model: str) -> int | None:
        """The master seed where the model's documents are shuffled (the shuffled-text control), else None: an
        unshuffled document does not depend on the seed, so changing it retokenizes nothing."""
        return int(self.config["seed"]) if self.documents_for_model(model).get("shuffle") else None

    def doc_ids(self, model: str) -> list[str]:
        """Document ids 0000..n_docs-1 of one model (a model may override documents.n_docs)."""
        return [_doc(i) for i in range(int(self.documents_for_model(model)["n_docs"]))]

    def primary_ids(self, model: str) -> list[str]:
        """The primary slice: the first statistics.primary_docs documents (Figure 2's, the map's)."""
        return self.doc_ids(model)[: int(self.config["statistics"]["primary_docs"])]

    # ---- capture and ceiling -----------------------------------------------------------------------
    def study_documents(self) -> list[Document]:
        """Every captured document of the study: study.models x study.corpora x docs."""
        study = self.config["study"]
        return [(m, c, d) for m in study["models"] for c in study["corpora"] for d in self.doc_ids(m)]

    def study_shards(self) -> list[str]:
        return _files(layout.CAPTURE_SHARD, self.study_documents())

    def study_records(self) -> list[str]:
        """Every ceiling record file of the study (one per capture shard)."""
        return _files(layout.CEILING, self.study_documents())

    def headline_documents(self) -> list[Document]:
        """The headline population's documents: Figure 1, Table 8, the headline claims, the audit and the
        certification manifest use them; Table 2 alone compares corpora."""
        headline = self.headline
        return [key for key in self.study_documents() if headline.contains(key[0], key[1])]

    def headline_records(self) -> list[str]:
        return _files(layout.CEILING, self.headline_documents())

    def headline_shards(self) -> list[str]:
        return _files(layout.CAPTURE_SHARD, self.headline_documents())

    def headline_sources(self) -> list[str]:
        """The source records of the headline models (shapes, load dtype), one per model."""
        return sorted({layout.MODEL_SOURCE.format(model=m) for m, _, _ in self.headline_documents()})

    def access_enabled(self) -> bool:
        return bool(self.config["access_law"]["enabled"])

    def study_access_records(self) -> list[str]:
        """The access-law records of every captured document, the task contexts' included (none when off)."""
        if not self.access_enabled():
            return []
        return _files(layout.ACCESS_RECORDS, [*self.study_documents(), *self.task_documents()])

    # ---- the audit -----------------------------------------------------------------------------------
    def audit_records(self) -> list[str]:
        return _files(layout.AUDIT, self.headline_documents())

    def swap_rows(self) -> list[str]:
        return _files(layout.SWAP_ROWS, self.headline_documents())

    def projection_rows(self) -> list[str]:
        return _files(layout.PROJECTION_ROWS, self.headline_documents())

    # ---- certification -------------------------------------------------------------------------------
    def certify_manifest(self) -> str:
        return self.pooled(layout.CERTIFY_MANIFEST)

    def sweep_rows(self) -> str:
        return self.pooled(layout.SWEEP_ROWS)

    def certify_shards(self) -> list[str]:
        return [
            self.pooled(layout.CERTIFY_SHARD).format(shard=f"{i:03d}")
            for i in range(int(self.config["certification"]["n_shards"]))
        ]

    # ---- self-check --------------------------------------------------------------------------------------
    def worked_examples(self) -> str:
        return layout.WORKED_EXAMPLES

    # ---- task contexts -------------------------------------------------------------------------------
    def task_models(self) -> list[str]:
        """task_contexts.models, or the headline families (none when the stage is off)."""
        tasks = self.config["task_contexts"]
        return list(tasks["models"] or self.headline.models) if tasks["enabled"] else []

    def task_corpus(self) -> str:
        return self.config["task_contexts"]["corpus"]

    def task_haystack(self) -> str:
        """The corpus text the contexts are cut from (task_contexts.haystack, else the headline corpus)."""
        corpus = self.config["task_contexts"]["haystack"] or self.headline.corpus
        return layout.CORPUS_TEXT.format(corpus=corpus)

    def task_settings(self, model: str) -> dict:
        """What task_documents reads: the block, the model's documents settings, the sampling plan."""
        documents = self.documents_for_model(model)
        tasks = self.config["task_contexts"]
        return {
            "task_contexts": {**tasks, "first_chunk": task_contexts_first_chunk(self.config, documents)},
            # shuffle: the shuffled-text control (a control model's `documents: {shuffle: true}`)
            "documents": {
                **{k: documents[k] for k in ("doc_tokens", "bos")},
                "shuffle": bool(documents.get("shuffle")),
            },
            "capture": {k: self.config["capture"][k] for k in ("rows_per_head", "min_position")},
            "seed": self.config["seed"],
        }

    def task_documents(self) -> list[Document]:
        """Every task context: types x per_type documents of the task corpus, per task model."""
        tasks = self.config["task_contexts"]
        n = len(tasks["types"]) * int(tasks["per_type"])
        return [(m, self.task_corpus(), _doc(i)) for m in self.task_models() for i in range(n)]

    def task_records(self) -> list[str]:
        return _files(layout.CEILING, self.task_documents())

    def task_manifests(self) -> list[str]:
        return sorted({layout.DOCUMENTS_MANIFEST.format(model=m, corpus=c) for m, c, _ in self.task_documents()})
