# Helpers for the capture stage (workflow/rules/capture.smk): shard paths and the study's target
# list.  Functions only, no rules.


def capture_shard(model, corpus, doc):
    return f"results/capture/{model}/{corpus}/{doc}.safetensors"


def doc_ids(model):
    """Document ids 0000..n_docs-1 for one model (a model may override documents.n_docs)."""
    settings = documents_for_model(model)
    return [f"{i:04d}" for i in range(int(settings["n_docs"]))]


def study_shards(study=None):
    """Every capture shard of the study: study.models x study.corpora x documents."""
    study = config["study"] if study is None else study
    return [
        capture_shard(model, corpus, doc)
        for model in study["models"]
        for corpus in study["corpora"]
        for doc in doc_ids(model)
    ]
