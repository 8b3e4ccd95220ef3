"""The restricted-forward benchmark runs end to end on a real (tiny) HF folder and reports ratios
measured in the same run, and keep-all reproduces the dense NLL inside it."""

import pytest

from trustmass.bench import restricted


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    from workflow.tiny_study import make_tiny_model

    folder = make_tiny_model(tmp_path_factory.mktemp("bench") / "tiny")
    return restricted.run(
        n_keys=64,
        continuation=16,
        budgets=(4, 8),
        rules=("top_mass", "balancing"),
        model_dir=str(folder),
        repeats=1,
        device="cpu",
    )


def test_every_budget_and_rule_has_a_time_and_a_ratio(result):
    assert [b["budget"] for b in result["budgets"]] == [4, 8]
    for entry in result["budgets"]:
        for rule in ("top_mass", "balancing"):
            assert entry[f"{rule}_s"] > 0
            assert entry[f"{rule}_vs_dense"] == pytest.approx(entry[f"{rule}_s"] / result["dense_s"])
    assert [k["budget"] for k in result["kernel"]] == [4, 8] and all(
        k["throughput_vs_sdpa"] > 0 for k in result["kernel"]
    )


def test_keep_all_reproduces_the_dense_nll(result):
    assert result["keep_all_max_abs_nll_vs_dense"] < 1e-5
