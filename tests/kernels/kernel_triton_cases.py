"""Triton kernels vs their PyTorch twins under the Triton interpreter (CPU, float32, small shapes).

Run as a script (``TRITON_INTERPRET=1 python kernel_triton_cases.py [names...]``): it refuses to run
without the interpreter, computes every case and prints one JSON object ``{name: result}`` where a
result holds the largest deviations per output (or the error text).  `test_kernel_triton.py` runs
it in a subprocess, so the variable is set before triton is first imported in that process
whatever else the pytest process has imported.  Importing this module does not import triton.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from dataclasses import dataclass, field

WINDOWS = (2, 4, 8, 16, 32)


@dataclass(frozen=True)
class Case:
    kernel: str  # "rows" | "columns" | "side" (both, fused) | "restricted" (rows = the number M of query rows)
    #            | "restricted-invalid" (bad CSR/rows: the ValueError naming the argument)
    heads: int = 2
    kv_heads: int = 1
    n: int = 96
    d: int = 32
    rows: int = 5
    softcap: float | None = None
    window: int | None = None
    logits_dtype: str | None = None  # "bfloat16" | "float16" (emulated rounding)
    input_dtype: str = "float32"
    exact: bool = False  # multiples of 1/8: q.k exact in fp32, independent of summation order
    strided: bool = False  # q as a transposed view of a [N, H, d] tensor
    windows: tuple = WINDOWS
    kept: str = "ragged"  # restricted: "ragged" (random CSR incl. empty/single-key sets) | "all"
    seed: int = 0
    tol: dict = field(default_factory=lambda: {"atol": 1e-6, "rtol": 1e-6})
    config: dict | None = None  # tile sizes for the Triton host functions (small: many tiles, every loop)
    splits: int | None = None  # key splits of the statistics pass (restricted, sampled rows)
    lse: bool = False  # pass a precomputed row log-sum-exp (capture: float64 from the twin's logits;
    #                    restricted: the Triton call's own, from a first call)
    positions: tuple | None = None  # explicit positions [heads][rows] (duplicates, colliding windows)
    # random (not exact) bf16 inputs: summation order may round a logit the other way; this share of
    # the rows (of p, out) must still agree to 1e-6, and ``tol`` bounds every deviation
    min_exact_row_share: float | None = None


CASES = {
    "rows-fp32": Case("rows"),
    "rows-window": Case("rows", window=11),
    "rows-softcap": Case("rows", softcap=6.0),
    "rows-softcap-window-d24-gqa": Case("rows", heads=4, kv_heads=2, d=24, softcap=6.0, window=11, rows=19),
    "rows-strided-q": Case("rows", strided=True, n=128),
    "rows-bf16-inputs": Case("rows", input_dtype="bfloat16"),
    "rows-bf16-logits-emulated": Case("rows", logits_dtype="bfloat16", exact=True),
    "rows-fp16-logits-emulated": Case("rows", logits_dtype="float16", exact=True),
    "columns-fp32": Case("columns"),
    "columns-window": Case("columns", window=11),
    "columns-softcap-window-gqa": Case("columns", heads=4, kv_heads=2, softcap=6.0, window=23, n=128),
    "columns-odd-windows-d24": Case("columns", d=24, windows=(1, 3, 40, 200), rows=7),
    "columns-bf16-logits-emulated": Case("columns", logits_dtype="bfloat16", exact=True, n=80),
    # restricted attention: GQA, M = 19 rows (not a multiple of BLOCK_M = 16), ragged CSR with empty sets
    "restricted-gqa-ragged": Case("restricted", heads=4, kv_heads=2, rows=19),
    "restricted-softcap-window": Case("restricted", heads=4, kv_heads=2, rows=19, softcap=6.0, window=11),
    "restricted-keep-all-window-d24": Case("restricted", heads=3, kv_heads=1, d=24, rows=21, window=40, kept="all"),
    "restricted-mha-long-sets": Case("restricted", heads=2, kv_heads=2, n=160, rows=33, kept="all"),
    "restricted-bf16-inputs": Case("restricted", heads=4, kv_heads=2, rows=19, input_dtype="bfloat16"),
    "restricted-bf16-logits-emulated": Case(
        "restricted", heads=4, kv_heads=2, rows=19, logits_dtype="bfloat16", input_dtype="bfloat16", exact=True
    ),
    # --- the tensor-core redesign (issue 28 item 2): every new path under the interpreter --------------
    # fused side statistics (statistics pass + column pass that also stores the sampled rows)
    "side-fp32": Case("side"),
    "side-window-softcap-gqa": Case("side", heads=4, kv_heads=2, softcap=6.0, window=23, n=128),
    "side-strided-q": Case("side", strided=True, n=128),
    "side-bf16-logits-emulated": Case("side", logits_dtype="bfloat16", input_dtype="bfloat16", exact=True),
    "side-fp16-logits-emulated": Case("side", logits_dtype="float16", input_dtype="float16", exact=True, window=40),
    "side-bf16-inputs": Case("side", input_dtype="bfloat16"),
    # small tiles: many key blocks and row tiles, N not a multiple of any block, diagonal / whole /
    # window-edge tiles and the rows past a window's reach
    "side-tiles-n161": Case("side", n=161, config={"BLOCK_M": 16, "BLOCK_N": 32}),
    "side-tiles-window70": Case("side", n=161, window=70, config={"BLOCK_M": 16, "BLOCK_N": 16}),
    "side-tiles-window5-softcap": Case("side", n=100, window=5, softcap=4.0, config={"BLOCK_M": 16, "BLOCK_N": 16}),
    "side-tiles-bf16-window": Case(
        "side",
        n=150,
        window=33,
        logits_dtype="bfloat16",
        input_dtype="bfloat16",
        exact=True,
        config={"BLOCK_M": 32, "BLOCK_N": 16},
    ),
    "side-one-row": Case("side", rows=1, n=97, config={"BLOCK_M": 16, "BLOCK_N": 16}),
    # duplicated positions, window starts that are other sampled rows, rows near 0 (i - w < 0)
    "side-duplicates": Case(
        "side",
        heads=2,
        n=90,
        positions=((10, 12, 12, 14, 1, 89), (3, 3, 35, 33, 31, 0)),
        config={"BLOCK_M": 16, "BLOCK_N": 16},
    ),
    "columns-fp16-logits-emulated": Case("columns", logits_dtype="float16", exact=True, n=80),
    "columns-tiles-odd-windows": Case(
        "columns", n=133, d=24, windows=(1, 3, 40, 200), rows=7, config={"BLOCK_M": 16, "BLOCK_N": 32}
    ),
    # a precomputed log-sum-exp instead of the statistics pass
    "side-lse": Case("side", lse=True),
    "side-lse-window-softcap": Case(
        "side", lse=True, window=11, softcap=6.0, n=100, config={"BLOCK_M": 16, "BLOCK_N": 16}
    ),
    "side-lse-bf16-inputs": Case("side", lse=True, input_dtype="bfloat16"),
    "rows-lse": Case("rows", lse=True, window=11),
    # sampled rows alone: the split statistics (flash-decoding) with forced splits
    "rows-splits-3": Case("rows", n=161, splits=3, config={"BLOCK_N": 16}),
    "rows-splits-window": Case("rows", n=161, splits=5, window=23, softcap=6.0, config={"BLOCK_N": 16}),
    "rows-one-row-bf16": Case(
        "rows",
        rows=1,
        n=97,
        logits_dtype="bfloat16",
        input_dtype="bfloat16",
        exact=True,
        splits=4,
        config={"BLOCK_N": 16},
    ),
    # restricted: GQA groups 1 / 3 / 7, M = 1, forced splits with tiles that leave N ragged, a passed lse
    "restricted-group1": Case(
        "restricted", heads=2, kv_heads=2, rows=19, n=161, splits=3, config={"BLOCK_M": 16, "BLOCK_N": 16}
    ),
    "restricted-group3-window": Case(
        "restricted", heads=6, kv_heads=2, rows=11, n=161, window=30, splits=4, config={"BLOCK_M": 16, "BLOCK_N": 32}
    ),
    "restricted-group7-softcap": Case("restricted", heads=7, kv_heads=1, rows=9, n=130, softcap=6.0, kept="all"),
    "restricted-one-row": Case(
        "restricted", heads=3, kv_heads=1, rows=1, n=97, splits=2, config={"BLOCK_M": 16, "BLOCK_N": 16}
    ),
    "restricted-one-row-window": Case("restricted", heads=2, kv_heads=1, rows=1, n=97, window=9, kept="all"),
    "restricted-splits-bf16": Case(
        "restricted",
        heads=6,
        kv_heads=2,
        rows=19,
        n=161,
        logits_dtype="bfloat16",
        input_dtype="bfloat16",
        exact=True,
        splits=5,
        config={"BLOCK_M": 32, "BLOCK_N": 16},
    ),
    "restricted-fp16-emulated": Case(
        "restricted", heads=4, kv_heads=2, rows=19, logits_dtype="float16", input_dtype="float16", exact=True
    ),
    "restricted-lse": Case("restricted", heads=6, kv_heads=2, rows=19, window=40, lse=True),
    "restricted-lse-bf16": Case("restricted", heads=4, kv_heads=2, rows=19, input_dtype="bfloat16", lse=True),
    "restricted-invalid": Case("restricted-invalid"),
    "capture-invalid": Case("capture-invalid"),
    # random bf16 inputs against eager's bf16 roundings (the twin): a logit within an fp32 ulp of a bf16
    # rounding boundary may round the other way (summation order), as on the GPU; most rows agree to 1e-6
    "rows-bf16-random": Case(
        "rows",
        heads=4,
        kv_heads=2,
        n=160,
        d=64,
        rows=12,
        logits_dtype="bfloat16",
        input_dtype="bfloat16",
        tol={"atol": 4e-3, "rtol": 0.0},
        min_exact_row_share=0.5,
    ),
    "side-bf16-random": Case(
        "side",
        heads=4,
        kv_heads=2,
        n=160,
        d=64,
        rows=12,
        logits_dtype="bfloat16",
        input_dtype="bfloat16",
        tol={"atol": 4e-3, "rtol": 1e-5},
        min_exact_row_share=0.5,
    ),
    "restricted-bf16-random": Case(
        "restricted",
        heads=4,
        kv_heads=2,
        n=160,
        d=64,
        rows=24,
        logits_dtype="bfloat16",
        input_dtype="bfloat16",
        tol={"atol": 4e-3, "rtol": 0.0},
        min_exact_row_share=0.5,
    ),
}


def compare(pairs: dict, case: Case) -> dict:
    """Largest deviation, excess over the case's tolerance, entries nonzero where the twin has 0 (and,
    for random bf16 cases, the share of rows that agree to 1e-6)."""
    import torch

    result = {}
    for name, (a, b) in pairs.items():
        assert a.shape == b.shape and a.dtype == b.dtype == torch.float32, (name, a.shape, b.shape, a.dtype)
        diff = (a.double() - b.double()).abs()
        excess = diff - (case.tol["atol"] + case.tol["rtol"] * b.double().abs())
        excess = excess.nan_to_num(nan=float("inf"), posinf=float("inf"))  # NaN must fail (NaN > 0 is False)
        result[name] = {
            "max_abs": float(diff.max()) if diff.numel() else 0.0,
            "max_excess_over_tol": float(excess.max()) if excess.numel() else -1.0,
            "nonzero_where_twin_zero": int(((a != 0) & (b == 0)).sum()),
        }
        if case.min_exact_row_share is not None and name in ("p", "out"):
            rows = diff.reshape(-1, diff.shape[-1]).amax(-1)
            result[name]["exact_row_share"] = float((rows < 1e-6).double().mean())
            result[name]["min_exact_row_share"] = case.min_exact_row_share
    return result


def reference_lse(q, k, scaling, softcap, window, logits_dtype):
    """float32 ``[H, N]`` row log-sum-exp of the twin's transformed logits (float64 reduction)."""
    import torch

    from trustmass.kernels.reference import transformed_logits

    n = q.shape[1]
    s = transformed_logits(q, k, scaling, softcap, logits_dtype).double()
    i, j = torch.arange(n).unsqueeze(-1), torch.arange(n)
    vis = j <= i
    if window is not None:
        vis &= j > i - window
    return torch.logsumexp(s.masked_fill(~vis, float("-inf")), dim=-1).float()


