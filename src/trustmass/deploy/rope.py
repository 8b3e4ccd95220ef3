"""Each attention layer's own rotary embedding, for kvpress presses on models that rotate per layer type.

kvpress (0.5.5) points every attention layer's ``rotary_emb`` at the model's shared rotary module and
calls it as ``module.rotary_emb(x, position_ids)`` (ExpectedAttention's averaged RoPE, and so
ContourKV's scorer) or reads ``module.rotary_emb.inv_freq`` (key re-rotation).  Gemma 3's shared
module holds one frequency table per layer type (sliding layers rotate with base 10,000, full ones
with 1,000,000) and needs ``layer_type`` in the call: without it the call fails
(``'Gemma3RotaryEmbedding' object has no attribute 'None_inv_freq'``).  :func:`layer_typed_rope`
binds each layer's type while a press is applied, so the press rotates as that layer does.
Models whose rotary module takes no ``layer_type`` (Llama, Qwen2) are left as they are.
"""

from __future__ import annotations

import inspect
from contextlib import contextmanager

import torch


class LayerTypedRotary(torch.nn.Module):
    """The model's shared rotary module with one layer's type bound."""

    def __init__(self, shared: torch.nn.Module, layer_type: str):
        super().__init__()
        self.shared = shared
        self.layer_type = layer_type

    def forward(self, x, position_ids):
        return self.shared(x, position_ids, layer_type=self.layer_type)

    @property
    def inv_freq(self) -> torch.Tensor:
        return getattr(self.shared, f"{self.layer_type}_inv_freq")


def _language_model(model):
    inner = model.model
    return inner.language_model if hasattr(inner, "language_model") else inner


def takes_layer_type(rotary: torch.nn.Module) -> bool:
    """Whether a rotary module's forward needs the layer type (one frequency table per type)."""
    return "layer_type" in inspect.signature(rotary.forward).parameters


@contextmanager
def layer_typed_rope(model):
    """While inside, every attention layer's ``rotary_emb`` is the shared module bound to its own type.

    Enter it inside the press's own context (``with press(model), layer_typed_rope(model):``): the
    press points every layer at the shared module when it is entered.  On exit each layer gets the
    shared module back, as the press left it."""
    language_model = _language_model(model)
    shared = getattr(language_model, "rotary_emb", None)
    if shared is None or not takes_layer_type(shared):
        yield
        return
    attentions = [layer.self_attn for layer in language_model.layers]
    for attention in attentions:
        attention.rotary_emb = LayerTypedRotary(shared, attention.layer_type)
    try:
        yield
    finally:
        for attention in attentions:
            attention.rotary_emb = shared
