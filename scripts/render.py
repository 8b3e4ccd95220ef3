"""Rules render_<name> (generated from trustmass.report.catalog.OUTPUTS): statistics frames -> one
figure or table.  Glue only: trustmass.report.render."""

from trustmass.plumbing.rule_io import run_rule  # first: it opens the job's log before anything heavy imports


def main(snakemake, started):
    from trustmass.plumbing.rule_io import finish
    from trustmass.report.render import render

    files = {key: snakemake.output[key] for key in ("png", "csv", "md", "html") if key in snakemake.output.keys()}
    summary = render(snakemake.params.output, list(snakemake.input.frames), files, snakemake.params.config)
    finish(
        snakemake,
        list(files.values()),
        [*snakemake.input.frames, *snakemake.input.code],
        snakemake.params.config,
        started,
        summary=summary,
        paper_file=snakemake.params.paper_file,
    )


run_rule(snakemake, main)
