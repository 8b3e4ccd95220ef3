"""RULER-style planted content spliced into a haystack token stream in token space (spec part B, "Tasks").

The sources of the deployment stage's retrieval items (:mod:`trustmass.deploy.tasks`, which scores
them) and of the task-structured contexts (:mod:`trustmass.sources.task_contexts`).

Tasks (after RULER's ``niah_single``, ``niah_multikey``, ``niah_multivalue`` and ``vt``):

``niah_single``      one needle "One of the special magic numbers for <key> is: <value>."; answer: the value.
``niah_multikey``    the queried needle among distractor needles, each with its own key and value.
``niah_multivalue``  one key with several needles (values); every value must be answered.
``vt``               a chain "VAR X1 = 12345." "VAR X2 = X1." ... in reading order; answer: every name.

Keys are adjective-noun pairs from the lists below, values 7-digit numbers (vt: 5-digit, as RULER).
Each item is seeded by ``sha256(seed, task, length, index)`` alone, so no item depends on another.

Length: ``len(context_ids) + len(question_ids) == length``.  With ``prompt_format="chat"`` the chat
template's head opens the context and its tail follows the question, before the answer prefix (kvpress's
pipeline split); ``reserved`` counts those template tokens (0 for ``"plain"``).  The context is the
haystack's first tokens with the needles spliced in whole; the haystack is never re-tokenized.

Sentence boundary rule (token space): a needle goes before token ``i`` when the tokens up to ``i-1``
(the last four, decoded) end in ``.``, ``!`` or ``?`` (closing quotes/brackets allowed after it) and
adding token ``i`` appends whitespace next, or when they already end in such punctuation plus
whitespace; a title such as ``Mr.`` ends no sentence.  Needle ids are the tokens of ``" " + needle``
as they appear after a full stop (``encode(". " + needle)`` minus ``encode(".")``), so the spliced
text reads naturally.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

import numpy as np

from trustmass.core.config_conflict import ConfigConflict

__all__ = ["PROMPT_FORMATS", "TASKS", "Planted", "chat_parts", "plant", "prompt_ids", "sentence_boundaries"]

#: task -> (number of needles, digits per value)
TASKS = {"niah_single": (1, 7), "niah_multikey": (4, 7), "niah_multivalue": (4, 7), "vt": (5, 5)}
PROMPT_FORMATS = ("plain", "chat")
ADJECTIVES = (
    "amber ancient brave brisk calm clever crimson curious dusty eager faint gentle golden hollow humble "
    "jittery lively lonely misty nimble noisy pale quiet rapid rusty silent silver smooth sturdy tender "
    "velvet wicked"
).split()
NOUNS = (
    "anchor badger basket beacon candle castle cellar comet compass garden harbor hospital island kettle "
    "lantern meadow mirror orchard parcel pebble quarry ribbon saddle shelter spindle teapot thimble "
    "tunnel violin wagon willow window"
).split()
_END = re.compile(r"[.!?][\"'\u2019\u201d)\]]*$")
_END_WS = re.compile(r"[.!?][\"'\u2019\u201d)\]]*\s+$")
_CLOSE = re.compile(r"[.!?\"'\u2019\u201d)\]]\s*$")  # tokens that may end a sentence
_ABBREV = re.compile(r"\b(Mr|Mrs|Ms|Dr|St|Messrs|Col|Capt|Rev|Esq)\.$")  # "Mr. Bennet" ends no sentence


@dataclass(frozen=True, eq=False)
class Planted:
    """One item's planted content; ``needles[j] = (start, end)`` token span of ``needle_texts[j]`` in the context."""

    item_id: str
    task: str
    length: int
    depth: float  # start of the first gold needle / context length
    needles: tuple[tuple[int, int], ...]
    needle_texts: tuple[str, ...]
    gold: tuple[str, ...]
    question: str
    answer_prefix: str
    context_ids: np.ndarray  # int64, read-only
    question_ids: np.ndarray  # int64, read-only
    prompt_format: str = "plain"
    reserved: int = 0  # chat-template tokens inside context_ids + question_ids


def _decode(tokenizer, ids) -> str:
    return tokenizer.decode([int(i) for i in ids], skip_special_tokens=False, clean_up_tokenization_spaces=False)


def _encode(tokenizer, text: str) -> list[int]:
    return [int(i) for i in tokenizer.encode(text, add_special_tokens=False)]


