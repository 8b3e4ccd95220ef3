"""Rule prepare_corpus: one corpus as resources/corpora/<name>/corpus.txt + corpus.json.

Glue only: fetching and reading live in trustmass.sources.corpora.
"""

from trustmass.plumbing.rule_io import run_rule  # first: it opens the job's log before anything heavy imports


def main(snakemake, started):
    from pathlib import Path

    from trustmass.plumbing.rule_io import clean_exit_on, finish
    from trustmass.sources import SourceError
    from trustmass.sources.corpora import prepare_corpus

    name = snakemake.wildcards.corpus
    spec = dict(snakemake.params.spec)
    out_dir = Path(snakemake.output.txt).parent
    print(f"prepare_corpus {name}: {spec}")
    with clean_exit_on(SourceError, job=f"prepare_corpus {name}"):
        record = prepare_corpus(name, spec, out_dir, cache_dir=snakemake.params.cache, log=print)
    finish(
        snakemake,
        [snakemake.output.txt, snakemake.output.json],
        [*snakemake.input.code, snakemake.output.json],
        {"corpora": {name: spec}, "cache_dir": snakemake.params.cache},
        started,
        source=record["source"],
        package=record.get("package"),
        chars=record["chars"],
        text_sha256=record["sha256"],
        documents=len(record["documents"]),
    )


run_rule(snakemake, main)
