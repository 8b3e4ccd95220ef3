"""Answer scores on the 0-100 scale: RULER's string matches and LongBench's per-task metrics, as kvpress's
evaluation scores them (``evaluation/benchmarks/{ruler,longbench}/calculate_metrics.py``, whose LongBench
metrics are THUDM/LongBench's ``LongBench/metrics.py`` and ``eval.py`` copied unchanged).

An item's score is the metric of its answer against its gold strings; with several gold strings the
metric says how they combine: ``string_match_all`` averages over them (every value must be answered),
the others take the best gold string (LongBench's ``max`` over ``ground_truths``).  Before a LongBench
metric, the answer loses its leading whitespace and, for trec, triviaqa, samsum and lsht, everything after
its first line (kvpress's ``scorer``).

The library-backed metrics call the packages LongBench's evaluation calls, imported on first use only:
``rouge`` (ROUGE-L F of ``Rouge().get_scores``), ``jieba`` (Chinese words, then the English metric) and
``fuzzywuzzy`` (``fuzz.ratio``, in the pure-Python ``difflib`` mode LongBench's requirements install).
One departure: ``rouge``'s LCS back-trace recurses once per word of a sentence pair, so a pair past
Python's recursion limit (about 1,000 words, fewer the deeper the caller's stack) raises, which LongBench
scores 0; here the limit is raised for the call, so such an answer gets its ROUGE-L.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import logging
import re
import string
import sys
import warnings
from collections import Counter

__all__ = ["METRICS", "metric_for", "score_answer"]

#: package -> its pin (pyproject.toml), for the error when one is missing
_PINS = {"rouge": "rouge==1.0.1", "jieba": "jieba==0.42.1", "fuzzywuzzy": "fuzzywuzzy==0.18.0"}
#: LongBench's Chinese punctuation (``normalize_zh_answer``), besides ``string.punctuation``
_ZH_PUNCT = "！？｡。＂＃＄％＆＇（）＊＋，－／：；＜＝＞＠［＼］＾＿｀｛｜｝～｟｠｢｣､、〃》「」『』【】〔〕〖〗〘〙〚〛〜〝〞〟〰〾〿–—‘’‛“”„‟…‧﹏."  # noqa: E501 -- LongBench's punctuation set, verbatim


def _package(name: str):
    try:
        return importlib.import_module(name)
    except ImportError as err:
        top = name.split(".")[0]
        raise ImportError(
            f"LongBench's metrics need the package {top!r}, which is not installed; fix: "
            f"pip install '{_PINS[top]}' (or reinstall trustmass, which pins it)"
        ) from err


@functools.cache
def _jieba():
    jieba = _package("jieba")
    jieba.setLogLevel(logging.WARNING)  # its dictionary-loading lines on stderr, not its segmentation
    return jieba


@functools.cache
def _fuzz():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "Using slow pure-python SequenceMatcher": LongBench's mode
        fuzz = _package("fuzzywuzzy.fuzz")
    if fuzz.SequenceMatcher is not difflib.SequenceMatcher:
        raise RuntimeError(
            "fuzzywuzzy found python-Levenshtein and uses it, which scores code_sim differently from "
            "LongBench (fuzz.ratio('aaa', 'abaa') is 86 there, 57 in LongBench's difflib mode); fix: "
            "pip uninstall python-Levenshtein Levenshtein in this environment"
        )
    return fuzz


def _contained(answer: str, gold: str) -> float:
    return float(gold.lower() in answer.lower())


def _normalize(text: str) -> str:
    """LongBench's ``normalize_answer``: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


def _f1(pred: list[str], ref: list[str]) -> float:
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def qa_f1(answer: str, gold: str) -> float:
    """Token F1 of the normalised answer against the normalised gold string."""
    return _f1(_normalize(answer).split(), _normalize(gold).split())


def _zh_words(text: str) -> list[str]:
    """jieba's words (precise mode), lower case, without punctuation and whitespace, empty ones dropped."""
    drop = set(string.punctuation + _ZH_PUNCT)
    words = (
        "".join("".join(ch for ch in w.lower() if ch not in drop).split()) for w in _jieba().cut(text, cut_all=False)
    )
    return [w for w in words if w]


def qa_f1_zh(answer: str, gold: str) -> float:
    """Word F1 of the answer against the gold string in jieba's words (LongBench's ``qa_f1_zh_score``)."""
    return _f1(_zh_words(answer), _zh_words(gold))


def rouge(answer: str, gold: str) -> float:
    """ROUGE-L F of the ``rouge`` package (sentences split at '.', distinct words, case kept); 0 when the answer
    or the gold has no sentence (the package raises, LongBench scores 0)."""
    scorer = _package("rouge").Rouge()
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(limit + len(answer.split()) + len(gold.split()))  # its back-trace: the module's note
    try:
        return scorer.get_scores([answer], [gold], avg=True)["rouge-l"]["f"]
    except ValueError:  # "Hypothesis is empty." / "Reference is empty."
        return 0.0
    finally:
        sys.setrecursionlimit(limit)


