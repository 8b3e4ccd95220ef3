"""Config validation: defaults, closed schema, and messages that name the field and the fix."""

import copy

import pytest
import yaml

from conftest import REPO
from trustmass.plumbing.config import ConfigError, config_slice, load_schema, validate_config

SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
DEFAULT = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))


def problems(config) -> list[str]:
    with pytest.raises(ConfigError) as info:
        validate_config(config, SCHEMA)
    assert str(info.value).count("\n  - ") == len(info.value.problems)
    return info.value.problems


def test_embedded_default_is_valid_and_unchanged():
    assert validate_config(DEFAULT, SCHEMA) == DEFAULT


def test_the_defaults_are_the_embedded_default_alone():
    # one copy of every default: config.yaml; the schema holds none, a partial config is merged over config.yaml
    assert validate_config({}, SCHEMA) == DEFAULT
    assert "default:" not in SCHEMA.read_text(encoding="utf-8").replace("(default:", "").replace(
        "tokenizer-default:", ""
    )
    other = {**DEFAULT, "seed": 5}
    assert validate_config({}, SCHEMA, defaults=other)["seed"] == 5  # read from the defaults given, nowhere else


def test_a_partial_config_merges_as_snakemake_merges_a_configfile():
    from snakemake.utils import update_config

    partial = yaml.safe_load((REPO / "config" / "paper.yaml").read_text(encoding="utf-8"))
    snakemake_merged = copy.deepcopy(DEFAULT)
    update_config(snakemake_merged, copy.deepcopy(partial))
    assert validate_config(partial, SCHEMA) == validate_config(snakemake_merged, SCHEMA)


def test_partial_config_gets_the_remaining_defaults():
    resolved = validate_config({"enumeration": {"subset_cap": 1000}}, SCHEMA)
    assert resolved["enumeration"] == {**DEFAULT["enumeration"], "subset_cap": 1000}
    assert resolved["benchmark"] == DEFAULT["benchmark"]


def test_input_is_not_modified():
    config = {"enumeration": {"subset_cap": 1000}}
    before = copy.deepcopy(config)
    validate_config(config, SCHEMA)
    assert config == before


def test_every_object_is_closed_and_every_setting_documented():
    def walk(node, where):
        if node.get("type") == "object" and "properties" in node:
            assert node.get("additionalProperties") is False, f"{where}: add additionalProperties: false"
            for key, child in node["properties"].items():
                walk(child, f"{where}.{key}")
        else:
            assert "default" not in node, f"{where}: the default is config.yaml's value; remove it here"
            assert node.get("description"), f"{where}: needs a description (quoted in error messages)"
            assert _has(DEFAULT, where.split(".")[1:]), f"{where}: set its default in config.yaml"

    walk(load_schema(SCHEMA), "config")


def _has(config, keys) -> bool:
    for key in keys:
        if not isinstance(config, dict) or key not in config:
            return False
        config = config[key]
    return True


def test_unknown_top_level_key_names_it_lists_the_allowed_and_suggests():
    [line] = problems({**DEFAULT, "enumeratoin": {"subset_cap": 5}})
    assert line.startswith("config: unknown key 'enumeratoin' at top level; allowed: ")
    assert (
        "balancing, benchmark, budgets, cache_dir, capture, certification, controls, corpora, deploy, diagnostics, documents"
        in line
    )
    assert "did you mean 'enumeration'?" in line


def test_unknown_key_without_a_close_match_says_to_remove_it():
    [line] = problems({"zzz": 1})
    assert "unknown key 'zzz'" in line and "fix: remove it" in line


def test_unknown_nested_key():
    [line] = problems({"budgets": {"enumerate": [4]}})
    assert line.startswith("config: unknown key 'enumerate' in config.budgets; allowed: enumerated, native")
    assert "did you mean 'enumerated'?" in line


def test_wrong_type_names_the_field_and_the_fix():
    [line] = problems({"enumeration": {"subset_cap": "abc"}})
    assert line.startswith("config.enumeration.subset_cap: expected integer, got 'abc' (str)")
    assert "fix: set an integer, e.g. 200000 (the default)" in line


