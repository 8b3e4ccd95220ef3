"""Access laws from the capture (trustmass.capture.access) against a dense T x T reference on tiny models:
cumulative attention, tail sums, the last row, the first decode row of a full forward over T + 1 tokens,
the planted target, Prop. 3 on the records, and the shard unchanged."""

import numpy as np
import polars as pl
import pytest
import torch
from capture.tiny_models import tiny_model

from trustmass.capture import prefill as cap
from trustmass.capture.access import AccessLaws, AccessOptions, longest_common_run, planted_target
from trustmass.core.access_law import count_debiased, total_variation

N_TOKENS = 48
OPTIONS = cap.CaptureOptions(rows_per_head=3, min_position=4, seed=7, windows=(2, 4, 8), block_rows=16)
ACCESS = AccessOptions(tail_rows=(4, 8), dilution_rows=16, target=(5, 6, 7), block_rows=7)  # blocks not a divisor of T
KINDS = ["llama", "qwen2", "gemma3", "gemma2"]  # GQA 4:2 and 4:1, a sliding window and QK-norm, soft-capping


def token_ids(seed=0):
    return torch.randint(0, 96, (N_TOKENS,), generator=torch.Generator().manual_seed(seed))


def run(kind, ids, access=ACCESS, options=OPTIONS):
    cap.register()
    laws = None if access is None else AccessLaws(access)
    return cap.capture_document(
        tiny_model(kind, cap.ATTENTION_NAME), ids, f"tiny-{kind}", "doc-0000", options, access=laws
    )


@pytest.fixture(scope="module", params=KINDS)
def captured(request):
    """(kind, capture, dense attention [layer][H, T+1, T+1] of one eager forward over the T + 1 tokens)."""
    ids = token_ids()
    c = run(request.param, ids)
    with torch.inference_mode():
        out = tiny_model(request.param, "eager")(
            input_ids=torch.cat([ids, torch.tensor([c.access.decode_token])])[None], output_attentions=True
        )
    return request.param, c, [a[0].double().numpy() for a in out.attentions], out.logits[0].double()


def test_streamed_laws_equal_the_dense_matrix(captured):
    kind, c, dense, _ = captured
    for layer, P in enumerate(dense):
        prefill, pre = c.access.prefill[layer], P[:, :-1, :-1]  # the T x T prefill block
        assert np.allclose(prefill["column_mass"], pre.sum(axis=1), atol=2e-6), (kind, layer)  # C_i = sum_t A[t, i]
        for j, k in enumerate(ACCESS.windows):
            assert np.allclose(prefill["tails"][:, j], pre[:, -k:].sum(axis=1), atol=1e-6), (kind, layer, k)
        assert np.allclose(prefill["last"], pre[:, -1], atol=1e-6)


def test_first_decode_row_is_the_dense_row_of_a_forward_over_t_plus_one_tokens(captured):
    kind, c, dense, logits = captured
    assert c.access.decode_token == int(logits[N_TOKENS - 1].argmax())  # greedy from the last prefill position
    for layer, P in enumerate(dense):
        assert np.allclose(c.access.decode[layer], P[:, -1], atol=1e-6), (kind, layer)
    assert c.access.max_abs_deviation < 1e-5  # validated against the model's own output, like every captured row


def test_records_hold_the_dense_distances_and_prop3(captured):
    kind, c, dense, _ = captured
    frame = c.access.frame(model="m", corpus="c", doc="0000", doc_id="doc-0000", task="quote_qa")
    n_heads = dense[0].shape[0]
    assert frame.height == len(dense) * n_heads * (4 + len(ACCESS.windows))
    for layer, P in enumerate(dense):
        pre = P[:, :-1, :-1]
        p_last = pre[:, -1] / pre[:, -1].sum(axis=1, keepdims=True)
        p_star = P[:, -1, :-1] / P[:, -1, :-1].sum(axis=1, keepdims=True)
        expected = {
            ("all", None): pre.mean(axis=1),
            ("debiased", None): count_debiased(pre.sum(axis=1)),
            **{("tail", k): pre[:, -k:].mean(axis=1) for k in ACCESS.windows},
        }
        for (law, k), p in expected.items():
            rows = law_rows(frame, layer, law, k)
            assert np.allclose(rows["tv_last"].to_numpy(), total_variation(p, p_last), atol=1e-6), (kind, layer, law, k)
            assert np.allclose(rows["tv_decode"].to_numpy(), total_variation(p, p_star), atol=1e-6), (
                kind,
                layer,
                law,
                k,
            )
            assert np.allclose(rows["target_mass"].to_numpy(), p[:, list(ACCESS.target)].sum(axis=1), atol=1e-6)
        self_mass = law_rows(frame, layer, "last", None)["decode_self_mass"]
        assert np.allclose(self_mass.to_numpy(), P[:, -1, -1], atol=1e-6)
    # Prop. 3 on the records: TV(p*, tail_K) <= TV(p*, p_T) + TV(p_T, tail_K), and the same for the full mixture
    last = frame.filter(pl.col("law") == "last").select("layer", "head", tv_star_last="tv_decode")
    for law in ("tail", "all", "debiased"):
        joined = frame.filter(pl.col("law") == law).join(last, on=["layer", "head"])
        slack = joined["tv_star_last"] + joined["tv_last"] - joined["tv_decode"]
        assert slack.min() >= -1e-12, (kind, law)
    assert set(frame["target"].to_list()) == {"5..7"} and set(frame["task"].to_list()) == {"quote_qa"}


