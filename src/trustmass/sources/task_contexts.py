"""Task-structured contexts (spec §2.7): documents whose later rows must retrieve planted content.

Each context is assembled in token space from a haystack corpus, so every planted span and every
retrieval row is exact, and is written as an ordinary document set (the format of
:mod:`trustmass.sources.documents`) that the capture, ceiling, map and audit stages read unchanged.

Types (the spec's three kinds; the first three reuse the RULER-style planted items of
:mod:`trustmass.sources.needles`, which the deployment stage's retrieval items are made of too):

``niah_single``, ``niah_multikey``  planted needles (passkey style): the context (continued with the
                                    haystack's next tokens to the document's length), the question,
                                    then the gold value teacher-forced as the answer;
``vt``                              a multi-hop variable chain; the answer is every chained name;
``quote_qa``                        long-document QA: the question quotes a passage of the document
                                    and the answer is the passage's continuation, copied token for
                                    token from the document (so the answer must be read back from it).

A document is ``[special prefix] context question answer``, exactly ``doc_tokens`` long.  Its
*retrieval rows* are the query positions that predict the answer's tokens: ``P - 1 .. P + a - 2``
for an answer of ``a`` tokens starting at ``P``.  Capture draws ``retrieval_rows`` of its
``rows_per_head`` sampled rows per (layer, KV head) from them and the rest from the other positions
(:func:`trustmass.capture.prefill.sample_positions`), so retrieval rows make up
``retrieval_rows / rows_per_head`` of the instances: claim 46's design constraint (>= 20 %) is
checked at start-up (:func:`trustmass.plumbing.config_checks.retrieval_design_problem`), here, and again on
the records.

The module is a source: the capture, ceiling, map and audit stages read its output as an ordinary
document set (stages hand data over by files).

Context ``k`` of type ``t`` is cut from the haystack chunk ``first_chunk + j`` (``j`` its place in
the list: types in order, ``per_type`` each), so contexts never share haystack text; by default the
chunks start after the capture documents of the same corpus (the map's), so the planted contexts are
fresh text.  Every draw is seeded by ``(seed, type, doc_tokens, index)`` alone.

Under the shuffled-text control (``documents.shuffle``) each context is built as above, then its
haystack tokens are permuted (:func:`trustmass.sources.controls.shuffle_tokens`, key
``tasks/<corpus>``): the special prefix, the planted spans, the question and the answer stay in
place, so the retrieval rows, answers and spans of the manifest hold and the task stays solvable,
while the text around them loses its order.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from trustmass.core.config_conflict import ConfigConflict
from trustmass.plumbing.config_checks import retrieval_design_problem
from trustmass.sources.common import SourceError, sha256_bytes, sha256_file
from trustmass.sources.needles import plant

__all__ = ["TYPES", "TaskContext", "build_context", "build_task_documents"]

#: the context types; the first three are trustmass.sources.needles items
TYPES = ("niah_single", "niah_multikey", "vt", "quote_qa")
#: quote_qa: tokens quoted in the question, tokens of the answer (the quoted passage's continuation)
QUOTE_TOKENS, ANSWER_TOKENS = 12, 8
#: needles and chains: tokens kept for the teacher-forced answer (the rest continue the context)
ANSWER_ROOM = 48
FORMAT = "trustmass.task_contexts/1"
_WORD_START = ("Ġ", "▁", " ")  # byte-level BPE, SentencePiece, plain

Log = Callable[[str], None]


@dataclass(frozen=True, eq=False)
class TaskContext:
    """One context: ``ids`` (without the special prefix), the answer span and the planted spans
    (``[start, end)`` in ``ids``), the gold text, where the question starts (the haystack text ends)."""

    task: str
    index: int
    ids: np.ndarray
    answer: tuple[int, int]
    planted: tuple[tuple[int, int], ...]
    gold: tuple[str, ...]
    question: str
    question_at: int

    def kept_positions(self, shift: int = 0) -> list[int]:
        """The positions a shuffled-text control keeps in place: the planted spans, the question and the answer."""
        spans = [*self.planted, (self.question_at, self.ids.size)]
        return sorted({shift + p for start, end in spans for p in range(start, end)})

    def retrieval_positions(self, shift: int = 0) -> list[int]:
        """The rows that predict the answer's tokens (positions shifted by ``shift``)."""
        start, end = self.answer
        return [shift + p for p in range(start - 1, end - 1)]


def _encode(tokenizer, text: str) -> list[int]:
    return [int(i) for i in tokenizer.encode(text, add_special_tokens=False)]