def run_case(case: Case) -> dict:
    if case.kernel == "restricted":
        from restricted_oracle import run_restricted_case

        return run_restricted_case(case)
    if case.kernel == "restricted-invalid":
        from restricted_oracle import run_invalid_csr_case

        return run_invalid_csr_case()
    if case.kernel == "capture-invalid":
        return run_invalid_capture_case()
    import torch
    from kernel_oracle import random_case

    from trustmass.kernels import (
        column_mass_and_window_sums,
        sampled_row_probs,
        side_statistics,
    )
    from trustmass.kernels import triton_kernels as tk

    q, k, positions = random_case(
        case.seed, case.heads, case.n, case.d, case.rows, kv_heads=case.kv_heads, exact=case.exact
    )
    if case.positions is not None:
        positions = torch.tensor(case.positions, dtype=torch.int64)
    if case.strided:
        q = q.transpose(0, 1).contiguous().transpose(0, 1)
        assert not q.is_contiguous()
    dtype = getattr(torch, case.input_dtype)
    q, k = q.to(dtype), k.to(dtype)
    kw = dict(
        scaling=case.d**-0.5,
        softcap=case.softcap,
        window=case.window,
        logits_dtype=None if case.logits_dtype is None else getattr(torch, case.logits_dtype),
    )
    lse = reference_lse(q, k, **kw) if case.lse else None
    direct = case.config is not None or case.splits is not None  # the host functions, with tile sizes
    if case.kernel == "rows":
        if direct:
            got = tk.sampled_row_probs_triton(q, k, positions, **kw, lse=lse, splits=case.splits, config=case.config)
        else:
            got = sampled_row_probs(q, k, positions, backend="triton", lse=lse, **kw)
        want = sampled_row_probs(q, k, positions, backend="torch", **kw)
        pairs = {"p": (got, want)}
    elif case.kernel == "columns":
        if direct:
            got = tk.column_mass_and_window_sums_triton(
                q, k, positions, **kw, windows=case.windows, lse=lse, config=case.config
            )
        else:
            got = column_mass_and_window_sums(q, k, positions, windows=case.windows, backend="triton", lse=lse, **kw)
        want = column_mass_and_window_sums(q, k, positions, windows=case.windows, backend="torch", block_rows=16, **kw)
        pairs = {"acc": (got[0], want[0]), "wsum": (got[1], want[1])}
    else:  # fused side statistics
        if direct:
            got = tk.side_statistics_triton(q, k, positions, **kw, windows=case.windows, lse=lse, config=case.config)
        else:
            got = side_statistics(q, k, positions, windows=case.windows, backend="triton", lse=lse, **kw)
        want = side_statistics(q, k, positions, windows=case.windows, backend="torch", block_rows=16, **kw)
        pairs = {"p": (got[0], want[0]), "acc": (got[1], want[1]), "wsum": (got[2], want[2])}
    return compare(pairs, case)


