"""GPU kernels (Triton) with their PyTorch reference twins; installed as ``trustmass.kernels``.

Exact attention-row side statistics of a prefill capture (paper spec §2.4-2.6) without the
N x N attention matrix, with the semantics of transformers' eager attention (scaling, optional
soft-capping, causal mask, optional sliding window ``i - W < j <= i``, float32 softmax, and
optionally the model dtype's roundings of the logits):

* `sampled_row_probs` -- exact rows ``P[positions[h, r], :]``, float32 ``[H, R, N]``;
* `column_mass_and_window_sums` -- H2O accumulated column mass ``sum_{t <= i} P[t, :]`` and
  SnapKV window sums ``sum_{t = i-w+1..i} P[t, :]`` at the sampled rows, streamed over row blocks;
* `side_statistics` -- both at once, ``(p, acc, wsum)``: on Triton one statistics pass and one
  column pass that also emits the sampled rows; on the twins exactly the two calls above;
* `restricted_attention` -- the attention output of query rows restricted to kept key sets (CSR),
  weighted by the model's full softmax row, with the kept mass and the row log-sum-exp
  (`trustmass.kernels.restricted`; keys/values not expanded, grouped-query heads);
  `kept_rows_attention` is its PyTorch gather half for a caller that already holds the rows.

Capture inputs are per query head (``q``, ``k``: ``[H, N, d]``, keys already expanded per query head;
``positions``: int64 ``[H, R]``), fp32/bf16/fp16; outputs are float32.

Backends: ``"triton"`` (`trustmass.kernels.triton_kernels`, `trustmass.kernels.triton_restricted`; CUDA tensors, or CPU tensors under
``TRITON_INTERPRET=1`` set before triton is imported) and ``"torch"``
(`trustmass.kernels.reference`, `trustmass.kernels.restricted`; any device; the CPU production path and the Triton oracle).
``backend=None`` reads ``$TRUSTMASS_KERNELS`` (``auto`` | ``torch`` | ``triton``; default
``auto``): auto takes Triton for CUDA tensors when triton imports, the twins otherwise.  Triton is
imported lazily, so this package imports without it.

``lse=``: the capture functions and `restricted_attention` take an optional precomputed row
log-sum-exp (float32, natural log: ``[H, N]`` per query head and row for the capture, ``[Hq, M]``
for `restricted_attention`) of the *same* transformed logits -- e.g. the logsumexp the layer's
own flash/efficient SDPA returns when ``logits_dtype=None`` -- with which the Triton kernels skip
their statistics pass and form ``P = exp(logit - lse)``.  The twins always compute their exact
softmax and ignore it (checked for shape only), so the CPU path does not depend on it.
"""

from __future__ import annotations

# Not the top-level `kernels` package (Hugging Face's, which transformers tries to import): with this repository
# on sys.path -- a workflow job's -- `import kernels` would find this folder, load trustmass.kernels as a side
# effect and fail anyway.  Fail first, as an absent package does.
if __name__ != "trustmass.kernels":
    raise ImportError(f"{__file__} is trustmass.kernels, not the top-level `kernels` package")

import importlib.util
import os
from collections.abc import Sequence

import torch

from trustmass.kernels.reference import (
    DEFAULT_BLOCK_ROWS,
    DEFAULT_WINDOWS,
    check_inputs,
    check_windows,
    column_mass_and_window_sums_torch,
    sampled_row_probs_torch,
)
from trustmass.kernels.restricted import kept_rows_attention, restricted_attention_torch

BACKEND_ENV = "TRUSTMASS_KERNELS"
BACKENDS = ("auto", "torch", "triton")
_triton_module = None
_triton_restricted = None
_triton_error: str | None = None


def triton_available() -> bool:
    """True when the Triton kernels import (triton installed and importable here)."""
    return _load_triton() is not None


def _load_triton():
    global _triton_module, _triton_error
    if _triton_module is None and _triton_error is None:
        if importlib.util.find_spec("triton") is None:
            _triton_error = "triton is not installed (pip install 'trustmass[kernels]')"
        else:
            try:
                # a static import (not importlib by name), so that library_code declares the module
                from trustmass.kernels import triton_kernels

                _triton_module = triton_kernels
            except Exception as exc:  # noqa: BLE001 -- a broken triton install must not break the CPU path
                _triton_error = f"importing triton failed: {exc!r}"
    return _triton_module


