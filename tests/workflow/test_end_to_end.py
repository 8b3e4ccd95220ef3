"""A tiny real run of the whole workflow: outputs, provenance sidecars, no leftovers, reruns.

One run, shared by every test here (the module's fixture; `make test` runs a module on one worker): a test that
needs a changed study copies the finished one first."""

import hashlib
import json
import re
import shutil
from importlib.metadata import version

import pytest
from tiny_study import TINY_RUN, private_package

from conftest import Workflow, planned_jobs

pytestmark = pytest.mark.workflow

OUTPUTS = ["results/selfcheck/worked_examples.json", "results/bench/enumeration.json"]
SHARDS = ["results/capture/tiny/words/0000.safetensors", "results/capture/tiny/words/0001.safetensors"]
RECORDS = ["results/ceiling/tiny/words/0000.parquet", "results/ceiling/tiny/words/0001.parquet"]
STUDY = [
    "results/figures/fig1_ceiling.png",
    "results/figures/fig2_map.png",
    "results/tables/table1_native.csv",
    "results/claims.md",
    "results/tables/table7_certification.csv",
    "results/tables/sweep_cap_widening.csv",
    "results/stats/headline_ceiling.parquet",
    "results/figures/fig3_method_headroom.png",
    "results/tables/audit_table.csv",
    "results/figures/fig4_redirect.png",
    "results/tables/loss_table.csv",
    "results/tables/probe.csv",
    "results/tables/curvature.csv",
    "results/tables/allocation_panel.csv",
    "results/tables/task_contexts.csv",
    "results/figures/fig_swaps.png",
    "results/tables/swap_curves.csv",
    "results/tables/swap_boundaries.csv",
    "results/tables/margin_split.csv",
    "results/tables/margin_cells.csv",
    "results/tables/projection.csv",
    "results/figures/access_law.png",
    "results/tables/access_law.csv",
]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """The whole study, run on a private copy of the library in the run's folder (src/trustmass, first on
    PYTHONPATH): the restyling test edits library code in a copy of it."""
    from tiny_study import tiny_study_config

    workdir = tmp_path_factory.mktemp("tiny")
    wf = Workflow(workdir, env=private_package(workdir))
    config = wf.write_config("tiny.yaml", TINY_RUN + tiny_study_config(wf.workdir))
    done = wf.run("--cores", "2", "--configfile", str(config), timeout=1500)  # every stage of the study: minutes
    return wf, config, done


def test_tiny_run_succeeds(tiny_run):
    wf, _, done = tiny_run
    assert done.returncode == 0, done.output
    for name in OUTPUTS + SHARDS + RECORDS + STUDY:
        assert (wf.workdir / name).is_file(), name
        assert (wf.workdir / f"{name}.prov.json").is_file(), name


def test_the_jobs_ran_forked_from_the_preloaded_server(tiny_run):
    """The run's server (trustmass.plumbing.preload) forked the jobs and turned none away: a job whose
    environment differs from the run's (a variable set per job, say) would silently pay its imports again."""
    wf, _, _ = tiny_run
    log = min((wf.workdir / ".snakemake" / "preload").glob("*.log"), key=lambda p: p.stat().st_mtime)  # the first run's
    text = log.read_text(encoding="utf-8")
    forked, turned_away = (int(n) for n in re.search(r"(\d+) jobs forked, (\d+) turned away", text).groups())
    assert turned_away == 0 and forked >= 100, text[-3000:]


def test_nothing_half_written_is_left(tiny_run):
    wf, _, _ = tiny_run
    leftovers = [p for p in (wf.workdir / "results").rglob("*") if ".tmp" in p.name]
    assert leftovers == []


def test_worked_examples_all_agree(tiny_run):
    wf, _, _ = tiny_run
    result = json.loads((wf.workdir / OUTPUTS[0]).read_text())
    assert result["all_ok"] is True
    assert result["n_checks"] > 0


