"""The dense oracle runs on its inputs' device (issue 28: ``hf_additive_mask`` built the mask on the CPU,
so ``test_kernel_cuda.py::test_bf16_emulation_against_cuda_eager`` failed on every case on a GPU).
Checked on the CPU with inputs placed on a virtual accelerator (``device_guard.VirtualDevice``)."""

import pytest
import torch
from device_guard import VirtualDevice
from kernel_oracle import dense_probs, hf_additive_mask, random_case


@pytest.mark.parametrize(
    ("softcap", "window", "logits_dtype"), [(None, None, None), (30.0, 5, None), (None, 5, torch.bfloat16)]
)
def test_the_oracle_builds_its_mask_on_the_inputs_device(softcap, window, logits_dtype):
    q, k, _ = random_case(0, 2, 16, 8, 3)
    want = dense_probs(q, k, 0.35, softcap, window, logits_dtype)
    with VirtualDevice() as dev:
        got = dense_probs(*dev.place([q.clone(), k.clone()]), 0.35, softcap, window, logits_dtype)
        assert got.is_cuda and hf_additive_mask(16, window, torch.float32, got.device).is_cuda
    assert torch.equal(got, want)
