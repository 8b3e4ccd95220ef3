"""trustmass.plan.controls: the control arms' configurations, twins and paths, and that no control record reaches
the trained study's statistics (nor a trained record an arm's)."""

from __future__ import annotations

import copy

import pytest
import yaml

from conftest import REPO
from trustmass.cli.startup import start
from trustmass.plan import Study
from trustmass.plan.controls import arm_config, arm_path, control_problems, twin_name
from trustmass.plumbing.config import ConfigError
from trustmass.report.catalog import STATISTICS

SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"


def default(**controls) -> dict:
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config["controls"].update(controls)
    return start(config, SCHEMA)


def test_twins_are_models_of_their_own_with_the_trained_shapes_and_roles():
    config = default()
    for arm, suffix in (("randomised_weights", "randomised"), ("shuffled_text", "shuffled")):
        twin = config["models"][f"smollm2-135m.{suffix}"]
        trained = config["models"]["smollm2-135m"]
        assert twin["source"] == "control" and twin["of"] == "smollm2-135m" and twin["control"] == arm
        assert twin["declared"] == trained["declared"] and twin["roles"] == trained["roles"]
        assert twin["seed"] == config["seed"]
    assert config["models"]["smollm2-135m.shuffled"]["documents"]["shuffle"] is True
    assert "shuffle" not in config["models"]["smollm2-135m.randomised"]["documents"]
    assert config["study"]["models"] == ["smollm2-135m"]  # the twins are not study models


def test_no_arms_no_twins_and_no_arm_plans():
    config = default(arms=[])
    assert all(e["source"] != "control" for e in config["models"].values())
    assert Study(config).arms() == {}


def test_arm_config_swaps_the_models_and_keeps_the_trained_text():
    config = default()
    arm = arm_config(config, "randomised_weights")
    twin = twin_name("smollm2-135m", "randomised_weights")
    assert arm["study"]["models"] == [twin]
    assert arm["study"]["headline"] == {"models": [twin], "corpus": "austen"}
    assert arm["study"]["corpora"] == ["austen"]  # the default: the headline corpus alone
    for every in ("all", []):  # every study corpus: claim 41 compares them (the panel, the paper)
        corpora = arm_config(default(corpora=every), "randomised_weights")["study"]["corpora"]
        assert corpora == config["study"]["corpora"]
    assert arm_config(default(corpora=["austen", "stdlib"]), "shuffled_text")["study"]["corpora"] == [
        "austen",
        "stdlib",
    ]
    trained, control = Study(config), Study(arm, arm="randomised_weights")
    # the held-out document and the task contexts are the trained study's chunks, though the controls capture one
    assert control.heldout_ids(twin) == trained.heldout_ids("smollm2-135m")
    assert (
        control.task_settings(twin)["task_contexts"]["first_chunk"]
        == trained.task_settings("smollm2-135m")["task_contexts"]["first_chunk"]
    )
    assert control.doc_ids(twin) == ["0000", "0001"]
    assert config["study"]["models"] == ["smollm2-135m"]  # the study's own config untouched


def test_skip_switches_stages_off_and_the_shuffled_arm_reads_no_benchmark():
    config = default(skip=["probe"])
    config["deploy"]["benchmarks"] = [{"name": "b", "format": "kvpress", "path": "x", "max_length": 400}]
    shuffled = arm_config(config, "shuffled_text")
    assert shuffled["deploy"]["enabled"] is True and shuffled["deploy"]["benchmarks"] == []  # contexts not shuffled
    assert shuffled["loss"]["probe"]["enabled"] is False
    randomised = arm_config(config, "randomised_weights")
    assert randomised["deploy"]["enabled"] is True and randomised["loss"]["probe"]["enabled"] is False
    assert config["loss"]["probe"]["enabled"] is True


def test_pooled_outputs_move_under_the_arm():
    assert arm_path("results/certify/manifest.parquet", None) == "results/certify/manifest.parquet"
    assert (
        arm_path("results/stats/fig1.parquet", "shuffled_text") == "results/controls/shuffled_text/stats/fig1.parquet"
    )
    with pytest.raises(ValueError, match="results/"):
        arm_path("resources/models/x/config.json", "shuffled_text")
    study = Study(default())
    assert (
        study.arms()["randomised_weights"].certify_manifest()
        == "results/controls/randomised_weights/certify/manifest.parquet"
    )
    assert study.of("smollm2-135m.shuffled").arm == "shuffled_text" and study.of("smollm2-135m").arm is None


def _inputs(study: Study) -> list[str]:
    paths = []
    for entry in STATISTICS:
        if not study.statistics_enabled(entry, REPO):
            continue
        for key in entry.inputs.values():
            if not key.startswith("repo:"):
                value = getattr(study, key)()
                paths.extend([value] if isinstance(value, str) else value)
    return paths


def test_control_records_never_reach_the_trained_statistics_nor_trained_records_an_arm():
    study = Study(default())
    trained = _inputs(study)
    assert trained and not [p for p in trained if ".randomised" in p or ".shuffled" in p or "/controls/" in p]
    for arm, plan in study.arms().items():
        paths = [p for p in _inputs(plan) if p != plan.worked_examples()]  # the worked examples take no model
        assert paths
        own = twin_name("smollm2-135m", arm)
        assert all(f"/{own}/" in p or f"/controls/{arm}/" in p or "/corpora/" in p for p in paths), [
            p for p in paths if own not in p and "/controls/" not in p
        ]


@pytest.mark.parametrize(
    ("controls", "field"),
    [
        ({"models": ["nope"]}, "controls.models"),
        ({"corpora": ["stdlib"]}, "controls.corpora"),  # the headline corpus left out
        ({"corpora": ["nope", "austen"]}, "controls.corpora"),
    ],
)
def test_bad_controls_are_refused_naming_the_field(controls, field):
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config["controls"].update(controls)
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        start(config, SCHEMA)


def test_a_twin_name_taken_by_another_model_is_refused():
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config["models"]["smollm2-135m.randomised"] = copy.deepcopy(config["models"]["smollm2-135m"])
    resolved = default()
    resolved["models"]["smollm2-135m.randomised"] = config["models"]["smollm2-135m.randomised"]
    assert any("is taken" in p for p in control_problems(resolved))


def test_a_stage_that_names_no_controlled_model_is_off_in_the_arms():
    config = default()
    config["deploy"]["models"] = ["another-reader"]  # not controlled: its twin does not exist
    for arm in ("randomised_weights", "shuffled_text"):
        assert arm_config(config, arm)["deploy"]["enabled"] is False
    config["deploy"]["models"] = ["smollm2-135m", "another-reader"]
    randomised = arm_config(config, "randomised_weights")
    assert randomised["deploy"] == {**randomised["deploy"], "enabled": True, "models": ["smollm2-135m.randomised"]}


def test_controls_too_short_for_the_probe_are_refused_early():
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config["controls"]["documents"] = {"n_docs": 1, "doc_tokens": None}
    config["controls"]["corpora"] = ["austen"]  # one control corpus: its one document is all the probe has
    with pytest.raises(ConfigError, match=r"controls\.documents\.n_docs: 1 leaves the controls' probe"):
        start(config, SCHEMA)
    config["controls"]["skip"] = ["probe"]
    start(config, SCHEMA)
