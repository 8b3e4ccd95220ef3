"""What a deployment job runs (rule ``deploy_condition``): the items of one (model, task, length), every method
at every budget through :func:`runner.run_item`, and the rows with their dense-valid flag.

Items: item ``i`` is cut from the haystack corpus starting at token ``i x length``, so items share no text;
the needles, their depths and keys are seeded per item (``tasks.make_item``).  Dense-valid gating: an item
counts in a comparison only where the dense model answered it fully (``tasks.dense_valid``); the flag is
written on every row of the item and the statistics filter by it (and count the excluded items).
A ``deploy.benchmarks`` entry (RULER / LongBench data, :mod:`trustmass.deploy.external`) is a job of its own,
``task`` its name and ``length`` its max_length; its rows say ``setting = "benchmark"`` and are never gated.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import polars as pl

from trustmass.core.config_conflict import ConfigConflict
from trustmass.deploy import external, tasks
from trustmass.deploy.methods import method, refused_on, roster
from trustmass.deploy.names import gemma3_refusal
from trustmass.deploy.roster import configured_methods
from trustmass.deploy.runner import run_item

__all__ = [
    "benchmark_of",
    "build_items",
    "check_runnable",
    "deploy_for",
    "condition_rows",
    "haystack_ids",
    "items_for",
    "methods_of",
    "open_model",
]


def haystack_ids(tokenizer, text: str, n_tokens: int) -> np.ndarray:
    """The first ``n_tokens`` tokens of ``text`` (tokenizing only as much of it as needed)."""
    chars = max(4 * n_tokens, 1024)
    while True:
        ids = tokenizer(text[:chars], add_special_tokens=False)["input_ids"]
        if len(ids) > n_tokens or chars >= len(text):
            break
        chars *= 2
    if len(ids) < n_tokens:
        raise ValueError(
            f"the haystack corpus holds {len(ids)} tokens, the items need {n_tokens}; fix: fewer "
            "deploy.items, shorter deploy.lengths, or a longer deploy.haystack corpus"
        )
    return np.asarray(ids[:n_tokens], dtype=np.int64)


def build_items(
    task: str,
    length: int,
    n_items: int,
    haystack: np.ndarray,
    tokenizer,
    *,
    seed: int,
    prompt_format: str = "plain",
    max_positions: int | None = None,
) -> list[tasks.Item]:
    """Items ``0..n_items-1`` of ``task`` at ``length``; item ``i`` reads the haystack from token ``i * length``."""
    if haystack.size < n_items * length:
        raise ValueError(f"haystack has {haystack.size} tokens; {n_items} items of {length} need {n_items * length}")
    return [
        tasks.make_item(
            task,
            length,
            i,
            haystack_ids=haystack[i * length :],
            tokenizer=tokenizer,
            seed=seed,
            prompt_format=prompt_format,
            max_positions=max_positions,
        )
        for i in range(n_items)
    ]


def methods_of(deploy: Mapping[str, Any]):
    """(the run's roster, the decomposition's) from the ``deploy`` config, ContourKV expanded per reading and scope."""
    contour = deploy["contour"]
    expand = dict(
        floor_readings=tuple(contour["floor_readings"]), scopes=tuple(contour["scopes"]), hub=bool(deploy["hub"])
    )
    return roster(configured_methods(deploy), **expand), roster(deploy["decomposition"]["methods"], **expand)


def check_runnable(model, model_name: str, deploy: Mapping[str, Any]) -> None:
    """Refuse, before any prefill, a configured method that kvpress will not run on this model
    (:func:`methods.refused_on`), naming the config field and the fix."""
    run, decomposition = methods_of(deploy)
    replay = [method(name, hub=bool(deploy["hub"])) for name in (deploy.get("replay") or {}).get("methods") or ()]
    for field, methods in (
        ("deploy.methods", run),
        ("deploy.decomposition.methods", decomposition),
        ("deploy.replay.methods", replay),
    ):
        refused = refused_on(model, methods)
        if refused:
            # decomposition and replay methods are among deploy.methods (checked at start-up): that list is at fault
            raise ConfigConflict(gemma3_refusal(field, refused, model_name), fields=("deploy.methods", "deploy.models"))


def condition_rows(
    model, tokenizer, items, deploy: Mapping[str, Any], seed: int, log: Callable[[str], None] = print
) -> pl.DataFrame:
    """Every row of every item (:func:`runner.run_item`), with the item's task, length, depth and ``dense_valid``."""
    methods, decomposition = methods_of(deploy)
    rows = []
    for item in items:
        got = run_item(
            model,
            tokenizer,
            item,
            methods,
            deploy["budgets"],
            max_new_tokens=int(deploy["max_new_tokens"]),
            query_aware=bool(deploy["query_aware"]),
            decomposition=decomposition,
            contour={"floor": int(deploy["contour"]["floor"])},
            alpha_safeguard=float(deploy["alpha_safeguard"]),
            seed=seed,
        )
        main = "unmodified" if deploy["query_aware"] else "doc_boundary"
        dense = [r["score"] for r in got if r["method"] == "dense" and r["variant"] == main][:1]
        valid = bool(tasks.dense_valid(dense)[0]) if item.setting == "retrieval" else True  # benchmarks: no gating
        hits = {r["method"]: r["score"] for r in got if r["variant"] == main and r["budget"] == got[0]["budget"]}
        log(
            f"  {item.item_id}: dense {'valid' if valid else 'MISSED (excluded)'}; "
            + ", ".join(f"{m} {s:.0f}" for m, s in hits.items())
        )
        rows += [
            {
                **r,
                "task": item.task,
                "length": item.length,
                "depth": item.depth,
                "dense_valid": valid,
                "setting": item.setting,
                "metric": item.metric,
            }
            for r in got
        ]
    return pl.DataFrame(rows)