def rouge_zh(answer: str, gold: str) -> float:
    """ROUGE-L F of the answer against the gold string, both as jieba's words joined by spaces."""
    cut = _jieba().cut
    return rouge(" ".join(cut(answer, cut_all=False)), " ".join(cut(gold, cut_all=False)))


def _share_equal(numbers: list[str], target: str) -> float:
    return 0.0 if not numbers else sum(n == target for n in numbers) / len(numbers)


def count(answer: str, gold: str) -> float:
    """The share of the numbers in the answer that equal the gold count."""
    return _share_equal(re.findall(r"\d+", answer), str(gold))


def _paragraph(answer: str, gold: str, pattern: str, task: str) -> float:
    found = re.findall(pattern, gold)
    if not found:
        raise ValueError(f"gold {gold!r} names no paragraph ({pattern!r}, {task})")
    return _share_equal(re.findall(r"\d+", answer), found[0])


def retrieval(answer: str, gold: str) -> float:
    """The share of the numbers in the answer that equal the gold paragraph number ("Paragraph 12")."""
    return _paragraph(answer, gold, r"Paragraph (\d+)", "passage_retrieval_en")


def retrieval_zh(answer: str, gold: str) -> float:
    """The share of the numbers in the answer that equal the gold paragraph number ("段落12")."""
    return _paragraph(answer, gold, r"段落(\d+)", "passage_retrieval_zh")


def classification(answer: str, gold: str, all_classes=()) -> float:
    """1 / (classes named in the answer) when the gold class is among them, else 0.  A named class inside the
    gold one is not counted, except right after another such class: LongBench removes them from the list it is
    iterating over, which skips the next one, and that loop is kept."""
    named = [c for c in all_classes if c in answer]
    for c in named:
        if c in gold and c != gold:
            named.remove(c)
    return 1.0 / len(named) if gold in named else 0.0


def code_sim(answer: str, gold: str) -> float:
    """fuzzywuzzy's ``fuzz.ratio`` / 100 of the answer's first line that is not a comment or a fence and the gold."""
    line = next((s for s in answer.lstrip("\n").split("\n") if "`" not in s and "#" not in s and "//" not in s), "")
    return _fuzz().ratio(line, gold) / 100


#: metric -> (function of (answer, gold[, all_classes]) in [0, 1], how gold strings combine)
METRICS = {
    "string_match_all": (_contained, "mean"),
    "string_match_part": (_contained, "max"),
    "qa_f1": (qa_f1, "max"),
    "qa_f1_zh": (qa_f1_zh, "max"),
    "rouge": (rouge, "max"),
    "rouge_zh": (rouge_zh, "max"),
    "count": (count, "max"),
    "retrieval": (retrieval, "max"),
    "retrieval_zh": (retrieval_zh, "max"),
    "classification": (classification, "max"),
    "code_sim": (code_sim, "max"),
}
#: the metrics whose answers kvpress's LongBench scorer strips of leading whitespace first
_LONGBENCH_METRICS = frozenset(METRICS) - {"string_match_all", "string_match_part"}

#: LongBench task -> metric (LongBench's ``dataset2metric``, kvpress's copy of it)
LONGBENCH = {
    **dict.fromkeys(
        ("narrativeqa", "qasper", "multifieldqa_en", "hotpotqa", "2wikimqa", "musique", "triviaqa"), "qa_f1"
    ),
    **dict.fromkeys(("gov_report", "qmsum", "multi_news", "samsum"), "rouge"),
    **dict.fromkeys(("dureader", "vcsum"), "rouge_zh"),
    **dict.fromkeys(("trec", "lsht"), "classification"),
    **dict.fromkeys(("lcc", "repobench-p"), "code_sim"),
    "multifieldqa_zh": "qa_f1_zh",
    "passage_retrieval_en": "retrieval",
    "passage_retrieval_zh": "retrieval_zh",
    "passage_count": "count",
}
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
        raise ValueError(
            f"LongBench task {task!r} is unknown (one of {', '.join(LONGBENCH)}); fix: the record's "
            "'task' field, or the benchmark's task key in deploy.benchmarks"
        )
    return LONGBENCH[task]


def score_answer(
    answer: str, gold, metric: str = "string_match_all", *, all_classes=(), task: str | None = None
) -> float:
    """The answer's score in points (0-100) against ``gold`` (a string or several) under ``metric``."""
    if metric not in METRICS:
        raise ValueError(f"metric = {metric!r} is not one of {', '.join(METRICS)}")
    gold = [gold] if isinstance(gold, str) else list(gold)
    if not gold:
        raise ValueError("gold is empty: an item needs at least one gold answer")
    if metric in _LONGBENCH_METRICS:
        answer = answer.lstrip()
    if task in FIRST_LINE:
        answer = answer.lstrip().split("\n")[0]
    fn, combine = METRICS[metric]
    extra = {"all_classes": tuple(all_classes)} if metric == "classification" else {}
    values = [fn(answer, g, **extra) for g in gold]
    return 100.0 * (sum(values) / len(values) if combine == "mean" else max(values))
