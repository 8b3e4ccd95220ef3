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
    kernel: str  # "rows" | "columns" | "restricted" (rows = the number M of query rows)
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
}


def run_case(case: Case) -> dict:
    if case.kernel == "restricted":
        from restricted_oracle import run_restricted_case

        return run_restricted_case(case)
    import torch
    from kernel_oracle import random_case
    from trustmass.kernels import column_mass_and_window_sums, sampled_row_probs

    q, k, positions = random_case(
        case.seed, case.heads, case.n, case.d, case.rows, kv_heads=case.kv_heads, exact=case.exact
    )
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
    result = {}
    if case.kernel == "rows":
        got = sampled_row_probs(q, k, positions, backend="triton", **kw)
        want = sampled_row_probs(q, k, positions, backend="torch", **kw)
        pairs = {"p": (got, want)}
    else:
        got = column_mass_and_window_sums(q, k, positions, windows=case.windows, backend="triton", **kw)
        want = column_mass_and_window_sums(q, k, positions, windows=case.windows, backend="torch", block_rows=16, **kw)
        pairs = {"acc": (got[0], want[0]), "wsum": (got[1], want[1])}
    for name, (a, b) in pairs.items():
        assert a.shape == b.shape and a.dtype == b.dtype == torch.float32, (a.shape, b.shape, a.dtype)
        diff = (a.double() - b.double()).abs()
        excess = diff - (case.tol["atol"] + case.tol["rtol"] * b.double().abs())
        excess = excess.nan_to_num(nan=float("inf"), posinf=float("inf"))  # NaN must fail (NaN > 0 is False)
        result[name] = {
            "max_abs": float(diff.max()),
            "max_excess_over_tol": float(excess.max()),
            "nonzero_where_twin_zero": int(((a != 0) & (b == 0)).sum()),
        }
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
