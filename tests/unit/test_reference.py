"""The reference run's save and check: bitwise, within tolerance, timed outputs listed, every
difference named by file and column (or claim, or pixel share)."""

import json
import re
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


#: a deployment row as deploy.runner.run_item writes it (a few of its columns): answers, kept entries and
#: bytes are results, the three seconds beside them timing columns
DEPLOY_ROWS = {
    "item_id": ["niah-0", "niah-0"],
    "method": ["dense", "snapkv"],
    "answer": [" 8271", " 82"],
    "score": [100.0, 0.0],
    "kept_entries": [3072, 512],
    "bytes_ragged": [786432, 131072],
    "frac_full": [1.0, 0.1666],
    "prefill_s": [4.2, 4.2],
    "score_s": [0.0, 0.13],
    "decode_s": [0.7, 0.6],
}


def _headline(estimates=(0.5, 1.04), n=(3, 1)):
    """A headline frame: a value that is a result (claim 4) and one that is a ratio of times (claim 69)."""
    return pl.DataFrame(
        {
            "claim_id": [4, 69],
            "value_name": ["enforcement_cost", "reconstruction_score_cost_over_prefill"],
            "population": ["all", "all"],
            "estimate": list(estimates),
            "low": [None, None],
            "n_instances": list(n),
            "source": ["table3_margins.enforcement_cost", "deploy_timing.replay_cost_over_dense"],
        },
        schema_overrides={"low": pl.Float64},
    )


@pytest.fixture
def run(tmp_path):
    root = tmp_path / "run"
    for sub in ("stats", "tables", "figures", "deploy/m/niah_single"):
        (root / "results" / sub).mkdir(parents=True)
    frame = root / "results/stats/fig1.parquet"
    pl.DataFrame({"model": ["a", "b"], "c_hat": [0.1, 0.25], "n": [3, 4]}).write_parquet(frame)
    _sidecar(frame, {"budgets": [8]})
    pl.DataFrame({"x": [1.5, 2.5]}).write_csv(root / "results/tables/table1_native.csv")
    (root / "results/tables/table1_native.md").write_text("| x |\n")
    pl.DataFrame({"model": ["a"], "n": [3], "prefill_s": [1.0]}).write_parquet(
        root / "results/stats/deploy_timing.parquet"
    )
    pl.DataFrame({"budget": [4], "n_undecided": [0], "median_seconds": [0.1]}).write_parquet(
        root / "results/stats/table7.parquet"
    )
    pl.DataFrame(DEPLOY_ROWS).write_parquet(root / "results/deploy/m/niah_single/1024.parquet")
    _headline().write_parquet(root / "results/stats/headline_deploy.parquet")
    image = np.zeros((40, 50, 3), dtype=np.uint8)
    Image.fromarray(image).save(root / "results/figures/fig1_ceiling.png")
    claims = {
        "counts": {"consistent": 1, "mixed": 3},
        "summary": {"agrees": [2, 18, 20], "not produced": [102]},
        "claims": [
            {"id": 2, "stage": ["INST"], "status": "consistent", "values": [{"value": 0.5}, {"value": float("inf")}]},
            {
                "id": 18,
                "stage": ["CERT"],
                "status": "mixed",
                "values": [{"name": "median_c_hat_certified", "value": 0.9}],
            },
            {"id": 20, "stage": ["CERT"], "status": "mixed", "values": [{"name": "label_rate", "value": 0.3}]},
            {
                "id": 102,
                "stage": ["TIME"],
                "status": "mixed",
                "values": [{"name": "swap_pairs", "value": 64}, {"name": "swap_round_cost_share", "value": 0.08}],
            },
        ],
    }
    (root / "results/claims.json").write_text(json.dumps(claims))
    (root / "results/capture").mkdir()
    (root / "results/capture/shard.safetensors").write_bytes(b"big")  # not kept
    return root


def saved(run, tmp_path):
    ref = tmp_path / "ref"
    manifest = reference.save(run, ref, [])
    return ref, manifest


