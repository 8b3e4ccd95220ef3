"""What a run's configuration implies for the claim values it sets (``configured:`` in ``data/claims.yaml``).

Some of the paper's numbers are not results but sizes of its design: 168,192 instances, ten models,
nine (selector, family) pairs, 160 deployment conditions, SnapKV holding 0.09-3.6 % of the cache
(its budget over the context length).  A run sets these by its configuration, so the claims report
never judges them; it shows, beside the regenerated number, what the run's configuration implies
(:func:`implied`), and ``python -m trustmass.cli.plan --configfile config/paper.yaml --claims`` (and
tests/workflow/test_paper_config.py) check that ``config/paper.yaml`` plans exactly the paper's
counts (:func:`paper_plan`).

Each entry of :data:`IMPLIED` maps a resolved configuration to an :class:`Implied`: the number the
configuration fixes (or None where it fixes only the scale, e.g. a count out of the manifest's size)
and a sentence saying how.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from trustmass.certification.manifest import N_DECILES
from trustmass.core.stats import wilson_upper
from trustmass.deploy.roster import configured_methods
from trustmass.plumbing.config import embedded_default

__all__ = ["IMPLIED", "Implied", "implied"]


@dataclass(frozen=True)
class Implied:
    """What the configuration implies: ``value`` (a number, a (low, high) span, or None) and how."""

    value: float | tuple[float, float] | None
    how: str


def _study(config: Mapping) -> Mapping:
    return config.get("study") or {}


def _headline_models(config: Mapping) -> list[str]:
    study = _study(config)
    return list((study.get("headline") or {}).get("models") or study.get("models") or [])


def _headline_corpus(config: Mapping) -> str | None:
    study = _study(config)
    corpora = study.get("corpora") or []
    return (study.get("headline") or {}).get("corpus") or (corpora[0] if corpora else None)


def _role_model(config: Mapping, role: str) -> str | None:
    for name in _study(config).get("models") or []:
        if role in (((config.get("models") or {}).get(name) or {}).get("roles") or []):
            return name
    return None


#: the primary slice: the first documents of every (model, corpus) (spec §2.2; statistics.primary_docs)
PRIMARY_DOCS = 3


def _instances(config: Mapping, models: Iterable[str], corpora: Iterable[str], column: str) -> int:
    """Planned instances of ``models`` x ``corpora`` from the config alone: per document, layers x query
    heads (``declared:``) x ``capture.rows_per_head`` x the enumerated budgets; ``column`` is
    ``instances`` (every document) or ``primary_instances`` (the primary slice)."""
    corpora = [c for c in corpora if c]
    rows = int(config["capture"]["rows_per_head"]) * len(config["budgets"]["enumerated"])
    primary = int((config.get("statistics") or {}).get("primary_docs") or PRIMARY_DOCS)
    total = 0
    for model in models:
        entry = config["models"][model]
        shape = entry["declared"]
        documents = {**(config.get("documents") or {}), **(entry.get("documents") or {})}
        docs = int(documents["n_docs"]) if column == "instances" else min(int(documents["n_docs"]), primary)
        total += int(shape["layers"]) * int(shape["heads"]) * rows * docs * len(corpora)
    return total


def _fmt(n: float) -> str:
    return f"{n:,.0f}" if float(n) == int(n) else f"{n:g}"


def headline_primary_instances(config: Mapping) -> Implied:
    models, corpus = _headline_models(config), _headline_corpus(config)
    n = _instances(config, models, [corpus], "primary_instances")
    return Implied(
        n,
        f"layers x query heads x rows per head x budgets x the first 3 documents of {len(models)} headline "
        f"famil{'y' if len(models) == 1 else 'ies'} on {corpus}: {_fmt(n)}",
    )


def headline_and_scale_instances(config: Mapping) -> Implied:
    models, corpus = _headline_models(config), _headline_corpus(config)
    n = _instances(config, models, [corpus], "primary_instances")
    scale = _role_model(config, "long_context")
    extra = _instances(config, [scale], [corpus], "primary_instances") if scale and scale not in models else 0
    how = f"the headline families' primary slice ({_fmt(n)})"
    how += f" plus the long-context arm {scale} ({_fmt(extra)})" if extra else " (no long-context arm in this study)"
    return Implied(n + extra, f"{how}: {_fmt(n + extra)}")


def headline_and_scale_models(config: Mapping) -> Implied:
    models = _headline_models(config)
    scale = _role_model(config, "long_context")
    arms = models + ([scale] if scale and scale not in models else [])
    return Implied(len(arms), f"the headline families plus the long-context arm: {', '.join(arms)}")


def long_context_instances(config: Mapping) -> Implied:
    scale = _role_model(config, "long_context")
    if scale is None:
        return Implied(None, "no study model plays the long-context role")
    n = _instances(config, [scale], [_headline_corpus(config)], "primary_instances")
    return Implied(n, f"{scale}'s primary slice on the headline corpus: {_fmt(n)}")


def headline_instances_per_budget(config: Mapping) -> Implied:
    models, corpus = _headline_models(config), _headline_corpus(config)
    budgets = len((config.get("budgets") or {}).get("enumerated") or [1])
    n = _instances(config, models, [corpus], "instances") // budgets
    return Implied(
        n, f"layers x query heads x rows per head x every document of the headline families on {corpus}: {_fmt(n)}"
    )


def content_instances(config: Mapping) -> Implied:
    reference = _role_model(config, "reference")
    corpora = list(_study(config).get("corpora") or [])
    if reference is None:
        return Implied(None, "no study model plays the reference role (Table 2 is the reference family's)")
    n = _instances(config, [reference], corpora, "primary_instances")
    return Implied(n, f"{reference}'s primary slice on {len(corpora)} corpora: {_fmt(n)}")


def study_models(config: Mapping) -> Implied:
    models = list(_study(config).get("models") or [])
    return Implied(len(models), f"the study's models: {', '.join(models)}")


def _entries(config: Mapping) -> list[tuple[str, Mapping]]:
    return [(m, (config.get("models") or {}).get(m) or {}) for m in _study(config).get("models") or []]


def lineages(config: Mapping) -> Implied:
    entries = _entries(config)
    missing = [m for m, e in entries if not e.get("lineage")]
    if missing:
        return Implied(None, f"models.<name>.lineage is not set for {', '.join(missing)}")
    names = sorted({e["lineage"] for _, e in entries})
    return Implied(len(names), f"the study models' lineages: {', '.join(names)}")


def model_sizes(config: Mapping) -> Implied:
    entries = _entries(config)
    missing = [m for m, e in entries if e.get("parameters_b") is None]
    if missing:
        return Implied(None, f"models.<name>.parameters_b is not set for {', '.join(missing)}")
    sizes = [float(e["parameters_b"]) for _, e in entries]
    return Implied((min(sizes), max(sizes)), f"the study models span {min(sizes):g}B-{max(sizes):g}B parameters")


def manifest_size(config: Mapping) -> Implied:
    """The manifest: headline families x enumerated budgets x dropped-mass deciles x per_stratum."""
    per_stratum = int(config["certification"]["per_stratum"])
    n = len(_headline_models(config)) * len(config["budgets"]["enumerated"]) * N_DECILES * per_stratum
    return Implied(
        None,
        f"a count out of the certification manifest's {_fmt(n)} instances (its size is set by "
        "certification.per_stratum); the share of improved instances is claim 21",
    )


def _loss(config: Mapping) -> Mapping:
    return config.get("loss") or {}


def loss_pairs(config: Mapping) -> Implied:
    models = list(_loss(config).get("models") or _headline_models(config))
    rules = list(_loss(config).get("rules") or [])
    return Implied(len(models) * len(rules), f"loss.rules x loss models: {len(rules)} x {len(models)}")


def loss_families(config: Mapping) -> Implied:
    models = list(_loss(config).get("models") or _headline_models(config))
    return Implied(
        None, f"a count out of the study's {len(models)} loss famil{'y' if len(models) == 1 else 'ies'} (loss.models)"
    )


def probe_training_docs(config: Mapping) -> Implied:
    return Implied(float((_loss(config).get("probe") or {}).get("train_docs") or 0), "loss.probe.train_docs")


def _deploy(config: Mapping) -> Mapping:
    return config.get("deploy") or {}


def _kept_shares(config: Mapping) -> list[float]:
    d = _deploy(config)
    return [s / n for s in d.get("budgets") or [] for n in d.get("lengths") or [] if n]


def kept_share(config: Mapping) -> Implied:
    """A method that keeps s rows per head of an N-token cache holds s/N of it: the budget sets the share."""
    shares = _kept_shares(config)
    if not shares:
        return Implied(None, "deploy.budgets / deploy.lengths are not set")
    lo, hi = min(shares), max(shares)
    d = _deploy(config)
    return Implied(
        (100 * lo, 100 * hi),
        f"s / N: deploy.budgets {d.get('budgets')} over deploy.lengths {d.get('lengths')} "
        f"tokens = {100 * lo:.3g}-{100 * hi:.3g} % of the cache",
    )


def full_over_kept(config: Mapping) -> Implied:
    """A full (or over-keeping) cache holds at most N/s a budget-enforcing method's rows: the ratio's ceiling is set."""
    shares = _kept_shares(config)
    if not shares:
        return Implied(None, "deploy.budgets / deploy.lengths are not set")
    return Implied(
        (1 / max(shares), 1 / min(shares)),
        f"at most N / s = {1 / max(shares):.3g}-{1 / min(shares):.3g} "
        "(deploy.lengths over deploy.budgets): the full cache over s rows",
    )


def deploy_conditions(config: Mapping) -> Implied:
    d = _deploy(config)
    models = list(d.get("models") or _headline_models(config))
    tasks, lengths, budgets = list(d.get("tasks") or []), list(d.get("lengths") or []), list(d.get("budgets") or [])
    n = len(models) * len(tasks) * len(lengths) * len(budgets)
    return Implied(
        n,
        f"deploy.models x tasks x lengths x budgets = {len(models)} x {len(tasks)} x {len(lengths)} x {len(budgets)} "
        f"= {n} retrieval conditions",
    )


def deploy_grid(config: Mapping) -> Implied:
    """A W/T/L count: its scale is the number of conditions the run's grid has."""
    return Implied(
        None,
        f"a count out of the run's {deploy_conditions(config).value} retrieval conditions (deploy.models x tasks x "
        "lengths x budgets; the paper's grid: 157-160 benchmark conditions); its order (wins against losses) is the result",
    )


