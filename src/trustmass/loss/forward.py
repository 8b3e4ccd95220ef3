"""The restricted-operator forward (paper spec §6): a dense prefix, then continuation rows whose
head outputs a policy replaces, and the continuation's cross-entropy.

One attention function is registered with transformers (:data:`ATTENTION_NAME`).  With no policy
active it returns the layer's own output (SDPA, or eager with soft-capping); during the prefix
forward it also keeps what the deployed rules read beyond the continuation rows themselves:

* ``tail``: the exact rows ``P[t, :]`` of the last ``window - 1`` prefix queries (SnapKV's
  observation window reaches back into the prefix);
* ``column_mass``: H2O's accumulated mass ``sum_{t < T-C} P[t, :]`` over the prefix rows.

With a policy active (:meth:`RestrictedForward.nll`), every layer hands the policy a
:class:`LayerCall` -- the continuation queries, the cached keys and values of every position, the
absolute query positions, the layer's scaling, soft-cap and window -- and the policy returns the
head outputs ``[Hq, M, d]`` (float32) that go on to ``o_proj``.

The prefix runs once per document into a ``DynamicCache`` built without the model config, so
every layer keeps all positions (a sliding-window layer's cache would drop old keys and break
absolute key indices; its window is applied by the kernels instead).  Each configuration crops
the cache back to the prefix and forwards the ``C`` continuation tokens at their positions.
Targets are tokens ``T-C+1 .. T-1``, each predicted from a restricted row.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from trustmass import kernels
from trustmass.core.config_conflict import ConfigConflict
from trustmass.sources.attention import default_scaling, dense_attention, register_attention, trailing_row_probs

ATTENTION_NAME = "trustmass_restricted"
_ACTIVE: contextvars.ContextVar = contextvars.ContextVar("trustmass_restricted_state", default=None)


@dataclass(frozen=True)
class LayerCall:
    """What a policy sees at one layer: the continuation rows and every cached key."""

    layer: int
    query: torch.Tensor  # [Hq, M, d] continuation queries (model dtype; post-RoPE, post-QK-norm)
    keys: torch.Tensor  # [Hkv, N, d] cached keys of positions 0..N-1 (N = T at the last block)
    values: torch.Tensor  # [Hkv, N, d]
    positions: torch.Tensor  # [M] int64 absolute query positions
    scaling: float
    softcap: float | None
    window: int | None
    logits_dtype: torch.dtype | None  # the dtype eager rounds logits in (None: float32 model)

    @property
    def group(self) -> int:
        return self.query.shape[0] // self.keys.shape[0]

    def probabilities(self) -> torch.Tensor:
        """The exact rows ``P[positions[m], :]`` of every query head, float32 ``[Hq, M, N]``."""
        return trailing_row_probs(self.query, self.keys, self.scaling, self.softcap, self.window, self.logits_dtype)


@dataclass
class PrefixLayer:
    """Per-layer evidence from the dense prefix (see the module docstring)."""

    tail: torch.Tensor | None = None  # [Hq, w-1, Np] rows of the last w-1 prefix queries
    column_mass: torch.Tensor | None = None  # [Hq, Np] sum over prefix rows of P[t, :]


Policy = Callable[[LayerCall, PrefixLayer], torch.Tensor]


@dataclass
class _State:
    policy: Policy | None = None
    recording: bool = False  # True during the prefix forward
    record_tail: int = 0  # prefix rows to keep (SnapKV window - 1)
    record_column_mass: bool = False
    prefix: dict[int, PrefixLayer] = field(default_factory=dict)


def _logits_dtype(query: torch.Tensor) -> torch.dtype | None:
    return None if query.dtype == torch.float32 else query.dtype


def restricted_attention_function(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    """The registered attention function: the model's own output, or the active policy's."""
    softcap, window = kwargs.get("softcap"), kwargs.get("sliding_window")
    scaling = default_scaling(query, scaling)
    state = _ACTIVE.get()
    layer = int(module.layer_idx)
    if state is None or state.policy is None:
        output = dense_attention(module, query, key, value, attention_mask, scaling, softcap, dropout)
        if state is not None and state.recording:
            state.prefix[layer] = _prefix_evidence(query[0], key[0], scaling, softcap, window, state)
        return output, None
    if query.shape[0] != 1:
        raise ValueError(f"the restricted forward runs one document at a time; got a batch of {query.shape[0]}")
    n_keys, n_rows = key.shape[2], query.shape[2]
    positions = torch.arange(n_keys - n_rows, n_keys, device=query.device)
    call = LayerCall(layer, query[0], key[0], value[0], positions, scaling, softcap, window, _logits_dtype(query))
    out = state.policy(call, state.prefix.get(layer, PrefixLayer()))
    return out.transpose(0, 1).unsqueeze(0).to(query.dtype), None


def _prefix_evidence(q, k, scaling, softcap, window, state: _State) -> PrefixLayer:
    """Tail rows and column mass of the prefix (q [Hq, Np, d], k [Hkv, Np, d])."""
    n_q, n = q.shape[0], q.shape[1]
    k_per_head = k.repeat_interleave(n_q // k.shape[0], dim=0)
    kw = dict(scaling=scaling, softcap=softcap, window=window, logits_dtype=_logits_dtype(q))
    evidence = PrefixLayer()
    if state.record_tail:
        rows = torch.arange(max(0, n - state.record_tail), n, device=q.device)
        evidence.tail = kernels.sampled_row_probs(q, k_per_head, rows.expand(n_q, -1).contiguous(), **kw)
    if state.record_column_mass:
        last = torch.full((n_q, 1), n - 1, dtype=torch.int64, device=q.device)
        acc, _ = kernels.column_mass_and_window_sums(q, k_per_head, last, windows=(2,), **kw)
        evidence.column_mass = acc[:, 0]
    return evidence


def register() -> str:
    """Register the restricted attention function (and SDPA's mask function) with transformers."""
    return register_attention(ATTENTION_NAME, restricted_attention_function)


def token_nll(logits: torch.Tensor, targets: torch.Tensor) -> np.ndarray:
    """Per-token negative log-likelihood in nats, float64 (logits [M, V], targets [M])."""
    logp = torch.log_softmax(logits.double(), dim=-1)
    return (-logp.gather(1, targets.unsqueeze(1)).squeeze(1)).cpu().numpy()


class RestrictedForward:
    """One document: the dense prefix once, then any number of continuation forwards.

    ``tail_rows`` and ``column_mass`` say which prefix evidence to keep (SnapKV's window - 1 rows;
    H2O's column mass); :meth:`nll` runs the continuation under a policy (``None``: dense).
    """

    def __init__(
        self, model, token_ids: torch.Tensor, continuation: int, *, tail_rows: int = 0, column_mass: bool = False
    ):
        if getattr(model.config, "_attn_implementation", None) != ATTENTION_NAME:
            raise ValueError(
                f"load the model with attn_implementation={ATTENTION_NAME!r} (after trustmass.loss.forward.register())"
            )
        ids = torch.as_tensor(token_ids).reshape(-1)
        if not 2 <= continuation < ids.shape[0]:
            raise ConfigConflict(
                f"loss.continuation = {continuation} must be at least 2 and below the document's {ids.shape[0]} tokens; "
                "lower loss.continuation or use longer held-out documents",
                fields=("loss.continuation",),
            )
        self.model = model
        self.device = next(model.parameters()).device
        self.ids = ids.to(self.device)
        self.n_prefix = int(ids.shape[0]) - int(continuation)
        self.state = _State(record_tail=int(tail_rows), record_column_mass=bool(column_mass))
        self.cache = None

    @property
    def continuation_positions(self) -> np.ndarray:
        return np.arange(self.n_prefix, self.ids.shape[0])

    def prefill(self, grad_safe: bool = False) -> None:
        """The dense prefix forward into a full-length cache, keeping the prefix evidence.

        ``grad_safe``: run under ``no_grad`` instead of ``inference_mode`` (inference tensors
        cannot enter an autograd graph; the curvature's continuation differentiates through them).
        """
        from transformers import DynamicCache

        self.cache = DynamicCache()
        self.state.recording = True
        token = _ACTIVE.set(self.state)
        try:
            with torch.no_grad() if grad_safe else torch.inference_mode():
                self.model.model(input_ids=self.ids[None, : self.n_prefix], past_key_values=self.cache, use_cache=True)
        finally:
            _ACTIVE.reset(token)
            self.state.recording = False

    def logits(self, policy: Policy | None) -> torch.Tensor:
        """Continuation logits ``[C, V]`` under `policy` (None: the dense model), float32 (float64 models: float64)."""
        if self.cache is None:
            self.prefill()
        self.cache.crop(self.n_prefix)
        self.state.policy = policy
        token = _ACTIVE.set(self.state)
        try:
            positions = torch.arange(self.n_prefix, self.ids.shape[0], device=self.device)[None]
            out = self.model(
                input_ids=self.ids[None, self.n_prefix :],
                past_key_values=self.cache,
                position_ids=positions,
                use_cache=True,
            )
        finally:
            _ACTIVE.reset(token)
            self.state.policy = None
            self.cache.crop(self.n_prefix)
        return out.logits[0].to(torch.promote_types(out.logits.dtype, torch.float32))

    def nll(self, policy: Policy | None) -> np.ndarray:
        """Per-token NLL (nats, float64) of tokens T-C+1..T-1 under `policy`."""
        with torch.inference_mode():
            return token_nll(self.logits(policy)[:-1], self.ids[self.n_prefix + 1 :])


def full_forward_nll(model, token_ids: torch.Tensor, continuation: int) -> np.ndarray:
    """The same targets' NLL from one dense forward of the whole document (the prefix-reuse check)."""
    ids = torch.as_tensor(token_ids).reshape(1, -1).to(next(model.parameters()).device)
    with torch.inference_mode():
        logits = model(input_ids=ids, use_cache=False).logits[0].float()
    n_prefix = ids.shape[1] - continuation
    return token_nll(logits[n_prefix:-1], ids[0, n_prefix + 1 :])
