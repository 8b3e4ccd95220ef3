"""Fixed selector contract records (related-methods §A.1): hashed, canonical, like-for-like only
when they differ in the ranking scalar alone."""

import dataclasses
import hashlib
import json
import os
import subprocess
import sys

import pytest

from trustmass.core.selectors.run_contract import RunContract, comparable, differing_fields

BASE = RunContract(
    capture_id="tiny-llama/prose/doc-03",
    query_domain="prefix_rows",
    causal_mask="causal",
    observation_window="prefix",
    budget_rule="tokens:8",
    allocation="uniform",
    projection="token_topk+recent:4",
    tie_break="descending_score_then_ascending_position",
    layer_set=(10, 11),
    layer_weights=(0.25, 0.75),
    head_aggregation="per_query_head",
    pooling="none",
    ranking="accumulated_mass",
)

#: one other value per field (the layer tuples keep their length: weights follow the layers)
CHANGED = {
    "capture_id": "tiny-llama/prose/doc-04",
    "query_domain": "window_rows",
    "causal_mask": "sliding_window:4096",
    "observation_window": "16",
    "budget_rule": "tokens:16",
    "allocation": "pyramid",
    "projection": "fit_then_fill:p=2",
    "tie_break": "descending_score_then_descending_position",
    "layer_set": (10, 12),
    "layer_weights": (0.75, 0.25),
    "head_aggregation": "sum",
    "pooling": "max:7",
    "ranking": "accumulated_mass/(T-j)",
}

#: BASE's canonical JSON and its hash, pinned: the canonical form must not drift between versions
BASE_JSON = (
    '{"allocation":"uniform","budget_rule":"tokens:8","capture_id":"tiny-llama/prose/doc-03","causal_mask":"causal",'
    '"head_aggregation":"per_query_head","layer_set":[10,11],"layer_weights":[0.25,0.75],"observation_window":"prefix",'
    '"pooling":"none","projection":"token_topk+recent:4","query_domain":"prefix_rows","ranking":"accumulated_mass",'
    '"tie_break":"descending_score_then_ascending_position"}'
)
BASE_SHA256 = "68ecd61b5034d3777b6911b099597a85801ef731ec13421d9eaf858ce42ff3e6"


def test_every_field_has_a_change():
    assert set(CHANGED) == {f.name for f in dataclasses.fields(RunContract)}


@pytest.mark.parametrize("name", list(CHANGED))
def test_the_hash_changes_exactly_with_a_field_and_only_the_ranking_keeps_runs_comparable(name):
    other = dataclasses.replace(BASE, **{name: CHANGED[name]})
    assert other.sha256 != BASE.sha256
    assert differing_fields(BASE, other) == (name,)
    assert comparable(BASE, other) == (name == "ranking")


def test_equal_records_hash_equally_whatever_their_spelling():
    spelled = RunContract(**{**dataclasses.asdict(BASE), "layer_set": [10, 11], "layer_weights": [0.25, 0.75]})
    assert spelled == BASE and spelled.sha256 == BASE.sha256
    assert comparable(BASE, BASE) and differing_fields(BASE, BASE) == ()
    whole = dataclasses.replace(BASE, layer_weights=(1, 0))  # ints are weights too
    assert (
        whole.layer_weights == (1.0, 0.0) and whole.sha256 == dataclasses.replace(BASE, layer_weights=(1.0, 0.0)).sha256
    )
    two_changes = dataclasses.replace(BASE, ranking="block_mii", projection="strict:p=4")
    assert not comparable(BASE, two_changes) and differing_fields(BASE, two_changes) == ("projection", "ranking")


def test_the_canonical_json_has_sorted_keys_and_no_whitespace():
    text = BASE.canonical_json()
    keys = list(json.loads(text))
    assert keys == sorted(keys) and len(keys) == len(CHANGED)
    assert " " not in text.replace("tiny-llama/prose/doc-03", "") and "\n" not in text
    assert json.loads(text)["layer_weights"] == [0.25, 0.75]


SHA_IN_CHILD = """
import sys
sys.path.insert(0, {tests!r})
from unit.test_run_contract import BASE
print(BASE.sha256)
"""


def test_the_hash_is_the_same_in_another_process():
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    child = subprocess.run(
        [sys.executable, "-c", SHA_IN_CHILD.format(tests=tests)], capture_output=True, text=True, env=env, check=True
    )
    assert child.stdout.strip() == BASE.sha256


