"""Capture of prefill attention rows (paper spec §2.3-2.6), without the full attention matrix.

One prefill forward runs with an attention function registered through transformers' attention
interface.  The function computes the layer's output with SDPA (or eager when the model
soft-caps its logits, which SDPA cannot do) -- that is the model's own output -- and, for the
sampled query rows of every head, records

  * the exact attention row p = P[i, :] in float32 (the model's scaling, causal mask, sliding
    window, soft-capping; QK-norm and RoPE are already in q and k),
  * the values and keys of the row's KV head, the query vector, the model's own head output,
  * the H2O accumulated column mass sum_{t<=i} P[t, :] and SnapKV window sums,

through `trustmass.kernels` (Triton on CUDA, PyTorch twins on CPU), in O(N d + rows N) memory.
Every sampled row is validated: sum_j p_j v_j must match the model's own head output to within
:func:`deviation_bound` -- the configured absolute floor (``capture.max_abs_deviation``), or, where
larger, a few roundings of the model dtype at the row's magnitude (a bf16 head output of magnitude
8 is only held to 2^-6).

With an :class:`~trustmass.capture.access.AccessLaws` passed in (``access_law.enabled``), the same
prefill also feeds the access-law diagnostics: each layer hands it the queries, keys and the column
mass just computed, and one greedy decode step reuses the prefill's cache for the first decode row
``p*``.  The shard is the same bytes either way (the access laws are written to a file of their own).
"""

from __future__ import annotations

import contextvars
import hashlib
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from trustmass import kernels
from trustmass.capture.access import AccessLaws
from trustmass.contracts.shards import tensor_name
from trustmass.core.config_conflict import ConfigConflict
from trustmass.sources.attention import default_scaling, dense_attention, register_attention

ATTENTION_NAME = "trustmass_capture"
SNAPKV_WINDOWS = (2, 4, 8, 16, 32)
#: roundings of the model dtype a correct row may deviate by, in units of u * (the row's scale
#: max_c sum_j p_j |v_jc|, which bounds max |o| too): one for the rounding of the model's own head
#: output to its dtype, one for P rounded to the dtype before the value product (eager casts P, SDPA's
#: fused kernels multiply V by P in the dtype), two for the float32 accumulation of the weighted sums
#: in another order and slack.  A real error -- a wrong row, key, value head or mass -- moves the
#: output by a share of the scale itself, far above 4 u (bf16: 1.6 %; fp16: 0.2 %; fp32: 2.4e-7).
ROUNDING_STEPS = 4
_ACTIVE: contextvars.ContextVar = contextvars.ContextVar("trustmass_capture_session", default=None)


class CaptureValidationError(RuntimeError):
    """A captured row disagrees with the model's own head output beyond the tolerance."""


def unit_roundoff(dtype: torch.dtype) -> float:
    """u = 2^-p for a float dtype of p significand bits (half its machine epsilon): bf16 2^-8,
    fp16 2^-11, fp32 2^-24."""
    return torch.finfo(dtype).eps / 2


def deviation_bound(floor: float, dtype: torch.dtype, scale: float) -> float:
    """The largest |sum_j p_j v_j - own output| a correct row may show: ``max(floor, ROUNDING_STEPS *
    u(dtype) * scale)`` with ``scale = max_c sum_j p_j |v_jc|`` of the row and ``floor`` the configured
    ``capture.max_abs_deviation``.  For float32 the rounding term exceeds the 4e-3 floor only at a
    scale above 16,777 (2^22 * 4e-3): at any real model's magnitudes an fp32 capture is held to the
    floor alone, exactly as strictly as by the absolute threshold."""
    return max(float(floor), ROUNDING_STEPS * unit_roundoff(dtype) * float(scale))