def replay_measurements(config: Mapping) -> Implied:
    replay = _deploy(config).get("replay") or {}
    d = _deploy(config)
    n = (
        len(replay.get("methods") or [])
        * int(replay.get("items") or 0)
        * len(d.get("tasks") or [])
        * len(d.get("lengths") or [])
        * len(d.get("budgets") or [])
    )
    return Implied(n, f"deploy.replay.methods x items x tasks x lengths x budgets = {n} per model")


def method_roster(config: Mapping) -> Implied:
    methods = [m for m in configured_methods(_deploy(config)) if m != "dense"]
    return Implied(
        None,
        f"a count of deploy.methods ({len(methods)} methods besides dense): which baselines a run "
        "deploys is its configuration",
    )


def question_rows(config: Mapping) -> Implied:
    return Implied(
        None,
        f"the question's length in tokens, set by the task template ({', '.join(_deploy(config).get('tasks') or [])}) "
        "and the tokenizer",
    )


def doc_rows_design(config: Mapping) -> Implied:
    return Implied(
        0, "the doc-rows variant keeps every question row in the budget by design (Table 5's note), so it evicts none"
    )


def _share(retrieval: int, rows: int) -> float:
    return 100.0 * retrieval / rows


def retrieval_row_share(config: Mapping) -> Implied:
    """Claim 46: capture draws ``retrieval_rows`` of its ``rows_per_head`` rows from the retrieval positions."""
    rows = int(config["capture"]["rows_per_head"])
    if "task_contexts" not in config:  # the claims report is given a slice of the config (workflow/rules/report.smk)
        default = embedded_default("task_contexts/retrieval_rows")
        return Implied(
            None,
            f"task_contexts.retrieval_rows / capture.rows_per_head by design (the default {default}/{rows} = "
            f"{_share(default, rows):.3g} %; task_contexts is not in the configuration the claims report was given); "
            "a plan below 20 % is refused at start-up",
        )
    retrieval = int(config["task_contexts"]["retrieval_rows"])
    return Implied(
        _share(retrieval, rows),
        f"task_contexts.retrieval_rows / capture.rows_per_head = {retrieval}/{rows} = {_share(retrieval, rows):.3g} % "
        "of the task contexts' instances by design; a plan below 20 % is refused at start-up",
    )


