"""The capture's validation bound (issue 28, item 2): max(capture.max_abs_deviation, 4 u(dtype) * the
row's scale max_c sum_j p_j |v_jc|).  A bf16 row of large magnitude that is right passes (its output's own
rounding alone crosses the absolute 4e-3), a planted error still aborts, and float32 is held to the
absolute floor exactly as before."""

import polars as pl
import pytest
import torch
from capture.tiny_models import tiny_model

from trustmass.capture import prefill as cap
from trustmass.capture import shards
from trustmass.contracts.shards import DEVIATION_COLUMNS

FLOOR = 4e-3  # capture.max_abs_deviation in config.yaml
N_TOKENS = 48
OPTIONS = cap.CaptureOptions(rows_per_head=3, min_position=4, seed=7, windows=(2, 4, 8), block_rows=16)
#: v_proj scaled by a power of two: bf16 rounds the scaled values and outputs exactly as the unscaled ones,
#: scaled, so the row is right and its deviation is rounding alone -- of magnitude 256 times a bf16 step
VALUE_SCALE = 256.0


def token_ids(seed=0):
    return torch.randint(0, 96, (N_TOKENS,), generator=torch.Generator().manual_seed(seed))


def large_bf16_llama():
    cap.register()
    model = tiny_model("llama", cap.ATTENTION_NAME, dtype=torch.bfloat16)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.v_proj.weight.mul_(VALUE_SCALE)
    return model


def test_unit_roundoff_and_the_float32_floor():
    assert cap.unit_roundoff(torch.bfloat16) == 2.0**-8
    assert cap.unit_roundoff(torch.float16) == 2.0**-11
    assert cap.unit_roundoff(torch.float32) == 2.0**-24
    for scale in (0.0, 1.0, 50.0, 1e3, 1e4, 16_000.0):  # far beyond any model's attention output
        assert cap.deviation_bound(FLOOR, torch.float32, scale) == FLOOR  # the floor, bit for bit
    assert cap.deviation_bound(FLOOR, torch.float32, 2.0**22 * FLOOR * 2) > FLOOR  # the crossover: 16,777
    assert cap.deviation_bound(FLOOR, torch.bfloat16, 0.25) == FLOOR  # 4 * 2^-8 * 0.25 < 4e-3
    assert cap.deviation_bound(FLOOR, torch.bfloat16, 8.0) == pytest.approx(4 * 8.0 / 256)


def test_float32_captures_are_held_to_the_floor_and_report_as_before(tmp_path):
    cap.register()
    c = cap.capture_document(tiny_model("llama", cap.ATTENTION_NAME), token_ids(), "tiny-llama", "d", OPTIONS)
    assert c.bounds == [OPTIONS.max_abs_deviation] * len(c.deviations)
    summary = shards.write_validation_report(c, tmp_path / "v.parquet")
    assert pl.read_parquet(tmp_path / "v.parquet").columns == DEVIATION_COLUMNS  # the report's columns unchanged
    assert summary["max_bound"] == summary["threshold"] == OPTIONS.max_abs_deviation


def test_a_large_bf16_row_that_is_right_passes():
    c = cap.capture_document(large_bf16_llama(), token_ids(), "tiny-llama-bf16", "d", OPTIONS)
    devs = [d[4] for d in c.deviations]
    assert max(devs) > FLOOR  # the absolute threshold alone would abort this capture
    assert all(dev <= bound for dev, bound in zip(devs, c.bounds, strict=True))
    assert max(c.bounds) > FLOOR


@pytest.mark.parametrize("delta", [0.05, -0.05])
def test_a_planted_error_in_one_mass_still_aborts(monkeypatch, delta):
    """One entry of one captured row moved by 5 % of the row's mass (key 0, visible to every row)."""
    original = cap.kernels.sampled_row_probs

    def planted(*args, **kwargs):
        p = original(*args, **kwargs)
        p[0, 0, 0] = (p[0, 0, 0] + delta).clamp(min=0.0)
        return p

    model = large_bf16_llama()
    monkeypatch.setattr(cap.kernels, "sampled_row_probs", planted)
    with pytest.raises(cap.CaptureValidationError, match=r"layer 0 head 0 .*roundings of bfloat16"):
        cap.capture_document(model, token_ids(), "tiny-llama-bf16", "d", OPTIONS)


def test_the_bound_on_rows_rounded_as_a_bf16_model_rounds_them():
    """Synthetic rows through the PyTorch path: P rounded to bf16 before the value product, float32
    accumulation, the output rounded to bf16 -- what a bf16 model's SDPA does -- against the float32
    recomputation from the exact rows.  Every correct row sits well inside its bound at magnitudes
    where 4e-3 is below one bf16 step; moving 2 % of one row's mass between two keys leaves it."""
    gen = torch.Generator().manual_seed(0)
    rows, n, d = 256, 1024, 128
    logits = torch.randn(rows, n, generator=gen) * 3
    p = torch.softmax(logits, dim=-1)
    v = (torch.randn(n, d, generator=gen) * 40).bfloat16().float()  # bf16 values of magnitude ~100
    own = (p.bfloat16().float() @ v).bfloat16().float()  # the model's own head outputs
    recomputed = p @ v
    scale = (p @ v.abs()).amax(-1)
    dev = (recomputed - own).abs().amax(-1)
    bound = torch.tensor([cap.deviation_bound(FLOOR, torch.bfloat16, float(s)) for s in scale])
    assert float(dev.max()) > 10 * FLOOR  # the absolute threshold would abort every such capture
    assert float((dev / bound).max()) < 0.5  # a factor two to spare
    moved = p.clone()
    top = p.argmax(-1)
    moved[torch.arange(rows), top] -= 0.02
    moved[:, 0] += 0.02  # the mass goes to key 0 (a different key on all but a few rows)
    wrong = ((moved @ v - own).abs().amax(-1) > bound) | (top == 0)
    assert bool(wrong.all())