def _needle_ids(tokenizer, text: str) -> list[int]:
    """Tokens of ``" " + text`` as they follow a full stop."""
    stop, joined = _encode(tokenizer, "."), _encode(tokenizer, ". " + text)
    if stop and joined[: len(stop)] == stop and _decode(tokenizer, joined[len(stop) :]).strip() == text:
        return joined[len(stop) :]
    ids = _encode(tokenizer, " " + text)
    if _decode(tokenizer, ids).strip() != text:
        raise ValueError(
            f"the tokenizer does not round-trip the needle {text!r} (unknown characters?); "
            "fix: use the model's own tokenizer"
        )
    return ids


def sentence_boundaries(ids, tokenizer) -> np.ndarray:
    """Positions ``i`` (``0 < i < len(ids)``) where a sentence ends just before token ``i`` (module rule)."""
    ids = np.asarray(ids, dtype=np.int64)
    closes = {int(u) for u in np.unique(ids[:-1]) if _CLOSE.search(_decode(tokenizer, [u]))}
    out = []
    for i in np.flatnonzero(np.isin(ids[:-1], list(closes))) + 1:
        prev = _decode(tokenizer, ids[max(0, i - 4) : i])  # a few tokens, so a split '."' is seen whole
        if _ABBREV.search(prev.rstrip()):
            continue
        pair = _decode(tokenizer, ids[max(0, i - 4) : i + 1])
        if _END_WS.search(prev) or (_END.search(prev) and pair.startswith(prev) and pair[len(prev) :][:1].isspace()):
            out.append(int(i))
    return np.array(out, dtype=np.int64)


def _rng(seed: int, task: str, length: int, index: int) -> np.random.Generator:
    digest = hashlib.sha256(json.dumps([seed, task, length, index]).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def _content(task: str, rng: np.random.Generator) -> tuple[list[str], list[str], str, str, list[int]]:
    """(needle texts, gold, question, answer prefix, indices of gold needles)."""
    n, digits = TASKS[task]
    pairs = rng.choice(len(ADJECTIVES) * len(NOUNS), size=n, replace=False)
    keys = [f"{ADJECTIVES[p // len(NOUNS)]}-{NOUNS[p % len(NOUNS)]}" for p in pairs]
    values = [str(v) for v in rng.choice(9 * 10 ** (digits - 1), size=n, replace=False) + 10 ** (digits - 1)]
    if task == "vt":
        names = []
        while len(names) < n:  # distinct 5-letter names
            name = "".join(chr(65 + c) for c in rng.integers(0, 26, size=5))
            names += [name] if name not in names else []
        texts = [f"VAR {names[0]} = {values[0]}."] + [f"VAR {names[j]} = {names[j - 1]}." for j in range(1, n)]
        question = f"Find all variables that are assigned the value {values[0]} in the text above."
        prefix = (
            f"According to the chain(s) of variable assignment in the text above, {n} variables are "
            f"assigned the value {values[0]}, they are:"
        )
        return texts, names, question, prefix, list(range(n))
    if task == "niah_multivalue":
        keys = [keys[0]] * n
    texts = [f"One of the special magic numbers for {k} is: {v}." for k, v in zip(keys, values)]
    if task == "niah_multivalue":
        question = f"What are all the special magic numbers for {keys[0]} mentioned in the provided text?"
        prefix = f"The special magic numbers for {keys[0]} mentioned in the provided text are"
        return texts, values, question, prefix, list(range(n))
    question = f"What is the special magic number for {keys[0]} mentioned in the provided text?"
    prefix = f"The special magic number for {keys[0]} mentioned in the provided text is"
    return texts, values[:1], question, prefix, [0]


_MARK = "\u2063trustmass-user-text\u2063"  # stands for the user's text while the chat template is split


def chat_parts(tokenizer, prompt_format: str) -> tuple[list[int], list[int]]:
    """(the chat template's tokens before the user's text, those after it through the assistant's header).

    kvpress's pipeline does the same: the context follows the head, the question the user's text, then the
    tail and the answer prefix; ``plain`` has neither.
    """
    if prompt_format == "plain":
        return [], []
    if prompt_format != "chat":
        raise ConfigConflict(
            f"prompt_format = {prompt_format!r} is not one of {PROMPT_FORMATS}; fix: set deploy.prompt_format",
            fields=("deploy.prompt_format",),
        )
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError(
            "prompt_format = 'chat' but the tokenizer has no chat template; fix: set deploy.prompt_format: plain"
        )
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": _MARK}], add_generation_prompt=True, tokenize=False
    )
    head, tail = text.split(_MARK)
    return _encode(tokenizer, head), _encode(tokenizer, tail)


