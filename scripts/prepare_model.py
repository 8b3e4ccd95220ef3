"""Rule prepare_model: one model as a plain Hugging Face folder under resources/models/<name>/.

Glue only: fetching, checking and converting live in trustmass.sources.models.
"""

import sys
import time
from pathlib import Path

started = time.time()
log = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected by the script directive)
sys.stdout = sys.stderr = log

import torch  # noqa: E402

from trustmass.plumbing.provenance import write_sidecar  # noqa: E402
from trustmass.sources import SourceError  # noqa: E402
from trustmass.sources.models import prepare_model  # noqa: E402

torch.set_num_threads(snakemake.threads)  # noqa: F821
name = snakemake.wildcards.model  # noqa: F821
spec = dict(snakemake.params.spec)  # noqa: F821
out_dir = Path(snakemake.output.config).parent  # noqa: F821
print(f"prepare_model {name}: {spec}")
try:
    record = prepare_model(name, spec, out_dir, cache_dir=snakemake.params.cache, log=print)  # noqa: F821
except SourceError as exc:
    print(f"error: {exc}")
    print(f"prepare_model {name}: {exc}", file=sys.__stderr__)
    sys.exit(1)
write_sidecar(
    snakemake.output.config,  # noqa: F821
    inputs=snakemake.input.code,  # noqa: F821
    config_slice={"models": {name: spec}, "cache_dir": snakemake.params.cache},  # noqa: F821
    started=started,
    extra={
        "rule": snakemake.rule,  # noqa: F821
        "source": record["source"],
        "record": snakemake.output.source,  # noqa: F821
        "packages": record.get("packages"),
        "gguf_sha256": (record.get("gguf") or {}).get("sha256"),
        "files": record["files"],
    },
)
print("ok")