def quest_page_size(config: Mapping) -> Implied:
    """Claim 110: the audited Quest's page size at each enumerated budget (its contract: max(2, s/4))."""
    from trustmass.core.selectors.registry import REGISTRY  # the selector registry is heavy; claims load without it

    budgets = [int(s) for s in config["budgets"]["enumerated"]]
    sizes = [REGISTRY["quest"].page_size(s) for s in budgets]
    return Implied(
        (min(sizes), max(sizes)),
        f"Quest's page size max(2, s/4) at budgets.enumerated {budgets}: {', '.join(map(str, sizes))} keys "
        "(the audited Quest's contract)",
    )


def enforced_byte_ratio(config: Mapping) -> Implied:
    """Claims 60, 75: enforced ContourKV holds at most SnapKV's count per head (deploy.runner.kept_sets)."""
    return Implied(
        (0.0, 1.0),
        f"enforced ContourKV caps every (layer, KV head) cell at s entries, floor included, and SnapKV keeps s per "
        f"head (deploy.budgets {_deploy(config).get('budgets')}): at most 1x SnapKV's bytes on any data (the "
        "paper's harness held up to 1.5x)",
    )


def document_clusters(config: Mapping) -> Implied:
    """Claims 41, 83: the half-width of a document-cluster bootstrap interval is set by how many documents it resamples."""
    docs = int((config.get("documents") or {})["n_docs"])
    primary = min(docs, int((config.get("statistics") or {}).get("primary_docs") or PRIMARY_DOCS))
    return Implied(
        None,
        f"the half-width of a document-cluster bootstrap interval over {primary} documents (documents.n_docs = {docs}, "
        "the primary slice statistics.primary_docs): how few clusters it resamples sets it",
    )


