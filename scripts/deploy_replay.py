"""Rule deploy_replay: the prefill-only byte replay through kvpress's own pipeline, per model.

Glue only: trustmass.deploy.replay.
"""

from trustmass.plumbing.rule_io import run_rule  # first: it opens the job's log before anything heavy imports


def main(snakemake, started):
    from pathlib import Path

    import polars as pl

    from trustmass.deploy.job import check_runnable, items_for, open_model
    from trustmass.deploy.replay import replay_rows
    from trustmass.plumbing.rule_io import clean_exit_on, finish, write_parquet
    from trustmass.sources.loading import source_record

    smk = snakemake
    cfg = smk.params.config
    deploy = cfg["deploy"]
    model_name = smk.wildcards.model
    job = f"deploy_replay {model_name}"
    frames = []
    with clean_exit_on(ValueError, job=job):
        model, tokenizer, device = open_model(cfg, smk.input.model, smk.threads)
        check_runnable(model, model_name, deploy)
        for task in deploy["tasks"]:
            for length in deploy["lengths"]:
                n_items = int(deploy["replay"]["items"])
                items = items_for(
                    cfg, model, tokenizer, smk.input.haystack, task, int(length), n_items, smk.params.shuffle_seed
                )
                frames.append(
                    replay_rows(
                        model,
                        items,
                        deploy["replay"]["methods"],
                        deploy["budgets"],
                        query_aware=bool(deploy["query_aware"]),
                        hub=bool(deploy["hub"]),
                    )
                )
                print(f"{task}/{length}: {frames[-1].height} measurements")
    rows = pl.concat(frames).with_columns(model=pl.lit(model_name))
    write_parquet(rows, smk.output.rows)
    finish(
        smk,
        [smk.output.rows],
        [smk.input.model, smk.input.source, smk.input.haystack, *smk.input.code],
        cfg,
        started,
        summary={"measurements": rows.height},
        model_source=source_record(Path(smk.input.model).parent),
        device=device,
    )


run_rule(snakemake, main)
