"""Rule loss_curvature: the second-order prediction of the flat switch (and of the random-cell
controls) on one held-out document, from the gradient and Hessian-vector products at every head's
o_proj input.  Glue only: trustmass.loss.curvature, trustmass.loss.job."""

from trustmass.plumbing.rule_io import run_rule  # first: it opens the job's log before anything heavy imports


def main(snakemake, started):
    from pathlib import Path

    import polars as pl

    from trustmass.loss.curvature import curvature, curvature_cell_sets
    from trustmass.loss.job import open_job
    from trustmass.plumbing.rule_io import clean_exit_on, finish, write_parquet
    from trustmass.sources.loading import source_record

    smk = snakemake
    cfg = smk.params.config
    loss = cfg["loss"]
    model_name, corpus, doc = smk.wildcards.model, smk.wildcards.corpus, smk.wildcards.doc
    with clean_exit_on(ValueError, job=f"loss_curvature {model_name}/{corpus}/{doc}"):
        job = open_job(
            cfg, smk.input.model, smk.input.heldout, smk.input.capture_documents, smk.input.map, doc, smk.threads
        )
    sets = curvature_cell_sets(job.flat, int(loss["random_seeds"]), int(cfg["seed"]))
    print(
        f"curvature {model_name}/{corpus}/{doc}: {job.ids.shape[0]} tokens, continuation {loss['continuation']}, "
        f"budget {loss['budget']}, cell sets {', '.join(sets)} on {job.device}"
    )
    frame = curvature(job.model, job.ids, int(loss["continuation"]), int(loss["budget"]), sets, job.balancing)
    frame = frame.with_columns(model=pl.lit(model_name), corpus=pl.lit(corpus), doc=pl.lit(doc))
    write_parquet(frame, smk.output.curvature)
    finish(
        smk,
        [smk.output.curvature],
        [
            smk.input.model,
            smk.input.source,
            smk.input.heldout,
            smk.input.capture_documents,
            smk.input.map,
            *smk.input.code,
        ],
        cfg,
        started,
        seeds={"seed": cfg["seed"]},
        document=job.record,
        model_source=source_record(Path(smk.input.model).parent),
        device=job.device,
    )


run_rule(snakemake, main)
