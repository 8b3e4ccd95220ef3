"""Rule certify_shard: certify the instances of one manifest shard (one output row per instance,
always).  Glue only: the science is trustmass.certification.runner / .misocp / .bnb."""

from trustmass.plumbing.rule_io import run_rule  # first: it opens the job's log before anything heavy imports


def main(snakemake, started):
    import polars as pl

    from trustmass.certification.runner import CertificationSettings, certify_rows
    from trustmass.plumbing.rule_io import checked_capture_path, finish, write_parquet

    cfg = snakemake.params.config
    cc = cfg["certification"]
    shard = int(snakemake.wildcards.shard)
    settings = CertificationSettings(
        per_stratum=cc["per_stratum"],
        n_shards=cc["n_shards"],
        time_limit_s=float(cc["time_limit_s"]),
        bnb_work=int(cc["bnb_work"]),
        scip_nodes=cc["scip_nodes"],
        scip_lp_iterations=cc["scip_lp_iterations"],
        memory_limit_mb=float(cc["memory_limit_mb"]),
        max_solves=int(cc["max_solves"]),
        primary_docs=cfg["statistics"]["primary_docs"],
        seed=int(cfg["seed"]),
        certifier=cc["certifier"],
    )
    part = pl.read_parquet(snakemake.input.manifest).filter(pl.col("shard") == shard)
    print(f"certify shard {shard}: {part.height} instances, {settings}")

    frame = certify_rows(part, checked_capture_path, settings, workers=snakemake.threads)
    assert frame.height == part.height, "one row per instance"
    write_parquet(frame, snakemake.output.certified)
    summary = {
        "instances": frame.height,
        "statuses": dict(frame.group_by("status").len().sort("status").iter_rows()),
        "seconds_total": float(frame["seconds"].sum()),
        "seconds_max": float(frame["seconds"].max()) if frame.height else 0.0,
    }
    finish(
        snakemake,
        [snakemake.output.certified],
        [snakemake.input.manifest, *snakemake.input.code],
        cfg,
        started,
        summary,
        settings=repr(settings),
    )


run_rule(snakemake, main)