def prompt_ids(tokenizer, prompt_format: str, question: str, answer_prefix: str) -> tuple[list[int], list[int], int]:
    """(the template head that opens the context, the question block: question, template tail, answer prefix;
    the number of template tokens in the two)."""
    head, tail = chat_parts(tokenizer, prompt_format)
    if prompt_format == "plain":
        return [], _encode(tokenizer, question + " " + answer_prefix), 0
    return head, _encode(tokenizer, question) + tail + _encode(tokenizer, answer_prefix), len(head) + len(tail)


def plant(
    task: str,
    length: int,
    index: int,
    *,
    haystack_ids,
    tokenizer,
    seed: int,
    prompt_format: str = "plain",
    max_positions: int | None = None,
) -> Planted:
    """The planted content of item ``index`` of ``task`` at ``length`` tokens (context + question +
    chat-template tokens)."""
    if task not in TASKS:
        raise ConfigConflict(
            f"task = {task!r} is not one of {', '.join(TASKS)}; fix: deploy.tasks", fields=("deploy.tasks",)
        )
    if max_positions is not None and length > max_positions:
        raise ValueError(
            f"length = {length} exceeds the model's window (max_positions = {max_positions}); "
            f"fix: lower deploy.lengths (task {task!r})"
        )
    rng = _rng(seed, task, length, index)
    texts, gold, question, prefix, gold_idx = _content(task, rng)
    head, question_ids, reserved = prompt_ids(tokenizer, prompt_format, "\n" + question, prefix)
    needle_ids = [_needle_ids(tokenizer, t) for t in texts]
    n_needles = sum(len(x) for x in needle_ids)
    body = length - len(head) - len(question_ids) - n_needles
    if body < 2 * len(texts):  # room for a sentence before each needle
        need = len(head) + len(question_ids) + n_needles + 2 * len(texts)
        raise ValueError(
            f"length = {length} is below the {need} tokens task {task!r} needs (needles {n_needles}, "
            f"question {len(question_ids)}, template {reserved}); fix: raise deploy.lengths"
        )
    haystack = np.asarray(haystack_ids, dtype=np.int64).reshape(-1)
    if haystack.size < body:
        raise ValueError(
            f"haystack_ids has {haystack.size} tokens, the item needs {body}; "
            "fix: use a longer deploy.haystack corpus or a shorter length"
        )
    bounds = sentence_boundaries(haystack[:body], tokenizer)
    if bounds.size < len(texts):
        raise ValueError(
            f"the first {body} haystack tokens hold {bounds.size} sentence boundaries, task {task!r} "
            f"needs {len(texts)}; fix: use prose with full stops as deploy.haystack"
        )
    free = np.ones(bounds.size, dtype=bool)
    spots = []
    for d in rng.uniform(0.0, 1.0, size=len(texts)):  # nearest free boundary to each seeded depth
        j = int(np.flatnonzero(free)[np.argmin(np.abs(bounds[free] - d * body))])
        free[j] = False
        spots.append(int(bounds[j]))
    order = sorted(range(len(texts)), key=lambda j: spots[j])
    if task == "vt":  # the chain in reading order: statement k at the k-th position
        spots = sorted(spots)
        order = list(range(len(texts)))
    pieces, spans, cursor, shift = [np.asarray(head, dtype=np.int64)], [(0, 0)] * len(texts), 0, len(head)
    for j in order:
        pieces += [haystack[cursor : spots[j]], np.asarray(needle_ids[j], dtype=np.int64)]
        spans[j] = (spots[j] + shift, spots[j] + shift + len(needle_ids[j]))
        shift += len(needle_ids[j])
        cursor = spots[j]
    context = np.concatenate(pieces + [haystack[cursor:body]])
    question_arr = np.asarray(question_ids, dtype=np.int64)
    context.setflags(write=False)
    question_arr.setflags(write=False)
    return Planted(
        item_id=f"{task}-{length}-{index:04d}",
        task=task,
        length=length,
        depth=round(spans[gold_idx[0]][0] / context.size, 6),
        needles=tuple(spans),
        needle_texts=tuple(texts),
        gold=tuple(gold),
        question=question,
        answer_prefix=prefix,
        context_ids=context,
        question_ids=question_arr,
        prompt_format=prompt_format,
        reserved=reserved,
    )
