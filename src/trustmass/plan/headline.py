"""The headline population: the study's headline families on its headline corpus (``study.headline``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Headline"]


@dataclass(frozen=True)
class Headline:
    """``models`` empty means every model of the study; ``corpus`` None means every corpus.

    The paper's headline numbers (Figure 1, Table 8, the §2.1-2.3 claims, the audit, the certification
    manifest) are computed on one corpus and four families; content diversity is Table 2's alone.
    """

    models: tuple[str, ...] = ()
    corpus: str | None = None

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Headline:
        """``study.headline.models`` (default: every study model) and ``study.headline.corpus`` (default:
        the first of ``study.corpora``)."""
        study = config.get("study", {}) or {}
        headline = study.get("headline", {}) or {}
        models = headline.get("models") or study.get("models") or []
        corpora = study.get("corpora") or []
        corpus = headline.get("corpus") or (corpora[0] if corpora else None)
        return cls(models=tuple(models), corpus=corpus)

    def contains(self, model: str, corpus: str) -> bool:
        """Is (model, corpus) in the headline population?"""
        return (not self.models or model in self.models) and (self.corpus is None or corpus == self.corpus)

    def describe(self) -> str:
        models = ", ".join(self.models) if self.models else "every model"
        return f"{models} on {self.corpus or 'every corpus'}"
