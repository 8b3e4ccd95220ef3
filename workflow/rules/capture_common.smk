# Helpers for the capture stage (workflow/rules/capture.smk): shard paths and the study's target
# list.  Functions only, no rules.


def capture_shard(model, corpus, doc):
    return f"results/capture/{model}/{corpus}/{doc}.safetensors"


def access_records(model, corpus, doc):
    """The access-law records of one document (trustmass.contracts.access), beside its shard."""
    return f"results/capture/{model}/{corpus}/{doc}.access.parquet"


def access_outputs(model, corpus, doc):
    """The capture rule's access-law outputs: the records and their sidecar (none when access_law is off)."""
    if not config["access_law"]["enabled"]:
        return {}
    return {"access": access_records(model, corpus, doc), "access_prov": prov(access_records(model, corpus, doc))}


def doc_ids(model):
    """Document ids 0000..n_docs-1 for one model (a model may override documents.n_docs)."""
    settings = documents_for_model(model)
    return [f"{i:04d}" for i in range(int(settings["n_docs"]))]


def study_shards(study=None):
    """Every capture shard of the study."""
    return [capture_shard(*key) for key in study_documents(study)]


def ceiling_records(model, corpus, doc):
    return f"results/ceiling/{model}/{corpus}/{doc}.parquet"


def study_documents(study=None):
    """(model, corpus, doc) of every document of the study: study.models x study.corpora x docs."""
    study = config["study"] if study is None else study
    return [(m, c, d) for m in study["models"] for c in study["corpora"] for d in doc_ids(m)]


def study_records(study=None):
    """Every ceiling record file of the study (one per capture shard)."""
    return [ceiling_records(*key) for key in study_documents(study)]