def test_booleans_are_not_integers():
    [line] = problems({"seed": True})
    assert line.startswith("config.seed: expected integer, got True (bool)")


def test_yaml_exponent_without_a_dot_gets_a_hint():
    config = yaml.safe_load("leverage:\n  ridge: 1e-3\n")  # PyYAML (YAML 1.1) reads this as text
    [line] = problems(config)
    assert line.startswith("config.leverage.ridge: expected number, got '1e-3' (str)")
    assert "1.0e-3" in line


def test_list_items_are_located():
    found = problems({"budgets": {"enumerated": [4, "x", 0]}})
    assert found[0].startswith("config.budgets.enumerated[1]: expected integer, got 'x'")
    assert found[1].startswith("config.budgets.enumerated[2]: got 0, must be >= 1")


def test_all_problems_are_reported_together():
    found = problems({"seed": -1, "benchmark": {"n_keys": "many"}, "labels": {"kappa": 1.2}})
    assert len(found) == 3


def test_extra_override_keys_become_integer_budgets():
    resolved = validate_config({"enumeration": {"extra_override": {"32": 6}}}, SCHEMA)
    assert resolved["enumeration"]["extra_override"] == {32: 6}
    resolved = validate_config(yaml.safe_load("enumeration:\n  extra_override: {32: 6}\n"), SCHEMA)
    assert resolved["enumeration"]["extra_override"] == {32: 6}


def test_extra_override_for_a_budget_that_is_not_enumerated():
    [line] = problems({"enumeration": {"extra_override": {48: 6}}})
    assert "budget 48 is not in budgets.enumerated" in line and "fix:" in line


def test_extra_override_key_must_be_a_budget():
    [line] = problems({"enumeration": {"extra_override": {"big": 6}}})
    assert line.startswith("config.enumeration.extra_override: key 'big' is not allowed")


def test_config_slice_nests_like_the_config():
    config = validate_config({}, SCHEMA)
    assert config_slice(config, "seed", "budgets/enumerated", "benchmark") == {
        "seed": 0,
        "budgets": {"enumerated": [4, 8, 16, 32]},
        "benchmark": {"n_keys": 4096, "head_dim": 64, "instances": 8},
    }
    sliced = config_slice(config, "budgets/native")
    sliced["budgets"]["native"].append(1)
    assert config["budgets"]["native"] == [64, 128, 256]  # a copy


def test_config_slice_names_a_missing_key():
    with pytest.raises(KeyError, match="budgets/enumeratd"):
        config_slice(DEFAULT, "budgets/enumeratd")


def test_capture_windows_must_cover_snapkv_at_every_budget():
    # s = 40 needs SnapKV's window 20; s = 2 needs window 1 (the row itself, never captured)
    [line] = problems(
        {
            "budgets": {"enumerated": [2, 4, 8], "native": [40, 64]},
            "capture": {"windows": [2, 4, 32]},
            "certification": {"sweep": {"budget": 8}},
        }
    )
    assert line.startswith("config.capture.windows:") and "20 (budget 40)" in line
    assert "fix: capture.windows: [2, 4, 20, 32]" in line
    validate_config({"budgets": {"native": [40]}, "capture": {"windows": [2, 4, 8, 16, 20, 32]}}, SCHEMA)


def test_stage_settings_from_the_default_config():
    from trustmass.audit.records import AuditSettings
    from trustmass.ceiling.records import CeilingSettings
    from trustmass.core.enumeration import PoolRule

    config = validate_config({}, SCHEMA)
    assert CeilingSettings.from_config(config) == CeilingSettings()
    assert AuditSettings.from_config(config) == AuditSettings()
    custom = validate_config(
        {
            "budgets": {"enumerated": [4, 32]},
            "enumeration": {"extra_override": {"32": 5}},
            "statistics": {"map_budget": 4},
        },
        SCHEMA,
    )
    ceiling, audit = CeilingSettings.from_config(custom), AuditSettings.from_config(custom)
    assert ceiling.enumerated == audit.enumerated == (4, 32) and ceiling.pool.extra(32) == audit.pool.extra(32) == 5
    assert ceiling.pool == audit.pool == PoolRule.from_config(custom)  # one pool rule, read by both stages


