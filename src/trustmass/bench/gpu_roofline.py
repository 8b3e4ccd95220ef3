"""The rooflines of the GPU check's kernel sections (issue 28 item 3): pure arithmetic, no torch.

:func:`side_roofline` and :func:`restricted_roofline` give, per call, the FLOPs, exponentials,
estimated ALU operations and HBM bytes of the kernels (``kernels/triton_kernels.py``,
``kernels/triton_restricted.py``) and the time each would take alone at an H200's rates
(:data:`H200`): what bounds each target (``benchmarks/gpu/README.md``, "Kernel design").

In the JSON as the ``roofline`` of each row of :func:`trustmass.bench.gpu_sections.side_statistics`
and :func:`trustmass.bench.gpu_sections.restricted`.
"""

from __future__ import annotations

ROWS_PER_HEAD = 6  # sampled rows per head, positions shared by a KV group (as the capture takes them)


#: the rates the rooflines use (H200 SXM: dense bf16 tensor ~990 TFLOP/s, fp32 non-tensor ~67 TFLOP/s
#: (FMA = 2), HBM ~4.8 TB/s; the special-function units (ex2) run 16 lanes per SM per clock: 132 SMs
#: x 1.98 GHz x 16 ~ 4.2e12 exponentials/s)
H200 = {
    "bf16_tensor_flops": 990e12,
    "fp32_flops": 67e12,
    "alu_ops": 33.5e12,
    "exp_per_s": 132 * 1.98e9 * 16,
    "hbm_bytes": 4.8e12,
}
#: estimated non-tensor fp32 operations per (row, key) element and pass, bf16/fp16 models with eager's
#: roundings (two cvt.rn + widen, the scaling, the mask on diagonal tiles only, max/sum, the exponent's
#: sub + fma): statistics pass, column pass
ALU_PER_ELEMENT = {"stats": 9, "column": 8, "sdpa": 6}


def side_roofline(
    hq: int,
    n: int,
    d: int,
    dtype: str,
    rows_per_head: int = ROWS_PER_HEAD,
    n_windows: int = 5,
    lse: bool = False,
    last: int | None = None,
) -> dict:
    """FLOPs, exponentials, ALU ops and HBM bytes of one fused ``side_statistics`` call, and the
    milliseconds each takes alone at :data:`H200`'s rates (``bound_ms``: the largest; the kernels
    overlap them at best).  ``last``: the last sampled row (default ``n - 1``); ``lse``: the
    statistics pass skipped (a log-sum-exp from the layer's SDPA)."""
    last = n - 1 if last is None else last
    elem = 4 if dtype == "float32" else 2
    tri = hq * (last + 1) * (last + 2) / 2  # (row, key) pairs up to the last sampled row
    passes = 1 if lse else 2
    flops = passes * 2 * d * tri
    exps = passes * tri
    entries = rows_per_head * (1 + n_windows)
    alu = tri * (ALU_PER_ELEMENT["column"] + (0 if lse else ALU_PER_ELEMENT["stats"]))
    qk = 2 * hq * n * d * elem  # q and k read once per pass (a head's K and Q tiles stay in L2)
    prefix = hq * entries * n * 8  # float64 prefixes: zeroed, written by the column pass, read by the epilogue
    nbytes = passes * qk + 3 * prefix + hq * rows_per_head * (2 + n_windows) * n * 4 + (0 if lse else 3 * hq * n * 4)
    fast = dtype != "float32"
    t = {
        "tensor_ms": flops / H200["bf16_tensor_flops"] * 1e3 if fast else 0.0,
        "fp32_fma_ms": 0.0 if fast else flops / H200["fp32_flops"] * 1e3,  # fp32 models: IEEE dots on the FMA units
        "exp_ms": exps / H200["exp_per_s"] * 1e3,
        "alu_ms": alu / H200["alu_ops"] * 1e3 if fast else 0.0,
        "hbm_ms": nbytes / H200["hbm_bytes"] * 1e3,
    }
    sdpa_tri = hq * n * (n + 1) / 2
    sdpa = {
        "flops": 4 * d * sdpa_tri,
        "tensor_ms": 4 * d * sdpa_tri / H200["bf16_tensor_flops"] * 1e3,
        "exp_ms": sdpa_tri / H200["exp_per_s"] * 1e3,
        "alu_ms": sdpa_tri * ALU_PER_ELEMENT["sdpa"] / H200["alu_ops"] * 1e3,
    }
    return {
        "passes": passes,
        "flops": flops,
        "exps": exps,
        "alu_ops_est": alu,
        "hbm_bytes": nbytes,
        **t,
        "bound_ms": max(t.values()),
        "serial_ms": sum(t.values()),
        "sdpa": sdpa,
    }


def restricted_roofline(
    hq: int, hkv: int, n: int, m: int, budget: int, d: int, dtype: str = "bfloat16", lse: bool = False
) -> dict:
    """The same for one ``restricted_attention`` call: rows at the last ``m`` positions (each sees
    ~``n`` keys), ``budget`` kept keys per row; against SDPA of those rows over all ``n`` keys."""
    elem = 4 if dtype == "float32" else 2
    pairs = hq * m * n  # (row, key) pairs of the full-row statistics
    nnz = hq * m * budget
    flops1 = 0 if lse else 2 * d * pairs
    gather_flops = 4 * d * nnz  # fp32 q.k and p v of the kept keys
    exps = (0 if lse else pairs) + nnz
    alu = (0 if lse else pairs * ALU_PER_ELEMENT["stats"]) + nnz * (4 * d / 2 + 12)
    gather_bytes = nnz * (2 * d * elem + 8)  # the kept K and V rows (mostly L2 hits) and indices
    nbytes = (0 if lse else hkv * n * d * elem) + hq * m * d * (elem + 4) + gather_bytes
    t = {
        "tensor_ms": flops1 / H200["bf16_tensor_flops"] * 1e3,
        "exp_ms": exps / H200["exp_per_s"] * 1e3,
        "alu_ms": alu / H200["alu_ops"] * 1e3,
        "hbm_ms": nbytes / H200["hbm_bytes"] * 1e3,
    }
    sdpa_flops = 4 * d * pairs
    return {
        "flops": flops1 + gather_flops,
        "exps": exps,
        "alu_ops_est": alu,
        "hbm_bytes_upper": nbytes,
        **t,
        "bound_ms": max(t.values()),
        "serial_ms": sum(t.values()),
        "sdpa": {
            "flops": sdpa_flops,
            "tensor_ms": sdpa_flops / H200["bf16_tensor_flops"] * 1e3,
            "exp_ms": pairs / H200["exp_per_s"] * 1e3,
        },
    }
