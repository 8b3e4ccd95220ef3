"""Rules tokenize_documents and tokenize_heldout: a corpus tokenized with a model's tokenizer, cut
into documents (the held-out chunking aligned to follow the capture documents' text).

Glue only: tokenizing and cutting live in trustmass.sources.documents.
"""

from trustmass.plumbing.rule_io import run_rule  # first: it opens the job's log before anything heavy imports


def main(snakemake, started):
    from pathlib import Path

    from trustmass.plan.layout import CACHE_DIR
    from trustmass.plumbing.rule_io import clean_exit_on
    from trustmass.sources import SourceError
    from trustmass.sources.documents import finish_document_set, text_end, tokenize_documents

    model = snakemake.wildcards.model
    corpus = snakemake.wildcards.corpus
    settings = dict(snakemake.params.documents)
    model_dir = Path(snakemake.input.model).parent
    capture = snakemake.input.get("capture")  # tokenize_heldout: chunk first_doc follows the capture text
    align = (int(snakemake.params.first_doc), text_end(capture)) if capture else None
    aligned = f", chunk {align[0]} at or after corpus token {align[1]}" if align else ""
    print(f"tokenize_documents {model}/{corpus}: {settings}{aligned}")
    with clean_exit_on(SourceError, job=f"tokenize_documents {model}/{corpus}"):
        manifest = tokenize_documents(
            model_dir,
            snakemake.input.corpus,
            snakemake.output.ids,
            doc_tokens=int(settings["doc_tokens"]),
            n_docs=int(settings["n_docs"]),
            bos=settings.get("bos", "tokenizer-default"),
            align=align,
            # the corpus's token stream, shared by tokenize_documents and tokenize_heldout (read back, not re-encoded)
            cache_dir=snakemake.config.get("cache_dir")
            or CACHE_DIR,  # read here, not a param: moving the cache reruns nothing
            # the shuffled-text control (documents.shuffle): permuted after cutting, seeded by the master seed
            shuffle=bool(settings.get("shuffle", False)),
            seed=snakemake.params.seed,  # None unless shuffled (trustmass.plan.Study.shuffle_seed)
            shuffle_key=f"{'heldout' if capture else 'documents'}/{corpus}",
            model=model,
            corpus=corpus,
            log=print,
        )
    finish_document_set(
        snakemake,
        manifest,
        snakemake.input.corpus,
        {"documents": settings, "model": model, "corpus": corpus, "seed": snakemake.params.seed},
        started,
        corpus_tokens=manifest["corpus_tokens"],
        docs_available=manifest["docs_available"],
        special_prefix_tokens=manifest["special_prefix_tokens"],
    )


run_rule(snakemake, main)
