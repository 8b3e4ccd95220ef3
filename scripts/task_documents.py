"""Rule task_documents: task-structured contexts for one model (spec §2.7).

Glue only: the contexts are built in trustmass.sources.task_contexts.
"""

from trustmass.plumbing.rule_io import start_log  # first: what follows logs to the job's log

started = start_log(snakemake)  # noqa: F821 (snakemake is injected by the script directive)

from pathlib import Path  # noqa: E402

from trustmass.plumbing.rule_io import clean_exit_on  # noqa: E402
from trustmass.sources import SourceError  # noqa: E402
from trustmass.sources.task_contexts import build_task_documents  # noqa: E402
from trustmass.sources.documents import finish_document_set  # noqa: E402

model = snakemake.wildcards.model  # noqa: F821
settings = snakemake.params.settings  # noqa: F821
tasks, documents, capture = settings["task_contexts"], settings["documents"], settings["capture"]
model_dir = Path(snakemake.input.model).parent  # noqa: F821
print(f"task_documents {model}: {settings}")
with clean_exit_on(SourceError, job=f"task_documents {model}"):
    manifest = build_task_documents(
        model_dir,
        snakemake.input.haystack,  # noqa: F821
        snakemake.output.ids,  # noqa: F821
        types=tasks["types"],
        per_type=int(tasks["per_type"]),
        doc_tokens=int(documents["doc_tokens"]),
        first_chunk=int(tasks["first_chunk"]),
        retrieval_rows=int(tasks["retrieval_rows"]),
        rows_per_head=int(capture["rows_per_head"]),
        min_position=int(capture["min_position"]),
        seed=int(settings["seed"]),
        bos=documents["bos"],
        model=model,
        corpus=tasks["corpus"],
        log=print,
    )
finish_document_set(
    snakemake,  # noqa: F821
    manifest, snakemake.input.haystack, settings, started,  # noqa: F821
    seeds={"seed": settings["seed"]},
    retrieval_share=manifest["retrieval_share"],
    documents=[{k: r[k] for k in ("id", "task", "tokens_sha256", "answer", "planted")} for r in manifest["documents"]],
)