def test_benchmark_used_the_configured_sizes(tiny_run):
    wf, _, _ = tiny_run
    result = json.loads((wf.workdir / OUTPUTS[1]).read_text())
    assert (result["n_keys"], result["head_dim"], result["instances"]) == (64, 4, 1)
    assert [b["budget"] for b in result["budgets"]] == [4, 8, 32]


def test_sidecars_describe_their_outputs(tiny_run):
    wf, _, _ = tiny_run
    for name in OUTPUTS:
        output = wf.workdir / name
        prov = json.loads((wf.workdir / f"{name}.prov.json").read_text())
        assert prov["output"]["sha256"] == hashlib.sha256(output.read_bytes()).hexdigest()
        assert prov["wall_time_s"] > 0
        assert prov["versions"]["snakemake"] == version("snakemake")
        assert "snakemake" in (prov["command"]["workflow"] or "")
        for record in prov["inputs"]:
            with open(wf.workdir / record["path"], "rb") as fh:  # relative to the run's folder, or absolute
                assert record["sha256"] == hashlib.sha256(fh.read()).hexdigest(), record["path"]
    bench = json.loads((wf.workdir / f"{OUTPUTS[1]}.prov.json").read_text())
    assert bench["config"]["benchmark"] == {"n_keys": 64, "head_dim": 4, "instances": 1}
    assert bench["seeds"] == {"seed": 0}
    assert any(r["path"].endswith("trustmass/bench/enumeration.py") for r in bench["inputs"])


def test_capture_shards_are_validated_and_traceable(tiny_run):
    from trustmass.contracts import shards

    wf, _, _ = tiny_run
    for name in SHARDS:
        meta = shards.read_metadata(wf.workdir / name)
        assert meta["model"] == "tiny" and meta["n_tokens"] == 96
        layer = shards.read_layer(wf.workdir / name, 1)
        assert tuple(layer["p"].shape) == (4, 3, 96) and tuple(layer["keys"].shape) == (2, 96, 8)
        prov = json.loads((wf.workdir / f"{name}.prov.json").read_text())
        assert prov["extra"]["validation"]["rows"] == 2 * 4 * 3
        assert prov["extra"]["validation"]["max_abs_dev"] < 1e-5
        assert prov["extra"]["shard_sha256"] == hashlib.sha256((wf.workdir / name).read_bytes()).hexdigest()
        report = wf.workdir / name.replace(".safetensors", ".validation.parquet")
        assert report.is_file()


def test_records_and_claims_cover_the_tiny_study(tiny_run):
    import polars as pl

    wf, _, _ = tiny_run
    records = pl.concat([pl.read_parquet(wf.workdir / name) for name in RECORDS])
    assert records.height == 2 * 2 * 4 * 3 * 4  # docs x layers x heads x rows x budgets
    assert records.filter(pl.col("budget") == 8)["es_pool"].null_count() == 0
    claims = json.loads((wf.workdir / "results/claims.json").read_text())
    assert len(claims["claims"]) == 126
    statuses = {v["status"] for c in claims["claims"] for v in c["values"]}
    assert "answered" in statuses  # something was regenerated and answered in direction or size
    assert "not produced" in statuses  # and what no stage computes is marked as such
    sizes = {v["size"]["status"] for c in claims["claims"] for v in c["values"] if v["size"]}
    assert {"agrees", "contradicted", "partial"} & sizes and "not comparable" in sizes


def test_second_run_has_nothing_to_do(tiny_run):
    wf, config, _ = tiny_run
    done = wf.run("--dry-run", "--configfile", str(config))
    assert done.returncode == 0, done.output
    assert "Nothing to be done" in done.output, done.output


def test_changing_a_benchmark_setting_reruns_only_the_benchmark(tiny_run):
    wf, config, _ = tiny_run
    changed = wf.write_config("changed.yaml", config.read_text().replace("instances: 1", "instances: 2"))
    done = wf.run("--dry-run", "--configfile", str(changed))
    assert done.returncode == 0, done.output
    jobs = planned_jobs(done.output)
    assert "bench_enumeration" in jobs and not {"worked_examples", "capture", "ceiling", "audit"} & set(jobs), (
        done.output
    )