def run_invalid_capture_case() -> dict:
    """The Triton capture path's one-read validation raises what the twins raise."""
    import re

    import torch

    from trustmass.kernels import (
        column_mass_and_window_sums,
        sampled_row_probs,
        side_statistics,
    )

    q, k = torch.randn(2, 8, 16), torch.randn(2, 8, 16)
    variants = {
        "valid": (None, torch.tensor([[0, 7], [3, 4]]), None),
        "position-past-end": ("positions must lie", torch.tensor([[0, 8], [1, 2]]), None),
        "negative-position": ("positions must lie", torch.tensor([[0, -1], [1, 2]]), None),
        "positions-not-per-head": ("positions must be", torch.tensor([[0, 1]]), None),
        "lse-shape": ("lse must be", torch.tensor([[0, 7], [3, 4]]), torch.zeros(2, 7)),
        "lse-dtype": ("lse must be", torch.tensor([[0, 7], [3, 4]]), torch.zeros(2, 8, dtype=torch.float64)),
    }
    result = {}
    for name, (pattern, positions, lse) in variants.items():
        ok = True
        for fn in (sampled_row_probs, column_mass_and_window_sums, side_statistics):
            try:
                fn(q, k, positions, 0.25, backend="triton", lse=lse)
                ok &= pattern is None
            except ValueError as exc:
                ok &= pattern is not None and re.search(pattern, str(exc)) is not None
        result[name] = {"raised_as_expected": int(ok)}
    return result


def main(names: list[str]) -> int:
    if os.environ.get("TRITON_INTERPRET") != "1":
        print("set TRITON_INTERPRET=1 (before triton is imported) to run these cases on CPU", file=sys.stderr)
        return 2
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    results = {}
    for name in names or list(CASES):
        try:
            results[name] = run_case(CASES[name])
        except Exception:  # noqa: BLE001 -- report per case; one broken case must not hide the others
            results[name] = {"error": traceback.format_exc()}
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
