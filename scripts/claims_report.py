"""Rule claims_report: every headline frame -> the claims report, with the control arms' own claims reports
(``input.controls``, named by ``params.control_arms``, same order) and the attention regime table
(``input.regime``: 0 or 1 parquet) as its sanity checks.  An arm's own job runs this with empty lists.
Glue only: trustmass.report.claims."""

from trustmass.plumbing.rule_io import run_rule  # first: it opens the job's log before anything heavy imports


def _paths(x) -> list[str]:
    """A named input or parameter as a list (Snakemake gives one item of a list-valued input as a string)."""
    return [str(x)] if isinstance(x, str) else [str(p) for p in x]


def main(snakemake, started):
    import json
    from pathlib import Path

    from trustmass.plumbing.provenance import atomic_write, write_json
    from trustmass.plumbing.rule_io import finish, read_parquets
    from trustmass.report.claims.controls import attach_controls
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
    controls = _paths(getattr(snakemake.input, "controls", []))
    arms = _paths(getattr(snakemake.params, "control_arms", []))
    regime = _paths(getattr(snakemake.input, "regime", []))
    if len(arms) != len(controls) or len(set(arms)) != len(arms) or len(regime) > 1:
        raise ValueError(
            f"controls {controls} need one distinct arm name each (got {arms}) and at most one regime {regime}"
        )
    report = attach_controls(
        report,
        {arm: json.loads(Path(path).read_text(encoding="utf-8")) for arm, path in zip(arms, controls)},
        read_parquets(regime) if regime else None,
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
        [*snakemake.input.headline, snakemake.input.claims, *controls, *regime, *snakemake.input.code],
        cfg,
        started,
        summary={
            "counts": report["counts"],
            "summary": report["summary"],
            "controls": report["controls"] and report["controls"]["counts"]["claims"],
        },
        stages=list(snakemake.params.stages),
        control_arms=arms,
    )


run_rule(snakemake, main)
