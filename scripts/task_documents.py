"""Rule task_documents: task-structured contexts for one model (spec §2.7).

Glue only: the contexts are built in trustmass.sources.task_contexts.
"""

from trustmass.plumbing.rule_io import run_rule  # first: it opens the job's log before anything heavy imports


def main(snakemake, started):
    from pathlib import Path

    from trustmass.plumbing.rule_io import clean_exit_on
    from trustmass.sources import SourceError
    from trustmass.sources.documents import finish_document_set
    from trustmass.sources.task_contexts import build_task_documents

    model = snakemake.wildcards.model
    settings = snakemake.params.settings
    tasks, documents, capture = settings["task_contexts"], settings["documents"], settings["capture"]
    model_dir = Path(snakemake.input.model).parent
    print(f"task_documents {model}: {settings}")
    with clean_exit_on(SourceError, job=f"task_documents {model}"):
        manifest = build_task_documents(
            model_dir,
            snakemake.input.haystack,
            snakemake.output.ids,
            types=tasks["types"],
            per_type=int(tasks["per_type"]),
            doc_tokens=int(documents["doc_tokens"]),
            first_chunk=int(tasks["first_chunk"]),
            retrieval_rows=int(tasks["retrieval_rows"]),
            rows_per_head=int(capture["rows_per_head"]),
            min_position=int(capture["min_position"]),
            seed=int(settings["seed"]),
            bos=documents["bos"],
            shuffle=bool(documents.get("shuffle", False)),  # the shuffled-text control
            model=model,
            corpus=tasks["corpus"],
            log=print,
        )
    finish_document_set(
        snakemake,
        manifest,
        snakemake.input.haystack,
        settings,
        started,
        seeds={"seed": settings["seed"]},
        retrieval_share=manifest["retrieval_share"],
        documents=[
            {k: r[k] for k in ("id", "task", "tokens_sha256", "answer", "planted")} for r in manifest["documents"]
        ],
    )


run_rule(snakemake, main)
