"""The rehearsal's datasets, seeded: what the configurations read from the hub, a few records each, in the
layout and columns of the real ones.

* wikitext-103's test split (``Salesforce/wikitext``, config ``wikitext-103-raw-v1``): rows of raw text each
  ending in ``\\n``, `` = Heading = `` rows between articles, blank rows, prose sentences with full stops
  (the deployment's needles go at sentence boundaries) and wikitext's `` @-@ `` / `` @,@ `` escapes;
* RULER in kvpress's format (``simonjegou/ruler``, one ``data_dir`` per length): ``context``, ``question``,
  ``answer_prefix``, ``answer`` (a list), ``task``, ``max_new_tokens``, one record per task of
  :data:`RULER_TASKS` (a single-needle and a QA task: both of RULER's metrics), its context longer than the
  configured ``max_length`` so that LongBench's middle truncation runs;
* LongBench in kvpress's format (``Xnhyacinth/LongBench``, one ``data_dir`` per task): ``context``,
  ``question``, ``answer_prefix``, ``answers``, ``all_classes``, ``length``, ``task``, ``max_new_tokens``, one
  record per task, Chinese text for the Chinese tasks, classes for the classification tasks;
* BookSum (``kmfoda/booksum``, ``train``): the ``chapter`` column DuoAttention's on-the-fly head scores sample
  50 rows of.

The text is random words; it proves the plumbing (loaders, fields, metrics, truncation), never a score.
"""

from __future__ import annotations

import numpy as np

__all__ = ["LONGBENCH_ZH", "RULER_TASKS", "booksum_rows", "longbench_rows", "ruler_rows", "wikitext_rows"]

_WORDS = (
    "the of and to in a is was for on as with by at from his that it an were which are this be has had also "
    "first one two new after its their or not but other during time year city film game music album song "
    "season team league war army river church school university station line road state county district "
    "village family species built located released received published played served known called became "
    "began following later early north south east west world national american british french german "
    "history series character episode record chart single track band player club match goal cup final "
    "government party election president minister member council court law public company building house "
    "area population water island ship battle division forces attack storm hurricane winds damage "
    "coast region century period works style design writer author book novel story critics review"
).split()
_ZH = list(
    "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处理府研质"
)
RULER_TASKS = ("niah_single_1", "qa_1")
#: the Chinese LongBench tasks (jieba-segmented metrics, Chinese text)
LONGBENCH_ZH = ("multifieldqa_zh", "dureader", "vcsum", "lsht", "passage_retrieval_zh")
_CLASSES = {"trec": ["Location", "Description", "Entity", "Human"], "lsht": ["体育", "财经", "科技", "娱乐"]}


def _seeded(seed: int, name: str) -> np.random.Generator:
    return np.random.default_rng([seed, *name.encode("utf-8")])


def _sentence(rng: np.random.Generator, lo: int = 8, hi: int = 20) -> str:
    words = list(rng.choice(_WORDS, size=int(rng.integers(lo, hi))))
    if rng.random() < 0.3:
        words.insert(int(rng.integers(1, len(words))), f"{rng.integers(1, 9)} @,@ {rng.integers(100, 999)}")
    if rng.random() < 0.3:
        i = int(rng.integers(1, len(words)))
        words[i] = f"{words[i]} @-@ {rng.choice(_WORDS)}"
    if rng.random() < 0.4:
        words.insert(int(rng.integers(2, len(words))), ",")
    text = " ".join(words)
    return text[0].upper() + text[1:] + " ."


def _prose(rng: np.random.Generator, sentences: int) -> str:
    return " ".join(_sentence(rng) for _ in range(sentences))


def _chinese(rng: np.random.Generator, chars: int) -> str:
    out = []
    while len(out) < chars:
        out += list(rng.choice(_ZH, size=int(rng.integers(8, 24)))) + ["。"]
    return "".join(out[:chars])


def wikitext_rows(seed: int, chars: int = 80_000) -> list[dict]:
    """Rows of a wikitext-103-raw test split: articles of headings, blank rows and paragraphs, ``chars`` long."""
    rng = _seeded(seed, "wikitext")
    rows, total = [], 0
    while total < chars:
        title = " ".join(str(w).capitalize() for w in rng.choice(_WORDS, size=int(rng.integers(1, 4))))
        article = ["", f" = {title} = \n", ""]
        for section in range(int(rng.integers(1, 4))):
            if section:
                heading = " ".join(rng.choice(_WORDS, size=2)).capitalize()
                article += ["", f" = = {heading} = = \n", ""]
            article += [f" {_prose(rng, int(rng.integers(3, 9)))} \n" for _ in range(int(rng.integers(1, 4)))]
        rows += [{"text": r} for r in article]
        total += sum(len(r) for r in article)
    return rows