def test_the_load_dependent_stages_are_stages_that_declare_claim_values():
    """The stage names once drifted ("certification" for CERT): the certification claims were compared
    and a rerun under other load reported them as differences.  A load-dependent stage names the claim
    values it declares (trustmass.report.declared) and the outputs it writes."""
    from trustmass.report.declared import DECLARING_MODULES

    assert set(reference.LOAD_DEPENDENT) <= set(DECLARING_MODULES) & set(reference.LOAD_DEPENDENT_OUTPUTS)
    assert reference.left_out_values(("certification",))[(18, "median_c_hat_certified")] == (
        "certification: load-dependent"
    )
    assert (20, "label_rate") not in reference.left_out_values(("certification",))  # the sweep: compared


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


def test_claims_status_missing_files_pixels_and_configs_are_differences(run, tmp_path, monkeypatch):
    ref, _ = saved(run, tmp_path)
    claims = json.loads((run / "results/claims.json").read_text())
    claims["claims"][0]["status"] = "inconsistent"
    claims["claims"][1]["values"][0]["value"] = 0.1  # read from the certification: load-dependent, not compared
    (run / "results/claims.json").write_text(json.dumps(claims))
    (run / "results/tables/table1_native.csv").unlink()
    image = np.zeros((40, 50, 3), dtype=np.uint8)
    image[:10] = 255
    Image.fromarray(image).save(run / "results/figures/fig1_ceiling.png")
    _sidecar(run / "results/stats/fig1.parquet", {"budgets": [8, 16]})
    pl.DataFrame({"model": ["a"], "n": [3], "prefill_s": [2.0]}).write_parquet(
        run / "results/stats/deploy_timing.parquet"
    )
    pl.DataFrame({"budget": [4], "n_undecided": [1], "median_seconds": [0.1]}).write_parquet(
        run / "results/stats/table7.parquet"
    )
    monkeypatch.setattr(reference, "LOAD_DEPENDENT", ("certification",))  # the mechanism, as when one was
    report = reference.check(run, ref)
    found = {d.path: d.what for d in report.differences}
    assert "status: 'inconsistent'" in found["results/claims.json"]
    assert found["results/tables/table1_native.csv"] == "missing from the run"
    assert "25.00% of the pixels" in found["results/figures/fig1_ceiling.png"]
    assert "config" in found["results/stats/fig1.parquet.prov.json"]
    assert report.left_out == {"results/stats/deploy_timing.parquet": ["prefill_s"]}  # its seconds: equal
    assert report.timed == [] and report.load_dependent == ["results/stats/table7.parquet"]
    assert report.not_compared_claims == [
        "results/claims.json: 18 (every value: certification: load-dependent)",
        "results/claims.json: 102 (swap_round_cost_share: timing)",
    ]
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
    from trustmass.report.readme_block import BEGIN, END, readme_block

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme[readme.index(BEGIN) : readme.index(END) + len(END)]
    assert block == readme_block(Path("reference/cpu-panel"), REPO)  # make save-reference-panel writes it
    assert block.count("](reference/cpu-panel/results/figures/") == 8  # four figures, each linking to its sidecar
    for committed in ("reference/default", "reference/cpu-panel"):
        manifest = json.loads((REPO / committed / "MANIFEST.json").read_text(encoding="utf-8"))
        assert all((REPO / committed / rel).is_file() for rel in manifest["files"])


def test_the_readme_names_the_command_that_regenerates_the_reference():
    from trustmass.report.readme_block import run_command

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


# -- seconds apart from results (issue 38, item 2) ------------------------------------------------------


def test_deployment_rows_differing_only_in_their_seconds_compare_equal(run, tmp_path):
    ref, _ = saved(run, tmp_path)
    rows = pl.DataFrame(DEPLOY_ROWS).with_columns(
        prefill_s=pl.col("prefill_s") * 3, score_s=pl.col("score_s") + 1, decode_s=pl.lit(9.0)
    )
    rows.write_parquet(run / "results/deploy/m/niah_single/1024.parquet")
    report = reference.check(run, ref)
    assert report.differences == [] and report.close == 1
    assert report.left_out == {"results/deploy/m/niah_single/1024.parquet": ["prefill_s", "score_s", "decode_s"]}


