# Task-structured contexts (spec §2.7, claims 42-47): planted needles, variable chains and quote QA
# assembled in token space from the haystack corpus, written as an ordinary document set whose
# manifest names each document's retrieval rows.  Capture, ceiling and the map read them unchanged
# (capture draws task_contexts.retrieval_rows of its rows from the retrieval rows).
#
#   layout.DOCUMENTS with corpus = task_contexts.corpus (+ its manifest)   task_documents
#   results/capture|ceiling/{model}/{task corpus}/{doc}.*                   the capture and ceiling rules

ruleorder: task_documents > tokenize_documents


rule task_documents:
    """Task contexts for one model: token ids, planted spans, answers and retrieval rows."""
    input:
        model=layout.MODEL_CONFIG,
        haystack=lambda wc: STUDY.task_haystack(),
        code=library_code("trustmass.sources.task_contexts", "trustmass.sources.documents", "trustmass.plumbing.rule_io"),
    output:
        ids=layout.fill(layout.DOCUMENTS, corpus=STUDY.task_corpus()),
        manifest=layout.fill(layout.DOCUMENTS_MANIFEST, corpus=STUDY.task_corpus()),
        prov=[prov(layout.fill(p, corpus=STUDY.task_corpus())) for p in (layout.DOCUMENTS, layout.DOCUMENTS_MANIFEST)],
    params:
        settings=lambda wc: STUDY.of(wc.model).task_settings(wc.model),
    wildcard_constraints:
        model=SOURCE_NAME,
    log:
        layout.log("task_documents"),
    threads: 1
    resources:
        mem_mb=4000,
        runtime=20,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/task_documents.py"
