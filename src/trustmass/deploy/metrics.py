"""Answer scores on the 0-100 scale: RULER's string matches and LongBench's per-task metrics, as kvpress's
evaluation scores them (``evaluation/benchmarks/{ruler,longbench}/calculate_metrics.py``).

An item's score is the metric of its answer against its gold strings; with several gold strings the
metric says how they combine: ``string_match_all`` averages over them (every value must be answered),
the others take the best gold string (LongBench's ``max`` over ``ground_truths``).

``code_sim`` is fuzzywuzzy's ``fuzz.ratio`` as computed without python-Levenshtein (``difflib``'s
``SequenceMatcher.ratio``, rounded to a whole percent).  The summarisation and Chinese tasks need packages
the pinned stack lacks (``rouge``, ``jieba``): asking for them is an error naming the task.
"""

from __future__ import annotations

import difflib
import re
import string
from collections import Counter

__all__ = ["METRICS", "metric_for", "score_answer"]


def _contained(answer: str, gold: str) -> float:
    return float(gold.lower() in answer.lower())


def _normalize(text: str) -> str:
    """LongBench's ``normalize_answer``: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


def qa_f1(answer: str, gold: str) -> float:
    """Token F1 of the normalised answer against the normalised gold string."""
    pred, ref = _normalize(answer).split(), _normalize(gold).split()
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def _share_equal(numbers: list[str], target: str) -> float:
    return 0.0 if not numbers else sum(n == target for n in numbers) / len(numbers)


def count(answer: str, gold: str) -> float:
    """The share of the numbers in the answer that equal the gold count."""
    return _share_equal(re.findall(r"\d+", answer), str(gold))


def retrieval(answer: str, gold: str) -> float:
    """The share of the numbers in the answer that equal the gold paragraph number ("Paragraph 12")."""
    found = re.findall(r"Paragraph (\d+)", gold)
    if not found:
        raise ValueError(f"gold {gold!r} names no 'Paragraph N' (passage_retrieval_en)")
    return _share_equal(re.findall(r"\d+", answer), found[0])


def classification(answer: str, gold: str, all_classes=()) -> float:
    """1 / (classes named in the answer) when the gold class is among them (a class inside another one named is
    not counted: LongBench's rule), else 0."""
    named = [c for c in all_classes if c in answer]
    named = [c for c in named if not (c in gold and c != gold)]
    return 1.0 / len(named) if gold in named else 0.0


def code_sim(answer: str, gold: str) -> float:
    """Similarity of the answer's first line that is not a comment or a fence to the gold line."""
    line = next((s for s in answer.lstrip("\n").split("\n") if "`" not in s and "#" not in s and "//" not in s), "")
    return round(100 * difflib.SequenceMatcher(None, line, gold).ratio()) / 100


#: metric -> (function of (answer, gold[, all_classes]) in [0, 1], how gold strings combine)
METRICS = {
    "string_match_all": (_contained, "mean"),
    "string_match_part": (_contained, "max"),
    "qa_f1": (qa_f1, "max"),
    "count": (count, "max"),
    "retrieval": (retrieval, "max"),
    "classification": (classification, "max"),
    "code_sim": (code_sim, "max"),
}

#: LongBench task -> metric (kvpress's ``dataset2metric``); None: needs a package the stack lacks
LONGBENCH = {
    **dict.fromkeys(("narrativeqa", "qasper", "multifieldqa_en", "hotpotqa", "2wikimqa", "musique", "triviaqa"), "qa_f1"),
    **dict.fromkeys(("gov_report", "qmsum", "multi_news", "samsum", "multifieldqa_zh", "dureader", "vcsum",
                     "passage_retrieval_zh"), None),
    "trec": "classification", "lsht": None, "passage_retrieval_en": "retrieval", "passage_count": "count",
    "lcc": "code_sim", "repobench-p": "code_sim",
}  # fmt: skip
#: LongBench tasks whose answer is cut at its first line before scoring
FIRST_LINE = ("trec", "triviaqa", "samsum", "lsht")
#: RULER tasks scored by string_match_part (the rest: string_match_all)
RULER_PART = ("qa_1", "qa_2")


def metric_for(kind: str, task: str | None) -> str:
    """The metric of a ``kind`` ("ruler" | "longbench") record of ``task``."""
    if kind == "ruler":
        return "string_match_part" if task in RULER_PART else "string_match_all"
    if kind != "longbench":
        raise ValueError(f"kind = {kind!r} has no metrics (ruler | longbench)")
    if task not in LONGBENCH:
        raise ValueError(f"LongBench task {task!r} is unknown (one of {', '.join(LONGBENCH)}); fix: the record's "
                         "'task' field, or the benchmark's task key in deploy.benchmarks")
    if LONGBENCH[task] is None:
        raise ValueError(f"LongBench task {task!r} is scored by ROUGE or on Chinese text (rouge, jieba), which the "
                         "pinned stack does not have; fix: drop it from deploy.benchmarks")
    return LONGBENCH[task]


def score_answer(answer: str, gold, metric: str = "string_match_all", *, all_classes=(), task: str | None = None) -> float:
    """The answer's score in points (0-100) against ``gold`` (a string or several) under ``metric``."""
    if metric not in METRICS:
        raise ValueError(f"metric = {metric!r} is not one of {', '.join(METRICS)}")
    gold = [gold] if isinstance(gold, str) else list(gold)
    if not gold:
        raise ValueError("gold is empty: an item needs at least one gold answer")
    if task in FIRST_LINE:
        answer = answer.lstrip().split("\n")[0]
    fn, combine = METRICS[metric]
    extra = {"all_classes": tuple(all_classes)} if metric == "classification" else {}
    values = [fn(answer, g, **extra) for g in gold]
    return 100.0 * (sum(values) / len(values) if combine == "mean" else max(values))
