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
    path.with_name(path.name + ".prov.json").write_text(
        json.dumps({"config": config, "seeds": None, "wall_time_s": 1.0})
    )


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
    claims = {
        "claims": [
            {"id": 2, "stage": ["INST"], "status": "consistent", "values": [{"value": 0.5}, {"value": float("inf")}]},
            {"id": 18, "stage": ["CERT"], "status": "mixed", "values": [{"value": 0.9}]},
        ]
    }
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
    assert [(d.path, "c_hat" in d.what and "row 1" in d.what) for d in report.differences] == [
        ("results/stats/fig1.parquet", True)
    ]
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
    assert (
        run_command(["config.yaml", "config/cpu-panel.yaml"])
        == "snakemake --cores all --configfile config/cpu-panel.yaml"
    )


# ---- the panel's claims report: what the issue "claims that mean something" asked of it -------------------


REFERENCES = ("reference/default", "reference/cpu-panel")


def _claims(reference: str) -> list[dict]:
    return json.loads((REPO / reference / "results/claims.json").read_text(encoding="utf-8"))["claims"]


def _panel_values():
    return [(c, v) for c in _claims("reference/cpu-panel") for v in c["values"]]


@pytest.mark.parametrize("reference", REFERENCES)
def test_no_claim_agrees_with_a_value_unanswered(reference):
    """A claim agrees on an axis only when every value it counts there is answered and agrees (issue 36)."""
    for c in _claims(reference):
        for axis in ("direction", "size"):
            if c[axis] and c[axis]["status"] == "agrees":
                counted = [v[axis]["status"] for v in c["values"] if v[axis] and not v["alternative"]]
                counted = [s for s in counted if s not in ("by construction", "not comparable")]
                assert counted and set(counted) == {"agrees"}, (reference, c["id"], axis, counted)


@pytest.mark.parametrize("reference", REFERENCES)
def test_no_agreement_rests_on_a_cell_wider_than_the_claims_scale(reference):
    from trustmass.report.claims.data import claim

    for c in _claims(reference):
        for v in c["values"]:
            value = claim(c["id"]).value(v["name"])
            numbers = [abs(float(x)) for x in (value.value, value.low, value.high) if x is not None]
            if not (v["size"] and v["size"]["status"] == "agrees" and numbers and max(numbers)):
                continue
            scale, unit = max(numbers), (100.0 if value.unit == "percent" else 1.0)
            for population in ("primary", "all"):
                for r in v[population]["regenerated"]:
                    if r["judged"] and r["low"] is not None and r["high"] is not None:
                        assert (r["high"] - r["low"]) * unit <= scale, (reference, c["id"], v["name"], r)


@pytest.mark.parametrize("reference", REFERENCES)
def test_no_flagged_cell_decides_an_answer(reference):
    """A cell its producer flagged (both arms at the floor, a method at the floor on every item) is shown and
    counted, never decisive."""
    for c in _claims(reference):
        for v in c["values"]:
            flagged = {r["by_value"] for p in ("primary", "all") for r in v[p]["regenerated"] if r.get("uninformative")}
            for axis in ("direction", "size"):
                for cell in (v[axis] or {}).get("decisive") or []:
                    assert not any(cell.startswith(f"{f} ") for f in flagged if f), (
                        reference,
                        c["id"],
                        v["name"],
                        cell,
                    )


def test_every_value_the_panel_does_not_produce_says_what_is_missing():
    for c, v in _panel_values():
        for axis in (v["direction"], v["size"]):
            if axis and axis["status"] == "not produced":
                assert any(k in axis["reason"] for k in ("no study model takes that role", "did not run", "needs ")), (
                    c["id"],
                    v["name"],
                    axis,
                )


# -- numbers printed in strings, statistics with their own tolerance (issue 31, item 5) ---------------


def test_a_float_printed_in_a_json_string_is_compared_as_a_number(run, tmp_path):
    """headline_selfcheck's ``context`` holds JSON text: a last-bit change of a float inside it is not a
    difference, a change beyond tolerance or in the text is."""
    path = run / "results/stats/headline_selfcheck.parquet"

    def write(context):
        pl.DataFrame({"claim_id": [1, 2], "context": [context, None]}).write_parquet(path)

    write('{"D": 3.1217742012986895, "N": 8, "sigma": 0.8119498220279262}')
    ref, _ = saved(run, tmp_path)
    write('{"D": 3.12177420129869, "N": 8, "sigma": 0.8119498220279262}')
    report = reference.check(run, ref)
    assert report.differences == [] and report.close == 1
    write('{"D": 3.1218, "N": 8, "sigma": 0.8119498220279262}')
    assert ["context" in d.what and "row 0" in d.what for d in reference.check(run, ref).differences] == [True]
    write('{"D": 3.1217742012986895, "N": 9, "sigma": 0.8119498220279262}')
    assert len(reference.check(run, ref).differences) == 1
    write('{"E": 3.1217742012986895, "N": 8, "sigma": 0.8119498220279262}')
    assert len(reference.check(run, ref).differences) == 1


