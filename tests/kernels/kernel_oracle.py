"""Dense oracle for the capture kernels: materialise P exactly as transformers' eager attention does.

Independent of `trustmass.kernels`: the N x N logits, transformers' own additive mask
(`masking_utils.eager_mask` with `causal_mask_function` / `sliding_window_causal_mask_function`,
finfo.min where masked) and the eager op sequence (Llama's `eager_attention_forward`; Gemma-2's
for soft-capping), on small shapes only.
"""

from __future__ import annotations

import torch
from transformers.masking_utils import causal_mask_function, eager_mask, sliding_window_causal_mask_function


def hf_additive_mask(
    n: int, window: int | None, dtype: torch.dtype, device: torch.device | str | None = None
) -> torch.Tensor:
    """transformers' eager mask ``[1, 1, n, n]`` (0 visible, finfo(dtype).min masked) on ``device``
    (transformers builds it on the device of ``cache_position``; default the CPU)."""
    fn = causal_mask_function if window is None else sliding_window_causal_mask_function(window)
    position = torch.arange(n, device=device)
    return eager_mask(batch_size=1, cache_position=position, kv_length=n, mask_function=fn, dtype=dtype)


def dense_probs(q, k, scaling, softcap=None, window=None, logits_dtype=None) -> torch.Tensor:
    """Full float32 P ``[H, N, N]``: eager logits in the model dtype, mask added, fp32 softmax."""
    dtype = torch.float32 if logits_dtype is None else logits_dtype
    query, key = q.to(dtype).unsqueeze(0), k.to(dtype).unsqueeze(0)  # [1, H, N, d]
    weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    if softcap is not None:
        weights = weights / softcap
        weights = torch.tanh(weights)
        weights = weights * softcap
    weights = weights + hf_additive_mask(q.shape[1], window, dtype, q.device)
    return torch.nn.functional.softmax(weights, dim=-1, dtype=torch.float32)[0]


def dense_rows(P: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    return P.gather(1, positions.long().unsqueeze(-1).expand(-1, -1, P.shape[-1]))


def dense_column_stats(P: torch.Tensor, positions: torch.Tensor, windows) -> tuple[torch.Tensor, torch.Tensor]:
    """float64 ``acc[h, r] = sum_{t <= i} P[t]`` and ``wsum[h, r, w] = sum_{t=i-w+1..i, t>=0} P[t]``."""
    P = P.double()
    H, N, _ = P.shape
    acc = torch.zeros(H, positions.shape[1], N, dtype=torch.float64)
    wsum = torch.zeros(H, positions.shape[1], len(windows), N, dtype=torch.float64)
    for h in range(H):
        for r, i in enumerate(positions[h].tolist()):
            acc[h, r] = P[h, : i + 1].sum(0)
            for wi, w in enumerate(windows):
                wsum[h, r, wi] = P[h, max(0, i - w + 1) : i + 1].sum(0)
    return acc, wsum


def random_case(
    seed: int,
    heads: int,
    n: int,
    d: int,
    rows: int,
    *,
    kv_heads: int | None = None,
    exact: bool = False,
    scale: float = 1.0,
):
    """q, k ``[H, n, d]`` (k expanded from ``kv_heads`` like repeat_kv) and positions ``[H, rows]``.

    ``exact=True`` draws multiples of 1/8 in [-1, 1): every product and partial sum of q.k is exact in
    float32, so results do not depend on the matmul's summation order (only on the roundings tested).
    Positions always include 0 and n - 1 for head 0 and are shared within a KV group.
    """
    g = torch.Generator().manual_seed(seed)
    kv_heads = heads if kv_heads is None else kv_heads
    group = heads // kv_heads
    if exact:
        q = torch.randint(-8, 8, (heads, n, d), generator=g).float() / 8
        kv = torch.randint(-8, 8, (kv_heads, n, d), generator=g).float() / 8
    else:
        q = torch.randn(heads, n, d, generator=g) * scale
        kv = torch.randn(kv_heads, n, d, generator=g)
    kv = kv.clone()
    kv[:, 0] += 2.0 * kv[:, 0].sign()  # a heavier first key: an attention-sink-like column
    k = kv.index_select(0, torch.arange(heads) // group)
    per_kv = torch.stack([torch.randperm(n, generator=g)[:rows] for _ in range(kv_heads)])
    per_kv[0, 0], per_kv[0, -1] = 0, n - 1
    positions = per_kv.index_select(0, torch.arange(heads) // group)
    return q, k, positions