@dataclass(frozen=True)
class CaptureOptions:
    rows_per_head: int = 6
    min_position: int = 256  # rows sampled uniformly without replacement from [min, max]
    max_position: int | None = None  # default: the last token
    seed: int = 0
    windows: tuple[int, ...] = SNAPKV_WINDOWS
    max_abs_deviation: float = 4e-3  # abort threshold (spec §2.5)
    emulate_logits_dtype: bool = True  # round logits where eager rounds (bf16 models)
    block_rows: int = 128  # row block of the streamed column-mass pass (128 is fastest on CPU)
    # task contexts (trustmass.sources.task_contexts): retrieval_rows of the rows_per_head rows are
    # drawn from these positions, the others from the remaining positions
    retrieval_positions: tuple[int, ...] = ()
    retrieval_rows: int = 0

    def recorded(self) -> dict:
        """The options as the shard records them (the retrieval fields only where they are used, so a
        plain document's shard is the same bytes as before they existed)."""
        out = {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items()}
        if not self.retrieval_rows:
            del out["retrieval_positions"], out["retrieval_rows"]
        return out


def sample_positions(
    options: CaptureOptions, model: str, doc: str, layer: int, kv_head: int, n_tokens: int
) -> np.ndarray:
    """Seeded query positions for one (layer, KV head), shared by the group's query heads."""
    lo = options.min_position
    hi = n_tokens - 1 if options.max_position is None else min(options.max_position, n_tokens - 1)
    if hi - lo + 1 < options.rows_per_head:
        raise ConfigConflict(
            f"capture.min_position={lo} leaves {max(hi - lo + 1, 0)} positions in a {n_tokens}-token document, "
            f"fewer than capture.rows_per_head={options.rows_per_head}; lower min_position or use longer documents",
            fields=("capture.min_position", "capture.rows_per_head"),
        )
    key = f"{options.seed}|{model}|{doc}|{layer}|{kv_head}".encode()
    rng = np.random.default_rng(int.from_bytes(hashlib.sha256(key).digest()[:8], "little"))
    if not options.retrieval_rows:
        return np.sort(rng.choice(np.arange(lo, hi + 1), size=options.rows_per_head, replace=False))
    retrieval = np.asarray(sorted(set(options.retrieval_positions)), dtype=np.int64)
    background = np.setdiff1d(np.arange(lo, hi + 1), retrieval)
    n_background = options.rows_per_head - options.retrieval_rows
    if (
        retrieval.size < options.retrieval_rows
        or retrieval.min() < lo
        or retrieval.max() > hi
        or background.size < n_background
    ):
        raise ValueError(
            f"{doc}: {retrieval.size} retrieval positions ({retrieval.min() if retrieval.size else '-'}.."
            f"{retrieval.max() if retrieval.size else '-'}) and {background.size} background positions in [{lo}, {hi}] cannot "
            f"give {options.retrieval_rows} retrieval and {n_background} background rows; fix: task_contexts.retrieval_rows "
            "or capture.min_position / max_position"
        )
    chosen = np.concatenate(
        [
            rng.choice(retrieval, size=options.retrieval_rows, replace=False),
            rng.choice(background, size=n_background, replace=False),
        ]
    )
    return np.sort(chosen)


