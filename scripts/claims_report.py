"""Rule claims_report: every headline frame -> the claims report.  Glue only: trustmass.report.claims."""

from trustmass.plumbing.rule_io import start_log  # first: what follows logs to the job's log

started = start_log(snakemake)  # noqa: F821 (snakemake is injected by the script directive)

from trustmass.plumbing.provenance import atomic_write, write_json  # noqa: E402
from trustmass.plumbing.rule_io import finish, read_parquets  # noqa: E402
from trustmass.report.claims.data import load_claims  # noqa: E402
from trustmass.report.claims.report import build, markdown  # noqa: E402
from trustmass.report.claims.roles import study_models  # noqa: E402
from trustmass.report.html_page import markdown_page  # noqa: E402

cfg = snakemake.params.config  # noqa: F821
headline = read_parquets(snakemake.input.headline, how="diagonal_relaxed")  # noqa: F821
report = build(load_claims(snakemake.input.claims), headline, study_models(cfg), set(snakemake.params.stages),  # noqa: F821
               cfg["study"]["models"], cfg)  # fmt: skip
write_json(snakemake.output.json, report)  # noqa: F821
text = markdown(report)
with atomic_write(snakemake.output.md) as tmp:  # noqa: F821
    tmp.write_text(text, encoding="utf-8")
with atomic_write(snakemake.output.html) as tmp:  # noqa: F821 (the view Snakemake's report shows)
    tmp.write_text(markdown_page(text, "Claims"), encoding="utf-8")
finish(
    snakemake,  # noqa: F821
    [snakemake.output.html, snakemake.output.md, snakemake.output.json],  # noqa: F821
    [*snakemake.input.headline, snakemake.input.claims, *snakemake.input.code], cfg, started,  # noqa: F821
    summary={"counts": report["counts"], "summary": report["summary"]}, stages=list(snakemake.params.stages),  # noqa: F821
)  # fmt: skip