def test_the_loss_stage_ran_every_configuration_and_keep_all_is_the_model(tiny_run):
    import polars as pl

    wf, _, _ = tiny_run
    table = pl.read_parquet(wf.workdir / "results/stats/loss_table.parquet")
    configs = set(table["config"])
    assert {"dense", "keep_all", "top_mass", "all_cell", "flat_switch", "random", "snapkv+flat", "probe@1"} <= configs
    assert {"top_mass@cache_faithful", "snapkv+flat@cache_faithful", "quest@cache_faithful"} <= configs
    keep_all = table.filter(pl.col("config") == "keep_all").row(0, named=True)
    assert keep_all["max_abs_vs_dense"] < 1e-5 and keep_all["max_ce_vs_dense"] < 1e-5
    curvature = pl.read_parquet(wf.workdir / "results/stats/curvature.parquet")
    assert set(curvature["cell_set"]) == {"all_cell", "flat_switch", "random_0", "random_1"}
    assert curvature.filter(pl.col("cell_set") == "all_cell")["predicted_share"][0] == 1.0
    claims = {c["id"]: c for c in json.loads((wf.workdir / "results/claims.json").read_text())["claims"]}
    for claim in (52, 53, 111, 126):  # 125 is stated per paper model: the tiny model plays no role
        statuses = {v["status"] for v in claims[claim]["values"]}
        assert statuses - {"not produced"}, (claim, statuses)


def test_the_diagnostics_swapped_every_pair_and_split_the_margin(tiny_run):
    import polars as pl

    wf, _, _ = tiny_run
    curves = pl.read_parquet(wf.workdir / "results/stats/swap_curves.parquet")
    assert set(curves["outcome"]) == {"es", "ce", "kl"}
    assert set(curves["pair"]) == {"h2o>snapkv", "top_mass>balancing"}
    assert set(curves["kind"]) == {"boundary", "random", "random_restricted"}
    full = curves.filter(pl.col("kind") == "boundary", pl.col("fraction") == 1.0, pl.col("gap_recovered").is_not_null())
    assert full.height and (full["gap_recovered"] - 1.0).abs().max() < 1e-9  # the full boundary swap is Y
    split = pl.read_parquet(wf.workdir / "results/stats/margin_split.parquet")
    assert set(split["rule"]) == {"value_aware_mii", "value_aware_nolev"}
    assert (split["n_cells"] == 2).all()  # one corpus x two budgets
    assert set(split["contracts"]) == {"like_for_like"}
    projection = pl.read_parquet(wf.workdir / "results/stats/projection.parquet")
    assert set(projection["outcome"]) == {"es", "ce", "kl"} and set(projection["rule"]) == {
        "block_select",
        "value_aware_mii",
    }
    es = projection.filter(pl.col("outcome") == "es")
    assert (es["slack_strict"] > 0).all() and (es["slack_fill"] == 0).all()  # b = 5 at s = 8: slack, then none


def test_the_task_contexts_were_captured_with_their_retrieval_rows_and_judged(tiny_run):
    import polars as pl

    from trustmass.contracts.shards import read_metadata

    wf, _, _ = tiny_run
    manifest = json.loads((wf.workdir / "resources/documents/tiny/tasks.json").read_text())
    (doc,) = manifest["documents"]
    assert doc["task"] == "quote_qa" and doc["retrieval_rows"] == 2
    options = read_metadata(wf.workdir / "results/capture/tiny/tasks/0000.safetensors")["options"]
    assert options["retrieval_positions"] == doc["retrieval_positions"] and options["retrieval_rows"] == 2
    records = pl.read_parquet(wf.workdir / "results/ceiling/tiny/tasks/0000.parquet")
    rows = records.select("layer", "head", "query_pos").unique()
    retrieval = rows.filter(pl.col("query_pos").is_in(doc["retrieval_positions"]))
    assert retrieval.height == 2 * rows.select("layer", "head").n_unique()  # 2 of the 3 rows of every head
    table = pl.read_parquet(wf.workdir / "results/stats/task_contexts.parquet")
    shares = table.filter(pl.col("rows") == "all")["retrieval_share"].to_list()
    assert shares and shares == pytest.approx([2 / 3] * len(shares))
    claims = {c["id"]: c for c in json.loads((wf.workdir / "results/claims.json").read_text())["claims"]}
    for claim in (42, 43, 44, 46, 47):  # 45 needs both labels; the tiny random model labels every row
        statuses = {v["status"] for v in claims[claim]["values"]}
        assert statuses - {"not produced"}, (claim, statuses)
    # 2 of 3 rows by design (67 % >= 20 %): a share the configuration sets, shown and not judged
    (share,) = claims[46]["values"]
    assert share["size"]["status"] == "not comparable" and "2/3 = 66.7 %" in share["size"]["reason"]


