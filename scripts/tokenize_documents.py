"""Rules tokenize_documents and tokenize_heldout: a corpus tokenized with a model's tokenizer, cut
into documents (the held-out chunking aligned to follow the capture documents' text).

Glue only: tokenizing and cutting live in trustmass.sources.documents.
"""

from trustmass.plumbing.rule_io import start_log  # first: what follows logs to the job's log

started = start_log(snakemake)  # noqa: F821 (snakemake is injected by the script directive)

from pathlib import Path  # noqa: E402

from trustmass.plumbing.rule_io import clean_exit_on  # noqa: E402
from trustmass.sources import SourceError  # noqa: E402
from trustmass.sources.documents import finish_document_set, text_end, tokenize_documents  # noqa: E402

model = snakemake.wildcards.model  # noqa: F821
corpus = snakemake.wildcards.corpus  # noqa: F821
settings = dict(snakemake.params.documents)  # noqa: F821
model_dir = Path(snakemake.input.model).parent  # noqa: F821
capture = snakemake.input.get("capture")  # noqa: F821 (tokenize_heldout: chunk first_doc follows the capture text)
align = (int(snakemake.params.first_doc), text_end(capture)) if capture else None  # noqa: F821
aligned = f", chunk {align[0]} at or after corpus token {align[1]}" if align else ""
print(f"tokenize_documents {model}/{corpus}: {settings}{aligned}")
with clean_exit_on(SourceError, job=f"tokenize_documents {model}/{corpus}"):
    manifest = tokenize_documents(
        model_dir,
        snakemake.input.corpus,  # noqa: F821
        snakemake.output.ids,  # noqa: F821
        doc_tokens=int(settings["doc_tokens"]),
        n_docs=int(settings["n_docs"]),
        bos=settings.get("bos", "tokenizer-default"),
        align=align,
        # the corpus's token stream, shared by tokenize_documents and tokenize_heldout (read back, not re-encoded)
        cache_dir=snakemake.config.get("cache_dir", "resources/cache"),  # noqa: F821
        model=model,
        corpus=corpus,
        log=print,
    )
finish_document_set(
    snakemake,  # noqa: F821
    manifest, snakemake.input.corpus, {"documents": settings, "model": model, "corpus": corpus}, started,  # noqa: F821
    corpus_tokens=manifest["corpus_tokens"],
    docs_available=manifest["docs_available"],
    special_prefix_tokens=manifest["special_prefix_tokens"],
)
