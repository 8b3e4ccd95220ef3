"""Rule loss_document: every loss configuration on one held-out document.

Glue only: the forward is trustmass.loss.forward, the configurations trustmass.loss.configurations,
the run trustmass.loss.document.
"""

from trustmass.plumbing.rule_io import run_rule  # first: it opens the job's log before anything heavy imports


def main(snakemake, started):
    from pathlib import Path

    import polars as pl

    from trustmass.loss.configurations import plan
    from trustmass.loss.document import run_document
    from trustmass.loss.job import open_job
    from trustmass.loss.probe import ProbeParams
    from trustmass.plumbing.rule_io import clean_exit_on, finish, write_parquet
    from trustmass.sources.loading import source_record

    smk = snakemake
    cfg = smk.params.config
    loss = cfg["loss"]
    model_name, corpus, doc = smk.wildcards.model, smk.wildcards.corpus, smk.wildcards.doc
    with clean_exit_on(ValueError, job=f"loss_document {model_name}/{corpus}/{doc}"):
        job = open_job(
            cfg, smk.input.model, smk.input.heldout, smk.input.capture_documents, smk.input.map, doc, smk.threads
        )
    probe = ProbeParams.load(smk.input.probe[0]) if smk.input.probe else None
    alphas = tuple(loss["probe"]["alpha_grid"]) if probe is not None else ()
    configs = plan(tuple(loss["rules"]), int(loss["random_seeds"]), tuple(loss["accounting"]), alphas)
    print(
        f"loss {model_name}/{corpus}/{doc} ({job.record['id']}): {job.ids.shape[0]} tokens, continuation {loss['continuation']}, "
        f"budget {loss['budget']}, {int(job.flat.sum())} of {job.flat.size} cells flat, {len(configs)} configurations on {job.device}"
    )
    result = run_document(
        job.model,
        job.ids,
        configs,
        job.flat,
        int(loss["budget"]),
        int(loss["continuation"]),
        int(cfg["seed"]),
        probe=probe,
        rules={"balancing": job.balancing},
        log=print,
        capture_id=f"heldout:{model_name}/{corpus}/{job.record['id']}",
    )
    tokens = result.tokens.with_columns(model=pl.lit(model_name), corpus=pl.lit(corpus), doc=pl.lit(doc))
    cells = result.cells.with_columns(model=pl.lit(model_name), corpus=pl.lit(corpus), doc=pl.lit(doc))
    write_parquet(tokens, smk.output.tokens)
    write_parquet(cells, smk.output.cells)
    finish(
        smk,
        [smk.output.tokens, smk.output.cells],
        [
            smk.input.model,
            smk.input.source,
            smk.input.heldout,
            smk.input.capture_documents,
            smk.input.map,
            *smk.input.probe,
            *smk.input.code,
        ],
        cfg,
        started,
        seeds={"seed": cfg["seed"]},
        document=job.record,
        seconds=result.seconds,
        model_source=source_record(Path(smk.input.model).parent),
        device=job.device,
    )


run_rule(snakemake, main)
