# Helpers for the loss stage (workflow/rules/loss.smk): its models, held-out documents and paths.
# Functions only, no rules.

from trustmass.plumbing.config import heldout_first_doc


def loss_models():
    """loss.models, or the headline families when empty."""
    return list(config["loss"]["models"] or HeadlinePopulation.from_config(config).models)


def heldout_corpora():
    return list(config["loss"]["heldout"]["corpora"] or config["study"]["corpora"])


def heldout_settings(model):
    """tokenize_documents settings of the held-out chunking: first_doc + n_docs chunks."""
    settings = documents_for_model(model)
    heldout = config["loss"]["heldout"]
    return {
        **settings,
        "doc_tokens": int(heldout["doc_tokens"] or settings["doc_tokens"]),
        "n_docs": heldout_first_doc(config, settings) + int(heldout["n_docs"]),
    }


def heldout_path(model, corpus):
    return f"resources/heldout/{model}/{corpus}.safetensors"


def capture_manifest(model, corpus):
    """The capture documents' manifest (their corpus token ranges: the held-out text must follow)."""
    return documents_path(model, corpus).removesuffix(".safetensors") + ".json"


def heldout_ids(model):
    """The held-out documents of `model` (indices in its held-out chunking)."""
    first = heldout_first_doc(config, documents_for_model(model))
    return [f"{i:04d}" for i in range(first, first + int(config["loss"]["heldout"]["n_docs"]))]


def loss_documents():
    """(model, corpus, doc) of every held-out document."""
    return [(m, c, d) for m in loss_models() for c in heldout_corpora() for d in heldout_ids(m)]


def loss_tokens(model, corpus, doc):
    return f"results/loss/{model}/{corpus}/{doc}.parquet"


def curvature_path(model, corpus, doc):
    return f"results/loss/{model}/{corpus}/{doc}.curvature.parquet"


def diagnostics_path(model, corpus, doc):
    return f"results/loss/{model}/{corpus}/{doc}.diagnostics.parquet"


def diagnostics_outputs():
    """The diagnostics forward of every held-out document (none when diagnostics are off)."""
    return [diagnostics_path(*key) for key in loss_documents()] if config["diagnostics"]["enabled"] else []


def curvature_outputs():
    """The curvature frames: each model's first loss.curvature.max_docs held-out documents (none when off)."""
    settings = config["loss"]["curvature"]
    if not settings["enabled"]:
        return []
    cap = settings.get("max_docs")
    keys = [key for m in loss_models() for key in [k for k in loss_documents() if k[0] == m][:cap]]
    return [curvature_path(*key) for key in keys]


def cells_outputs():
    """Every held-out document's per-cell frame (the conversion constant's reconstruction change)."""
    return [loss_tokens(*key).removesuffix(".parquet") + ".cells.parquet" for key in loss_documents()]


def map_shards(model):
    """The capture shards of the map documents: the primary slice of every study corpus (Figure 2's)."""
    primary = int(config["statistics"]["primary_docs"])
    return [capture_shard(model, c, d) for c in config["study"]["corpora"] for d in doc_ids(model)[:primary]]


def loss_outputs():
    """Every per-document loss output (the loss statistics' inputs)."""
    return [loss_tokens(*key) for key in loss_documents()]


def allocation_shards(model):
    """The allocation panel's rows: the primary slice of the headline corpus (the paper's capture)."""
    primary = int(config["statistics"]["primary_docs"])
    corpus = HeadlinePopulation.from_config(config).corpus
    return [capture_shard(model, corpus, d) for d in doc_ids(model)[:primary]]


def allocation_outputs():
    if not config["loss"]["allocation"]["enabled"]:
        return []
    return [f"results/loss/{m}/allocation.parquet" for m in loss_models()]


def probe_shards(model):
    """(training shards, recall shards): the first probe.train_docs documents of the headline corpus;
    the primary documents of the other study corpora (else the headline corpus's remaining ones)."""
    corpus = HeadlinePopulation.from_config(config).corpus
    n_train = int(config["loss"]["probe"]["train_docs"])
    docs = doc_ids(model)
    if n_train > len(docs):
        raise ValueError(f"config.loss.probe.train_docs: {n_train} exceeds the {len(docs)} capture documents of {model}; lower it")
    train = [capture_shard(model, corpus, d) for d in docs[:n_train]]
    primary = int(config["statistics"]["primary_docs"])
    others = [capture_shard(model, c, d) for c in config["study"]["corpora"] if c != corpus for d in docs[:primary]]
    return train, others or [capture_shard(model, corpus, d) for d in docs[n_train:]]


def probe_models():
    """The models the probe is trained and evaluated on: loss.probe.models, or every loss model."""
    if not config["loss"]["probe"]["enabled"]:
        return []
    return list(config["loss"]["probe"]["models"] or loss_models())


def probe_outputs(model):
    return [f"results/loss/{model}/probe.safetensors"] if model in probe_models() else []
