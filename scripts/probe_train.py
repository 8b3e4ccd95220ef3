"""Rule probe_train: the rank-16 probe of one model, trained on capture documents; its swap recall
on other capture documents at every mixing weight.  Glue only: trustmass.loss.probe."""

from trustmass.plumbing.rule_io import run_rule  # first: it opens the job's log before anything heavy imports


def main(snakemake, started):
    import time

    import polars as pl
    import torch

    from trustmass.loss.probe import evaluate, train, training_rows
    from trustmass.plumbing.rule_io import finish, write_parquet

    smk = snakemake
    cfg = smk.params.config
    settings = cfg["loss"]["probe"]
    budget = int(cfg["loss"]["budget"])
    torch.set_num_threads(smk.threads)
    t0 = time.time()
    rows = training_rows(list(smk.input.train), budget)
    print(
        f"read the balancing targets of {len(rows.docs)} documents, {len(rows.layers)} layers, in {time.time() - t0:.1f} s",
        flush=True,
    )
    params, history = train(
        rows,
        rank=int(settings["rank"]),
        steps=int(settings["steps"]),
        seed=int(cfg["seed"]),
        log=lambda line: print(line, flush=True),
    )
    print(
        f"trained on {len(rows.docs)} documents in {time.time() - t0:.1f} s; loss per layer "
        f"{params.info['initial_loss']} -> {params.info['final_loss']}"
    )
    params.save(smk.output.params)
    check = training_rows(list(smk.input.check), budget)
    recall = []
    for alpha in settings["alpha_grid"]:
        r = evaluate(check, params, float(alpha))
        recall.append(
            {
                "model": smk.wildcards.model,
                "alpha": float(alpha),
                "recall": r.recall,
                "row_recall": r.row_recall,
                "precision": r.precision,
                "stay": r.stay,
                "swap_rows": r.swap_rows,
                "rows": r.rows,
                "train_docs": len(rows.docs),
                "check_docs": len(check.docs),
                "rank": int(settings["rank"]),
            }
        )
        print(f"alpha {alpha:g}: held-out swap recall {r.recall:.3f}, precision {r.precision:.3f}, stay {r.stay:.3f}")
    write_parquet(pl.DataFrame(recall), smk.output.recall)
    finish(
        smk,
        [smk.output.params, smk.output.recall],
        [*smk.input.train, *smk.input.check, *smk.input.code],
        cfg,
        started,
        seeds={"seed": cfg["seed"]},
        train_seconds=time.time() - t0,
    )


run_rule(snakemake, main)
