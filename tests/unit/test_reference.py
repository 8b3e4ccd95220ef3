"""The reference run's save and check: bitwise, within tolerance, timed outputs listed, every
difference named by file and column (or claim, or pixel share)."""

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from PIL import Image

from trustmass.report import reference

REPO = Path(__file__).resolve().parents[2]


def _sidecar(path, config):
    path.with_name(path.name + ".prov.json").write_text(json.dumps({"config": config, "seeds": None, "wall_time_s": 1.0}))


@pytest.fixture
def run(tmp_path):
    root = tmp_path / "run"
    for sub in ("stats", "tables", "figures"):
        (root / "results" / sub).mkdir(parents=True)
    frame = root / "results/stats/fig1.parquet"
    pl.DataFrame({"model": ["a", "b"], "c_hat": [0.1, 0.25], "n": [3, 4]}).write_parquet(frame)
    _sidecar(frame, {"budgets": [8]})
    pl.DataFrame({"x": [1.5, 2.5]}).write_csv(root / "results/tables/table1_native.csv")
    (root / "results/tables/table1_native.md").write_text("| x |\n")
    pl.DataFrame({"seconds": [1.0]}).write_parquet(root / "results/stats/deploy_timing.parquet")
    image = np.zeros((40, 50, 3), dtype=np.uint8)
    Image.fromarray(image).save(root / "results/figures/fig1_ceiling.png")
    claims = {"claims": [{"id": 2, "stage": ["INST"], "status": "consistent", "values": [{"value": 0.5}, {"value": float("inf")}]},
                         {"id": 18, "stage": ["CERT"], "status": "mixed", "values": [{"value": 0.9}]}]}  # fmt: skip
    (root / "results/claims.json").write_text(json.dumps(claims))
    (root / "results/capture").mkdir()
    (root / "results/capture/shard.safetensors").write_bytes(b"big")  # not kept
    return root


def saved(run, tmp_path):
    ref = tmp_path / "ref"
    manifest = reference.save(run, ref, [])
    return ref, manifest


def test_the_timed_claim_stages_are_the_claims_own_stage_codes():
    """The stage names once drifted ("certification" for CERT): the certification claims were compared
    and a rerun under other load reported them as differences."""
    from trustmass.report.claims.model import STAGES

    assert reference.TIMED_STAGES <= set(STAGES) and "CERT" in reference.TIMED_STAGES


def test_save_keeps_the_small_outputs_and_their_sidecars(run, tmp_path):
    ref, manifest = saved(run, tmp_path)
    assert "results/stats/fig1.parquet.prov.json" in manifest["files"]
    assert "results/capture/shard.safetensors" not in manifest["files"]
    assert (ref / "results/figures/fig1_ceiling.png").is_file()
    report = reference.check(run, ref)
    assert report.differences == [] and report.equal == len(manifest["files"])


def test_a_float_beyond_tolerance_is_named_by_file_and_column(run, tmp_path):
    ref, _ = saved(run, tmp_path)
    path = run / "results/stats/fig1.parquet"
    pl.DataFrame({"model": ["a", "b"], "c_hat": [0.1, 0.25 + 1e-3], "n": [3, 4]}).write_parquet(path)
    report = reference.check(run, ref)
    assert [(d.path, "c_hat" in d.what and "row 1" in d.what) for d in report.differences] == [("results/stats/fig1.parquet", True)]
    pl.DataFrame({"model": ["a", "b"], "c_hat": [0.1, 0.25 + 1e-12], "n": [3, 4]}).write_parquet(path)
    report = reference.check(run, ref)
    assert report.differences == [] and report.close == 1


