"""Rule loss_diagnostics: the boundary swaps and the margin split's rules through the restricted
forward on one held-out document (held-out CE and next-token KL to the dense model).

Glue only: the swaps are trustmass.loss.swaps, the run trustmass.loss.diagnostics.
"""

from trustmass.plumbing.rule_io import run_rule  # first: it opens the job's log before anything heavy imports


def main(snakemake, started):
    from pathlib import Path

    import polars as pl

    from trustmass.loss.diagnostics import run_diagnostics
    from trustmass.loss.job import open_job
    from trustmass.loss.swaps import swap_plan
    from trustmass.plumbing.rule_io import clean_exit_on, finish, write_parquet
    from trustmass.sources.loading import source_record

    smk = snakemake
    cfg = smk.params.config
    swaps, margin, projection = (cfg["diagnostics"][k] for k in ("swaps", "margin", "projection"))
    model_name, corpus, doc = smk.wildcards.model, smk.wildcards.corpus, smk.wildcards.doc
    with clean_exit_on(ValueError, job=f"loss_diagnostics {model_name}/{corpus}/{doc}"):
        job = open_job(
            cfg, smk.input.model, smk.input.heldout, smk.input.capture_documents, smk.input.map, doc, smk.threads
        )
    pairs = swaps["pairs"] if swaps["forward_pairs"] is None else swaps["forward_pairs"]
    plan = swap_plan([tuple(p) for p in pairs], swaps["fractions"], int(swaps["forward_seeds"]))
    margin_rules = [margin["host"], *margin["rules"]]
    print(
        f"diagnostics {model_name}/{corpus}/{doc} ({job.record['id']}): {job.ids.shape[0]} tokens, continuation "
        f"{cfg['loss']['continuation']}, {len(plan)} swap configurations at s = {swaps['budget']}, margin rules "
        f"{margin_rules} at s = {margin['budgets']} on {job.device}"
    )
    tokens, seconds = run_diagnostics(
        job.model,
        job.ids,
        int(cfg["loss"]["continuation"]),
        plan,
        int(swaps["budget"]),
        margin_rules,
        margin["budgets"],
        int(cfg["seed"]),
        rules={"balancing": job.balancing},
        log=print,
        capture_id=f"heldout:{model_name}/{corpus}/{job.record['id']}",
        projection_rules=projection["forward_rules"],
        projection_block=int(projection["block"]),
    )
    tokens = tokens.with_columns(model=pl.lit(model_name), corpus=pl.lit(corpus), doc=pl.lit(doc))
    write_parquet(tokens, smk.output.tokens)
    finish(
        smk,
        [smk.output.tokens],
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
        seconds=seconds,
        model_source=source_record(Path(smk.input.model).parent),
        device=job.device,
    )


run_rule(snakemake, main)
