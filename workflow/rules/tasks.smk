# Task-structured contexts (spec §2.7, claims 42-47): planted needles, variable chains and quote QA
# assembled in token space from the haystack corpus, written as an ordinary document set whose
# manifest names each document's retrieval rows.  Capture, ceiling and the map read them unchanged
# (capture draws task_contexts.retrieval_rows of its rows from the retrieval rows).
#
#   resources/documents/{model}/{task corpus}.safetensors + .json     task_documents
#   results/capture|ceiling/{model}/{task corpus}/{doc}.*              the capture and ceiling rules
#
# Needs from common.smk: library_code, prov; from sources_common.smk: documents_for_model; from
# tasks_common.smk: task_settings, task_haystack, task_corpus.

ruleorder: task_documents > tokenize_documents


rule task_documents:
    """Task contexts for one model: token ids, planted spans, answers and retrieval rows."""
    input:
        model="resources/models/{model}/config.json",
        haystack=lambda wc: f"resources/corpora/{task_haystack()}/corpus.txt",
        code=library_code("trustmass.deploy.task_contexts", "trustmass.sources.documents", "trustmass.plumbing.rule_io"),
    output:
        ids=f"resources/documents/{{model}}/{task_corpus()}.safetensors",
        manifest=f"resources/documents/{{model}}/{task_corpus()}.json",
        prov=prov(f"resources/documents/{{model}}/{task_corpus()}.safetensors"),
    params:
        settings=task_settings,
    wildcard_constraints:
        model=_SOURCE_NAME,
    log:
        "logs/sources/task_documents/{model}.log",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=20,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/task_documents.py"