def certification_sample(config: Mapping) -> Implied:
    """Claim 94: f_hi bounds the improved share of the manifest's instances per budget, so its size sets the caps."""
    per_stratum = int(config["certification"]["per_stratum"])
    n = len(_headline_models(config)) * N_DECILES * per_stratum
    floor = float(wilson_upper(0, n)) if n else float("nan")
    return Implied(
        None,
        f"f_hi is the Wilson bound on the improved share of {n} manifest instances per budget (headline families x "
        f"{N_DECILES} deciles x certification.per_stratum = {per_stratum}; the paper: 240): none improved still gives "
        f"f_hi = {floor:.3g}, and the cap is the (0.5 + f_hi)-quantile, so the manifest's size sets it",
    )


#: the configuration-set quantities, by the name ``configured:`` gives in data/claims.yaml
IMPLIED: Mapping[str, Callable[[Mapping], Implied]] = {
    "headline_primary_instances": headline_primary_instances,
    "headline_and_scale_instances": headline_and_scale_instances,
    "headline_and_scale_models": headline_and_scale_models,
    "long_context_instances": long_context_instances,
    "headline_instances_per_budget": headline_instances_per_budget,
    "content_instances": content_instances,
    "study_models": study_models,
    "lineages": lineages,
    "model_sizes": model_sizes,
    "manifest_size": manifest_size,
    "loss_pairs": loss_pairs,
    "loss_families": loss_families,
    "probe_training_docs": probe_training_docs,
    "kept_share": kept_share,
    "full_over_kept": full_over_kept,
    "deploy_conditions": deploy_conditions,
    "deploy_grid": deploy_grid,
    "replay_measurements": replay_measurements,
    "method_roster": method_roster,
    "question_rows": question_rows,
    "doc_rows_design": doc_rows_design,
    "retrieval_row_share": retrieval_row_share,
    "quest_page_size": quest_page_size,
    "enforced_byte_ratio": enforced_byte_ratio,
    "document_clusters": document_clusters,
    "certification_sample": certification_sample,
}


def implied(name: str, config: Mapping[str, Any] | None) -> Implied:
    """What ``config`` implies for ``configured: name`` (a readable reason where the config says nothing)."""
    if config is None:
        return Implied(None, "the run's configuration was not given to the claims report")
    try:
        return IMPLIED[name](config)
    except (KeyError, TypeError, ValueError) as exc:  # a partial config (a test's, a subset) cannot plan it
        return Implied(None, f"the configuration does not determine it ({exc})")
