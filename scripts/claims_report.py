"""Rule claims_report: every headline frame -> the claims report.  Glue only: trustmass.report.claims."""

from trustmass.plumbing.rule_io import run_rule  # first: it opens the job's log before anything heavy imports


def main(snakemake, started):
    from trustmass.plumbing.provenance import atomic_write, write_json
    from trustmass.plumbing.rule_io import finish, read_parquets
    from trustmass.report.claims.data import load_claims
    from trustmass.report.claims.markdown import markdown
    from trustmass.report.claims.report import build
    from trustmass.report.claims.roles import study_models
    from trustmass.report.html_page import markdown_page

    cfg = snakemake.params.config
    headline = read_parquets(snakemake.input.headline, how="diagonal_relaxed")
    report = build(
        load_claims(snakemake.input.claims),
        headline,
        study_models(cfg),
        set(snakemake.params.stages),
        cfg["study"]["models"],
        cfg,
    )
    write_json(snakemake.output.json, report)
    text = markdown(report)
    with atomic_write(snakemake.output.md) as tmp:
        tmp.write_text(text, encoding="utf-8")
    with atomic_write(snakemake.output.html) as tmp:  # the view Snakemake's report shows
        tmp.write_text(markdown_page(text, "Claims"), encoding="utf-8")
    finish(
        snakemake,
        [snakemake.output.html, snakemake.output.md, snakemake.output.json],
        [*snakemake.input.headline, snakemake.input.claims, *snakemake.input.code],
        cfg,
        started,
        summary={"counts": report["counts"], "summary": report["summary"]},
        stages=list(snakemake.params.stages),
    )


run_rule(snakemake, main)
