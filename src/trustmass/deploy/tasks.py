"""RULER-style retrieval items (spec part B, "Tasks"): planted content and how an answer is scored.

The content -- needles and variable chains spliced into a haystack in token space, the question, the
chat template's split -- is built by :mod:`trustmass.sources.needles` (the task-structured contexts
build on it too); this module makes it a deployment item, scored under its metric
(:mod:`trustmass.deploy.metrics`).  Its names (``TASKS``, ``chat_parts``, ``prompt_ids``,
``sentence_boundaries``, ...) are re-exported here for the deployment stage.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from trustmass.deploy import metrics
from trustmass.sources.needles import (  # noqa: F401 (re-exported for the deployment stage)
    ADJECTIVES,
    NOUNS,
    PROMPT_FORMATS,
    TASKS,
    Planted,
    chat_parts,
    plant,
    prompt_ids,
    sentence_boundaries,
)

__all__ = ["TASKS", "Item", "chat_parts", "dense_valid", "make_item", "prompt_ids", "score", "sentence_boundaries"]


@dataclass(frozen=True, eq=False)
class Item(Planted):
    """One retrieval item: its planted content (or a benchmark's context and question) and how it is scored."""

    metric: str = "string_match_all"  # trustmass.deploy.metrics
    all_classes: tuple[str, ...] = ()  # the classification metric's classes
    max_new_tokens: int | None = None  # the item's own answer length (benchmark data), else the run's
    setting: str = "retrieval"  # "retrieval" (these synthetic tasks) | "benchmark" (RULER / LongBench data)

    def score(self, answer: str) -> float:
        """The answer's score in points (0-100) under the item's metric."""
        return metrics.score_answer(answer, self.gold, self.metric, all_classes=self.all_classes, task=self.task)

    @property
    def monotone(self) -> bool:
        """Whether a score of 100 can no longer change as the answer grows (so decoding may stop there)."""
        return self.metric in ("string_match_all", "string_match_part")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Item):
            return NotImplemented
        arrays = ("context_ids", "question_ids")
        same = all(getattr(self, f) == getattr(other, f) for f in self.__dataclass_fields__ if f not in arrays)
        return same and all(np.array_equal(getattr(self, f), getattr(other, f)) for f in arrays)

    __hash__ = None  # type: ignore[assignment]

    def as_row(self) -> dict:
        """The ``deploy_items`` row (spec: item_id, depth, needle_start, needle_end, gold, question, context_ids)."""
        return {
            "item_id": self.item_id,
            "task": self.task,
            "length": self.length,
            "depth": self.depth,
            "needle_start": [s for s, _ in self.needles],
            "needle_end": [e for _, e in self.needles],
            "gold": list(self.gold),
            "question": self.question,
            "answer_prefix": self.answer_prefix,
            "context_ids": self.context_ids.tolist(),
            "question_ids": self.question_ids.tolist(),
            "metric": self.metric,
            "setting": self.setting,
        }


def make_item(
    task: str,
    length: int,
    index: int,
    *,
    haystack_ids,
    tokenizer,
    seed: int,
    prompt_format: str = "plain",
    max_positions: int | None = None,
) -> Item:
    """Item ``index`` of ``task`` at ``length`` tokens (context + question + chat-template tokens)."""
    planted = plant(
        task,
        length,
        index,
        haystack_ids=haystack_ids,
        tokenizer=tokenizer,
        seed=seed,
        prompt_format=prompt_format,
        max_positions=max_positions,
    )
    return Item(**{f.name: getattr(planted, f.name) for f in fields(Planted)})


def score(answer: str, gold) -> float:
    """RULER's ``string_match_all`` × 100: the share of gold strings contained in ``answer``, ignoring case."""
    return metrics.score_answer(answer, gold, "string_match_all")


def dense_valid(scores, threshold: float = 100.0) -> np.ndarray:
    """Items the dense run answered fully (score >= threshold); the others are excluded from W/T/L."""
    s = np.asarray(scores, dtype=np.float64)
    if np.isnan(s).any():
        raise ValueError("dense scores contain NaN; fix: rerun the dense method for those items")
    return s >= threshold
