"""The configuration checks a JSON schema cannot express: between keys, and against what a key implies
(the subset cap, the map and sweep budgets, SnapKV's windows, the capture's first row, the held-out and
task-context chunks, the probe's documents, a GGUF named twice).

:func:`cross_field_problems` is the start-up half (``trustmass.plumbing.config.validate_config`` calls it on
the merged config); the public ``*_problem`` functions and chunk positions are shared with the jobs that
check the same thing again (each job-time twin calls the same function, so the two cannot drift).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from trustmass.core import windows  # import-free: SnapKV's window, defined once
from trustmass.core.subset_cap import subset_cap_problem


def cross_field_problems(config: dict) -> list[str]:
    problems = []
    enumeration = config.get("enumeration", {})
    overrides = enumeration.get("extra_override", {}) or {}
    normalised = {int(budget): extra for budget, extra in overrides.items()}
    enumeration["extra_override"] = normalised
    enumerated = config.get("budgets", {}).get("enumerated", [])
    for budget in sorted(set(normalised) - set(enumerated)):
        problems.append(
            f"config.enumeration.extra_override: budget {budget} is not in budgets.enumerated {enumerated}; "
            f"fix: add {budget} to budgets.enumerated or remove the override"
        )
    cap = int(enumeration.get("subset_cap", 1))
    problems += [p for s in enumerated if int(s) not in normalised and (p := subset_cap_problem(int(s), cap))]
    problems += [p for p in (_map_budget_problem(config), sweep_budget_problem(config)) if p]
    problems += _snapkv_window_problems(config)
    problems += _capture_budget_problems(config)
    problems += _headline_problems(config)
    problems += _loss_problems(config)
    problems += _task_problems(config)
    problems += _access_problems(config)
    problems += [
        p
        for name, entry in (config.get("models") or {}).items()
        if (p := gguf_problem(name, (entry or {}).get("gguf") or {}))
    ]
    return problems


def _map_budget_problem(config: Mapping[str, Any]) -> str | None:
    """The map (Fig 2, the flat cells the loss switches) reads the enumerated records at statistics.map_budget."""
    budget = (config.get("statistics") or {}).get("map_budget")
    enumerated = (config.get("budgets") or {}).get("enumerated") or []
    if budget is None or int(budget) in enumerated:
        return None
    return (
        f"config.statistics.map_budget: {budget} is not in budgets.enumerated {enumerated}, so the map has no "
        f"records; fix: add {budget} to budgets.enumerated or set map_budget to one of them"
    )


def sweep_budget_problem(config: Mapping[str, Any]) -> str | None:
    """The cap-widening sweep widens the enumerated pool of certification.sweep.budget (None: it is enumerated);
    read by the certify_sweep job and at start-up."""
    budget = ((config.get("certification") or {}).get("sweep") or {}).get("budget")
    enumerated = (config.get("budgets") or {}).get("enumerated") or []
    if budget is None or int(budget) in enumerated:
        return None
    return (
        f"config.certification.sweep.budget: {budget} is not in budgets.enumerated {enumerated}: the sweep widens "
        f"the enumerated pool of that budget; fix: add {budget} to budgets.enumerated or set the sweep budget to one of them"
    )


def gguf_problem(model: str, gguf: Mapping[str, Any]) -> str | None:
    """A packaged model's GGUF is named by gguf.path or by gguf.chunks, not both (None: nothing wrong);
    read by the prepare job (trustmass.sources.models) and at start-up."""
    if gguf.get("path") and gguf.get("chunks"):
        return (
            f"config.models.{model}.gguf: sets both path and chunks; fix: set either gguf.path (one file) or "
            "gguf.chunks (the ordered parts), not both"
        )
    return None


def _access_problems(config: dict) -> list[str]:
    """access_law: every tail (tail_rows, dilution_rows) fits in every study model's documents."""
    access = config.get("access_law") or {}
    if not access.get("enabled"):
        return []
    problems = []
    for where, docs in _documents_by_model(config).items():
        n_tokens = int(docs.get("doc_tokens", 2048))
        for name, values in (
            ("tail_rows", access.get("tail_rows") or []),
            ("dilution_rows", [access.get("dilution_rows", 1)]),
        ):
            longer = sorted(int(k) for k in values if int(k) > n_tokens)
            if longer:
                problems.append(
                    f"config.access_law.{name}: {', '.join(map(str, longer))} rows are longer than the {n_tokens}-token "
                    f"documents of {where}; fix: at most {n_tokens} (or longer documents, doc_tokens)"
                )
    return problems


