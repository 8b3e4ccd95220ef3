"""Rules render_<name> (generated from trustmass.report.catalog.OUTPUTS): statistics frames -> one
figure or table.  Glue only: trustmass.report.render."""

from trustmass.plumbing.rule_io import start_log  # first: what follows logs to the job's log

started = start_log(snakemake)  # noqa: F821 (snakemake is injected by the script directive)

from trustmass.plumbing.rule_io import finish  # noqa: E402
from trustmass.report.render import render  # noqa: E402

files = {key: snakemake.output[key] for key in ("png", "csv", "md", "html") if key in snakemake.output.keys()}  # noqa: F821
summary = render(snakemake.params.output, list(snakemake.input.frames), files, snakemake.params.config)  # noqa: F821
finish(
    snakemake,  # noqa: F821
    list(files.values()), [*snakemake.input.frames, *snakemake.input.code], snakemake.params.config, started,  # noqa: F821
    summary=summary, paper_file=snakemake.params.paper_file,  # noqa: F821
)  # fmt: skip