def _needle_context(rng: np.random.Generator, sentences: int, needles: list[str]) -> str:
    parts = [_sentence(rng) for _ in range(sentences)]
    for needle in needles:
        parts.insert(int(rng.integers(0, len(parts) + 1)), needle)
    return " ".join(parts)


def ruler_rows(seed: int, length: int, sentences: int) -> list[dict]:
    """One kvpress-format RULER record per task of :data:`RULER_TASKS` (the ``data_dir`` of ``length``)."""
    rng = _seeded(seed, f"ruler-{length}")
    rows = []
    for task in RULER_TASKS:
        key = "-".join(rng.choice(_WORDS, size=2))
        values = [str(v) for v in rng.integers(1_000_000, 9_999_999, size=3)]
        if task == "niah_single_1":
            needles, answer = [f"One of the special magic numbers for {key} is: {values[0]}."], values[:1]
            question = f"What is the special magic number for {key} mentioned in the provided text?"
            prefix = f" The special magic number for {key} mentioned in the provided text is"
        elif task == "niah_multivalue":
            needles, answer = [f"One of the special magic numbers for {key} is: {v}." for v in values], values
            question = f"What are all the special magic numbers for {key} mentioned in the provided text?"
            prefix = f" The special magic numbers for {key} mentioned in the provided text are"
        elif task == "vt":
            names = ["".join(rng.choice(list("ABCDEFGHIJKLMNOPQRSTUVWXYZ"), size=5)) for _ in range(3)]
            needles = [f"VAR {names[0]} = {values[0]}."] + [f"VAR {names[i]} = {names[i - 1]}." for i in (1, 2)]
            answer = names
            question = f"Find all variables that are assigned the value {values[0]} in the text above."
            prefix = (
                " Answer: According to the chain(s) of variable assignment in the text above, 3 variables are "
                f"assigned the value {values[0]}, they are:"
            )
        else:  # qa_1: SQuAD-style, scored by string_match_part
            needles = [f"Document {i}: The {key} was founded in {v}." for i, v in enumerate(values[:1])]
            answer = [values[0], f"in {values[0]}"]
            question = f"Answer the question based on the given documents. Question: When was the {key} founded?"
            prefix = " Answer:"
        rows.append(
            {
                "context": "Some special magic numbers are hidden within the following text. "
                + _needle_context(rng, sentences, needles),
                "question": question,
                "answer_prefix": prefix,
                "answer": answer,
                "task": task,
                "max_new_tokens": 2,
            }
        )
    return rows


def longbench_rows(seed: int, task: str, sentences: int) -> list[dict]:
    """One kvpress-format LongBench record of ``task`` (its ``data_dir``)."""
    from trustmass.deploy.metrics import LONGBENCH

    if task not in LONGBENCH:
        raise ValueError(f"LongBench has no task {task!r}")
    rng = _seeded(seed, f"longbench-{task}")
    metric = LONGBENCH[task]
    zh = task in LONGBENCH_ZH
    context = _chinese(rng, 20 * sentences) if zh else _prose(rng, sentences)
    if metric in ("retrieval", "retrieval_zh"):
        paragraphs = [_chinese(rng, 60) if zh else _prose(rng, 3) for _ in range(5)]
        # LongBench writes "Paragraph 3" and "段落3" (no space: the zh metric reads 段落(\d+))
        label = (lambda i: f"段落{i}") if zh else (lambda i: f"Paragraph {i}")
        context = "\n\n".join(f"{label(i + 1)}: {p}" for i, p in enumerate(paragraphs))
        answers = [label(3)]
    elif metric == "count":
        answers = ["4"]
    elif metric == "classification":
        answers = [_CLASSES[task][int(rng.integers(0, 4))]]
    elif metric == "code_sim":
        # LCC and RepoBench-P: code, and the next line as the gold (their metric compares one line)
        context = "\n".join(f"x{i} = f(x{i - 1})" if i else "x0 = 0" for i in range(sentences))
        answers = [f"x{sentences} = f(x{sentences - 1})"]
    elif zh:
        answers = [_chinese(rng, 12)]
    else:
        answers = [" ".join(rng.choice(_WORDS, size=4))]
    return [
        {
            "context": context,
            "question": (_chinese(rng, 10) + "？") if zh else f"What does the text say about {rng.choice(_WORDS)}?",
            "answer_prefix": "答案：" if zh else "Answer:",
            "answers": answers,
            "all_classes": _CLASSES.get(task),
            "length": len(context.split()),
            "task": task,
            "max_new_tokens": 2,
        }
    ]


def booksum_rows(seed: int, n: int = 60) -> list[dict]:
    """BookSum's ``train`` rows as DuoAttention's on-the-fly scoring reads them (the ``chapter`` column; it samples
    50, so at least 50 rows)."""
    rng = _seeded(seed, "booksum")
    return [{"chapter": _sentence(rng), "summary_text": _sentence(rng)} for _ in range(n)]