def test_the_hash_is_pinned():
    assert BASE.canonical_json() == BASE_JSON
    assert BASE.sha256 == hashlib.sha256(BASE_JSON.encode()).hexdigest() == BASE_SHA256


@pytest.mark.parametrize(
    "change, error",
    [
        ({"layer_weights": (1.0,)}, "one weight per layer"),
        ({"layer_weights": (float("nan"), 1.0)}, "finite"),
        ({"ranking": ""}, "nonempty string"),
        ({"budget_rule": 8}, "nonempty string"),
        ({"layer_set": "10,11"}, "sequence"),
    ],
)
def test_malformed_records_are_refused(change, error):
    with pytest.raises((TypeError, ValueError), match=error):
        dataclasses.replace(BASE, **change)


# ---------------------------------------------------------------------------------------------
# the records of the registered rules
# ---------------------------------------------------------------------------------------------

from trustmass.core.selectors.projection import STRICT  # noqa: E402
from trustmass.core.selectors.registry import REGISTRY  # noqa: E402
from trustmass.core.selectors.run_contract import selector_run  # noqa: E402


def registered_run(name, budget, **kw):
    return selector_run(REGISTRY[name], budget, "tiny/words/0000", (3,), **kw)


@pytest.mark.parametrize("budget", [4, 8, 16, 32, 64])
def test_stage_ii_pairs_of_the_registry_differ_in_the_ranking_alone(budget):
    """Count-debiased vs raw H2O and the three value-aware scalars share everything but the
    ranking; SnapKV vs H2O does not (query rows, window, pooling; their protected recent keys agree
    only where the window and the recency are equal, as at s = 4)."""
    assert differing_fields(registered_run("h2o", budget), registered_run("h2o_debiased", budget)) == ("ranking",)
    for a, b in (("value_aware_mass", "value_aware_nolev"), ("value_aware_nolev", "value_aware_mii")):
        assert comparable(registered_run(a, budget), registered_run(b, budget))
    snap, h2o = registered_run("snapkv", budget), registered_run("h2o", budget)
    assert not comparable(snap, h2o)
    assert {"query_domain", "observation_window", "pooling", "ranking"} <= set(differing_fields(snap, h2o))
    strict = selector_run(
        dataclasses.replace(REGISTRY["value_aware_mii"], projection=STRICT), budget, "tiny/words/0000", (3,)
    )
    assert differing_fields(registered_run("value_aware_mii", budget), strict) == ("projection",)
    # every rule runs under its own record -- except Quest at s = 64, whose pages max(2, s/4) = 16
    # make it the page-16 configuration: the same run, so the same record
    names = [name for name in REGISTRY if budget >= REGISTRY[name].min_budget]
    same = {("quest", "quest_page16")} if budget == 64 else set()
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert (registered_run(a, budget) == registered_run(b, budget)) == ((a, b) in same), (a, b)


def test_a_registered_record_names_the_capture_budget_and_layers():
    r = registered_run("snapkv", 16, layer_weights=(1.0,))
    assert (r.capture_id, r.budget_rule, r.layer_set, r.layer_weights) == ("tiny/words/0000", "tokens:16", (3,), (1.0,))
    assert (r.observation_window, r.pooling, r.projection) == ("8", "max:7", "token_topk+recent:8")
    assert selector_run(REGISTRY["h2o"], 8, "c", (1, 2)).layer_weights == (0.5, 0.5)
    assert not comparable(registered_run("h2o", 8), selector_run(REGISTRY["h2o"], 8, "tiny/words/0001", (3,)))


def test_contrast_names_the_fields_a_comparison_crosses():
    from trustmass.core.selectors.registry import REGISTRY
    from trustmass.core.selectors.run_contract import contrast

    assert contrast(REGISTRY["value_aware_mass"], REGISTRY["value_aware_mii"], 8) == "like_for_like"
    assert contrast(REGISTRY["h2o"], REGISTRY["h2o_debiased"], 8) == "like_for_like"
    crossed = contrast(REGISTRY["top_mass"], REGISTRY["snapkv"], 8)
    assert crossed.startswith("crosses: ") and "query_domain" in crossed and "ranking" not in crossed