def test_snapkv_window_has_one_definition(monkeypatch):
    """The config check and the audit's SnapKV both read core.windows when they run: change the rule
    there and both follow (a restated formula in either would not)."""
    from trustmass.core import windows
    from trustmass.core.selectors.deployed import SnapKV

    monkeypatch.setattr(windows, "snapkv_window", lambda budget, max_window=32: 3)
    assert SnapKV().window(64) == 3
    [line] = problems({"capture": {"windows": [2, 4, 8, 16, 32]}})
    assert "the SnapKV window(s) 3 (budget 4/8/16/32/64/128/256)" in line
    assert "(window = max(1, min(32, s/2)))" in line


def test_the_headline_population_must_be_part_of_the_study():
    config = copy.deepcopy(DEFAULT)
    config["study"]["headline"] = {"models": ["olmo"], "corpus": "wikitext"}
    found = problems(config)
    assert any("config.study.headline.models: 'olmo' is not in study.models" in p for p in found)
    assert any("config.study.headline.corpus: 'wikitext' is not in study.corpora" in p for p in found)


def test_roles_and_contents_are_checked():
    from trustmass.report.claims.roles import role_problems

    config = validate_config(DEFAULT, SCHEMA)
    assert role_problems(config) == []
    config["models"]["smollm2-135m"]["roles"] = ["referense", "group_size_1"]
    found = role_problems(config)
    assert any("unknown role 'referense'" in p for p in found)
    assert any("role 'group_size_1' needs 1 query head(s) per KV head, but declared is 9/3" in p for p in found)
    config["models"]["twin"] = {**config["models"]["smollm2-135m"], "roles": ["reference"]}
    config["models"]["smollm2-135m"]["roles"] = ["reference"]
    config["study"]["models"] = ["smollm2-135m", "twin"]
    assert any("already played by 'smollm2-135m'" in p for p in role_problems(config))
    bad = copy.deepcopy(DEFAULT)
    bad["corpora"]["stdlib"]["content"] = "poetry"
    assert any("content" in p for p in problems(bad))