def test_the_access_laws_were_recorded_beside_every_capture_and_summarised(tiny_run):
    import polars as pl

    wf, _, _ = tiny_run
    task_shard = "results/capture/tiny/tasks/0000.safetensors"
    for name in SHARDS + [task_shard]:
        access = wf.workdir / name.replace(".safetensors", ".access.parquet")
        frame = pl.read_parquet(access)
        assert frame.height == 2 * 4 * 7  # layers x heads x laws (last, tails 8/32/64, all, debiased, decode)
        assert frame["tv_decode"].null_count() == 0 and frame["n_tokens"].unique().to_list() == [96]
        prov = json.loads((wf.workdir / f"{access}.prov.json").read_text())
        assert prov["output"]["sha256"] == hashlib.sha256(access.read_bytes()).hexdigest()
        assert prov["extra"]["access"]["seconds"] > 0 and prov["extra"]["access"]["decode_max_abs_dev"] < 1e-5
    manifest = json.loads((wf.workdir / "resources/documents/tiny/tasks.json").read_text())
    (doc,) = manifest["documents"]
    target = (
        pl.read_parquet(wf.workdir / task_shard.replace(".safetensors", ".access.parquet"))["target"].unique().to_list()
    )
    (start, end), (a, b) = doc["planted"][0], doc["answer"]
    first, last = (int(x) for x in target[0].split(".."))
    assert len(target) == 1 and start <= first <= last < end and last - first + 1 <= b - a  # inside the planted span
    law = pl.read_parquet(wf.workdir / "results/stats/access_law.parquet")
    assert set(law["corpus"].to_list()) == {"words", "tasks"} and set(law["tail_rows"].to_list()) == {8, 32, 64}
    assert law["triangle_share"].to_list() == [1.0] * law.height  # Prop. 3 on every cell of the real outputs
    dilution = pl.read_parquet(wf.workdir / "results/stats/access_dilution.parquet")
    assert dilution["layer"].to_list() == [0, 1] and all(1.0 <= r <= 4.0 for r in dilution["r_eff"].to_list())


def test_the_deploy_stage_wrote_tables_3_to_5_and_the_byte_ledger(tiny_run):
    import polars as pl

    wf, _, _ = tiny_run
    for name in ("table3_wtl", "table4_retrieval", "table5_decomposition", "bytes", "deploy_timing"):
        assert (wf.workdir / f"results/tables/{name}.md").is_file(), name
    rows = pl.read_parquet(wf.workdir / "results/deploy/tiny-reader/niah_single/400.parquet")
    assert rows["item_id"].n_unique() == 2 and set(rows["variant"]) == {"unmodified", "doc_rows", "doc_boundary"}
    table = pl.read_parquet(wf.workdir / "results/stats/deploy_bytes.parquet")
    shipped = {r["method"]: r for r in table.filter(pl.col("storage") == "as_shipped").iter_rows(named=True)}
    assert shipped["adakv"]["frac_full_median"] > 1.0 and shipped["kvzip"]["kv_rows_share_median"] == 1.0
    ragged = {r["method"]: r for r in table.filter(pl.col("storage") == "ragged").iter_rows(named=True)}
    assert ragged["snapkv"]["kept_min_head"] == ragged["snapkv"]["kept_max_head"] == 40
    assert ragged["contourkv_enforced"]["kept_max_head"] <= 40 and ragged["adakv"]["ratio_to_snapkv_median"] == 1.0
    claims = {c["id"]: c for c in json.loads((wf.workdir / "results/claims.json").read_text())["claims"]}
    assert {v["status"] for v in claims[60]["values"]} - {"not produced"}
    # the benchmark data went through the same stage, ungated, and Table 3 keeps its setting apart
    bench = pl.read_parquet(wf.workdir / "results/deploy/tiny-reader/tiny-ruler/400.parquet")
    assert set(bench["setting"]) == {"benchmark"} and bench["dense_valid"].all() and bench["item_id"].n_unique() == 2
    t3 = pl.read_parquet(wf.workdir / "results/stats/table3.parquet")
    assert set(t3["setting"]) == {"benchmark", "retrieval"}
    t4 = pl.read_parquet(wf.workdir / "results/stats/table4.parquet")
    assert set(t4["setting"]) == {"retrieval"}


