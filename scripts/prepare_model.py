"""Rule prepare_model: one model as a plain Hugging Face folder under resources/models/<name>/.

Glue only: fetching, checking and converting live in trustmass.sources.models.
"""

from trustmass.plumbing.rule_io import run_rule  # first: it opens the job's log before anything heavy imports


def main(snakemake, started):
    from pathlib import Path

    import torch

    from trustmass.plumbing.rule_io import clean_exit_on, finish
    from trustmass.sources import SourceError
    from trustmass.sources.models import prepare_model

    torch.set_num_threads(snakemake.threads)
    name = snakemake.wildcards.model
    spec = dict(snakemake.params.spec)
    out_dir = Path(snakemake.output.config).parent
    print(f"prepare_model {name}: {spec}")
    with clean_exit_on(SourceError, job=f"prepare_model {name}"):
        record = prepare_model(name, spec, out_dir, cache_dir=snakemake.params.cache, log=print)
    finish(
        snakemake,
        [snakemake.output.config, snakemake.output.source],
        [*snakemake.input.code, snakemake.output.source],
        {"models": {name: spec}, "cache_dir": snakemake.params.cache},
        started,
        source=record["source"],
        record=snakemake.output.source,
        packages=record.get("packages"),
        gguf_sha256=(record.get("gguf") or {}).get("sha256"),
        files=record["files"],
    )


run_rule(snakemake, main)
