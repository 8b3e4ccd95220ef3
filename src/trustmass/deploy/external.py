"""Benchmark data (RULER, LongBench) as deployment items: the paper's benchmark setting (Table 3, spec §7.3),
kept apart from the synthetic retrieval tasks of :mod:`trustmass.deploy.tasks` in every statistic.

Formats (``deploy.benchmarks[].format``):

``kvpress``    kvpress's evaluation datasets, the paper's harness (``simonjegou/ruler``, ``Xnhyacinth/LongBench``):
               ``context``, ``question``, ``answer_prefix``, ``answer`` or ``answers``, ``task``, ``max_new_tokens``
               (LongBench also ``all_classes``, ``length``).  Prompt templates are already in the text.
``ruler``      RULER's own ``scripts/data/prepare.py`` JSONL: ``input``, ``outputs``, ``length``
               (``answer_prefix`` when present); the query is the input's last line, as RULER's templates end.
``longbench``  THUDM/LongBench's raw JSONL: ``context``, ``input`` (the question), ``answers``, ``length``,
               ``dataset``, ``all_classes``; raw text, without LongBench's prompt templates.

``path``: a local ``.jsonl`` or ``.parquet`` file, or ``hub:<dataset>[:<data_dir>]`` read with
``datasets.load_dataset(dataset, data_dir=..., split="test")``, kvpress's own call (needs hub access); a
``{task}`` in it is filled with each of the entry's ``tasks`` (kvpress keeps LongBench per task).

Items: the first ``n`` records of each task, in file order.  A prompt longer than ``max_length`` tokens
loses the middle of its context (LongBench's truncation, in token space).  Scores: RULER's string matches,
LongBench's per-task metrics (:mod:`trustmass.deploy.metrics`).  No dense-valid gating: the paper gates
its retrieval items only; every benchmark item counts.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl

from trustmass.core.config_conflict import ConfigConflict
from trustmass.deploy import metrics
from trustmass.deploy.tasks import Item, prompt_ids

__all__ = ["FORMATS", "benchmark_items", "load_benchmark", "load_external"]

#: format -> (required fields, renames to our columns, where to get the data)
FORMATS = {
    "kvpress": (
        ("context", "question"),
        {"answers": "gold", "answer": "gold"},
        "load it with hub access (path: hub:simonjegou/ruler:4096 or hub:Xnhyacinth/LongBench:qasper) or "
        "save kvpress's dataset to parquet with datasets",
    ),
    "ruler": (
        ("input", "outputs", "length"),
        {"index": "item_id", "outputs": "gold"},
        "generate it with RULER's scripts/data/prepare.py (github.com/NVIDIA/RULER)",
    ),
    "longbench": (
        ("context", "input", "answers", "length"),
        {"_id": "item_id", "input": "question", "answers": "gold", "dataset": "task"},
        "download it with `huggingface-cli download THUDM/LongBench --repo-type dataset` (data.zip)",
    ),
}
KEEP = ("item_id", "context", "question", "answer_prefix", "gold", "task", "max_new_tokens", "all_classes", "length")


def _records(kind: str, path: str) -> list[dict]:
    how = FORMATS[kind][2]
    if str(path).startswith("hub:"):
        name, _, data_dir = str(path)[4:].partition(":")
        try:
            import datasets

            got = datasets.load_dataset(name, data_dir=data_dir or None, split="test")
        except Exception as err:  # offline, unknown dataset, no such data_dir: the same fix
            raise FileNotFoundError(
                f"could not load {name!r} (data_dir {data_dir or None!r}) from the hub: "
                f"{type(err).__name__}: {err}; fix: {how}, or point the path at a local file"
            ) from err
        return [dict(r) for r in got]
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{kind} data not found at {path}: {how}, or set deploy.benchmarks[].path")
    if path.suffix == ".parquet":
        return pl.read_parquet(path).to_dicts()
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def load_external(kind: str, path) -> pl.DataFrame:
    """RULER or LongBench records as a frame of :data:`KEEP` columns (``gold`` a list of str)."""
    if kind not in FORMATS:
        raise ValueError(f"kind = {kind!r} is not one of {', '.join(FORMATS)}")
    required, renames, _ = FORMATS[kind]
    rows = []
    for n, row in enumerate(_records(kind, path), 1):
        missing = [f for f in required if f not in row]
        if (
            kind == "kvpress" and not {"answer", "answers"} & row.keys()
        ):  # RULER's copy says answer, LongBench's answers
            missing.append("answer")
        if missing:
            raise ValueError(f"{path}:{n}: {kind} record lacks field(s) {missing} (needs {list(required)})")
        row = {renames.get(k, k): v for k, v in row.items()}
        if kind == "ruler":  # RULER's templates end with the query line
            cut = row["input"].rstrip().rfind("\n")
            row["context"], row["question"] = row["input"][: max(cut, 0)], row["input"][max(cut, 0) :]
        row["gold"] = [str(g) for g in (row["gold"] if isinstance(row["gold"], list | tuple) else [row["gold"]])]
        row["item_id"] = str(row.get("item_id", n - 1))
        row["all_classes"] = [str(c) for c in row.get("all_classes") or []]
        rows.append({k: row.get(k) for k in KEEP})
    if not rows:
        raise ValueError(f"{path} holds no {kind} records")
    return pl.DataFrame(
        rows,
        schema_overrides={
            "max_new_tokens": pl.Int64,
            "length": pl.Int64,
            "task": pl.String,
            "answer_prefix": pl.String,
        },
    )


def load_benchmark(kind: str, path: str, tasks=()) -> pl.DataFrame:
    """:func:`load_external`; a ``{task}`` in ``path`` (data stored per task, as kvpress's LongBench) is read
    once per task of ``tasks``."""
    if "{task}" not in path:
        return load_external(kind, path)
    if not tasks:
        raise ConfigConflict(
            f"path {path!r} is stored per task but no tasks are named; fix: deploy.benchmarks[].tasks",
            fields=("deploy.benchmarks[*].tasks",),
        )
    frames = [load_external(kind, path.format(task=t)).with_columns(task=pl.col("task").fill_null(t)) for t in tasks]
    return pl.concat(frames, how="diagonal_relaxed")


def _truncated(context: list[int], room: int) -> list[int]:
    """The context's first and last ``room // 2`` tokens (its middle dropped) when it exceeds ``room``."""
    if len(context) <= room:
        return context
    half = room // 2
    return context[:half] + context[len(context) - (room - half) :]


def benchmark_items(
    frame: pl.DataFrame,
    tokenizer,
    *,
    name: str,
    family: str,
    max_length: int,
    n_items: int,
    task: str | None = None,
    tasks=(),
    prompt_format: str = "plain",
    max_positions: int | None = None,
) -> list[Item]:
    """The first ``n_items`` records of each task (``tasks``: those only) of one benchmark as items of at most
    ``max_length`` tokens; ``task`` names the task of records that carry none (RULER's per-task files)."""
    if max_positions is not None and max_length > max_positions:
        raise ValueError(
            f"max_length = {max_length} exceeds the model's window ({max_positions}); "
            f"fix: lower deploy.benchmarks[{name}].max_length"
        )
    frame = frame.with_columns(pl.col("task").fill_null(task or name))
    if tasks:
        frame = frame.filter(pl.col("task").is_in(list(tasks)))
        if not frame.height:
            raise ValueError(
                f"benchmark {name}: no records of tasks {list(tasks)}; fix: deploy.benchmarks[{name}].tasks"
            )
    items = []
    for rec in frame.group_by("task", maintain_order=True).head(n_items).iter_rows(named=True):
        metric = metrics.metric_for(family, rec["task"])
        head, question, reserved = prompt_ids(tokenizer, prompt_format, rec["question"], rec["answer_prefix"] or "")
        context = tokenizer.encode(rec["context"], add_special_tokens=False)
        room = max_length - len(head) - len(question)
        if room < 1:
            raise ValueError(
                f"benchmark {name} item {rec['item_id']}: its question alone needs {len(question)} tokens "
                f"of max_length {max_length}; fix: raise deploy.benchmarks[{name}].max_length"
            )
        ctx = np.asarray(head + _truncated([int(i) for i in context], room), dtype=np.int64)
        q = np.asarray(question, dtype=np.int64)
        ctx.setflags(write=False)
        q.setflags(write=False)
        items.append(
            Item(
                item_id=f"{name}-{rec['task']}-{rec['item_id']}",
                task=rec["task"],
                length=max_length,
                depth=float("nan"),
                needles=(),
                needle_texts=(),
                gold=tuple(rec["gold"]),
                question=rec["question"],
                answer_prefix=rec["answer_prefix"] or "",
                context_ids=ctx,
                question_ids=q,
                prompt_format=prompt_format,
                reserved=reserved,
                metric=metric,
                all_classes=tuple(rec["all_classes"] or ()),
                max_new_tokens=rec["max_new_tokens"],
                setting="benchmark",
            )
        )
    return items
