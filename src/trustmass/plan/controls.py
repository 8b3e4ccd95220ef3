"""The sanity-check controls (issue 37; Adebayo et al. 2018, "Sanity Checks for Saliency Maps"): the study run
again on a *randomised-weights twin* of each controlled model and on *shuffled text*.

A control is an **arm**: the same configuration with every controlled model replaced by its twin, a model of
its own name (``smollm2-135m.randomised``, ``smollm2-135m.shuffled``) whose config entry the start-up writes
(:func:`control_entries`).  The randomised twin's weights are re-drawn (``trustmass.sources.controls``); the
shuffled twin keeps the trained weights and permutes the tokens of every document it reads
(``documents.shuffle``).  So the model-keyed stages (capture, ceiling, audit, loss, deployment) need no change
and their records carry which control they are in the model name; the stages that pool models (the
certification manifest, the statistics, the claims) run once per arm under ``results/controls/<arm>/``
(:func:`arm_path`), from :func:`arm_config`, and never see the trained model's records.

This module imports nothing heavy: the plan and the start-up read it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

__all__ = [
    "ARMS",
    "SKIPPABLE",
    "arm_config",
    "arm_path",
    "arms",
    "control_entries",
    "control_problems",
    "controlled_models",
    "twin_name",
]

#: each arm -> the suffix of its twins' names
ARMS = {"randomised_weights": "randomised", "shuffled_text": "shuffled"}
#: stages a configuration may leave out of its controls (controls.skip) -> the switch that turns them off
SKIPPABLE = {
    "deploy": ("deploy", "enabled"),
    "task_contexts": ("task_contexts", "enabled"),
    "probe": ("loss", "probe", "enabled"),
    "curvature": ("loss", "curvature", "enabled"),
    "diagnostics": ("diagnostics", "enabled"),
}
#: what a twin's entry copies from its trained model's (the claims read roles and metadata; shapes are checked)
_COPIED = ("dtype", "declared", "lineage", "parameters_b", "roles", "mem_mb", "documents")


def arms(config: Mapping[str, Any]) -> list[str]:
    """The control arms the configuration runs, in ``controls.arms`` order ([] without a ``controls`` block)."""
    return list((config.get("controls") or {}).get("arms") or [])


def twin_name(model: str, arm: str) -> str:
    """The name of ``model``'s twin in ``arm`` (a folder name, like any model's)."""
    return f"{model}.{ARMS[arm]}"


def _headline(config: Mapping[str, Any]) -> tuple[list[str], str | None]:
    from trustmass.plan.headline import Headline

    headline = Headline.from_config(config)
    return list(headline.models), headline.corpus


def controlled_models(config: Mapping[str, Any]) -> list[str]:
    """``controls.models``, or the headline families."""
    return list((config.get("controls") or {}).get("models") or _headline(config)[0])


def control_corpora(config: Mapping[str, Any]) -> list[str]:
    """The corpora the controls read: ``controls.corpora`` as a list, ``headline`` for the headline corpus alone,
    or ``all`` / ``[]`` for every study corpus.  A claim that compares corpora (41: Table 2's prose, code and
    French) is read on the controls only where they read each of them."""
    chosen = (config.get("controls") or {}).get("corpora")
    if chosen == "headline":
        return [_headline(config)[1]]
    if chosen in (None, [], "all"):
        return list((config.get("study") or {}).get("corpora") or [])
    return list(chosen)


def control_problems(config: Mapping[str, Any]) -> list[str]:
    """Each problem with the ``controls`` block: the field and the fix (checked at start-up)."""
    if not arms(config):
        return []
    study = config.get("study") or {}
    headline_models, headline_corpus = _headline(config)
    problems = []
    for name in controlled_models(config):
        if name not in (study.get("models") or []):
            problems.append(f"controls.models: {name!r} is not a study model (study.models); fix: name one of them")
        elif (config.get("models") or {}).get(name, {}).get("source") == "control":
            problems.append(f"controls.models: {name!r} is itself a control twin; fix: name the trained model")
    if not set(controlled_models(config)) & set(headline_models):
        problems.append(
            "controls.models: none of them is a headline family (study.headline.models), so a control arm would have "
            "no headline population; fix: include a headline family"
        )
    corpora = control_corpora(config)
    for name in corpora:
        if name not in (study.get("corpora") or []):
            problems.append(f"controls.corpora: {name!r} is not a study corpus (study.corpora); fix: name one of them")
    if headline_corpus not in corpora:
        problems.append(
            f"controls.corpora: the headline corpus {headline_corpus!r} is missing (every headline claim reads it); "
            "fix: add it, or leave controls.corpora empty"
        )
    problems += _probe_problems(config)
    taken = set(config.get("models") or {})
    for model in controlled_models(config):
        for arm in arms(config):
            twin = twin_name(model, arm)
            if twin in taken and (config["models"][twin] or {}).get("source") != "control":
                problems.append(f"models.{twin}: the name of {model!r}'s {arm} twin is taken; fix: rename that model")
    return problems


def _probe_problems(config: Mapping[str, Any]) -> list[str]:
    """The probe checks its swap recall on documents it was not trained on: on one control corpus, the controls
    need more capture documents than ``loss.probe.train_docs``."""
    controls, loss = config.get("controls") or {}, config.get("loss") or {}
    probe = loss.get("probe") or {}
    if not probe.get("enabled") or "probe" in (controls.get("skip") or []) or len(control_corpora(config)) > 1:
        return []
    n_docs = (controls.get("documents") or {}).get("n_docs") or (config.get("documents") or {}).get("n_docs")
    train = int(probe.get("train_docs") or 0)
    if n_docs is None or int(n_docs) > train:
        return []
    return [
        f"controls.documents.n_docs: {n_docs} leaves the controls' probe no document to check its recall on (it "
        f"trains on loss.probe.train_docs = {train} of the one control corpus); fix: controls.documents.n_docs: "
        f"{train + 1}, another control corpus, or controls.skip: [probe]"
    ]


def control_entries(config: Mapping[str, Any]) -> dict[str, dict]:
    """The config entries of every twin (``source: control``), from its trained model's entry and ``controls``."""
    controls = config.get("controls") or {}
    documents = {k: v for k, v in (controls.get("documents") or {}).items() if v is not None}
    entries = {}
    for model in controlled_models(config):
        trained = config["models"][model]
        for arm in arms(config):
            entry = {k: copy.deepcopy(trained[k]) for k in _COPIED if k in trained}
            entry.update({"source": "control", "of": model, "control": arm, "seed": int(config["seed"])})
            own = {**(config.get("documents") or {}), **(trained.get("documents") or {})}
            entry["documents"] = {**(trained.get("documents") or {}), **documents}
            if "doc_tokens" in documents:  # shorter control documents, never longer than the model's own
                entry["documents"]["doc_tokens"] = min(int(documents["doc_tokens"]), int(own["doc_tokens"]))
            if arm == "randomised_weights":
                entry["randomisation"] = controls.get("randomisation", "matched")
            else:
                entry["documents"]["shuffle"] = True
            entries[twin_name(model, arm)] = entry
    return entries


