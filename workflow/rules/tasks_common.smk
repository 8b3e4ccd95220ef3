# Helpers for the task-context stage (workflow/rules/tasks.smk): its models, documents and records.
# Functions only, no rules.

from trustmass.plumbing.config import task_contexts_first_chunk


def task_models():
    """task_contexts.models, or the headline families when empty (none when the stage is off)."""
    tasks = config["task_contexts"]
    if not tasks["enabled"]:
        return []
    return list(tasks["models"] or HeadlinePopulation.from_config(config).models)


def task_corpus():
    return config["task_contexts"]["corpus"]


def task_haystack():
    """The corpus the contexts are cut from (task_contexts.haystack, else the headline corpus)."""
    return config["task_contexts"]["haystack"] or HeadlinePopulation.from_config(config).corpus


def task_settings(wildcards):
    """What task_documents reads: the block, the model's documents settings, the sampling plan."""
    documents = documents_for_model(wildcards.model)
    tasks = config["task_contexts"]
    return {
        "task_contexts": {**tasks, "first_chunk": task_contexts_first_chunk(config, documents)},
        "documents": {k: documents[k] for k in ("doc_tokens", "bos")},
        "capture": {k: config["capture"][k] for k in ("rows_per_head", "min_position")},
        "seed": config["seed"],
    }


def task_documents_list():
    """(model, corpus, doc) of every task context."""
    tasks = config["task_contexts"]
    n = len(tasks["types"]) * int(tasks["per_type"])
    return [(m, task_corpus(), f"{i:04d}") for m in task_models() for i in range(n)]


def task_records():
    return [ceiling_records(*key) for key in task_documents_list()]


def study_access_records():
    """The access-law records of every captured document: the study's and the task contexts' (access_law.enabled)."""
    if not config["access_law"]["enabled"]:
        return []
    return [access_records(*key) for key in [*study_documents(), *task_documents_list()]]


def task_manifests():
    return sorted({f"resources/documents/{m}/{c}.json" for m, c, _ in task_documents_list()})