@pytest.mark.parametrize(
    ("column", "value"), [("answer", " 8270"), ("kept_entries", 513), ("bytes_ragged", 131073), ("score", 100.0)]
)
def test_a_deployment_rows_answer_kept_entries_or_bytes_is_compared(run, tmp_path, column, value):
    ref, _ = saved(run, tmp_path)
    rows = pl.DataFrame(DEPLOY_ROWS).with_columns(prefill_s=pl.col("prefill_s") * 3)
    changed = rows.with_columns(
        pl.when(pl.int_range(rows.height) == 1).then(pl.lit(value)).otherwise(pl.col(column)).alias(column)
    )
    changed.write_parquet(run / "results/deploy/m/niah_single/1024.parquet")
    report = reference.check(run, ref)
    assert [(d.path, d.what.split(":")[0]) for d in report.differences] == [
        ("results/deploy/m/niah_single/1024.parquet", f"column {column!r}")
    ]


def test_a_headline_row_that_is_a_time_is_compared_but_for_its_estimate(run, tmp_path):
    """Claim 69's value is a ratio of prefill times (timing: true): its estimate moves with the clock, its row
    (group, count, source) does not; claim 4's estimate is a result."""
    ref, _ = saved(run, tmp_path)
    path = run / "results/stats/headline_deploy.parquet"
    _headline(estimates=(0.5, 2.5)).write_parquet(path)
    report = reference.check(run, ref)
    assert report.differences == []
    assert report.left_out["results/stats/headline_deploy.parquet"] == [
        "estimate of 1 timing rows",
        "low of 1 timing rows",
    ]
    _headline(estimates=(0.6, 2.5)).write_parquet(path)
    assert ["'estimate'" in d.what and "row 0" in d.what for d in reference.check(run, ref).differences] == [True]
    _headline(estimates=(0.5, 2.5), n=(3, 2)).write_parquet(path)
    assert ["'n_instances'" in d.what for d in reference.check(run, ref).differences] == [True]


def _edit_claims(run, edit):
    claims = json.loads((run / "results/claims.json").read_text())
    edit({c["id"]: c for c in claims["claims"]}, claims)
    (run / "results/claims.json").write_text(json.dumps(claims))


def test_cert_and_time_claims_are_compared_but_for_values_that_read_seconds(run, tmp_path):
    """Claim 20 (CERT: the cap-widening sweep, deterministic) and claim 102's swap_pairs (TIME, a setting)
    read no seconds and are compared; 102's swap_round_cost_share is a time, and what tallies it (the claim's
    status, the counts) is left out with it; the summary is compared without claim 102."""
    ref, _ = saved(run, tmp_path)

    def timing(c, _):
        c[102]["values"][1]["value"] = 0.5
        c[102]["status"] = "consistent"

    def counted(c, report):
        timing(c, report)
        report["counts"] = {"consistent": 2, "mixed": 2}
        report["summary"]["agrees"].append(102)

    _edit_claims(run, counted)
    assert reference.check(run, ref).differences == []
    for edit, where in (
        (lambda c, _: c[20]["values"][0].update(value=0.4), "claim 20[0]/value: 0.4"),
        (lambda c, _: c[102]["values"][0].update(value=32), "claim 102[0]/value: 32"),
        (lambda c, r: r["summary"]["agrees"].remove(20), "/summary/agrees: 2 entries"),  # 18 compared too
        (lambda c, r: r["counts"].update(consistent=3), "/counts/consistent: 2"),
    ):
        _edit_claims(run, edit)
        assert [d.what.split(",")[0] for d in reference.check(run, ref).differences] == [where]
        (run / "results/claims.json").write_text((ref / "results/claims.json").read_text())
        _edit_claims(run, counted)