REPORT_TARGETS = ["fig1", "fig2", "table1", "table2", "table6", "table8"]


def test_restyling_a_figure_reruns_only_the_plotting_rules(tiny_run, tmp_path):
    """An edit of each library module in the run's private copy of the package (a copy of the whole finished run,
    so the shared run stays as it is; the repository is never touched): the dry-run plans only the rules that read
    that module.  (Snakemake compares checksums, so a bare touch would plan nothing.)"""
    source, config, done = tiny_run
    assert done.returncode == 0, done.output[-3000:]
    root = tmp_path / "copy"
    shutil.copytree(source.workdir, root, symlinks=True)  # copy2: the files keep their mtimes
    wf = Workflow(
        root, env={**source.env, "PYTHONPATH": source.env["PYTHONPATH"].replace(str(source.workdir), str(root))}
    )
    config = root / config.name  # names the model and corpus folders of the original run: unchanged, and still there
    package = root / "src" / "trustmass"
    for name in [
        "results/figures/fig1_ceiling.png",
        "results/figures/fig2_map.png",
        "results/tables/table8_profile.md",
        "results/stats/headline_ceiling.parquet",
    ]:
        assert (root / name).is_file(), name
        assert (root / f"{name}.prov.json").is_file(), name
    prov = (root / "results/figures/fig1_ceiling.png.prov.json").read_text()
    assert (
        '"path": "src/trustmass/report/figures/ceiling.py"' in prov
    )  # the run used the private copy (paths relative to the workdir)

    def planned(*args):
        dry = wf.run(*REPORT_TARGETS, "--dry-run", "--configfile", str(config), *args)
        assert dry.returncode == 0, dry.output
        return set(planned_jobs(dry.output))

    assert planned() == set(), "the copied run is not complete where it stands"

    def planned_after_editing(module, old, new):
        path = package / module
        text = path.read_text(encoding="utf-8")
        assert old in text, f"{module}: {old!r} not found"
        path.write_text(text.replace(old, new, 1), encoding="utf-8")
        return planned()

    figure_renders = {"render_fig1", "render_fig2", "fig1", "fig2"}
    table_renders = {f"render_table{i}" for i in (1, 2, 6, 8)} | {f"table{i}" for i in (1, 2, 6, 8)}
    restyled = planned_after_editing("report/style.py", '"cap_color": "#e0892b"', '"cap_color": "#d62728"')
    assert restyled == figure_renders
    rerounded = planned_after_editing(
        "report/layouts/ceiling.py",
        'Column("median κ̂", "median_kappa_hat", 3)',
        'Column("median κ̂", "median_kappa_hat", 4)',
    )
    assert rerounded == figure_renders | table_renders
    recomputed = planned_after_editing("report/frames/ceiling.py", "SHARE_FACTOR = 0.9", "SHARE_FACTOR = 0.9  # edited")
    assert "ceiling_statistics" in recomputed and "ceiling" not in recomputed
