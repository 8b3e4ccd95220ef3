"""Rule loss_document: every loss configuration on one held-out document.

Glue only: the forward is trustmass.loss.forward, the configurations trustmass.loss.configurations,
the run trustmass.loss.document.
"""

from trustmass.plumbing.rule_io import start_log  # first: what follows logs to the job's log

started = start_log(snakemake)  # noqa: F821 (snakemake is injected by the script directive)

from pathlib import Path  # noqa: E402

import polars as pl  # noqa: E402

from trustmass.loss.configurations import plan  # noqa: E402
from trustmass.loss.document import run_document  # noqa: E402
from trustmass.loss.job import open_job  # noqa: E402
from trustmass.loss.probe import ProbeParams  # noqa: E402
from trustmass.plumbing.rule_io import clean_exit_on, finish, write_parquet  # noqa: E402
from trustmass.sources.loading import source_record  # noqa: E402

smk = snakemake  # noqa: F821
cfg = smk.params.config
loss = cfg["loss"]
model_name, corpus, doc = smk.wildcards.model, smk.wildcards.corpus, smk.wildcards.doc
with clean_exit_on(ValueError, job=f"loss_document {model_name}/{corpus}/{doc}"):
    job = open_job(cfg, smk.input.model, smk.input.heldout, smk.input.capture_documents, smk.input.map, doc, smk.threads)
probe = ProbeParams.load(smk.input.probe[0]) if smk.input.probe else None
alphas = tuple(loss["probe"]["alpha_grid"]) if probe is not None else ()
configs = plan(tuple(loss["rules"]), int(loss["random_seeds"]), tuple(loss["accounting"]), alphas)
print(f"loss {model_name}/{corpus}/{doc} ({job.record['id']}): {job.ids.shape[0]} tokens, continuation {loss['continuation']}, "
      f"budget {loss['budget']}, {int(job.flat.sum())} of {job.flat.size} cells flat, {len(configs)} configurations on {job.device}")  # fmt: skip
result = run_document(
    job.model, job.ids, configs, job.flat, int(loss["budget"]), int(loss["continuation"]), int(cfg["seed"]),
    probe=probe, rules={"balancing": job.balancing}, log=print, capture_id=f"heldout:{model_name}/{corpus}/{job.record['id']}",
)
tokens = result.tokens.with_columns(model=pl.lit(model_name), corpus=pl.lit(corpus), doc=pl.lit(doc))
cells = result.cells.with_columns(model=pl.lit(model_name), corpus=pl.lit(corpus), doc=pl.lit(doc))
write_parquet(tokens, smk.output.tokens)
write_parquet(cells, smk.output.cells)
finish(
    smk, [smk.output.tokens, smk.output.cells],
    [smk.input.model, smk.input.source, smk.input.heldout, smk.input.capture_documents, smk.input.map,
     *smk.input.probe, *smk.input.code],
    cfg, started, seeds={"seed": cfg["seed"]}, document=job.record, seconds=result.seconds,
    model_source=source_record(Path(smk.input.model).parent), device=job.device,
)  # fmt: skip