def test_the_certification_is_compared_now_that_it_stops_on_work_budgets(run, tmp_path, monkeypatch):
    """``LOAD_DEPENDENT = ()`` (issue 38): Table 7 compared but for its seconds, claim 18 compared; a stage
    named load-dependent would leave both out."""
    assert reference.LOAD_DEPENDENT == ()
    ref, _ = saved(run, tmp_path)
    _edit_claims(run, lambda c, _: c[18]["values"][0].update(value=0.1))
    pl.DataFrame({"budget": [4], "n_undecided": [0], "median_seconds": [7.0]}).write_parquet(
        run / "results/stats/table7.parquet"
    )
    monkeypatch.setattr(reference, "LOAD_DEPENDENT", ("certification",))
    report = reference.check(run, ref)
    assert report.differences == [] and report.load_dependent == ["results/stats/table7.parquet"]
    monkeypatch.setattr(reference, "LOAD_DEPENDENT", ())
    report = reference.check(run, ref)
    assert [d.what.split(",")[0] for d in report.differences] == ["claim 18[0]/value: 0.1"]
    assert report.left_out == {"results/stats/table7.parquet": ["median_seconds"]}


def test_a_changed_row_count_or_column_set_of_a_frame_with_seconds_is_a_difference(run, tmp_path):
    ref, _ = saved(run, tmp_path)
    path = run / "results/deploy/m/niah_single/1024.parquet"
    pl.DataFrame(DEPLOY_ROWS).drop("decode_s").write_parquet(path)
    assert ["columns" in d.what for d in reference.check(run, ref).differences] == [True]
    pl.DataFrame(DEPLOY_ROWS).head(1).write_parquet(path)
    assert ["1 rows" in d.what for d in reference.check(run, ref).differences] == [True]


def test_save_refuses_a_column_that_says_seconds_but_is_not_a_timing_column(run, tmp_path):
    pl.DataFrame({"model": ["a"], "n": [3], "prefill_s": [1.0], "wall_s": [2.0]}).write_parquet(
        run / "results/stats/deploy_timing.parquet"
    )
    with pytest.raises(SystemExit, match=r"deploy_timing.parquet: wall_s; fix: add each to TIMING_COLUMNS"):
        reference.save(run, tmp_path / "ref", [])


def test_a_json_output_is_compared_but_for_its_timing_keys(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"rows": [{"n": 3, "seconds": 1.0}], "agrees": True}))
    b.write_text(json.dumps({"rows": [{"n": 3, "seconds": 9.0}], "agrees": True}))
    assert reference.compare_file(a, b, "results/selfcheck/x.json").differences == []
    b.write_text(json.dumps({"rows": [{"n": 4, "seconds": 9.0}], "agrees": True}))
    assert reference.compare_file(a, b, "results/selfcheck/x.json").differences == [
        "/rows[0]/n: 3, the reference has 4"
    ]


def test_what_the_check_leaves_out_whole_is_the_benchmark_the_sidecars_and_the_renderings():
    kinds = {
        rel: reference.compare_file(Path("-"), Path("-"), rel).kind
        for rel in ("results/bench/enumeration.json", "results/tables/deploy_timing.md", "results/claims.md")
    }
    assert kinds == {
        "results/bench/enumeration.json": "timed",
        "results/tables/deploy_timing.md": "rendered",
        "results/claims.md": "rendered",
    }
    for rel in (
        "results/stats/sweep.parquet",
        "results/tables/sweep_cap_widening.csv",
        "results/certify/manifest.parquet",
    ):
        assert reference.load_dependent_output(rel) is None and not reference.TIMED.search("/" + rel)
    for rel in (
        "results/certify/certified.parquet",
        "results/stats/table7.parquet",
        "results/stats/headline_certification.parquet",
    ):
        assert reference.load_dependent_output(rel, ("certification",)) == "certification"
        assert reference.load_dependent_output(rel, ()) is None


# -- the guard: every column that holds seconds is a timing column --------------------------------------


def _reference_frames():
    for committed in REFERENCES:
        manifest = json.loads((REPO / committed / "MANIFEST.json").read_text(encoding="utf-8"))
        for rel in manifest["files"]:
            if rel.endswith((".parquet", ".csv")):
                yield f"{committed}/{rel}", reference._read_frame(REPO / committed / rel)


def test_every_column_that_says_seconds_in_the_committed_references_is_a_timing_column():
    unlisted = {rel: cols for rel, frame in _reference_frames() if (cols := reference.unlisted_timing_columns(frame))}
    assert unlisted == {}, "name them in reference.TIMING_COLUMNS (with their writer), or rename them"


