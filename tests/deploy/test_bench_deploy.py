"""The deployment benchmark runs end to end on a real (tiny) HF folder: decode rates and byte ratios
come from the same run, uniform methods hold SnapKV's bytes, and kvpress's head-wise AdaKV as
shipped holds the whole cache."""

import pytest

from trustmass.bench import deploy


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    from workflow.tiny_study import make_tiny_model

    folder = make_tiny_model(tmp_path_factory.mktemp("bench") / "tiny")
    return deploy.run(
        n_keys=96,
        budget=40,
        decode_tokens=3,
        model_dir=str(folder),
        methods=("snapkv", "knorm", "adakv", "contourkv_unenforced"),
    )


def test_every_method_has_a_decode_rate_over_dense(result):
    dense = result["dense_decode_tokens_per_s"]
    for row in result["methods"].values():
        assert row["decode_tokens_per_s"] > 0
        assert row["decode_vs_dense"] == pytest.approx(row["decode_tokens_per_s"] / dense)


def test_bytes_over_snapkv(result):
    rows = result["methods"]
    assert rows["knorm"]["ragged_vs_snapkv"] == 1.0 and rows["knorm"]["as_shipped_vs_snapkv"] == 1.0
    assert rows["snapkv"]["bytes_ragged"] == rows["snapkv"]["bytes_as_shipped"] < result["bytes_full"]
    assert rows["adakv"]["ragged_vs_snapkv"] == 1.0  # same total, spread unevenly over heads
    assert rows["adakv"]["bytes_as_shipped"] > result["bytes_full"]  # every row kept, plus the index tensor
    assert rows["contourkv_unenforced"]["as_shipped_is"] == "layer-padded counterfactual"
    assert rows["contourkv_unenforced"]["bytes_as_shipped"] >= rows["contourkv_unenforced"]["bytes_ragged"]


def test_snapkv_is_required():
    with pytest.raises(ValueError, match="snapkv"):
        deploy.run(methods=("knorm",))