@pytest.mark.parametrize(
    ("documents", "heldout", "first"),
    [
        ({"n_docs": 3, "doc_tokens": 2048}, {}, 12),  # the default: 512-token chunks after 6,144 capture tokens
        ({"n_docs": 20, "doc_tokens": 4096}, {"doc_tokens": None}, 20),  # paper.yaml, loss-cpu.yaml
        ({"n_docs": 3, "doc_tokens": 2048}, {"doc_tokens": 4096}, 2),  # longer held-out chunks: 6,144 tokens -> chunk 2
        ({"n_docs": 3, "doc_tokens": 2048}, {"first_doc": 15}, 15),  # a stated first chunk stands
    ],
)
def test_the_first_heldout_chunk_follows_the_capture_text(documents, heldout, first):
    from trustmass.plumbing.config_checks import heldout_first_doc

    config = copy.deepcopy(DEFAULT)
    config["documents"].update(documents)
    config["loss"]["heldout"].update(heldout)
    resolved = validate_config(config, SCHEMA)
    assert heldout_first_doc(resolved) == first
    # a model's own documents: override (the paper's 7B at 3 x 16,384 tokens) moves its first chunk
    assert heldout_first_doc(resolved, {"n_docs": 3, "doc_tokens": 16384}) == (
        first if "first_doc" in heldout else -(-3 * 16384 // int(resolved["loss"]["heldout"]["doc_tokens"] or 16384))
    )


def test_a_budget_above_the_first_sampled_row_is_refused():
    # a row at position 256 sees 257 keys: a budget of 300 keeps them all and evicts nothing
    [line] = problems({"budgets": {"native": [64, 300, 512]}})
    assert line.startswith("config.budgets.native: 300, 512 above capture.min_position 256")
    assert "fix: budgets of at most 256, or capture.min_position: 512 or more" in line
    [line] = problems(
        {
            "budgets": {"enumerated": [4, 40], "native": [32]},
            "statistics": {"map_budget": 4},
            "capture": {"min_position": 32, "windows": [2, 4, 8, 16, 20, 32]},
            "certification": {"sweep": {"budget": 4}},
        }
    )
    assert line.startswith("config.budgets.enumerated: 40 above capture.min_position 32")
    # at the first sampled row itself (s = min_position) one key is still evicted: allowed
    validate_config({"budgets": {"native": [256]}}, SCHEMA)


def test_documents_must_leave_rows_to_sample():
    [line] = problems({"documents": {"doc_tokens": 260}})  # positions 256..259: 4 < rows_per_head 6
    assert line.startswith(
        "config.capture.min_position: 256 leaves 4 positions to sample in the 260-token documents of documents"
    )
    assert "fewer than capture.rows_per_head 6; fix:" in line
    [line] = problems(
        {"capture": {"max_position": 300, "min_position": 298, "rows_per_head": 6}, "budgets": {"native": [64]}}
    )
    assert "leaves 3 positions" in line and "(capture.max_position 300)" in line
    # a study model's own documents are checked too (another model's are not captured)
    config = {
        "models": {"m": {"source": "local", "path": "/x", "documents": {"doc_tokens": 200}}},
        "corpora": {"c": {"source": "local", "path": "/y"}},
        "study": {"models": ["m"], "corpora": ["c"]},
    }
    [line] = problems(config)
    assert "of models.m.documents" in line
    config["study"]["models"] = []
    validate_config(config, SCHEMA)


def test_access_law_tails_must_fit_in_the_documents():
    [line] = problems({"access_law": {"tail_rows": [8, 4096]}})
    assert line == (
        "config.access_law.tail_rows: 4096 rows are longer than the 2048-token documents of documents; "
        "fix: at most 2048 (or longer documents, doc_tokens)"
    )
    [line] = problems({"access_law": {"dilution_rows": 3000}, "documents": {"doc_tokens": 1024}})
    assert line.startswith(
        "config.access_law.dilution_rows: 3000 rows are longer than the 1024-token documents of documents"
    )
    # a study model's own documents are checked too
    config = {
        "models": {"m": {"source": "local", "path": "/x", "documents": {"doc_tokens": 300}}},
        "corpora": {"c": {"source": "local", "path": "/y"}},
        "study": {"models": ["m"], "corpora": ["c"]},
        "access_law": {"tail_rows": [8, 512]},
    }
    lines = problems(config)
    assert any(
        p.startswith(
            "config.access_law.tail_rows: 512 rows are longer than the 300-token documents of models.m.documents"
        )
        for p in lines
    ), lines
    # switched off: not checked; the schema still refuses a K of 0 and a repeated K
    validate_config({"access_law": {"enabled": False, "tail_rows": [4096]}}, SCHEMA)
    [line] = problems({"access_law": {"tail_rows": [0]}})
    assert line.startswith("config.access_law.tail_rows[0]: got 0, must be >= 1")
    [line] = problems({"access_law": {"tail_rows": [8, 8]}})
    assert line.startswith("config.access_law.tail_rows:") and "non-unique" in line


def test_the_map_budget_must_be_enumerated():
    [line] = problems({"statistics": {"map_budget": 5}})
    assert line.startswith("config.statistics.map_budget: 5 is not in budgets.enumerated [4, 8, 16, 32]")
    assert "fix: add 5 to budgets.enumerated" in line


def test_scheduling_settings_stay_out_of_config_slices():
    config = {
        "certification": {"runtime_min": 30, "memory_limit_mb": 2000, "n_shards": 4},
        "models": {"a": {"mem_mb": 3000, "dtype": "float32"}, "b": {"dtype": "bfloat16"}},
        "deploy": {"threads": 1},
    }
    assert config_slice(config, "certification", "models", "deploy") == {
        "certification": {"memory_limit_mb": 2000, "n_shards": 4},  # SCIP's memory limit can change a result
        "models": {"a": {"dtype": "float32"}, "b": {"dtype": "bfloat16"}},
        "deploy": {"threads": 1},  # torch's threads split its reductions: kept
    }
    assert config_slice(config, "certification", scheduling=True)["certification"]["runtime_min"] == 30
    assert config["certification"]["runtime_min"] == 30  # the config itself untouched