def test_every_schema_column_that_says_seconds_is_a_timing_column():
    """The writers' declared schemas (``"name": pl.Float64``) in every library module that writes results
    (cli/ and bench/ print tables or write benchmarks/, which no reference keeps): a timing column added to
    a writer fails here before any reference holds it."""
    declared = re.compile(r"\"(\w+)\":\s*pl\.(?:Float|Int|UInt)\d+")
    found = {}
    for path in sorted((REPO / "src/trustmass").rglob("*.py")):
        if path.relative_to(REPO / "src/trustmass").parts[0] in ("cli", "bench"):
            continue
        for name in declared.findall(path.read_text(encoding="utf-8")):
            if reference.SECONDS_NAME.search(name) and name not in reference.TIMING_COLUMNS:
                found.setdefault(str(path.relative_to(REPO)), []).append(name)
    assert found == {}


def test_every_timing_claim_value_read_from_a_kept_frame_reads_a_timing_column():
    """A claim value marked ``timing: true`` whose headline row is read from a statistics frame the references
    keep (claims 69, 115: deploy_timing.replay_cost_over_dense) reads a column the check leaves out."""
    from trustmass.report.declared import declarations

    kept = {
        Path(rel).stem
        for committed in REFERENCES
        for rel in json.loads((REPO / committed / "MANIFEST.json").read_text(encoding="utf-8"))["files"]
        if rel.startswith("results/stats/") and rel.endswith(".parquet")
    }
    timed = reference.timing_values()
    read = [
        (spec.claim, spec.value, spec.source, spec.column)
        for specs in declarations().values()
        for spec in specs
        if (spec.claim, spec.value) in timed and spec.source in kept
    ]
    assert read and all(column in reference.TIMING_COLUMNS for *_, column in read), read


def test_every_claim_value_in_seconds_is_marked_timing():
    from trustmass.report.claims.data import load_claims

    for c in load_claims():
        for v in c.values:
            assert v.timing or v.unit not in ("ms", "seconds"), (c.id, v.name)


def test_the_timing_columns_say_who_writes_them():
    assert all(len(writer) > 6 for writer in reference.TIMING_COLUMNS.values())
    for name in reference.TIMING_COLUMNS:  # a ratio of times says so in its name ("cost_over")
        assert reference.SECONDS_NAME.search(name) or "cost_over" in name, name


def test_a_list_column_is_compared_as_lists():
    """certified.parquet's ``best`` (the optimum's kept keys) is a list column."""
    a = pl.DataFrame({"best": [[1, 2], [3, 4]], "seconds": [1.0, 2.0]})
    assert reference.compare_frames(a.with_columns(seconds=pl.lit(5.0)), a, 0.0, 0.0) == []
    b = pl.DataFrame({"best": [[1, 2], [3, 5]], "seconds": [1.0, 2.0]})
    assert reference.compare_frames(b, a, 0.0, 0.0) == ["column 'best': 1 of 2 rows differ (row 1: [3, 5] vs [3, 4])"]


def test_a_reference_made_on_another_cpu_model_is_named_beside_its_differences(run, tmp_path, capsys):
    """float32 results differ between CPU models (an Intel Xeon's reference, an AMD EPYC's run: 1e-6 in the
    capture, labels flipped downstream): the check says which CPUs made each side, from the sidecars."""

    def on(root, cpu):
        for sidecar in root.rglob("*.prov.json"):
            record = json.loads(sidecar.read_text())
            sidecar.write_text(json.dumps({**record, "device": {"cpu": cpu}}))

    on(run, "Intel(R) Xeon(R) Processor")
    ref = tmp_path / "ref"
    assert reference.main(["save", "--run", str(run), "--reference", str(ref)]) == 0
    assert reference.main(["check", "--run", str(run), "--reference", str(ref)]) == 0
    assert "CPU:" not in capsys.readouterr().out
    on(run, "AMD EPYC")
    report = reference.check(run, ref)
    assert report.cpus == (["AMD EPYC"], ["Intel(R) Xeon(R) Processor"])
    reference.print_report(report, ref)
    assert "this run's jobs ran on AMD EPYC, the reference's on Intel(R) Xeon(R) Processor" in capsys.readouterr().out
