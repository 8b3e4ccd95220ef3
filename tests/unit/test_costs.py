"""trustmass.cli.costs: the paper-scale cost projection (``python -m trustmass.cli.plan --costs``)."""

from __future__ import annotations

import json

import pytest

from conftest import REPO
from trustmass.certification import WORK_UNIT_SECONDS
from trustmass.cli import costs
from trustmass.cli.plan import main
from trustmass.plumbing.config import validate_config

SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"

#: per-unit costs with round numbers, so that every projected hour can be written down by hand
UNITS = {
    "cpu": {
        "ceiling": {"core_seconds_per_unit": 0.5, "at_doc_tokens": 1000},
        "audit": {"core_seconds_per_unit": 2.0, "at_doc_tokens": 1000},
        "certification": {"per_certifier": {"bnb": {"seconds_per_unit_over_budget": 3.0}}, "measured": "today"},
    },
    "gpu": {},
}
UNITS["cpu"]["ceiling"]["measured"] = UNITS["cpu"]["audit"]["measured"] = "today"


def small_config(**overrides) -> dict:
    """Two models (a: 3 layers x 4 heads, b: 2 x 5 with 2 documents of 1,000 tokens) on two corpora."""
    config = {
        "models": {
            "a": {
                "source": "local",
                "path": "/nowhere/a",
                "parameters_b": 1.0,
                "declared": {"layers": 3, "heads": 4, "kv_heads": 2, "head_dim": 8},
            },
            "b": {
                "source": "hub",
                "id": "org/b",
                "parameters_b": 2.0,
                "declared": {"layers": 2, "heads": 5, "head_dim": 16},
                "documents": {"doc_tokens": 1000, "n_docs": 2},
            },
        },
        "corpora": {"x": {"source": "python-stdlib"}, "y": {"source": "local", "path": "/nowhere/y"}},
        "documents": {"doc_tokens": 500, "n_docs": 4},
        "capture": {"rows_per_head": 6},
        "budgets": {"enumerated": [4, 8, 16]},
        "study": {"models": ["a", "b"], "corpora": ["x", "y"], "headline": {"models": ["a"], "corpus": "x"}},
        "task_contexts": {"enabled": False},
        "diagnostics": {"enabled": False},
        "deploy": {"enabled": False},
        "controls": {"arms": []},  # the arms' jobs: test_the_control_arms_jobs_are_counted
        "certification": {
            "certifier": "bnb",
            "per_stratum": 2,
            "n_shards": 3,
            "time_limit_s": 60,
            "bnb_work": 10_000,  # 10^10 work units per probe: 5.6 s at WORK_UNIT_SECONDS
            "sweep": {"budget": 16},  # the sweep widens an enumerated budget
        },
        "loss": {
            "models": ["a"],
            "continuation": 64,
            "heldout": {"n_docs": 2, "doc_tokens": 500},
            "random_seeds": 1,
            "rules": ["snapkv"],
            "accounting": ["per_query"],
            "probe": {"enabled": False},
            "curvature": {"enabled": True, "max_docs": 1},
            "allocation": {"enabled": False},
        },
    }
    config.update(overrides)
    return validate_config(config, SCHEMA)


A_PER_DOC = 3 * 4 * 6 * 3  # layers x heads x rows x budgets = 216
B_PER_DOC = 2 * 5 * 6 * 3  # 180


def by_stage(rows):
    return {r["stage"]: r for r in rows}


def test_jobs_per_stage():
    jobs = costs.job_counts(small_config())
    assert jobs["capture"] == {"capture": 4 * 2 + 2 * 2} and jobs["ceiling"] == {"ceiling": 12}
    assert jobs["audit"] == {"audit": 4, "row_diagnostics": 0}  # the headline documents: a on x
    assert jobs["certification"] == {"certify_manifest": 1, "certify_shard": 3, "certify_sweep": 1}
    assert (
        jobs["loss"]["loss_document"] == 2 * 2
        and jobs["loss"]["loss_curvature"] == 1
        and jobs["loss"]["probe_train"] == 0
    )
    assert sum(jobs["deployment"].values()) == 0


def test_task_contexts_add_captures_of_the_headline_families():
    config = small_config(task_contexts={"enabled": True, "types": ["niah_single", "vt"], "per_type": 3})
    assert costs.job_counts(config)["capture"] == {"capture": 12 + 1 * 2 * 3}


