"""Rule tokenize_documents: a corpus tokenized with a model's tokenizer, cut into documents.

Glue only: tokenizing and cutting live in trustmass.sources.documents.
"""

import sys
import time
from pathlib import Path

started = time.time()
log = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected by the script directive)
sys.stdout = sys.stderr = log

from trustmass.plumbing.provenance import write_sidecar  # noqa: E402
from trustmass.sources import SourceError  # noqa: E402
from trustmass.sources.documents import tokenize_documents  # noqa: E402

model = snakemake.wildcards.model  # noqa: F821
corpus = snakemake.wildcards.corpus  # noqa: F821
settings = dict(snakemake.params.documents)  # noqa: F821
print(f"tokenize_documents {model}/{corpus}: {settings}")
try:
    manifest = tokenize_documents(
        Path(snakemake.input.model).parent,  # noqa: F821
        snakemake.input.corpus,  # noqa: F821
        snakemake.output.ids,  # noqa: F821
        doc_tokens=int(settings["doc_tokens"]),
        n_docs=int(settings["n_docs"]),
        bos=settings.get("bos", "tokenizer-default"),
        model=model,
        corpus=corpus,
        log=print,
    )
except SourceError as exc:
    print(f"error: {exc}")
    print(f"tokenize_documents {model}/{corpus}: {exc}", file=sys.__stderr__)
    sys.exit(1)
model_dir = Path(snakemake.input.model).parent  # noqa: F821
tokenizer_files = [str(model_dir / name) for name in manifest["tokenizer_files"]]
write_sidecar(
    snakemake.output.ids,  # noqa: F821
    inputs=[snakemake.input.corpus, *tokenizer_files, *snakemake.input.code, snakemake.output.manifest],  # noqa: F821
    config_slice={"documents": settings, "model": model, "corpus": corpus},
    started=started,
    extra={
        "rule": snakemake.rule,  # noqa: F821
        "input_ids_sha256": manifest["input_ids_sha256"],
        "corpus_tokens": manifest["corpus_tokens"],
        "docs_available": manifest["docs_available"],
        "special_prefix_tokens": manifest["special_prefix_tokens"],
    },
)
print("ok")