def test_texts_close_matches_text_exactly_and_numbers_within_tolerance():
    close = reference.texts_close
    assert close("regenerated 1.045 -> 2.448", "regenerated 1.045 -> 2.448", 1e-6, 1e-9)
    assert close("x=0.30000000000000004", "x=0.3", 1e-6, 1e-9)
    assert not close("x=0.31", "x=0.3", 1e-6, 1e-9)
    assert not close("agrees: 0.3", "disagrees: 0.3", 1e-6, 1e-9)
    assert not close("0.3 and 1", "0.3", 1e-6, 1e-9)
    assert close("1e-3", "0.001", 1e-6, 1e-9) and close("-2", "-2.0", 1e-6, 1e-9)


def test_a_number_printed_to_a_few_decimals_may_round_either_side_of_its_last_digit():
    """A claim's reason prints "regenerated 2.945": a value within rtol may print as 2.946; two
    units, or a number printed to other decimals, still differ."""
    close = reference.texts_close
    assert close("regenerated 2.945; within 2.06", "regenerated 2.946; within 2.06", 1e-6, 1e-9)
    assert not close("regenerated 2.945", "regenerated 2.947", 1e-6, 1e-9)
    assert not close("regenerated 2.95", "regenerated 2.945", 1e-6, 1e-9)


def test_a_claims_reason_string_is_compared_by_its_numbers(run, tmp_path):
    claims = json.loads((run / "results/claims.json").read_text())
    claims["claims"][0]["values"][0]["reason"] = "increasing along budget: 1.0447740863469832 -> 2.448"
    (run / "results/claims.json").write_text(json.dumps(claims))
    ref, _ = saved(run, tmp_path)
    claims["claims"][0]["values"][0]["reason"] = "increasing along budget: 1.0447740863469830 -> 2.448"
    (run / "results/claims.json").write_text(json.dumps(claims))
    assert reference.check(run, ref).differences == []
    claims["claims"][0]["values"][0]["reason"] = "increasing along budget: 1.0447740863469832 -> 2.5"
    (run / "results/claims.json").write_text(json.dumps(claims))
    assert [d.path for d in reference.check(run, ref).differences] == ["results/claims.json"]


def test_a_statistic_with_its_own_tolerance_is_compared_with_it_and_the_report_says_so(
    run, tmp_path, monkeypatch, capsys
):
    ref, _ = saved(run, tmp_path)
    pl.DataFrame({"model": ["a", "b"], "c_hat": [0.1, 0.25 * (1 + 1e-3)], "n": [3, 4]}).write_parquet(
        run / "results/stats/fig1.parquet"
    )
    claims = json.loads((run / "results/claims.json").read_text())
    claims["claims"][0]["values"][0].update(name="c_hat", value=0.5 * (1 + 1e-3))
    (run / "results/claims.json").write_text(json.dumps(claims))
    ref_claims = json.loads((ref / "results/claims.json").read_text())
    ref_claims["claims"][0]["values"][0]["name"] = "c_hat"
    (ref / "results/claims.json").write_text(json.dumps(ref_claims))
    assert {d.path for d in reference.check(run, ref).differences} == {
        "results/stats/fig1.parquet",
        "results/claims.json",
    }
    monkeypatch.setitem(reference.TOLERANCES, "c_hat", (1e-2, "a test's reason"))
    report = reference.check(run, ref)
    assert report.differences == []
    reference.print_report(report, ref)
    assert "own tolerance: c_hat within rtol 0.01 (a test's reason)" in capsys.readouterr().out
    monkeypatch.setitem(reference.TOLERANCES, "c_hat", (1e-4, "tighter than the change"))
    assert len(reference.check(run, ref).differences) == 2


def test_every_own_tolerance_states_its_reason():
    for name, (rtol, why) in reference.TOLERANCES.items():
        assert 0 < rtol < 1 and len(why) > 20, name
