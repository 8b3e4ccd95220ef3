"""Every statistics rule (generated from trustmass.report.catalog.STATISTICS, and its copy in each control
arm): the catalog entry the rule names (params.statistics) -> its statistics function (inputs, config) -> the
frames and their provenance sidecars.  Glue only: trustmass.report.statistics."""

from trustmass.plumbing.rule_io import run_rule  # first: it opens the job's log before anything heavy imports


def main(snakemake, started):
    from trustmass.plumbing.rule_io import finish, write_parquet
    from trustmass.report.catalog import statistics_rule
    from trustmass.report.statistics import compute

    smk = snakemake
    entry = statistics_rule(smk.params.statistics)
    inputs = {
        name: [paths] if isinstance(paths, str) else list(paths) for name, paths in smk.input.items() if name != "code"
    }
    config = smk.params.config
    frames = compute(entry, inputs, {**config, **{name: smk.params[name] for name in entry.params}})
    for note in frames.notes:
        print(note)
    for name, frame in frames.items():
        write_parquet(frame, smk.output[name])
        print(f"{name}: {frame.height} rows")
        print(frame)
    finish(
        smk,
        [smk.output[name] for name in frames],
        list(smk.input),
        config,
        started,
        summary=frames.summary,
        seeds=frames.seeds,
        **frames.extra,
    )


run_rule(snakemake, main)