def _needle_context(task: str, index: int, *, haystack: np.ndarray, tokenizer, length: int, seed: int) -> TaskContext:
    """A planted item (:func:`trustmass.sources.needles.plant`) drawn at ``length - ANSWER_ROOM`` tokens, its
    context continued with the haystack's next tokens until the gold answer, appended after the question,
    ends the document."""
    item = plant(task, length - ANSWER_ROOM, index, haystack_ids=haystack, tokenizer=tokenizer, seed=seed)
    answer = np.asarray(_encode(tokenizer, " " + ", ".join(item.gold)), dtype=np.int64)
    extra = ANSWER_ROOM - answer.size
    if extra < 0:
        raise SourceError(
            f"task context {task}-{index}: the answer takes {answer.size} tokens, more than the {ANSWER_ROOM} "
            "kept for it; fix: a tokenizer that spells digits and names more compactly"
        )
    used = item.context_ids.size - sum(e - s for s, e in item.needles)  # haystack tokens the item holds
    context = np.concatenate([item.context_ids, haystack[used : used + extra]])
    body = np.concatenate([context, item.question_ids])
    ids = np.concatenate([body, answer])
    return TaskContext(task, index, ids, (body.size, ids.size), item.needles, item.gold, item.question, context.size)


def _quote_context(index: int, *, haystack: np.ndarray, tokenizer, length: int, seed: int) -> TaskContext:
    """The question quotes QUOTE_TOKENS tokens of the document; the answer copies the next ANSWER_TOKENS."""
    digest = hashlib.sha256(json.dumps([seed, "quote_qa", length, index]).encode()).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
    pieces = tokenizer.convert_ids_to_tokens([int(i) for i in haystack[:length]])
    # the answer starts a word, so the copied continuation is what a reader would write next (a
    # tokenizer without word-start marks, e.g. word-level, starts a word with every token)
    marked = any(piece[:1] in _WORD_START for piece in pieces)
    starts = [q for q in range(length // 10, length // 2) if not marked or pieces[q + QUOTE_TOKENS][:1] in _WORD_START]
    if not starts:
        raise SourceError(
            f"task context quote_qa-{index}: no word start in the haystack chunk; fix: use a prose haystack"
        )
    q = int(starts[rng.integers(len(starts))])
    quote = tokenizer.decode([int(i) for i in haystack[q : q + QUOTE_TOKENS]], skip_special_tokens=False).strip()
    question = f'In the text above, which words come right after this passage: "{quote}"?'
    question_ids = _encode(tokenizer, "\nQuestion: " + question + " Answer:")
    body = length - len(question_ids) - ANSWER_TOKENS
    if q + QUOTE_TOKENS + ANSWER_TOKENS > body:
        raise SourceError(
            f"task context quote_qa-{index}: {length} tokens leave no room for the question; fix: longer documents"
        )
    answer = haystack[q + QUOTE_TOKENS : q + QUOTE_TOKENS + ANSWER_TOKENS]
    ids = np.concatenate([haystack[:body], np.asarray(question_ids, dtype=np.int64), answer])
    gold = tokenizer.decode([int(i) for i in answer], skip_special_tokens=False)
    return TaskContext(
        "quote_qa",
        index,
        ids,
        (body + len(question_ids), ids.size),
        ((q, q + QUOTE_TOKENS + ANSWER_TOKENS),),
        (gold,),
        question,
        body,
    )


def build_context(task: str, index: int, *, haystack: np.ndarray, tokenizer, length: int, seed: int) -> TaskContext:
    """Context ``index`` of ``task``, ``length`` tokens long, cut from ``haystack`` (>= ``length`` tokens)."""
    if task not in TYPES:
        raise ConfigConflict(
            f"task_contexts.types: {task!r} is not one of {', '.join(TYPES)}; fix: use those",
            fields=("task_contexts.types",),
        )
    haystack = np.asarray(haystack, dtype=np.int64).reshape(-1)
    if haystack.size < length:
        raise SourceError(
            f"task context {task}-{index}: the haystack chunk has {haystack.size} tokens, {length} needed"
        )
    try:
        if task == "quote_qa":
            ctx = _quote_context(index, haystack=haystack, tokenizer=tokenizer, length=length, seed=seed)
        else:
            ctx = _needle_context(task, index, haystack=haystack, tokenizer=tokenizer, length=length, seed=seed)
    except ValueError as exc:  # the planted item's own checks (length, sentence boundaries)
        raise SourceError(f"task context {task}-{index}: {exc}") from None
    if ctx.ids.size != length:
        raise AssertionError(f"task context {task}-{index}: {ctx.ids.size} tokens, {length} intended")
    return ctx


def build_task_documents(
    model_dir: str | Path,
    haystack_txt: str | Path,
    out_path: str | Path,
    *,
    types: Sequence[str],
    per_type: int,
    doc_tokens: int,
    first_chunk: int,
    retrieval_rows: int,
    rows_per_head: int,
    min_position: int,
    seed: int,
    bos: str = "tokenizer-default",
    model: str | None = None,
    corpus: str = "tasks",
    shuffle: bool = False,
    log: Log = print,
) -> dict:
    """Write the task document set ``out_path`` (.safetensors + .json manifest); return the manifest.

    Each manifest record adds to the plain document record: ``task``, ``retrieval_positions``,
    ``retrieval_rows`` (what capture draws from them), ``answer`` and ``planted`` spans, ``gold``.
    ``shuffle``: the shuffled-text control (the module's note), seeded by ``seed``.
    """
    from transformers import AutoTokenizer

    from trustmass.sources.documents import (
        encode_corpus,
        shuffle_record,
        special_tokens_for,
        tokenizer_fingerprint,
        write_document_set,
    )

    problem = retrieval_design_problem(retrieval_rows, rows_per_head)
    if problem:
        raise ConfigConflict(problem, fields=("task_contexts.retrieval_rows", "capture.rows_per_head"))
    model_dir, haystack_txt = Path(model_dir), Path(haystack_txt)
    model = model or model_dir.name
    started = time.time()
    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    prefix, suffix = special_tokens_for(tokenizer, bos)
    if suffix:
        raise SourceError(
            f"documents.bos = {bos!r} adds tokens after each document; a task context must end with its "
            "answer; fix: documents.bos: none or tokenizer-default"
        )
    stream, _ = encode_corpus(tokenizer, haystack_txt.read_text(encoding="utf-8"))
    length = doc_tokens - len(prefix)
    plan = [(t, k) for t in types for k in range(per_type)]
    need = (first_chunk + len(plan)) * length
    if stream.size < need:
        raise SourceError(
            f"task_contexts: the haystack {haystack_txt.parent.name!r} has {stream.size:,} tokens for {model}, "
            f"{need:,} needed ({len(plan)} contexts after chunk {first_chunk}); fix: lower "
            "task_contexts.per_type or first_chunk, or use a longer haystack"
        )
    docs, records = np.empty((len(plan), doc_tokens), dtype=np.int64), []
    kept = np.zeros(docs.shape, dtype=bool)  # positions a shuffled-text control keeps in place
    kept[:, : len(prefix)] = True
    for j, (task, k) in enumerate(plan):
        chunk = stream[(first_chunk + j) * length : (first_chunk + j + 1) * length]
        ctx = build_context(task, k, haystack=chunk, tokenizer=tokenizer, length=length, seed=seed)
        docs[j] = np.concatenate([np.asarray(prefix, dtype=np.int64), ctx.ids])
        kept[j, ctx.kept_positions(shift=len(prefix))] = True
        positions = ctx.retrieval_positions(shift=len(prefix))
        if len(positions) < retrieval_rows:
            raise SourceError(
                f"task context {task}-{k}: {len(positions)} retrieval rows, fewer than "
                f"task_contexts.retrieval_rows = {retrieval_rows}; fix: lower it"
            )
        if positions[0] < min_position:
            raise SourceError(
                f"task context {task}-{k}: retrieval rows start at {positions[0]}, before "
                f"capture.min_position = {min_position}; fix: longer documents"
            )
        shift = len(prefix)
        records.append(
            {
                "index": j,
                "id": f"{corpus}-{j:04d}",
                "task": task,
                "task_index": k,
                "tokens_sha256": sha256_bytes(docs[j].astype("<i8").tobytes()),
                "haystack_chunk": first_chunk + j,
                "retrieval_positions": positions,
                "retrieval_rows": retrieval_rows,
                "answer": [ctx.answer[0] + shift, ctx.answer[1] + shift],
                "planted": [[a + shift, b + shift] for a, b in ctx.planted],
                "gold": list(ctx.gold),
                "question": ctx.question,
            }
        )
    unshuffled = docs
    if shuffle:
        from trustmass.sources.controls import shuffle_tokens

        docs = shuffle_tokens(unshuffled, seed=seed, key=f"tasks/{corpus}", keep=kept)
        for j, record in enumerate(records):
            record["unshuffled_tokens_sha256"] = record["tokens_sha256"]
            record["tokens_sha256"] = sha256_bytes(docs[j].astype("<i8").tobytes())
    haystack_sha = sha256_file(haystack_txt)
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "model": model,
        "corpus": corpus,
        "doc_tokens": doc_tokens,
        "n_docs": len(plan),
        "bos": bos,
        "special_prefix": prefix,
        "special_suffix": [],
        "haystack": haystack_txt.parent.name,
        "haystack_sha256": haystack_sha,
        "haystack_tokens": int(stream.size),
        "seed": seed,
        "types": list(types),
        "per_type": per_type,
        "first_chunk": first_chunk,
        "retrieval_rows": retrieval_rows,
        "rows_per_head": rows_per_head,
        "retrieval_share": retrieval_rows / rows_per_head,
        **tokenizer_fingerprint(tokenizer, model_dir),
        "input_ids_sha256": sha256_bytes(docs.astype("<i8").tobytes()),
        **(
            shuffle_record(unshuffled, seed, f"tasks/{corpus}", "the special prefix, planted spans, question, answer")
            if shuffle
            else {}
        ),
        "documents": records,
    }
    header = {"bos": bos, "haystack_sha256": haystack_sha, "tasks": list(types)}
    write_document_set(out_path, docs, manifest, {**header, **({"shuffled": True, "seed": seed} if shuffle else {})})
    log(
        f"task contexts {model}/{corpus}: {len(plan)} x {doc_tokens} tokens ({', '.join(types)}; {per_type} each) from "
        f"{haystack_txt.parent.name} chunks {first_chunk}..{first_chunk + len(plan) - 1}"
        f"{', shuffled' if shuffle else ''} in {time.time() - started:.1f} s"
    )
    return manifest