def law_rows(frame, layer, law, k):
    rows = frame.filter((pl.col("layer") == layer) & (pl.col("law") == law))
    return rows.filter(pl.col("tail_rows").is_null() if k is None else pl.col("tail_rows") == k).sort("head")


def test_the_shard_is_the_same_with_and_without_access_laws():
    ids = token_ids(2)
    for kind in ("llama", "gemma3"):
        with_access, without = run(kind, ids), run(kind, ids, access=None)
        assert without.access is None and with_access.access is not None
        assert with_access.metadata == without.metadata
        assert with_access.tensors.keys() == without.tensors.keys()
        for name, tensor in without.tensors.items():
            assert torch.equal(with_access.tensors[name], tensor), (kind, name)


def test_a_tail_longer_than_the_document_is_refused():
    with pytest.raises(ValueError, match="longer than the 48-token document; fix: at most 48"):
        run("llama", token_ids(), access=AccessOptions(tail_rows=(8, 64), dilution_rows=16))


def test_a_decode_row_that_disagrees_with_the_model_aborts(monkeypatch):
    original = AccessLaws.record

    def corrupt(self, module, query, key, value, *args):
        return original(self, module, query, key, value + 0.5, *args)

    monkeypatch.setattr(AccessLaws, "record", corrupt)
    with pytest.raises(cap.CaptureValidationError, match="first decode row"):
        run("llama", token_ids())


def test_longest_common_run():
    assert longest_common_run([7, 8, 9], [1, 7, 8, 9, 2]) == (1, 3)
    assert longest_common_run([7, 8, 1, 2, 3], [1, 2, 3, 0, 7, 8]) == (0, 3)  # the longest, not the first
    assert longest_common_run([5, 6], [5, 0, 6, 5]) == (0, 1)  # ties: the earliest
    assert longest_common_run([1, 2], [3, 4]) == (0, 0)


def test_the_planted_target_is_the_answer_source_run():
    ids = np.array([10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 30, 31, 32, 33, 34, 35])
    # niah: the needle "... is: 7 5 1 ." at 2..8 and the answer " 7 5 1" at 13..15: the value tokens 5..7
    ids_niah = ids.copy()
    ids_niah[[5, 6, 7]] = ids_niah[[13, 14, 15]] = [7, 5, 1]
    record = {"id": "tasks-0000", "planted": [[2, 9]], "answer": [13, 16]}
    assert planted_target(record, ids_niah) == (5, 6, 7)
    # vt: the answer lists names; only the first name sits in the chain's first statement (planted[0])
    ids_vt = ids.copy()
    ids_vt[[3, 4]] = [40, 41]  # "VAR <40 41> = value ."
    ids_vt[[9, 10]] = [42, 43]  # a later statement holds another name
    ids_vt[[12, 13, 14, 15]] = [40, 41, 42, 43]
    record = {"id": "tasks-0001", "planted": [[2, 6], [8, 11]], "answer": [12, 16]}
    assert planted_target(record, ids_vt) == (3, 4)
    assert planted_target({"id": "austen-0000"}, ids) == ()  # a plain document has no target
    with pytest.raises(ValueError, match="share none with the first planted span"):
        planted_target({"id": "tasks-0002", "planted": [[0, 3]], "answer": [13, 16]}, ids)
