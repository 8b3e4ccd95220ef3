"""The held-out loss stage's documents and targets (a mixin of :class:`trustmass.plan.study.Study`).

The held-out documents are a second chunking of each corpus whose first chunk starts after the capture
documents' text; the map and the probe are fitted on capture documents, so nothing is scored on the text
it was fitted on.
"""

from __future__ import annotations

from trustmass.core.config_conflict import ConfigConflict
from trustmass.plan import layout
from trustmass.plumbing.config_checks import heldout_first_doc, probe_train_docs_problem

__all__ = ["LossTargets"]


class LossTargets:
    """Methods of :class:`~trustmass.plan.study.Study` for the loss stage (uses its config and documents)."""

    def loss_models(self) -> list[str]:
        """loss.models, or the headline families."""
        return list(self.config["loss"]["models"] or self.headline.models)

    def heldout_corpora(self) -> list[str]:
        return list(self.config["loss"]["heldout"]["corpora"] or self.config["study"]["corpora"])

    def heldout_first_doc(self, model: str) -> int:
        return heldout_first_doc(self.config, self.documents_for_model(model))

    def heldout_settings(self, model: str) -> dict:
        """tokenize_documents settings of the held-out chunking: first_doc + n_docs chunks."""
        settings = self.documents_for_model(model)
        heldout = self.config["loss"]["heldout"]
        return {
            **settings,
            "doc_tokens": int(heldout["doc_tokens"] or settings["doc_tokens"]),
            "n_docs": self.heldout_first_doc(model) + int(heldout["n_docs"]),
        }

    def heldout_ids(self, model: str) -> list[str]:
        """The held-out documents of `model` (indices in its held-out chunking)."""
        first = self.heldout_first_doc(model)
        return [f"{i:04d}" for i in range(first, first + int(self.config["loss"]["heldout"]["n_docs"]))]

    def loss_documents(self) -> list[tuple[str, str, str]]:
        """(model, corpus, doc) of every held-out document."""
        return [(m, c, d) for m in self.loss_models() for c in self.heldout_corpora() for d in self.heldout_ids(m)]

    def loss_outputs(self) -> list[str]:
        """Every per-document loss output (the loss statistics' inputs)."""
        return [layout.LOSS_TOKENS.format(model=m, corpus=c, doc=d) for m, c, d in self.loss_documents()]

    def cells_outputs(self) -> list[str]:
        """Every held-out document's per-cell frame (the conversion constant's reconstruction change)."""
        return [layout.CELLS.format(model=m, corpus=c, doc=d) for m, c, d in self.loss_documents()]

    def diagnostics_outputs(self) -> list[str]:
        """The diagnostics forward of every held-out document (none when diagnostics are off)."""
        if not self.config["diagnostics"]["enabled"]:
            return []
        return [layout.DIAGNOSTICS.format(model=m, corpus=c, doc=d) for m, c, d in self.loss_documents()]

    def curvature_outputs(self) -> list[str]:
        """The curvature frames: each model's first loss.curvature.max_docs held-out documents (none when off)."""
        settings = self.config["loss"]["curvature"]
        if not settings["enabled"]:
            return []
        cap, documents = settings.get("max_docs"), self.loss_documents()
        keys = [key for m in self.loss_models() for key in [k for k in documents if k[0] == m][:cap]]
        return [layout.CURVATURE.format(model=m, corpus=c, doc=d) for m, c, d in keys]

    def map_shards(self, model: str) -> list[str]:
        """The capture shards of the map documents: the primary slice of every study corpus (Figure 2's)."""
        ids = self.primary_ids(model)
        return [
            layout.CAPTURE_SHARD.format(model=model, corpus=c, doc=d)
            for c in self.config["study"]["corpora"]
            for d in ids
        ]

    def allocation_shards(self, model: str) -> list[str]:
        """The allocation panel's rows: the primary slice of the headline corpus (the paper's capture)."""
        corpus = self.headline.corpus
        return [layout.CAPTURE_SHARD.format(model=model, corpus=corpus, doc=d) for d in self.primary_ids(model)]

    def allocation_outputs(self) -> list[str]:
        if not self.config["loss"]["allocation"]["enabled"]:
            return []
        return [layout.ALLOCATION.format(model=m) for m in self.loss_models()]

    def probe_models(self) -> list[str]:
        """The models the probe is trained and evaluated on: loss.probe.models, or every loss model."""
        probe = self.config["loss"]["probe"]
        return list(probe["models"] or self.loss_models()) if probe["enabled"] else []

    def probe_outputs(self, model: str) -> list[str]:
        return [layout.PROBE.format(model=model)] if model in self.probe_models() else []

    def probe_recalls(self) -> list[str]:
        return [layout.PROBE_RECALL.format(model=m) for m in self.probe_models()]

    def probe_shards(self, model: str) -> tuple[list[str], list[str]]:
        """(training shards, recall shards): the first probe.train_docs documents of the headline corpus;
        the primary documents of the other study corpora (else the headline corpus's remaining ones)."""
        corpus, docs = self.headline.corpus, self.doc_ids(model)
        n_train = int(self.config["loss"]["probe"]["train_docs"])
        others = len(self.config["study"]["corpora"]) > 1
        problem = probe_train_docs_problem(n_train, len(docs), model, others)
        if problem:
            raise ConfigConflict(problem, fields=("loss.probe.train_docs",))

        def shard(c: str, d: str) -> str:
            return layout.CAPTURE_SHARD.format(model=model, corpus=c, doc=d)

        train = [shard(corpus, d) for d in docs[:n_train]]
        others = [shard(c, d) for c in self.config["study"]["corpora"] if c != corpus for d in self.primary_ids(model)]
        return train, others or [shard(corpus, d) for d in docs[n_train:]]