@dataclass
class _Session:
    model_name: str
    doc: str
    n_tokens: int
    options: CaptureOptions
    access: AccessLaws | None = None
    tensors: dict = field(default_factory=dict)
    deviations: list = field(default_factory=list)
    bounds: list = field(default_factory=list)  # per deviation row: its deviation_bound
    layers: dict = field(default_factory=dict)

    def record(self, module, query, key, value, output, scaling, softcap, window):
        layer = int(module.layer_idx)
        q, k, v = query[0], key[0], value[0]  # (Hq, N, d), (Hkv, N, d)
        n_q, n_kv = q.shape[0], k.shape[0]
        group = n_q // n_kv
        kv_of_head = torch.arange(n_q) // group
        kv_positions = np.stack(
            [sample_positions(self.options, self.model_name, self.doc, layer, h, self.n_tokens) for h in range(n_kv)]
        )
        positions = torch.from_numpy(kv_positions[kv_of_head.numpy()]).to(q.device)  # (Hq, R)
        k_per_head = k.index_select(0, kv_of_head.to(k.device))
        logits_dtype = q.dtype if (self.options.emulate_logits_dtype and q.dtype != torch.float32) else None
        kw = dict(scaling=float(scaling), softcap=softcap, window=window, logits_dtype=logits_dtype)
        if kernels.resolve_backend(q) == "triton":  # one statistics pass + one column pass that also emits the rows
            p, acc, wsum = kernels.side_statistics(
                q, k_per_head, positions, windows=self.options.windows, block_rows=self.options.block_rows, **kw
            )
        else:  # the twins (the CPU path): the two calls, as always
            p = kernels.sampled_row_probs(q, k_per_head, positions, **kw)
            acc, wsum = kernels.column_mass_and_window_sums(
                q, k_per_head, positions, windows=self.options.windows, block_rows=self.options.block_rows, **kw
            )
        if self.access is not None:
            self.access.record_prefill(layer, q, k_per_head, positions, acc, group, **kw)
        rows = positions.unsqueeze(-1).expand(-1, -1, q.shape[-1])  # (Hq, R, d)
        own = output[0].transpose(0, 1).float().gather(1, rows)  # model's own head output (Hq, R, d)
        values32 = v.float()
        values_per_head = values32.index_select(0, kv_of_head.to(v.device))
        recomputed = torch.einsum("hrn,hnd->hrd", p, values_per_head)
        dev = (recomputed - own).abs()
        scale = torch.einsum("hrn,hnd->hrd", p, values_per_head.abs()).amax(-1).cpu()  # max_c sum_j p_j |v_jc|
        fields = {
            "positions": torch.from_numpy(kv_positions),
            "p": p.cpu(),
            "acc_mass": acc.cpu(),
            "window_sums": wsum.cpu(),
            "keys": k.float().cpu(),
            "values": values32.cpu(),
            "query": q.float().gather(1, rows).cpu(),
            "output": own.cpu(),
        }
        self.tensors.update({tensor_name(layer, field): tensor for field, tensor in fields.items()})
        self.layers[layer] = {"group_size": group, "window": window, "softcap": softcap, "scaling": float(scaling)}
        max_dev, mean_dev = dev.amax(-1).cpu(), dev.mean(-1).cpu()
        head_positions = kv_positions[kv_of_head.numpy()]  # positions on the host: no device read per row
        for h in range(n_q):
            for r in range(positions.shape[1]):
                self.deviations.append(
                    (
                        layer,
                        h,
                        int(kv_of_head[h]),
                        int(head_positions[h, r]),
                        float(max_dev[h, r]),
                        float(mean_dev[h, r]),
                    )
                )
                self.bounds.append(deviation_bound(self.options.max_abs_deviation, q.dtype, float(scale[h, r])))