def resolve_backend(q: torch.Tensor, backend: str | None = None) -> str:
    """``"torch"`` or ``"triton"`` for a call on ``q``'s device (see the module docstring)."""
    choice = (backend or os.environ.get(BACKEND_ENV) or "auto").lower()
    if choice not in BACKENDS:
        raise ValueError(f"kernel backend must be one of {BACKENDS} (argument or ${BACKEND_ENV}); got {choice!r}")
    if choice == "torch":
        return "torch"
    module = _load_triton()
    if choice == "triton":
        if module is None:
            raise RuntimeError(f"backend 'triton' requested but {_triton_error}")
        if not q.is_cuda and not module.INTERPRET:
            raise RuntimeError(
                "backend 'triton' on CPU tensors needs the Triton interpreter: set TRITON_INTERPRET=1 "
                "before triton is imported (or use backend='torch')"
            )
        return "triton"
    return "triton" if (q.is_cuda and module is not None) else "torch"


def _check_lse(lse: torch.Tensor | None, q: torch.Tensor) -> None:
    if lse is None:
        return
    H, N = q.shape[0], q.shape[1]
    if not isinstance(lse, torch.Tensor) or lse.dtype != torch.float32 or lse.dim() != 2 or tuple(lse.shape) != (H, N):
        got = f"{lse.dtype} {tuple(lse.shape)}" if isinstance(lse, torch.Tensor) else type(lse).__name__
        raise ValueError(f"lse must be a float32 [heads={H}, tokens={N}] row log-sum-exp; got {got}")
    if lse.device != q.device:
        raise ValueError(f"lse must be on q's device {q.device}; got {lse.device}")


def _check_triton_capture(q, k, positions, logits_dtype, lse) -> int:
    """`check_inputs` for the Triton path with one device read (the positions' range, which also
    sizes the grids) instead of two; returns the largest position (-1 without rows)."""
    check_inputs(q, k, positions[:, :0] if positions.dim() == 2 else positions, logits_dtype)
    _check_lse(lse, q)
    if positions.shape[1] == 0:
        return -1
    lo, hi = torch.stack(torch.aminmax(positions)).tolist()
    N = q.shape[1]
    if lo < 0 or hi >= N:
        raise ValueError(f"positions must lie in [0, {N - 1}]; got [{lo}, {hi}]")
    return int(hi)


def sampled_row_probs(
    q: torch.Tensor,
    k: torch.Tensor,
    positions: torch.Tensor,
    scaling: float,
    softcap: float | None = None,
    window: int | None = None,
    logits_dtype: torch.dtype | None = None,
    *,
    backend: str | None = None,
    lse: torch.Tensor | None = None,
) -> torch.Tensor:
    """Exact attention rows: ``p[h, r, j] = P_h[positions[h, r], j]`` (0 on masked keys), float32.

    ``logits_dtype=None`` computes logits in float32; ``torch.bfloat16``/``torch.float16`` rounds
    q, k and the logits where the model's eager attention rounds them.  Memory O(N d + R N) per head.
    """
    if resolve_backend(q, backend) == "triton":
        top = _check_triton_capture(q, k, positions, logits_dtype, lse)
        return _load_triton().sampled_row_probs_triton(
            q, k, positions, scaling, softcap, window, logits_dtype, lse=lse, max_position=top
        )
    check_inputs(q, k, positions, logits_dtype)
    _check_lse(lse, q)
    return sampled_row_probs_torch(q, k, positions, scaling, softcap, window, logits_dtype)


