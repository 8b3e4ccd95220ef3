"""Rule prepare_corpus: one corpus as resources/corpora/<name>/corpus.txt + corpus.json.

Glue only: fetching and reading live in trustmass.sources.corpora.
"""

import sys
import time
from pathlib import Path

started = time.time()
log = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected by the script directive)
sys.stdout = sys.stderr = log

from trustmass.plumbing.provenance import write_sidecar  # noqa: E402
from trustmass.sources import SourceError  # noqa: E402
from trustmass.sources.corpora import prepare_corpus  # noqa: E402

name = snakemake.wildcards.corpus  # noqa: F821
spec = dict(snakemake.params.spec)  # noqa: F821
out_dir = Path(snakemake.output.txt).parent  # noqa: F821
print(f"prepare_corpus {name}: {spec}")
try:
    record = prepare_corpus(name, spec, out_dir, cache_dir=snakemake.params.cache, log=print)  # noqa: F821
except SourceError as exc:
    print(f"error: {exc}")
    print(f"prepare_corpus {name}: {exc}", file=sys.__stderr__)
    sys.exit(1)
write_sidecar(
    snakemake.output.txt,  # noqa: F821
    inputs=[*snakemake.input.code, snakemake.output.json],  # noqa: F821
    config_slice={"corpora": {name: spec}, "cache_dir": snakemake.params.cache},  # noqa: F821
    started=started,
    extra={
        "rule": snakemake.rule,  # noqa: F821
        "source": record["source"],
        "package": record.get("package"),
        "chars": record["chars"],
        "text_sha256": record["sha256"],
        "documents": len(record["documents"]),
    },
)
print("ok")
