"""Rule deploy_condition: every method at every budget on the items of one (model, task, length).

Glue only: the items and the model are trustmass.deploy.job, the run trustmass.deploy.runner.
"""

from trustmass.plumbing.rule_io import run_rule  # first: it opens the job's log before anything heavy imports


def main(snakemake, started):
    import time
    from pathlib import Path

    import polars as pl

    from trustmass.deploy.job import check_runnable, condition_rows, deploy_for, items_for, open_model
    from trustmass.plumbing.rule_io import clean_exit_on, finish, write_parquet
    from trustmass.sources.loading import source_record

    smk = snakemake
    cfg = smk.params.config
    model_name, task, length = smk.wildcards.model, smk.wildcards.task, int(smk.wildcards.length)
    deploy = deploy_for(cfg["deploy"], task)
    job = f"deploy_condition {model_name}/{task}/{length}"
    with clean_exit_on(ValueError, job=job):
        model, tokenizer, device = open_model(cfg, smk.input.model, smk.threads)
        check_runnable(model, model_name, deploy)
        items = items_for(
            cfg, model, tokenizer, smk.input.haystack, task, length, int(deploy["items"]), smk.params.shuffle_seed
        )
    print(
        f"{job}: {len(items)} items, budgets {deploy['budgets']}, {len(deploy['methods'])} methods, "
        f"question-visible {deploy['query_aware']}, on {device}"
    )
    start = time.perf_counter()
    with clean_exit_on(ValueError, job=job):
        rows = condition_rows(model, tokenizer, items, deploy, int(cfg["seed"]))
    rows = rows.with_columns(model=pl.lit(model_name))
    seconds = time.perf_counter() - start
    write_parquet(rows, smk.output.rows)
    n_valid = int(rows.filter(pl.col("method") == "dense").unique("item_id")["dense_valid"].sum())
    finish(
        smk,
        [smk.output.rows],
        [smk.input.model, smk.input.source, smk.input.haystack, *smk.input.data, *smk.input.code],
        cfg,
        started,
        summary={"items": len(items), "dense_valid": n_valid, "rows": rows.height, "seconds": round(seconds, 1)},
        seeds={"seed": cfg["seed"]},
        model_source=source_record(Path(smk.input.model).parent),
        device=device,
    )


run_rule(snakemake, main)