def capture_attention(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    """The registered attention function: the model's own output, plus the capture side effects."""
    softcap = kwargs.get("softcap")
    window = kwargs.get("sliding_window")
    scaling = default_scaling(query, scaling)
    output = dense_attention(module, query, key, value, attention_mask, scaling, softcap, dropout)
    session = _ACTIVE.get()
    if session is not None:
        session.record(module, query, key, value, output, scaling, softcap, window)
    return output, None


def register() -> str:
    """Register the capture attention function (and SDPA's mask function) with transformers."""
    return register_attention(ATTENTION_NAME, capture_attention)


def _base_model(model):
    """The decoder stack without the LM head (logits are not needed and cost N x vocab)."""
    return getattr(model, "model", model)


@dataclass
class Capture:
    tensors: dict  # name -> tensor, named and shaped as trustmass.contracts.shards describes
    metadata: dict  # JSON-serialisable description (no timestamps: shards are bit-reproducible)
    deviations: list  # (layer, head, kv_head, position, max_abs_dev, mean_abs_dev)
    access: AccessLaws | None = None  # the access-law evidence, when asked for
    bounds: list = field(default_factory=list)  # per deviation row: the bound it was held to (deviation_bound)

    @property
    def max_abs_deviation(self) -> float:
        return max(d[4] for d in self.deviations)


def capture_document(
    model, token_ids: torch.Tensor, model_name: str, doc: str, options: CaptureOptions, access: AccessLaws | None = None
) -> Capture:
    """Run one prefill and collect every layer's sampled rows; validate them all.  With ``access``, also
    the access-law evidence (:mod:`trustmass.capture.access`) and one greedy decode step."""
    if getattr(model.config, "_attn_implementation", None) != ATTENTION_NAME:
        raise ValueError(
            f"load the model with attn_implementation={ATTENTION_NAME!r} (after trustmass.capture.prefill.register())"
        )
    ids = token_ids.reshape(1, -1).to(next(model.parameters()).device)
    if access is not None:
        access.options.check(ids.shape[1], f"{model_name}/{doc}")
    session = _Session(model_name=model_name, doc=doc, n_tokens=ids.shape[1], options=options, access=access)
    cache = _full_cache() if access is not None else None
    token = _ACTIVE.set(session)
    try:
        with torch.inference_mode():
            out = _base_model(model)(input_ids=ids, use_cache=cache is not None, past_key_values=cache)
    finally:
        _ACTIVE.reset(token)
    if access is not None:
        _decode_step(model, out.last_hidden_state[:, -1], cache, access)
    capture = Capture(
        tensors=session.tensors,
        metadata={
            "model": model_name,
            "doc": doc,
            "n_tokens": int(ids.shape[1]),
            "tokens_sha256": hashlib.sha256(ids.cpu().numpy().astype(np.int64).tobytes()).hexdigest(),
            "layers": {str(k): v for k, v in sorted(session.layers.items())},
            "options": options.recorded(),
            "dtype": str(next(model.parameters()).dtype).replace("torch.", ""),
        },
        deviations=session.deviations,
        access=access,
        bounds=session.bounds,
    )
    dtype = next(model.parameters()).dtype
    over = [i for i, (row, bound) in enumerate(zip(session.deviations, session.bounds, strict=True)) if row[4] > bound]
    if over:
        worst = max(
            over, key=lambda i: session.deviations[i][4] / session.bounds[i] if session.bounds[i] > 0 else float("inf")
        )
        layer, head, _, pos, dev, _ = session.deviations[worst]
        raise CaptureValidationError(
            f"{model_name}/{doc}: layer {layer} head {head} row {pos}: sum_j p_j v_j deviates from the model's own "
            f"head output by {dev:.3g} > {_bound_text(session.bounds[worst], options, dtype)}; no shard written"
        )
    if access is not None:
        bounds = [deviation_bound(options.max_abs_deviation, dtype, scale) for _, scale in access.scales]
        over = [
            (dev / bound if bound > 0 else float("inf"), layer, dev, bound)
            for (layer, dev), bound in zip(access.deviations, bounds, strict=True)
            if dev > bound
        ]
        if over:
            _, layer, dev, bound = max(over)
            raise CaptureValidationError(
                f"{model_name}/{doc}: layer {layer}: the first decode row's sum_j p*_j v_j deviates from the model's own head "
                f"output by {dev:.3g} > {_bound_text(bound, options, dtype)}; no shard written"
            )
    return capture


def _bound_text(bound: float, options: CaptureOptions, dtype: torch.dtype) -> str:
    if bound == options.max_abs_deviation:
        return f"capture.max_abs_deviation={options.max_abs_deviation:g}"
    return (
        f"its bound {bound:.3g} ({ROUNDING_STEPS} roundings of {str(dtype).replace('torch.', '')} at the row's magnitude; "
        f"floor capture.max_abs_deviation={options.max_abs_deviation:g})"
    )


def _full_cache():
    """A cache that keeps every position of every layer (built without the config: a sliding-window
    layer's cache would drop old keys, and the decode row is read over all T + 1 keys)."""
    from transformers import DynamicCache

    return DynamicCache()


def _decode_step(model, last_hidden: torch.Tensor, cache, access: AccessLaws) -> None:
    """One greedy decode step over the prefill's cache; its attention calls record ``p*`` in ``access``."""
    started = time.perf_counter()
    with torch.inference_mode():
        logits = model.get_output_embeddings()(last_hidden)  # [1, V]: the last prefill position only
        next_token = logits.argmax(dim=-1, keepdim=True)  # [1, 1]
        n = cache.get_seq_length()
        token = _ACTIVE.set(access)
        try:
            _base_model(model)(
                input_ids=next_token,
                past_key_values=cache,
                use_cache=True,
                position_ids=torch.full((1, 1), n, device=next_token.device),
            )
        finally:
            _ACTIVE.reset(token)
    access.decode_token = int(next_token)
    access.seconds += time.perf_counter() - started