def open_model(cfg: Mapping[str, Any], model_config, threads: int):
    """(model with the ragged attention, tokenizer, device) of the prepared model next to ``model_config``."""
    from pathlib import Path

    import torch
    from transformers import AutoTokenizer

    from trustmass.deploy import ragged
    from trustmass.sources.loading import load_prepared_model, resolve_device

    torch.set_num_threads(int(threads))
    torch.manual_seed(int(cfg["seed"]))
    folder = Path(model_config).parent
    device = resolve_device(cfg["capture"]["device"])
    return load_prepared_model(folder, ragged.register(), device), AutoTokenizer.from_pretrained(folder), device


def benchmark_of(deploy: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    """The ``deploy.benchmarks`` entry called ``name``, or None (a synthetic task)."""
    return next((b for b in deploy.get("benchmarks") or () if b["name"] == name), None)


def deploy_for(deploy: Mapping[str, Any], task: str) -> Mapping[str, Any]:
    """The ``deploy`` settings of one job: a benchmark's own ``budgets`` (the paper: s in {32, 128} on benchmarks,
    {32, 64, 128} in retrieval) replace the run's."""
    bench = benchmark_of(deploy, task)
    return {**deploy, "budgets": list(bench["budgets"])} if bench and bench.get("budgets") else deploy


def items_for(
    cfg: Mapping[str, Any],
    model,
    tokenizer,
    corpus_text,
    task: str,
    length: int,
    n_items: int,
    shuffle_seed: int | None = None,
):
    """The items of one (task, length): a synthetic task's, or a ``deploy.benchmarks`` entry's (``task`` its
    name, ``length`` its max_length); bad input (a length above the model's window, a haystack too short, data
    that cannot be read) fails here, before any prefill.

    ``shuffle_seed`` (the shuffled-text control, trustmass.plan.controls): each item's haystack tokens are
    permuted before the needle, the chain and the question are spliced in, so the planted content stays intact
    in text without language."""
    from pathlib import Path

    deploy = cfg["deploy"]
    window = getattr(model.config.get_text_config(decoder=True), "max_position_embeddings", None)
    bench = benchmark_of(deploy, task)
    if bench is not None and shuffle_seed is not None:
        raise ValueError(
            f"deploy.benchmarks {task!r}: a benchmark's contexts have no shuffled version; fix: the shuffled-text "
            "control leaves deploy.benchmarks out (trustmass.plan.controls.arm_config)"
        )
    if bench is not None:
        frame = external.load_benchmark(bench["format"], bench["path"], bench.get("tasks") or ())
        return external.benchmark_items(
            frame,
            tokenizer,
            name=task,
            family=bench.get("family") or bench["format"],
            max_length=length,
            n_items=int(bench.get("items") or n_items),
            task=bench.get("task"),
            tasks=bench.get("tasks") or (),
            prompt_format=deploy["prompt_format"],
            max_positions=window,
        )
    text = Path(corpus_text).read_text(encoding="utf-8")
    haystack = haystack_ids(tokenizer, text, n_items * length)
    if shuffle_seed is not None:
        from trustmass.sources.controls import shuffle_tokens

        windows = haystack.reshape(n_items, length)  # item i reads window i: each shuffled within itself
        haystack = shuffle_tokens(windows, seed=shuffle_seed, key=f"deploy/{task}/{length}").reshape(-1)
    return build_items(
        task,
        length,
        n_items,
        haystack,
        tokenizer,
        seed=int(cfg["seed"]),
        prompt_format=deploy["prompt_format"],
        max_positions=window,
    )
