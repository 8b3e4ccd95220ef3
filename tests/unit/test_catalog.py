"""The catalog (figure/table -> frames -> draw/layout -> files, caption claims) is complete and
consistent: every frame is written by a statistics rule, every draw function and layout exists,
every caption file named exists, every claim quoted exists, and the workflow's rules are made from it."""

import importlib
import inspect
import re
from pathlib import Path

import pytest

from trustmass.report import catalog
from trustmass.report.catalog import HEADLINE_FRAMES, OUTPUTS, STATISTICS, output, stats_path
from trustmass.report.claims.data import claim
from trustmass.report.render import paper_value

REPO = Path(__file__).resolve().parents[2]
WRITTEN = {f for rule in STATISTICS for f in rule.frames}


@pytest.mark.parametrize("out", OUTPUTS, ids=[o.name for o in OUTPUTS])
def test_every_output_reads_frames_a_statistics_rule_writes_and_draws_with_what_exists(out):
    assert set(out.frames) <= WRITTEN, f"{out.name}: no statistics rule writes {set(out.frames) - WRITTEN}"
    assert out.module == out.draw.split(":")[0]
    if out.kind == "figure":
        module, function = out.draw.split(":")
        assert module.startswith("trustmass.report.figures.")
        draw = getattr(importlib.import_module(module), function)
        params = list(inspect.signature(draw).parameters)
        assert len(params) >= len(out.frames) + 1, f"{out.draw} takes the frames, then the population"
        assert set(out.paper_values) <= set(params[len(out.frames) + 1 :])
        assert out.files == {"png": out.path} and out.path.endswith(".png")
    else:
        module, layout = out.draw.split(":")
        assert module.startswith("trustmass.report.layouts.") and len(out.frames) == 1
        assert layout in importlib.import_module(module).LAYOUTS
        assert out.files == {"html": out.path[:-4] + ".html", "csv": out.path, "md": out.path[:-4] + ".md"}
        assert next(iter(out.files)) == "html"  # the report annotates the first file: the page its viewer shows
    if out.caption is not None:
        assert (REPO / "workflow" / "report" / f"{out.caption}.rst").is_file()
    for cid in out.claims:
        claim(cid)  # KeyError if the claim does not exist
    for ref in out.paper_values.values():
        assert paper_value(ref) is not None


def test_names_and_files_are_unique_and_frames_are_where_the_rules_write_them():
    assert len({o.name for o in OUTPUTS}) == len(OUTPUTS)
    files = [p for o in OUTPUTS for p in o.files.values()]
    assert len(set(files)) == len(files)
    assert len(WRITTEN) == sum(len(r.frames) for r in STATISTICS)  # no frame written twice
    assert set(HEADLINE_FRAMES) == {f for f in WRITTEN if f.startswith("headline_")}
    assert stats_path("fig1") == "results/stats/fig1.parquet"
    with pytest.raises(KeyError, match="known: fig1"):
        output("fig9")


def test_statistics_modules_exist_and_the_catalog_imports_no_drawing_or_statistics_code():
    for rule in STATISTICS:
        importlib.import_module(rule.module)
    source = Path(catalog.__file__).read_text(encoding="utf-8")
    assert not re.search(
        r"^(from|import) (matplotlib|polars|numpy|trustmass\.report\.(figures|frames|tables))", source, re.M
    )


def test_the_workflow_generates_a_render_rule_and_a_target_per_output():
    report_smk = (REPO / "workflow" / "rules" / "report.smk").read_text(encoding="utf-8")
    snakefile = (REPO / "Snakefile").read_text(encoding="utf-8")
    assert "for _out in OUTPUTS:" in report_smk and 'f"render_{_out.name}"' in report_smk
    assert "for _out in OUTPUTS:" in snakefile
    # no hand-written rule for a catalogued output remains
    for out in OUTPUTS:
        assert f"rule render_{out.name}:" not in report_smk and f"rule {out.name}:" not in snakefile


def test_an_output_naming_its_statistics_function_gets_its_own_statistics_rule():
    # the figure recipe's one catalog entry (README, "Extending"; tests/recipes run it through snakemake)
    out = catalog.Output(
        name="fig_x",
        kind="figure",
        title="X",
        frames=("fig_x",),
        draw="m:fig_x",
        path="x.png",
        statistics="trustmass.report.frames.audit:fig_x",
        inputs={"audit": "audit_records"},
        when="deploy/enabled",
    )
    rule = out.statistics_rule
    assert (rule.name, rule.module, rule.function) == ("fig_x_statistics", "trustmass.report.frames.audit", "fig_x")
    assert rule.frames == out.frames and rule.inputs == out.inputs and rule.when == "deploy/enabled"
    assert rule.outputs == {"fig_x": "results/stats/fig_x.parquet"}
    stage_rules = [o for o in OUTPUTS if o.statistics is None]
    assert stage_rules and all(o.statistics_rule is None for o in stage_rules)
    assert {o.statistics_rule.name for o in OUTPUTS if o.statistics} <= {r.name for r in STATISTICS}
    for half in ({"statistics": "m:f"}, {"inputs": {"a": "audit_records"}}, {"when": "deploy/enabled"}):
        with pytest.raises(ValueError, match="statistics= and inputs= go together"):
            catalog.Output(name="y", kind="figure", title="Y", frames=("y",), draw="m:y", path="y.png", **half)
