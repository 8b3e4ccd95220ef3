"""Rule control_regime: capture shards of the trained study and of each control arm -> their attention regime.
Glue only: trustmass.capture.regime."""

from trustmass.plumbing.rule_io import run_rule  # first: it opens the job's log before anything heavy imports


def main(snakemake, started):
    from trustmass.capture.regime import regime_frame
    from trustmass.plumbing.rule_io import finish, write_parquet

    entries = [
        {**entry, "path": path} for entry, path in zip(snakemake.params.entries, snakemake.input.shards, strict=True)
    ]
    frame = regime_frame(entries)
    write_parquet(frame, snakemake.output.frame)
    finish(snakemake, [snakemake.output.frame], [*snakemake.input.shards, *snakemake.input.code], {}, started)


run_rule(snakemake, main)