def test_cpu_hours_are_per_unit_costs_times_units_scaled_by_tokens():
    stages = by_stage(costs.projection(small_config(), UNITS, gpu=None))
    ceiling_core_s = 0.5 * (2 * 4 * A_PER_DOC * 500 / 1000 + 2 * 2 * B_PER_DOC * 1000 / 1000)
    assert stages["ceiling/enumeration"]["cpu_hours"] == pytest.approx(ceiling_core_s / 3600)
    assert stages["ceiling/enumeration"]["units"] == {"instances": 8 * A_PER_DOC + 4 * B_PER_DOC}
    assert stages["audit"]["cpu_hours"] == pytest.approx(2.0 * 4 * A_PER_DOC * 0.5 / 3600)
    # bnb: 3.0 x the budget's 5.6 s per instance (not the 60 s safety net); manifest: 1 family x 3 budgets
    # x 10 deciles x 2 per stratum = 60
    assert stages["certification"]["units"] == {"instances": 60}
    assert stages["certification"]["cpu_hours"] == pytest.approx(60 * 3.0 * 1e10 * WORK_UNIT_SECONDS / 3600)
    assert stages["deployment"]["gpu_hours"] == 0.0 and "stage off" in stages["deployment"]["basis"]


def test_without_a_gpu_measurement_the_gpu_stages_say_not_measured(tmp_path, capsys):
    config = small_config()
    stages = by_stage(costs.projection(config, UNITS, gpu=None))
    for stage in ("capture", "loss"):
        assert (
            stages[stage]["gpu_hours"] is None
            and stages[stage]["basis"] == "GPU cost: not measured yet (make gpu-check)"
        )
    costs.print_costs(config, gpu_json=tmp_path / "missing.json")
    out = capsys.readouterr().out
    assert out.count("GPU cost: not measured yet (make gpu-check)") == 2
    total = next(line for line in out.splitlines() if line.startswith("total"))
    assert "--" in total and "not projected for capture, loss" in total


def test_a_dry_run_json_is_not_a_measurement(tmp_path):
    path = tmp_path / "gpu-check.json"
    path.write_text(json.dumps({"mode": "dry-run", "capture": {}}))
    assert costs.load_gpu(path) is None
    path.write_text(json.dumps({"mode": "gpu"}))
    assert costs.load_gpu(path) == {"mode": "gpu"}


def gpu_measurement() -> dict:
    return {
        "mode": "gpu",
        "device": {"name": "Test GPU"},
        "capture": {
            "cases": [
                {
                    "status": "ok",
                    "model": "ref",
                    "dtype": "bfloat16",
                    "n_tokens": 1000,
                    "parameters_b": 0.5,
                    "layers": 2,
                    "heads": 4,
                    "head_dim": 8,
                    "sdpa_forward_s": 1.0,
                    "capture_s": 3.0,
                },
                {
                    "status": "ok",
                    "model": "other",
                    "dtype": "float32",
                    "n_tokens": 4000,
                    "parameters_b": 0.5,
                    "layers": 2,
                    "heads": 4,
                    "head_dim": 8,
                    "sdpa_forward_s": 9.0,
                    "capture_s": 99.0,
                },
            ]
        },
        "loss_forward": {
            "model": "ref",
            "parameters_b": 0.5,
            "n_tokens": 1000,
            "continuation": 32,
            "prefix_s": 2.0,
            "dense_continuation_s": 0.1,
            "top_mass_continuation_s": 0.2,
            "balancing_continuation_s": 0.4,
        },
    }


def test_gpu_hours_from_the_measured_capture_and_loss():
    config = small_config()
    gpu = gpu_measurement()
    stages = by_stage(costs.projection(config, UNITS, gpu))

    # capture, two terms (the bf16 case): forward x (params x tokens) ratio + (capture - forward) x (L H d N^2) ratio
    def doc(params, layers, heads, d, tokens):
        return 1.0 * params * tokens / (0.5 * 1000) + 2.0 * layers * heads * d * tokens**2 / (2 * 4 * 8 * 1000**2)

    capture_s = 8 * doc(1.0, 3, 4, 8, 500) + 4 * doc(2.0, 2, 5, 16, 1000)
    assert stages["capture"]["gpu_hours"] == pytest.approx(capture_s / 3600)
    assert "Test GPU" in stages["capture"]["basis"]
    # loss: (prefix x tokens ratio + configurations x mean restricted continuation x C ratio) x params ratio
    n_configs = costs.loss_configurations(config, "a")
    assert (
        n_configs == 2 + 3 + 1 + 2
    )  # dense, keep-all; top-mass, all-cell, flat switch; one random seed; snapkv, snapkv+flat
    per_doc = (2.0 * 500 / 1000 + n_configs * 0.3 * 64 / 32) * 1.0 / 0.5
    assert stages["loss"]["gpu_hours"] == pytest.approx(4 * per_doc / 3600)


