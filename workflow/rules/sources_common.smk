# Helpers for the sources stage (workflow/rules/sources.smk): config entries for wildcards, memory
# estimates and target lists other stages and the Snakefile use.  Functions only, no rules.

from snakemake.exceptions import WorkflowError

from trustmass.sources.models import SOURCE_RECORD

_SOURCE_NAME = "[A-Za-z0-9][A-Za-z0-9._-]*"


def _config_entry(block, name, what):
    entries = config.get(block) or {}
    if name not in entries:
        raise WorkflowError(
            f"{what} {name!r} is not defined under `{block}:` in the configuration "
            f"(defined: {', '.join(sorted(entries)) or 'none'}); add it there or ask for another target"
        )
    return entries[name]


def model_entry(wildcards):
    """The config block of one model (a change to it reruns prepare_model)."""
    return _config_entry("models", wildcards.model, "model")


def model_params(wildcards):
    """What prepare_model reads: the entry without `mem_mb`, `documents` and the claims' metadata (`lineage`,
    `parameters_b`): they must not rerun a conversion."""
    return {k: v for k, v in model_entry(wildcards).items() if k not in ("mem_mb", "documents", "lineage", "parameters_b")}


def model_source_record(model):
    """The trustmass_source.json prepare_model writes beside a model's config.json: where the model came
    from, its load dtype and its shapes (QK-norm, ...).  Take it as an input to read any of these."""
    return f"resources/models/{model}/{SOURCE_RECORD}"


def corpus_entry(wildcards):
    """The config block of one corpus (a change to it reruns prepare_corpus)."""
    return _config_entry("corpora", wildcards.corpus, "corpus")


def model_mem_mb(wildcards):
    """Peak memory of a conversion: fp32 weights twice plus the GGUF, about 4 GB for 0.5B parameters."""
    return int(model_entry(wildcards).get("mem_mb", 6000))


def documents_for_model(model):
    """`documents:` with the model's own `documents:` overrides on top (e.g. 16,384-token chunks for one arm)."""
    settings = dict(config.get("documents") or {})
    settings.update(_config_entry("models", model, "model").get("documents") or {})
    return settings


def documents_settings(wildcards):
    """documents_for_model for a rule's {model} wildcard."""
    return documents_for_model(wildcards.model)


def documents_path(model, corpus):
    """The tokenized documents of one corpus for one model (a target other stages take as input)."""
    return f"resources/documents/{model}/{corpus}.safetensors"


def all_documents(models=None, corpora=None):
    """Document files for every (model, corpus) pair; by default every model and corpus in the config."""
    models = list(config.get("models") or {}) if models is None else list(models)
    corpora = list(config.get("corpora") or {}) if corpora is None else list(corpora)
    return [documents_path(m, c) for m in models for c in corpora]