def _documents_by_model(config: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """``documents`` and each study model's own ``documents:`` override, by where they are set."""
    documents = config.get("documents") or {}
    return {"documents": documents} | {
        f"models.{name}.documents": {**documents, **(entry.get("documents") or {})}
        for name, entry in (config.get("models") or {}).items()
        if isinstance(entry, dict)
        and entry.get("documents")
        and name in ((config.get("study") or {}).get("models") or [])
    }


def task_contexts_first_chunk(config: Mapping[str, Any], documents: Mapping[str, Any] | None = None) -> int:
    """task_contexts.first_chunk, or (null) the first haystack chunk after the capture documents
    (chunks of the documents' own length: the capture documents are chunks 0..n_docs-1)."""
    first = (config.get("task_contexts") or {}).get("first_chunk")
    documents = config.get("documents") or {} if documents is None else documents
    return int(documents.get("n_docs", 0)) if first is None else int(first)


def _task_problems(config: dict) -> list[str]:
    """task_contexts: study models, a defined haystack, a name of its own, enough retrieval rows (claim 46)."""
    tasks = config.get("task_contexts") or {}
    if not tasks.get("enabled"):
        return []
    study, corpora = config.get("study", {}) or {}, config.get("corpora", {}) or {}
    problems = [
        f"config.task_contexts.models: {m!r} is not in study.models {study.get('models', [])}; fix: add it there or remove it here"
        for m in tasks.get("models") or []
        if m not in study.get("models", [])
    ]
    haystack = tasks.get("haystack")
    if haystack is not None and haystack not in corpora:
        problems.append(
            f"config.task_contexts.haystack: {haystack!r} is not defined under corpora: ({', '.join(corpora)}); "
            "fix: name one of them or null (the headline corpus)"
        )
    if tasks.get("corpus") in corpora:
        problems.append(
            f"config.task_contexts.corpus: {tasks['corpus']!r} is also a corpus under corpora:; fix: another name"
        )
    problem = retrieval_design_problem(
        int(tasks.get("retrieval_rows", 0)),
        int((config.get("capture") or {}).get("rows_per_head", 0)),
        field="config.task_contexts.retrieval_rows",
    )
    return problems + ([problem] if problem else [])


#: claim 46: retrieval rows make up at least this share of the task contexts' instances
MIN_RETRIEVAL_SHARE = 0.20


def retrieval_design_problem(
    retrieval_rows: int, rows_per_head: int, field: str = "task_contexts.retrieval_rows"
) -> str | None:
    """Claim 46 as a design constraint: what is wrong with a sampling plan of too few retrieval rows (None: nothing)."""
    if not 1 <= retrieval_rows < rows_per_head:
        return (
            f"{field} = {retrieval_rows} must be at least 1 and below capture.rows_per_head = {rows_per_head} "
            "(the other rows are the background rows); fix: set it between them"
        )
    share = retrieval_rows / rows_per_head
    if share < MIN_RETRIEVAL_SHARE:
        need = int(math.ceil(MIN_RETRIEVAL_SHARE * rows_per_head - 1e-12))
        return (
            f"{field} = {retrieval_rows} of capture.rows_per_head = {rows_per_head} makes retrieval rows "
            f"{share:.0%} of the instances, below the pre-registered {MIN_RETRIEVAL_SHARE:.0%} (claim 46); "
            f"fix: raise it to at least {need}"
        )
    return None


def heldout_first_doc(config: Mapping[str, Any], documents: Mapping[str, Any] | None = None) -> int:
    """The first held-out chunk: loss.heldout.first_doc, or (null) the first chunk of the held-out
    chunking whose text starts after the capture documents' text.  `documents`: the capture
    documents' settings of one model (its own ``documents:`` override applied; default: the
    config's ``documents``)."""
    first = ((config.get("loss") or {}).get("heldout") or {}).get("first_doc")
    return _first_chunk_after_capture(config, documents) if first is None else int(first)


def _first_chunk_after_capture(config: Mapping[str, Any], documents: Mapping[str, Any] | None = None) -> int:
    documents = config.get("documents") or {} if documents is None else documents
    heldout = (config.get("loss") or {}).get("heldout") or {}
    capture_tokens = int(documents.get("n_docs", 0)) * int(documents.get("doc_tokens", 0))
    doc_tokens = int(heldout.get("doc_tokens") or documents.get("doc_tokens", 1))
    return -(-capture_tokens // doc_tokens)


def _loss_problems(config: dict) -> list[str]:
    """loss: study models and corpora, held-out text after the capture documents' text, a budget
    below the prefix (its rules are checked in common.smk, against the selector registry)."""
    loss = config.get("loss") or {}
    if not loss:
        return []
    study, documents = config.get("study", {}) or {}, config.get("documents", {}) or {}
    heldout = loss.get("heldout", {}) or {}
    problems = (
        [
            f"config.loss.models: {m!r} is not in study.models {study.get('models', [])}; fix: add it there or remove it here"
            for m in loss.get("models") or []
            if m not in study.get("models", [])
        ]
        + [
            f"config.loss.probe.models: {m!r} is not in study.models {study.get('models', [])}; fix: name study models"
            for m in (loss.get("probe") or {}).get("models") or []
            if m not in study.get("models", [])
        ]
        + [
            f"config.loss.heldout.corpora: {c!r} is not in study.corpora {study.get('corpora', [])}; fix: name study corpora"
            for c in heldout.get("corpora") or []
            if c not in study.get("corpora", [])
        ]
    )
    doc_tokens = heldout.get("doc_tokens") or documents.get("doc_tokens", 0)
    first, need = heldout.get("first_doc"), _first_chunk_after_capture(config)
    if first is not None and int(first) < need:
        problems.append(
            f"config.loss.heldout.first_doc: {first} chunks of {doc_tokens} tokens start inside the capture documents "
            f"(documents.n_docs {documents.get('n_docs')} x {documents.get('doc_tokens')} tokens), whose map the loss uses; "
            f"fix: loss.heldout.first_doc: {need} or more (or null: the first chunk after them)"
        )
    problems += _probe_problems(config)
    continuation, budget = int(loss.get("continuation", 2)), int(loss.get("budget", 1))
    if continuation >= int(doc_tokens):
        problems.append(
            f"config.loss.continuation: {continuation} restricted rows leave no prefix in {doc_tokens}-token held-out "
            "documents; fix: a smaller loss.continuation or longer loss.heldout.doc_tokens"
        )
    elif budget >= int(doc_tokens) - continuation:
        problems.append(
            f"config.loss.budget: {budget} is not below the {int(doc_tokens) - continuation} keys the first restricted row "
            f"sees (doc_tokens {doc_tokens} - continuation {continuation}), so nothing would be evicted; fix: a smaller "
            "loss.budget or a shorter loss.continuation"
        )
    return problems


def probe_train_docs_problem(train_docs: int, n_docs: int, model: str, other_corpora: bool = True) -> str | None:
    """What is wrong with training the probe on more documents than a model has captured, or (one study corpus)
    on all of them, leaving none to check its swap recall on (None: nothing): the planner's check
    (trustmass.plan.loss) and the start-up one read it."""
    if train_docs > n_docs:
        return (
            f"config.loss.probe.train_docs: {train_docs} exceeds the {n_docs} capture documents of {model} "
            f"(documents.n_docs); fix: loss.probe.train_docs: {n_docs} or fewer, or more documents"
        )
    if train_docs == n_docs and not other_corpora:
        return (
            f"config.loss.probe.train_docs: {train_docs} takes every capture document of {model} on the one study "
            f"corpus, leaving none to check the probe's swap recall on; fix: loss.probe.train_docs: {n_docs - 1} "
            "or fewer, more documents, or another study corpus"
        )
    return None


def _probe_problems(config: dict) -> list[str]:
    """loss.probe.train_docs fits in each probe model's capture documents (its own documents: override applied)."""
    probe, study = (config.get("loss") or {}).get("probe") or {}, config.get("study") or {}
    if not probe.get("enabled"):
        return []
    headline = (study.get("headline") or {}).get("models") or study.get("models") or []
    models = probe.get("models") or config["loss"].get("models") or headline  # as trustmass.plan.loss reads them
    documents, entries, problems = config.get("documents") or {}, config.get("models") or {}, []
    for model in models:
        n_docs = int({**documents, **((entries.get(model) or {}).get("documents") or {})}.get("n_docs", 0))
        others = len(study.get("corpora") or []) > 1
        problem = probe_train_docs_problem(int(probe.get("train_docs", 0)), n_docs, model, others)
        problems += [problem] if problem else []
    return problems


def _headline_problems(config: dict) -> list[str]:
    """study.headline names study models and a study corpus."""
    study = config.get("study", {}) or {}
    headline = study.get("headline", {}) or {}
    problems = []
    for model in headline.get("models") or []:
        if model not in study.get("models", []):
            problems.append(
                f"config.study.headline.models: {model!r} is not in study.models {study.get('models', [])}; "
                f"fix: add it to study.models or remove it from the headline families"
            )
    corpus = headline.get("corpus")
    if corpus is not None and corpus not in study.get("corpora", []):
        problems.append(
            f"config.study.headline.corpus: {corpus!r} is not in study.corpora {study.get('corpora', [])}; fix: name one of them"
        )
    return problems


def _capture_budget_problems(config: dict) -> list[str]:
    """Every budget fits below the sampled rows, and the documents leave rows to sample.

    A row at position i sees i + 1 keys; rows are sampled from capture.min_position on, so a budget
    above min_position would keep every key of the earliest rows (nothing evicted, ES trivially 0),
    and the ceiling would mix such rows into its statistics.  The capture itself needs
    rows_per_head positions in [min_position, min(max_position, doc_tokens - 1)] of every model's
    documents, or it fails when it runs instead of now."""
    capture, budgets = config.get("capture") or {}, config.get("budgets") or {}
    lo = int(capture.get("min_position", 256))
    problems = []
    for kind in ("enumerated", "native"):
        above = sorted(int(s) for s in budgets.get(kind) or [] if int(s) > lo)
        if above:
            problems.append(
                f"config.budgets.{kind}: {', '.join(map(str, above))} above capture.min_position {lo}: the earliest "
                f"sampled rows (position {lo}) see only {lo + 1} keys, so such a budget keeps all of them and evicts "
                f"nothing; fix: budgets of at most {lo}, or capture.min_position: {max(above)} or more (with documents "
                "long enough to sample from there)"
            )
    rows, hi_cap = int(capture.get("rows_per_head", 6)), capture.get("max_position")
    for where, docs in _documents_by_model(config).items():
        n_tokens = int(docs.get("doc_tokens", 2048))
        hi = n_tokens - 1 if hi_cap is None else min(int(hi_cap), n_tokens - 1)
        if hi - lo + 1 < rows:
            problems.append(
                f"config.capture.min_position: {lo} leaves {max(hi - lo + 1, 0)} positions to sample in the "
                f"{n_tokens}-token documents of {where}"
                f"{f' (capture.max_position {hi_cap})' if hi_cap is not None else ''}, fewer than capture.rows_per_head "
                f"{rows}; fix: a smaller capture.min_position or rows_per_head, or longer documents (doc_tokens)"
            )
    return problems


def _snapkv_window_problems(config: dict) -> list[str]:
    """The audit's SnapKV reads the window sum of ``windows.snapkv_window(s)`` rows at every budget s:
    the capture must store each of those windows (capture.windows), or the audit fails hours later."""
    budgets = config.get("budgets", {})
    captured = set((config.get("capture") or {}).get("windows") or [])
    needed = {}
    for s in [*budgets.get("enumerated", []), *budgets.get("native", [])]:
        w = windows.snapkv_window(int(s))
        if w > 1 and w not in captured:
            needed.setdefault(w, []).append(int(s))
    if not needed:
        return []
    missing = ", ".join(f"{w} (budget {'/'.join(map(str, b))})" for w, b in sorted(needed.items()))
    return [
        f"config.capture.windows: {sorted(captured)} lacks the SnapKV window(s) {missing} the audit needs "
        f"(window = {windows.SNAPKV_WINDOW_RULE}); fix: capture.windows: {sorted(captured | set(needed))}"
    ]
