"""kvpress wraps every attention function registered before its import and calls it as transformers
does, ``(module, query, key, value, attention_mask, dropout, **kwargs)``; ours must take that order."""

import pytest
import torch
from capture.tiny_models import tiny_model
from kvpress.attention_patch import attention_patch

from trustmass.capture.prefill import capture_attention
from trustmass.deploy.ragged import ragged_attention_function
from trustmass.loss.forward import restricted_attention_function
from trustmass.sources.attention import register_attention


@pytest.mark.parametrize(
    "function", [capture_attention, restricted_attention_function, ragged_attention_function], ids=lambda f: f.__name__
)
def test_our_attention_functions_survive_kvpress_wrapping(function):
    """Wrapped by kvpress, each gives the model's own SDPA logits (outside its own session)."""
    name = register_attention(f"test_kvpress_wrapped_{function.__name__}", attention_patch(function))
    wrapped, sdpa = tiny_model("llama", name), tiny_model("llama", "sdpa")
    ids = torch.randint(0, wrapped.config.vocab_size, (1, 24), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        difference = (wrapped(ids).logits - sdpa(ids).logits).abs().max().item()
    assert difference < 1e-5
