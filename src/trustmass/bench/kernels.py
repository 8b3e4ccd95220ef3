"""Benchmark: the capture's side statistics (PyTorch twins, the CPU path) against the layer's own SDPA.

For one attention layer with SmolLM2-like shapes (9 query heads sharing 3 KV heads, d = 64,
N = 4096, 6 sampled rows per head, positions shared within a KV group, drawn from [256, N - 1]
as the capture draws them) it reports, side by side in the same process and thread setting:

  * `column_s`: `column_mass_and_window_sums` (H2O accumulated mass + SnapKV window sums),
  * `rows_s`: `sampled_row_probs` (the exact sampled rows),
  * `sdpa_causal_s`: `torch.nn.functional.scaled_dot_product_attention(..., is_causal=True)` on
    the same q and the same per-head k, v -- the layer's own attention,
  * their ratio, per dtype: float32, and bfloat16 inputs with bf16 logits emulation (a bf16 model);
  * peak memory: the resident-set high-water mark added by the streamed column pass against the
    one added by materialising P (``[H, N, N]`` logits + softmax), and P's own size;
  * a correctness spot check: head 0's accumulated mass against the dense P, in float64.

Threads: timed at torch's own setting (`torch.get_num_threads()`, or `threads` if given) and, when
that is more than one, again at one thread (small parallel regions suffer most on shared vCPUs).
Run: ``python -m trustmass.bench.kernels [--n 4096 ...]`` or `run(...)`; both print the JSON.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import platform
import sys
import time
from importlib.metadata import version

import torch

from trustmass.kernels import column_mass_and_window_sums, sampled_row_probs

MIN_POSITION = 256  # the capture's lower bound for sampled rows (spec §2.3)


def _timed(fn, min_seconds: float, min_reps: int = 3) -> float:
    """Median seconds per call over at least `min_reps` calls and `min_seconds` (after one warm-up)."""
    fn()
    times, start = [], time.perf_counter()
    while len(times) < min_reps or time.perf_counter() - start < min_seconds:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _peak_bytes(fn) -> int | None:
    """Resident-set high-water mark added by `fn` (Linux: reset via /proc/self/clear_refs).

    Freed heap memory is handed back first (glibc ``malloc_trim``), so that memory `fn` reuses from
    earlier calls counts as new resident memory again.
    """
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        return None
    base = _status_kib("VmRSS")
    fn()
    peak = _status_kib("VmHWM")
    if base is None or peak is None:
        return None
    return max(0, peak - base) * 1024


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _dense_probs(q, k, scaling, logits_dtype):
    dtype = torch.float32 if logits_dtype is None else logits_dtype
    n = q.shape[-2]
    s = torch.matmul(q.to(dtype), k.to(dtype).transpose(-1, -2)) * scaling
    s.masked_fill_(torch.ones(n, n, dtype=torch.bool).triu_(1), float("-inf"))
    return torch.softmax(s, dim=-1, dtype=torch.float32)


def run(
    n: int = 4096,
    heads: int = 9,
    d: int = 64,
    rows: int = 6,
    kv_heads: int = 3,
    block_rows: int | None = None,
    seed: int = 0,
    threads: int | None = None,
    min_seconds: float = 1.0,
    dtypes=("float32", "bfloat16"),
    measure_dense_memory: bool = True,
    print_json: bool = True,
    n_keys: int | None = None,
    head_dim: int | None = None,
) -> dict:
    """Time and measure one layer's side statistics; returns (and by default prints) the JSON dict.

    ``n_keys``/``head_dim`` are aliases of ``n``/``d`` for ``python -m trustmass.bench kernels``.
    """
    n = n if n_keys is None else n_keys
    d = d if head_dim is None else head_dim
    if threads is not None:
        torch.set_num_threads(threads)
    if heads % kv_heads:
        raise ValueError(f"heads={heads} must be a multiple of kv_heads={kv_heads}")
    if n - MIN_POSITION < rows:
        raise ValueError(f"n={n} leaves fewer than rows={rows} positions in [{MIN_POSITION}, n-1]")
    from trustmass.kernels import DEFAULT_BLOCK_ROWS

    block_rows = DEFAULT_BLOCK_ROWS if block_rows is None else block_rows
    g = torch.Generator().manual_seed(seed)
    group = heads // kv_heads
    kv_of_head = torch.arange(heads) // group
    q32 = torch.randn(heads, n, d, generator=g)
    k32 = torch.randn(kv_heads, n, d, generator=g).index_select(0, kv_of_head)  # expanded per query head
    v32 = torch.randn(kv_heads, n, d, generator=g).index_select(0, kv_of_head)
    per_kv = torch.stack([torch.randperm(n - MIN_POSITION, generator=g)[:rows] + MIN_POSITION for _ in range(kv_heads)])
    positions = per_kv.index_select(0, kv_of_head)
    scaling = d**-0.5

    per_dtype = []
    default_threads = torch.get_num_threads()
    for n_threads, name in [(t, name) for t in dict.fromkeys((default_threads, 1)) for name in dtypes]:
        torch.set_num_threads(n_threads)
        dtype = getattr(torch, name)
        logits_dtype = None if dtype == torch.float32 else dtype
        q, k, v = q32.to(dtype), k32.to(dtype), v32.to(dtype)
        kw = {"scaling": scaling, "logits_dtype": logits_dtype, "backend": "torch"}

        def sdpa(q=q, k=k, v=v):
            return torch.nn.functional.scaled_dot_product_attention(
                q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), is_causal=True, scale=scaling
            )

        def column(q=q, k=k, kw=kw):
            return column_mass_and_window_sums(q, k, positions, block_rows=block_rows, **kw)

        def rows_(q=q, k=k, kw=kw):
            return sampled_row_probs(q, k, positions, **kw)

        t_sdpa, t_col, t_rows = (_timed(fn, min_seconds) for fn in (sdpa, column, rows_))
        per_dtype.append(
            {
                "threads": n_threads,
                "dtype": name,
                "logits_emulation": None if logits_dtype is None else name,
                "sdpa_causal_s": t_sdpa,
                "column_s": t_col,
                "rows_s": t_rows,
                "column_over_sdpa": t_col / t_sdpa,
                "column_plus_rows_over_sdpa": (t_col + t_rows) / t_sdpa,
            }
        )

    torch.set_num_threads(default_threads)
    # memory: streamed column pass vs materialising P (float32 inputs)
    p_bytes = heads * n * n * 4
    col_peak = _peak_bytes(
        lambda: column_mass_and_window_sums(q32, k32, positions, scaling, block_rows=block_rows, backend="torch")
    )
    dense_peak = _peak_bytes(lambda: _dense_probs(q32, k32, scaling, None)) if measure_dense_memory else None

    # correctness spot check on head 0 (float64 over a dense P of one head)
    acc, _ = column_mass_and_window_sums(
        q32[:1], k32[:1], positions[:1], scaling, block_rows=block_rows, backend="torch"
    )
    P0 = _dense_probs(q32[:1], k32[:1], scaling, None)[0].double()
    acc_ref = torch.stack([P0[: i + 1].sum(0) for i in positions[0].tolist()])
    rel = ((acc[0].double() - acc_ref).abs() / acc_ref.abs().clamp_min(1e-30)).masked_fill(acc_ref == 0, 0)

    result = {
        "benchmark": "kernels",
        "n": n,
        "heads": heads,
        "kv_heads": kv_heads,
        "head_dim": d,
        "rows_per_head": rows,
        "block_rows": block_rows,
        "seed": seed,
        "per_dtype": per_dtype,
        "memory": {
            "p_materialised_bytes": p_bytes,
            "dense_peak_rss_delta_bytes": dense_peak,
            "column_peak_rss_delta_bytes": col_peak,
            "column_peak_over_dense_peak": (col_peak / dense_peak) if col_peak and dense_peak else None,
            "column_peak_over_p_bytes": (col_peak / p_bytes) if col_peak is not None else None,
        },
        "head0_acc_max_rel_error_vs_dense_float64": float(rel.max()),
        "threads_default": default_threads,
        "cpu": _cpu_model(),
        "cores_visible": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "load_average_1min": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,  # other work on the host
        "python": platform.python_version(),
        "torch": version("torch"),
    }
    if print_json:
        print(json.dumps(result, indent=2))
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trustmass.bench.kernels", description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--heads", type=int, default=9)
    parser.add_argument("--kv-heads", type=int, default=3)
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--rows", type=int, default=6)
    parser.add_argument("--block-rows", type=int, default=None)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--min-seconds", type=float, default=1.0)
    parser.add_argument("--out", help="also write the JSON to this file")
    args = parser.parse_args(argv)
    result = run(
        n=args.n,
        heads=args.heads,
        d=args.d,
        rows=args.rows,
        kv_heads=args.kv_heads,
        block_rows=args.block_rows,
        seed=args.seed,
        threads=args.threads,
        min_seconds=args.min_seconds,
    )
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
