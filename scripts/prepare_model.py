"""Rule prepare_model: one model as a plain Hugging Face folder under resources/models/<name>/.

Glue only: fetching, checking and converting live in trustmass.sources.models.
"""

from trustmass.plumbing.rule_io import start_log  # first: what follows logs to the job's log

started = start_log(snakemake)  # noqa: F821 (snakemake is injected by the script directive)

from pathlib import Path  # noqa: E402

import torch  # noqa: E402

from trustmass.plumbing.rule_io import clean_exit_on, finish  # noqa: E402
from trustmass.sources import SourceError  # noqa: E402
from trustmass.sources.models import prepare_model  # noqa: E402

torch.set_num_threads(snakemake.threads)  # noqa: F821
name = snakemake.wildcards.model  # noqa: F821
spec = dict(snakemake.params.spec)  # noqa: F821
out_dir = Path(snakemake.output.config).parent  # noqa: F821
print(f"prepare_model {name}: {spec}")
with clean_exit_on(SourceError, job=f"prepare_model {name}"):
    record = prepare_model(name, spec, out_dir, cache_dir=snakemake.params.cache, log=print)  # noqa: F821
finish(
    snakemake,  # noqa: F821
    [snakemake.output.config],  # noqa: F821
    [*snakemake.input.code, snakemake.output.source],  # noqa: F821
    {"models": {name: spec}, "cache_dir": snakemake.params.cache},  # noqa: F821
    started,
    source=record["source"],
    record=snakemake.output.source,  # noqa: F821
    packages=record.get("packages"),
    gguf_sha256=(record.get("gguf") or {}).get("sha256"),
    files=record["files"],
)
