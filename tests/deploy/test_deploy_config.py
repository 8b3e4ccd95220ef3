"""The deployment config's start-up checks (trustmass.deploy.names.config_problems, run by common.smk)."""

import copy

import pytest
import yaml

from conftest import REPO
from trustmass.deploy.names import config_problems
from trustmass.deploy.roster import default_methods
from trustmass.plumbing.config import validate_config

SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
DEFAULT = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
#: a well-formed benchmark entry (any existing file passes the start-up check; its records are read by the job)
BENCH = {"name": "ruler4k", "format": "ruler", "path": str(REPO / "config.yaml"), "max_length": 4096}


@pytest.mark.parametrize(
    "change, message",
    [
        (
            {"methods": ["dense", "snapkv", "nope"]},
            "config.deploy.methods: unknown method 'nope'; fix: use one of dense, snapkv",
        ),
        ({"methods": ["dense", "snapkv", "kvzap"]}, "config.deploy.methods: 'kvzap' needs hub access"),
        (
            {"methods": ["dense", "knorm"], "replay": {"methods": []}, "decomposition": {"methods": []}},
            "config.deploy.methods: 'snapkv' is required (bytes are reported over SnapKV's)",
        ),
        ({"budgets": [1024]}, "config.deploy.budgets: 1024 is not below the shortest item length 1024"),
        ({"budgets": [16]}, "config.deploy.budgets: 16 is below ContourKV's floor 32 under the 'counts' reading"),
        (
            {"query_aware": False},
            "config.deploy.decomposition.methods: the decomposition splits question-visible eviction",
        ),
        (
            {"decomposition": {"methods": ["kvzip"]}},
            "config.deploy.decomposition.methods: 'kvzip' does not rank with a press score",
        ),
        ({"replay": {"methods": ["contourkv_enforced"]}}, "'contourkv_enforced' has no kvpress form to replay"),
        ({"haystack": "wikitext"}, "config.deploy.haystack: 'wikitext' is not a corpus of config.corpora"),
        ({"models": ["gemma"]}, "config.deploy.models: 'gemma' is not a model of config.models"),
        (
            {"benchmarks": [{**BENCH, "name": "niah_single"}]},
            "config.deploy.benchmarks[0].name: 'niah_single' is a synthetic task",
        ),
        ({"benchmarks": [BENCH, BENCH]}, "config.deploy.benchmarks[1].name: 'ruler4k' is used twice"),
        (
            {"benchmarks": [{**BENCH, "format": "kvpress"}]},
            "config.deploy.benchmarks[0].family: format 'kvpress' holds RULER",
        ),
        (
            {"benchmarks": [{**BENCH, "path": "hub:simonjegou/ruler:4096"}]},
            "is read from the hub; fix: set deploy.hub: true",
        ),
        (
            {"benchmarks": [{**BENCH, "path": "/no/such.jsonl"}]},
            "config.deploy.benchmarks[0].path: '/no/such.jsonl' does not exist",
        ),
        (
            {"benchmarks": [{**BENCH, "max_length": 128}]},
            "config.deploy.benchmarks[0].max_length: 128 is not above the largest budget",
        ),
        (
            {"benchmarks": [{**BENCH, "format": "longbench", "tasks": ["qasper", "gov_reports"]}]},
            "config.deploy.benchmarks[0].tasks: LongBench task 'gov_reports' is unknown",
        ),
    ],
)
def test_deploy_settings_are_checked_at_start_up(change, message):
    config = copy.deepcopy(DEFAULT)
    config["deploy"].update(change)
    found = config_problems(validate_config(config, SCHEMA))
    assert any(message in p for p in found), found


def test_deploy_hub_methods_pass_with_hub_access_and_a_disabled_stage_is_not_checked():
    config = copy.deepcopy(DEFAULT)
    config["deploy"].update({"hub": True, "methods": [*default_methods(), "kvzap", "duo_attention"]})
    assert config_problems(validate_config(config, SCHEMA)) == []
    config["deploy"].update({"hub": False, "enabled": False})
    assert config_problems(validate_config(config, SCHEMA)) == []
    assert config_problems(validate_config(DEFAULT, SCHEMA)) == []


def test_benchmarks_pass_when_well_formed_and_unknown_keys_fail_the_schema():
    config = copy.deepcopy(DEFAULT)
    config["deploy"]["benchmarks"] = [
        BENCH,
        {**BENCH, "name": "lb", "format": "kvpress", "family": "longbench", "tasks": ["qasper"]},
    ]
    assert config_problems(validate_config(config, SCHEMA)) == []
    config["deploy"]["hub"] = True
    config["deploy"]["benchmarks"] = [
        {**BENCH, "format": "kvpress", "family": "ruler", "path": "hub:simonjegou/ruler:4096"}
    ]
    assert config_problems(validate_config(config, SCHEMA)) == []
    config["deploy"]["benchmarks"] = [{**BENCH, "max_len": 4096}]
    with pytest.raises(Exception, match="max_len"):
        validate_config(config, SCHEMA)