def _twins(names: list[str], twin: Mapping[str, str]) -> list[str]:
    """A stage's list of model names mapped onto the arm's twins, the uncontrolled ones left out ([] keeps its
    meaning: the headline families).  A stage whose list names no controlled model is switched off in the arm
    where it has a switch (the loss stage has none: it then reads the headline twins)."""
    return [twin[m] for m in names if m in twin]


def arm_config(config: Mapping[str, Any], arm: str) -> dict:
    """The configuration of one control arm: the study on the twins of the controlled models, on the control
    corpora, with the stages ``controls.skip`` names switched off.  Everything else is the study's own."""
    out = copy.deepcopy(dict(config))
    twin = {m: twin_name(m, arm) for m in controlled_models(config)}
    headline_models, headline_corpus = _headline(config)
    corpora = control_corpora(config)
    out["study"]["models"] = list(twin.values())
    out["study"]["corpora"] = corpora
    out["study"]["headline"] = {"models": _twins(headline_models, twin), "corpus": headline_corpus}
    skipped = list((config.get("controls") or {}).get("skip") or [])
    for stage, block in (
        ("loss", out["loss"]),
        ("probe", out["loss"]["probe"]),
        ("deploy", out["deploy"]),
        ("task_contexts", out["task_contexts"]),
    ):
        named = list(block.get("models") or [])
        block["models"] = _twins(named, twin)
        if named and not block["models"] and stage in SKIPPABLE:  # the stage names no controlled model: off here
            skipped.append(stage)
    heldout = out["loss"]["heldout"]
    heldout["corpora"] = [c for c in heldout.get("corpora") or [] if c in corpora]
    # the held-out documents and the task contexts stay the trained study's text, however few capture documents
    # the controls read (their first chunk counts the trained model's capture documents)
    heldout["first_doc"], out["task_contexts"]["first_chunk"] = _first_chunks(config)
    if arm == "shuffled_text":  # the retrieval items' haystack is shuffled (trustmass.deploy.job.items_for); a
        out["deploy"]["benchmarks"] = []  # benchmark's contexts have no shuffled version
    for stage in skipped:
        *path, key = SKIPPABLE[stage]
        node = out
        for part in path:
            node = node[part]
        node[key] = False
    out["controls"] = {**out["controls"], "arms": [], "arm": arm}
    return out


def _first_chunks(config: Mapping[str, Any]) -> tuple[int, int]:
    """The trained study's first held-out chunk and first task-context chunk (of the first controlled model)."""
    from trustmass.plumbing.config_checks import heldout_first_doc, task_contexts_first_chunk

    model = controlled_models(config)[0]
    documents = {**(config.get("documents") or {}), **(config["models"][model].get("documents") or {})}
    return heldout_first_doc(config, documents), task_contexts_first_chunk(config, documents)


def arm_path(path: str, arm: str | None) -> str:
    """A pooled output's path in an arm: ``results/X`` -> ``results/controls/<arm>/X`` (unchanged for the
    trained study, ``arm`` None)."""
    if arm is None:
        return path
    if not path.startswith("results/"):
        raise ValueError(f"{path}: only outputs under results/ have a control arm's copy")
    return f"results/controls/{arm}/{path.removeprefix('results/')}"