def test_claims_status_missing_files_pixels_and_configs_are_differences(run, tmp_path):
    ref, _ = saved(run, tmp_path)
    claims = json.loads((run / "results/claims.json").read_text())
    claims["claims"][0]["status"] = "inconsistent"
    claims["claims"][1]["values"][0]["value"] = 0.1  # a certification claim: timed, not compared
    (run / "results/claims.json").write_text(json.dumps(claims))
    (run / "results/tables/table1_native.csv").unlink()
    image = np.zeros((40, 50, 3), dtype=np.uint8)
    image[:10] = 255
    Image.fromarray(image).save(run / "results/figures/fig1_ceiling.png")
    _sidecar(run / "results/stats/fig1.parquet", {"budgets": [8, 16]})
    pl.DataFrame({"seconds": [2.0]}).write_parquet(run / "results/stats/deploy_timing.parquet")
    report = reference.check(run, ref)
    found = {d.path: d.what for d in report.differences}
    assert "status 'inconsistent'" in found["results/claims.json"]
    assert found["results/tables/table1_native.csv"] == "missing from the run"
    assert "25.00% of the pixels" in found["results/figures/fig1_ceiling.png"]
    assert "config" in found["results/stats/fig1.parquet.prov.json"]
    assert report.timed == ["results/stats/deploy_timing.parquet"] and report.not_compared_claims == [18]
    assert len(found) == 4


def test_the_cli_exits_1_on_a_difference_and_prints_it(run, tmp_path, capsys):
    ref = tmp_path / "ref"
    assert reference.main(["save", "--run", str(run), "--reference", str(ref)]) == 0
    assert reference.main(["check", "--run", str(run), "--reference", str(ref)]) == 0
    (run / "results/tables/table1_native.csv").write_text("x\n9.0\n2.5\n")
    assert reference.main(["check", "--run", str(run), "--reference", str(ref)]) == 1
    assert "DIFFERS results/tables/table1_native.csv: column 'x'" in capsys.readouterr().out


def test_a_missing_reference_says_how_to_make_one(run, tmp_path):
    with pytest.raises(SystemExit, match="save one first"):
        reference.check(run, tmp_path / "nowhere")


def test_the_readme_opens_with_the_committed_reference():
    """The README's figures and claims counts are the committed CPU panel's (make save-reference-panel
    rewrites both); an edited reference without its README block fails here."""
    from trustmass.report.reference import BEGIN, END, readme_block

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme[readme.index(BEGIN) : readme.index(END) + len(END)]
    assert block == readme_block(Path("reference/cpu-panel"), REPO)  # make save-reference-panel writes it
    assert block.count("](reference/cpu-panel/results/figures/") == 8  # four figures, each linking to its sidecar
    for committed in ("reference/default", "reference/cpu-panel"):
        manifest = json.loads((REPO / committed / "MANIFEST.json").read_text(encoding="utf-8"))
        assert all((REPO / committed / rel).is_file() for rel in manifest["files"])


def test_the_readme_names_the_command_that_regenerates_the_reference():
    from trustmass.report.reference import run_command

    assert run_command(["config.yaml"]) == "make run"
    assert run_command(["config.yaml", "config/cpu-panel.yaml"]) == "snakemake --cores all --configfile config/cpu-panel.yaml"


# ---- the panel's claims report: what the issue "claims that mean something" asked of it -------------------


def _panel_values():
    claims = json.loads((REPO / "reference/cpu-panel/results/claims.json").read_text(encoding="utf-8"))
    return [(c, v) for c in claims["claims"] for v in c["values"]]


def test_the_panel_agrees_in_size_on_no_interval_wider_than_the_claims_scale():
    """A point value 'agrees' when its 95 % interval contains the paper's number; an interval wider than the
    number itself would contain almost anything, so such a cell must be called uninformative instead."""
    from trustmass.report.claims.data import claim

    for c, v in _panel_values():
        value = claim(c["id"]).value(v["name"])
        if value.kind != "point" or value.value is None or not v["size"] or v["size"]["status"] != "agrees":
            continue
        scale, unit = abs(float(value.value)), (100.0 if value.unit == "percent" else 1.0)
        for population in ("primary", "all"):
            if not v[population]["judged"]:
                continue
            for r in v[population]["regenerated"]:
                if r["low"] is not None and r["high"] is not None and not r.get("uninformative"):
                    wide = (r["high"] - r["low"]) * unit > scale
                    assert not wide or "wider than the claim's scale" in v["size"]["reason"], (c["id"], v["name"], r)


def test_every_value_the_panel_does_not_produce_says_what_is_missing():
    for c, v in _panel_values():
        for axis in (v["direction"], v["size"]):
            if axis and axis["status"] == "not produced":
                assert any(k in axis["reason"] for k in ("no study model takes that role", "did not run", "needs ")), (c["id"], v["name"], axis)