def column_mass_and_window_sums(
    q: torch.Tensor,
    k: torch.Tensor,
    positions: torch.Tensor,
    scaling: float,
    softcap: float | None = None,
    window: int | None = None,
    logits_dtype: torch.dtype | None = None,
    windows: Sequence[int] = DEFAULT_WINDOWS,
    block_rows: int = DEFAULT_BLOCK_ROWS,
    *,
    backend: str | None = None,
    lse: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """H2O accumulated mass and SnapKV window sums at the sampled rows, float32.

    ``acc[h, r, j] = sum_{t <= i} P[t, j]`` (``[H, R, N]``) and
    ``wsum[h, r, w, j] = sum_{t = i-w+1..i, t >= 0} P[t, j]`` (``[H, R, len(windows), N]``) with
    ``i = positions[h, r]``.  Streams over row blocks; rows past ``max(positions)`` are never
    computed.  ``block_rows`` sizes the PyTorch twin's row blocks (memory O(block_rows N) per head);
    the Triton kernels tile on their own (memory O(N) row statistics and O(R N) float64 prefixes per
    head).  On a CPU shared with other work, run the twin at one torch thread: each row block is a
    handful of parallel regions, and every region waits for a descheduled worker thread.
    """
    if resolve_backend(q, backend) == "triton":
        top = _check_triton_capture(q, k, positions, logits_dtype, lse)
        windows = check_windows(windows)
        return _load_triton().column_mass_and_window_sums_triton(
            q, k, positions, scaling, softcap, window, logits_dtype, windows, lse=lse, max_position=top
        )
    check_inputs(q, k, positions, logits_dtype)
    _check_lse(lse, q)
    windows = check_windows(windows)
    return column_mass_and_window_sums_torch(
        q, k, positions, scaling, softcap, window, logits_dtype, windows=windows, block_rows=block_rows
    )


def side_statistics(
    q: torch.Tensor,
    k: torch.Tensor,
    positions: torch.Tensor,
    scaling: float,
    softcap: float | None = None,
    window: int | None = None,
    logits_dtype: torch.dtype | None = None,
    windows: Sequence[int] = DEFAULT_WINDOWS,
    block_rows: int = DEFAULT_BLOCK_ROWS,
    *,
    backend: str | None = None,
    lse: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(p, acc, wsum)``: `sampled_row_probs` and `column_mass_and_window_sums` of one layer.

    Triton: one statistics pass (none with ``lse``) and one column pass that stores the sampled rows
    as it meets them (`trustmass.kernels.triton_kernels.side_statistics_triton`).  Torch: exactly
    ``sampled_row_probs_torch`` then ``column_mass_and_window_sums_torch`` (bitwise the two calls).
    """
    if resolve_backend(q, backend) == "triton":
        top = _check_triton_capture(q, k, positions, logits_dtype, lse)
        windows = check_windows(windows)
        return _load_triton().side_statistics_triton(
            q, k, positions, scaling, softcap, window, logits_dtype, windows, lse=lse, max_position=top
        )
    p = sampled_row_probs(q, k, positions, scaling, softcap, window, logits_dtype, backend="torch", lse=lse)
    acc, wsum = column_mass_and_window_sums(
        q, k, positions, scaling, softcap, window, logits_dtype, windows, block_rows, backend="torch", lse=lse
    )
    return p, acc, wsum


def restricted_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    rows: torch.Tensor,
    kept_ptr: torch.Tensor,
    kept_idx: torch.Tensor,
    scaling: float,
    softcap: float | None = None,
    window: int | None = None,
    logits_dtype: torch.dtype | None = None,
    *,
    backend: str | None = None,
    lse: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Attention of query rows restricted to kept key sets, weighted by the full softmax row.

    ``q``: ``[Hq, M, d]`` query rows at absolute positions ``rows`` (int64 ``[M]``); ``k``, ``v``:
    ``[Hkv, N, d]`` (query head ``h`` reads KV head ``h // (Hq // Hkv)``); the kept set of
    ``(h, m)`` is ``kept_idx[kept_ptr[h*M+m] : kept_ptr[h*M+m+1]]`` (int64 CSR, ragged, any
    order, visible keys only -- checked, ``ValueError``).  Returns float32
    ``out [Hq, M, d] = sum_A P v / sum_A P``, ``kept_mass [Hq, M] = sum_A P`` and
    ``lse [Hq, M]`` (log-sum-exp of the transformed logits over the visible keys), ``P`` being the
    model's full row over all visible keys; an empty kept set gives ``out = 0``, ``kept_mass = 0``.
    ``lse`` (float32 ``[Hq, M]``, e.g. an earlier call's third output for the same rows: it does not
    depend on the kept sets) lets the Triton path skip its full-row pass; the twin ignores it.
    See `trustmass.kernels.restricted` for the semantics and `trustmass.kernels.triton_restricted`
    for the kernels.
    """
    if resolve_backend(q, backend) == "triton":  # validates the CSR inside its kernel (one device read)
        return _load_triton_restricted().restricted_attention_triton(
            q, k, v, rows, kept_ptr, kept_idx, scaling, softcap, window, logits_dtype, lse=lse
        )
    if lse is not None and (not isinstance(lse, torch.Tensor) or tuple(lse.shape) != tuple(q.shape[:2])):
        raise ValueError(f"lse must be a float32 [Hq, M] = {tuple(q.shape[:2])} row log-sum-exp")
    return restricted_attention_torch(q, k, v, rows, kept_ptr, kept_idx, scaling, softcap, window, logits_dtype)


def _load_triton_restricted():
    global _triton_restricted
    if _triton_restricted is None and _load_triton() is not None:
        from trustmass.kernels import triton_restricted  # static, as in _load_triton

        _triton_restricted = triton_restricted
    return _triton_restricted


__all__ = [
    "BACKEND_ENV",
    "DEFAULT_BLOCK_ROWS",
    "DEFAULT_WINDOWS",
    "column_mass_and_window_sums",
    "column_mass_and_window_sums_torch",
    "kept_rows_attention",
    "resolve_backend",
    "restricted_attention",
    "restricted_attention_torch",
    "sampled_row_probs",
    "sampled_row_probs_torch",
    "side_statistics",
    "triton_available",
]