def test_a_gpu_json_without_the_loss_section_names_why():
    gpu = gpu_measurement()
    del gpu["loss_forward"]
    gpu["sections"] = {"loss_forward": {"status": "not run", "reason": "numba is not installed"}}
    stages = by_stage(costs.projection(small_config(), UNITS, gpu))
    assert stages["loss"]["gpu_hours"] is None and "numba is not installed" in stages["loss"]["basis"]
    assert stages["capture"]["gpu_hours"] is not None


def test_the_committed_unit_costs_follow_from_their_inputs():
    units = costs.load_units()
    for stage in ("ceiling", "audit"):
        entry = units["cpu"][stage]
        inputs = entry["inputs"]
        assert entry["core_seconds_per_unit"] == pytest.approx(
            inputs["job_seconds"] * inputs["threads"] / inputs["instances"], rel=1e-4
        )
        assert entry["source"] and entry["measured"] and entry["scaling"]
    for rule in units["cpu"]["certification"]["per_certifier"].values():
        assert rule["seconds_per_unit_over_budget"] == pytest.approx(
            rule["inputs"]["median_seconds"] / rule["inputs"]["budget_s"], rel=1e-4
        )
        assert rule["source"]


def test_the_paper_config_prints_its_projection(tmp_path, capsys):
    assert (
        main(
            ["--configfile", str(REPO / "config" / "paper.yaml"), "--costs", "--gpu-json", str(tmp_path / "none.json")]
        )
        == 0
    )
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    # the ten arms' 263 documents and the 8 control twins' 320 (20 documents and 20 task contexts each)
    assert "583 capture" in lines["capture"] and "583 ceiling" in lines["ceiling/enumeration"]
    # the manifest and its 96 shards once per arm: the study's and each control arm's
    assert "288 certify_shard" in lines["certification"] and "2,880 instances" in lines["certification"]
    assert "240 audit" in lines["audit"] and "80 row_diagnostics" in lines["audit"]  # diagnostics: the study's only
    assert "192 loss_document" in lines["loss"] and "96 loss_diagnostics" in lines["loss"]
    assert "GPU cost: not measured yet (make gpu-check)" in lines["capture"] and "stage off" in lines["deployment"]


def test_every_basis_is_formatted(tmp_path, capsys):
    """The rehearsal (issue 39) found the ceiling and audit bases printed as unformatted f-string fragments
    (``x tokens / {c['at_doc_tokens']:,} ({c['measured']})``): no basis may hold a placeholder."""
    for row in costs.projection(small_config(), UNITS, gpu=None):
        assert "{" not in row["basis"] and "}" not in row["basis"], row
    stages = by_stage(costs.projection(small_config(), UNITS, gpu=None))
    assert (
        stages["ceiling/enumeration"]["basis"] == "500.00 core-ms per instance at 1,000 keys, x tokens / 1,000 (today)"
    )
    assert stages["audit"]["basis"] == "2000.0 core-ms per headline instance at 1,000 keys, x tokens / 1,000 (today)"
    main(["--configfile", str(REPO / "config" / "paper.yaml"), "--costs", "--gpu-json", str(tmp_path / "none.json")])
    out = capsys.readouterr().out
    assert "{" not in out and "}" not in out, out


def test_the_control_arms_jobs_are_counted():
    """The twins of each control arm are jobs like any model's, and each arm pools its own certification: the
    projection counts them (it counted the study's alone -- issue 39); the arms run no fixed-contract diagnostics,
    which no claim reads on them."""
    from trustmass.plan.controls import control_entries

    def with_arms(corpora):
        arms = {"arms": ["randomised_weights", "shuffled_text"], "corpora": corpora}
        config = small_config(controls=arms, diagnostics={"enabled": True})
        config["models"].update(control_entries(config))
        return costs.job_counts(config)

    alone = small_config(diagnostics={"enabled": True})
    jobs, one = with_arms([]), costs.job_counts(alone)
    # each arm: model a's twin on the study corpora x and y, controls.documents' 2 documents each
    assert jobs["capture"]["capture"] == one["capture"]["capture"] + 2 * 2 * 2
    # controls.corpora: headline (config.yaml's default): the headline corpus alone
    assert with_arms("headline")["capture"]["capture"] == one["capture"]["capture"] + 2 * 2 * 1
    assert jobs["certification"] == {k: 3 * v for k, v in one["certification"].items()}
    assert jobs["audit"]["audit"] == one["audit"]["audit"] + 2 * 2  # the headline corpus only
    assert jobs["audit"]["row_diagnostics"] == one["audit"]["row_diagnostics"] > 0
    # the twin's held-out documents on both control corpora, as the study's (2 per corpus): 4 per arm
    assert jobs["loss"]["loss_document"] == one["loss"]["loss_document"] + 2 * 2 * 2
