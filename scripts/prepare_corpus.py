"""Rule prepare_corpus: one corpus as resources/corpora/<name>/corpus.txt + corpus.json.

Glue only: fetching and reading live in trustmass.sources.corpora.
"""

from trustmass.plumbing.rule_io import start_log  # first: what follows logs to the job's log

started = start_log(snakemake)  # noqa: F821 (snakemake is injected by the script directive)

from pathlib import Path  # noqa: E402

from trustmass.plumbing.rule_io import clean_exit_on, finish  # noqa: E402
from trustmass.sources import SourceError  # noqa: E402
from trustmass.sources.corpora import prepare_corpus  # noqa: E402

name = snakemake.wildcards.corpus  # noqa: F821
spec = dict(snakemake.params.spec)  # noqa: F821
out_dir = Path(snakemake.output.txt).parent  # noqa: F821
print(f"prepare_corpus {name}: {spec}")
with clean_exit_on(SourceError, job=f"prepare_corpus {name}"):
    record = prepare_corpus(name, spec, out_dir, cache_dir=snakemake.params.cache, log=print)  # noqa: F821
finish(
    snakemake,  # noqa: F821
    [snakemake.output.txt],  # noqa: F821
    [*snakemake.input.code, snakemake.output.json],  # noqa: F821
    {"corpora": {name: spec}, "cache_dir": snakemake.params.cache},  # noqa: F821
    started,
    source=record["source"],
    package=record.get("package"),
    chars=record["chars"],
    text_sha256=record["sha256"],
    documents=len(record["documents"]),
)
