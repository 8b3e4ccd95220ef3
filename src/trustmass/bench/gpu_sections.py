"""The GPU check's measurements of the kernels, the restricted forward and the capture (issue 28 item 3).

Each section takes ``(device, tiny, timer)`` and returns JSON-ready rows; :mod:`trustmass.bench.gpu`
runs them under a time budget.  Shapes are the issue's (``tiny``: seconds on a CPU, for the dry-run).

* :func:`kernel_deviations` -- compiled Triton against the PyTorch twins, fp32, max |difference|.
* :func:`side_statistics` -- one layer's side statistics (6 rows per head, positions shared by a KV
  group, logits rounded as a bf16 model's eager rounds them, as the capture calls them) against that
  layer's SDPA causal attention: the fused ``side_statistics`` (what the capture runs on the GPU;
  ``side_ms``), the two calls apart (``rows_ms`` + ``column_ms``), and for bf16 the column pass fed
  the log-sum-exp of the layer's own flash SDPA (``logits_dtype=None``: flash semantics), with the
  roofline of each (:func:`side_roofline`).
* :func:`restricted` -- ``restricted_attention`` on top-mass kept sets against SDPA of the same rows
  over the same keys.
* :func:`capture` -- ``capture_document`` against the SDPA forward of the same random-weight model.

FLOP counts (multiply-adds x 2, the useful work, masked entries not counted): SDPA causal
``4 Hq d N(N+1)/2`` (QK^T and PV over the triangle); sampled rows ``2 Hq R N d``; the column pass
``2 d sum_h (L_h + 1)(L_h + 2)/2`` (QK^T over the triangle up to each head's last sampled row L_h;
the kernels run it twice, statistics and column pass, once with a passed log-sum-exp).

:func:`side_roofline` and :func:`restricted_roofline` (the ``roofline`` of each row) live in
:mod:`trustmass.bench.gpu_roofline`.
"""

from __future__ import annotations

import os

import torch

from trustmass.bench.gpu_roofline import ROWS_PER_HEAD, restricted_roofline, side_roofline

MIN_POSITION = 256
SIDE_SHAPES = [  # (query heads, KV heads, N, d, dtype): the table
    (9, 3, 4096, 64, "float32"),
    (9, 3, 4096, 64, "bfloat16"),
    (32, 8, 16384, 128, "bfloat16"),
    (32, 8, 32768, 128, "bfloat16"),
]
TINY_SIDE_SHAPES = [(4, 2, 256, 16, "float32"), (4, 2, 256, 16, "bfloat16")]
RESTRICTED_CASES = [(4096, 128, 128), (4096, 1024, 512), (32768, 128, 128), (32768, 1024, 512)]  # (N, M, budget)
TINY_RESTRICTED_CASES = [(256, 16, 8), (256, 32, 16)]
#: the targets of issue 28 item 2
SIDE_TARGET = 2.0  # side statistics <= 2x the layer's SDPA (bf16, N = 4,096-32,768)
CAPTURE_TARGET = 1.5  # capture <= 1.5x the SDPA forward at 16,384 tokens, bf16
RESTRICTED_TARGETS = {32768: 0.5, 4096: 0.8}  # restricted_attention's share of SDPA's throughput

SMOLLM2 = dict(
    vocab_size=49152,
    hidden_size=576,
    intermediate_size=1536,
    num_hidden_layers=30,
    num_attention_heads=9,
    num_key_value_heads=3,
    max_position_embeddings=32768,
    rope_theta=100000.0,
    tie_word_embeddings=True,
)
QWEN25_15B = dict(
    vocab_size=151936,
    hidden_size=1536,
    intermediate_size=8960,
    num_hidden_layers=28,
    num_attention_heads=12,
    num_key_value_heads=2,
    max_position_embeddings=32768,
    rope_theta=1000000.0,
    tie_word_embeddings=True,
)
TINY_LLAMA = dict(
    vocab_size=256,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=1024,
    tie_word_embeddings=True,
)
MODELS = {
    "smollm2-135m": ("llama", SMOLLM2),
    "qwen2.5-1.5b": ("qwen2", QWEN25_15B),
    "tiny-llama": ("llama", TINY_LLAMA),
}
CAPTURE_CASES = [  # (model shapes, dtype, tokens), the target case first
    ("smollm2-135m", "bfloat16", 16384),
    ("qwen2.5-1.5b", "bfloat16", 4096),
    ("smollm2-135m", "float32", 4096),
    ("smollm2-135m", "bfloat16", 4096),
    ("smollm2-135m", "float32", 16384),
]
TINY_CAPTURE_CASES = [("tiny-llama", "float32", 128), ("tiny-llama", "bfloat16", 128)]


def _dtype(name: str) -> torch.dtype:
    return getattr(torch, name)


def _generator(device: str, seed: int = 0) -> torch.Generator:
    return torch.Generator(device=device).manual_seed(seed)


def layer_inputs(hq: int, hkv: int, n: int, d: int, dtype: torch.dtype, device: str, min_position: int, seed: int = 0):
    """Random q ``[Hq, N, d]``, k and v ``[Hkv, N, d]`` and 6 positions per head shared by a KV group."""
    g = _generator(device, seed)
    q = torch.randn(hq, n, d, device=device, generator=g, dtype=torch.float32).to(dtype)
    k = torch.randn(hkv, n, d, device=device, generator=g, dtype=torch.float32).to(dtype)
    v = torch.randn(hkv, n, d, device=device, generator=g, dtype=torch.float32).to(dtype)
    kv_of_head = torch.arange(hq, device=device) // (hq // hkv)
    span = n - min_position
    per_kv = torch.stack(
        [torch.randperm(span, device=device, generator=g)[:ROWS_PER_HEAD] + min_position for _ in range(hkv)]
    )
    return q, k, v, per_kv.index_select(0, kv_of_head).contiguous(), kv_of_head


def sdpa(q, k, v, **kw):
    """``scaled_dot_product_attention`` of ``[H, M, d]`` queries over ``[Hkv, N, d]`` keys.

    Grouped KV heads go in as they are (``enable_gqa``: the flash kernel serves causal calls as the
    layer's own attention does); a call with an ``attn_mask`` should get KV heads already expanded
    per query head (the masked kernels do not take groups), outside the timed region."""
    hq, hkv = q.shape[0], k.shape[0]
    if hq != hkv:
        try:
            return torch.nn.functional.scaled_dot_product_attention(q[None], k[None], v[None], enable_gqa=True, **kw)[0]
        except TypeError:  # pragma: no cover (torch < 2.5: no enable_gqa)
            k, v = (t.repeat_interleave(hq // hkv, 0) for t in (k, v))
    return torch.nn.functional.scaled_dot_product_attention(q[None], k[None], v[None], **kw)[0]


def causal_flops(hq: int, n: int, d: int) -> float:
    return 4.0 * hq * d * n * (n + 1) / 2


def triton_backend(device: str) -> str | None:
    """``"triton"`` where the compiled (CUDA) or interpreted (``TRITON_INTERPRET=1``) kernels can run."""
    from trustmass import kernels

    if not kernels.triton_available():
        return None
    if device == "cuda" or os.environ.get("TRITON_INTERPRET") == "1":
        return "triton"
    return None


def _maxdiff(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).abs().max()) if a.numel() else 0.0


def _exact_row_share(a: torch.Tensor, b: torch.Tensor, tol: float = 1e-6) -> float:
    rows = (a.double() - b.double()).abs().reshape(-1, a.shape[-1]).amax(-1)
    return float((rows < tol).double().mean()) if rows.numel() else 1.0


def kernel_deviations(device: str, tiny: bool, timer=None) -> dict:
    """Triton vs twin on one case per kernel: max |difference| of every output, fp32 (as exact as the
    twins) and bf16 with eager's roundings (the twin emulates them; the MMA's summation order may
    round a logit the other way: ``exact_row_share`` is the share of rows that agree to 1e-6)."""
    from trustmass import kernels

    backend = triton_backend(device)
    if backend is None:
        why = (
            "triton is not installed"
            if not kernels.triton_available()
            else "the Triton kernels need CUDA or TRITON_INTERPRET=1"
        )
        return {"status": "skipped", "reason": why, "entries": []}
    hq, hkv, n, d = (4, 2, 128, 16) if tiny else (8, 2, 2048, 64)
    entries = []
    for dtype in (torch.float32, torch.bfloat16):
        q, k, v, positions, kv_of_head = layer_inputs(hq, hkv, n, d, dtype, device, n // 4, seed=1)
        k_exp = k.index_select(0, kv_of_head)
        kw = {"scaling": d**-0.5, "logits_dtype": None if dtype == torch.float32 else dtype}
        shape = {
            "heads": hq,
            "kv_heads": hkv,
            "n_keys": n,
            "head_dim": d,
            "rows_per_head": ROWS_PER_HEAD,
            "dtype": str(dtype).replace("torch.", ""),
        }

        def entry(kernel, output, a, b, **more):
            row = {"kernel": kernel, "output": output, "max_abs_dev": _maxdiff(a, b), **shape, **more}
            if dtype != torch.float32 and output in ("p", "out"):
                row["exact_row_share"] = _exact_row_share(a, b)
            entries.append(row)

        if dtype == torch.float32:
            p_tr = kernels.sampled_row_probs(q, k_exp, positions, backend=backend, **kw)
            p_tw = kernels.sampled_row_probs(q, k_exp, positions, backend="torch", **kw)
            entry("sampled_row_probs", "p", p_tr, p_tw)
            acc_tr, w_tr = kernels.column_mass_and_window_sums(q, k_exp, positions, backend=backend, **kw)
            acc_tw, w_tw = kernels.column_mass_and_window_sums(q, k_exp, positions, backend="torch", **kw)
            entry("column_mass_and_window_sums", "acc_mass", acc_tr, acc_tw)
            entry("column_mass_and_window_sums", "window_sums", w_tr, w_tw)
        side_tr = kernels.side_statistics(q, k_exp, positions, backend=backend, **kw)
        side_tw = kernels.side_statistics(q, k_exp, positions, backend="torch", **kw)
        for name, a, b in zip(("p", "acc_mass", "window_sums"), side_tr, side_tw, strict=True):
            entry("side_statistics", name, a, b)
        m = 32 if tiny else 128
        rows, ptr, idx = kept_sets(q[:, n - m :], k, n, 8, kw["scaling"])
        out = {
            name: kernels.restricted_attention(q[:, n - m :].contiguous(), k, v, rows, ptr, idx, backend=name, **kw)
            for name in (backend, "torch")
        }
        for i, name in enumerate(("out", "kept_mass", "lse")):
            entry("restricted_attention", name, out[backend][i], out["torch"][i], rows=m, budget=8)
    return {
        "status": "ok",
        "candidate": f"{backend} ({'compiled' if device == 'cuda' else 'interpreter'})",
        "reference": "PyTorch twin (kernels/reference.py, kernels/restricted.py)",
        "entries": entries,
    }


def layer_lse(q: torch.Tensor, k_exp: torch.Tensor, v_exp: torch.Tensor, scaling: float) -> torch.Tensor | None:
    """The row log-sum-exp ``[Hq, N]`` the layer's own flash SDPA computes (None where that backend
    is not there: CPU, fp32, old torch)."""
    try:
        out = torch.ops.aten._scaled_dot_product_flash_attention(
            q[None], k_exp[None], v_exp[None], 0.0, True, False, scale=scaling
        )
    except Exception:  # noqa: BLE001 -- no flash backend here
        return None
    return out[1][0].float().contiguous()


def kept_sets(q_rows: torch.Tensor, k: torch.Tensor, n: int, budget: int, scaling: float, chunk: int = 8):
    """Top-``budget`` keys by logit (top-mass) of query rows at the last M positions: (rows, CSR ptr, idx)."""
    hq, m, _ = q_rows.shape
    group = hq // k.shape[0]
    rows = torch.arange(n - m, n, device=q_rows.device)
    keys = torch.arange(n, device=q_rows.device)
    parts = []
    for h0 in range(0, hq, chunk):
        qh = q_rows[h0 : h0 + chunk].float()
        kh = k.index_select(0, torch.arange(h0, min(h0 + chunk, hq), device=k.device) // group).float()
        logits = torch.matmul(qh, kh.transpose(-1, -2)) * scaling
        logits.masked_fill_(keys > rows[:, None], float("-inf"))
        parts.append(logits.topk(budget, dim=-1).indices.sort(dim=-1).values.reshape(-1))
        del logits
    idx = torch.cat(parts)
    ptr = torch.arange(0, hq * m * budget + 1, budget, device=q_rows.device)
    return rows, ptr, idx


def _out_of_time(deadline, need_s: float) -> bool:
    return deadline is not None and deadline() < need_s


def side_statistics(device: str, tiny: bool, timer, deadline=None) -> list[dict]:
    """One layer's side statistics against its SDPA, per shape of the issue's table.

    ``side_ms``: the fused ``kernels.side_statistics`` (the capture's call on a GPU);
    ``rows_ms``/``column_ms``: the two functions called apart (``separate_ms``); for bf16 also
    ``column_with_layer_lse_ms``: the column pass fed the layer's flash log-sum-exp (flash semantics,
    ``logits_dtype=None``), the one-pass floor.  ``roofline``: :func:`side_roofline`."""
    from trustmass import kernels

    out = []
    for hq, hkv, n, d, name in TINY_SIDE_SHAPES if tiny else SIDE_SHAPES:
        if _out_of_time(deadline, 20):
            out.append(
                {
                    "heads": hq,
                    "kv_heads": hkv,
                    "n_keys": n,
                    "head_dim": d,
                    "dtype": name,
                    "status": "skipped: time budget",
                }
            )
            continue
        dtype = _dtype(name)
        q, k, v, positions, kv_of_head = layer_inputs(hq, hkv, n, d, dtype, device, 32 if tiny else MIN_POSITION)
        k_exp = k.index_select(0, kv_of_head)
        kw = {"scaling": d**-0.5, "logits_dtype": None if dtype == torch.float32 else dtype}
        t_sdpa = timer(lambda: sdpa(q, k, v, is_causal=True, scale=d**-0.5))
        t_side = timer(lambda: kernels.side_statistics(q, k_exp, positions, **kw))
        t_rows = timer(lambda: kernels.sampled_row_probs(q, k_exp, positions, **kw))
        t_col = timer(lambda: kernels.column_mass_and_window_sums(q, k_exp, positions, **kw))
        lse_row = {}
        if dtype != torch.float32 and not _out_of_time(deadline, 10):
            v_exp = v.index_select(0, kv_of_head)
            lse = layer_lse(q, k_exp, v_exp, d**-0.5)
            if lse is not None:
                t_lse = timer(lambda: kernels.column_mass_and_window_sums(q, k_exp, positions, d**-0.5, lse=lse))
                lse_row = {
                    "column_with_layer_lse_ms": t_lse["median_ms"],
                    "column_with_layer_lse_over_sdpa": t_lse["median_ms"] / t_sdpa["median_ms"],
                }
            del v_exp
        last = positions.max(dim=1).values.double()
        col_flops = float(2 * d * ((last + 1) * (last + 2) / 2).sum())
        rows_flops = 2.0 * hq * ROWS_PER_HEAD * n * d
        side_ms = t_side["median_ms"]
        separate_ms = t_rows["median_ms"] + t_col["median_ms"]
        ratio = side_ms / t_sdpa["median_ms"]
        out.append(
            {
                "heads": hq,
                "kv_heads": hkv,
                "n_keys": n,
                "head_dim": d,
                "dtype": name,
                "rows_per_head": ROWS_PER_HEAD,
                "backend": kernels.resolve_backend(q),
                "sdpa_causal_ms": t_sdpa["median_ms"],
                "side_ms": side_ms,
                "rows_ms": t_rows["median_ms"],
                "column_ms": t_col["median_ms"],
                "separate_ms": separate_ms,
                "side_over_sdpa": ratio,
                "separate_over_sdpa": separate_ms / t_sdpa["median_ms"],
                **lse_row,
                "sdpa_tflops": causal_flops(hq, n, d) / t_sdpa["median_ms"] / 1e9,
                "rows_tflops": rows_flops / t_rows["median_ms"] / 1e9,
                "column_tflops": col_flops / t_col["median_ms"] / 1e9,
                "side_tflops": (rows_flops + col_flops) / side_ms / 1e9,
                "side_executed_tflops": 2 * col_flops / side_ms / 1e9,  # statistics + column pass: QK^T twice
                "roofline": side_roofline(hq, n, d, name, last=int(last.max())),
                "repeats": {
                    "sdpa": t_sdpa["repeats"],
                    "side": t_side["repeats"],
                    "rows": t_rows["repeats"],
                    "column": t_col["repeats"],
                },
                "target_side_over_sdpa": SIDE_TARGET if name != "float32" else None,
                "meets_target": (ratio <= SIDE_TARGET) if name != "float32" else None,
            }
        )
    return out


def restricted(device: str, tiny: bool, timer, deadline=None) -> list[dict]:
    """restricted_attention (bf16 model, top-mass kept sets) vs SDPA of the same rows over the same keys."""
    from trustmass import kernels

    hq, hkv, d = (4, 2, 16) if tiny else (32, 8, 128)
    dtype = torch.bfloat16
    out = []
    for n, m, budget in TINY_RESTRICTED_CASES if tiny else RESTRICTED_CASES:
        if _out_of_time(deadline, 10):
            out.append({"n_keys": n, "rows": m, "budget": budget, "status": "skipped: time budget"})
            continue
        g = _generator(device, 2)
        q = torch.randn(hq, m, d, device=device, generator=g).to(dtype)
        k, v = (torch.randn(hkv, n, d, device=device, generator=g).to(dtype) for _ in range(2))
        scaling = d**-0.5
        rows, ptr, idx = kept_sets(q, k, n, budget, scaling)
        mask = torch.arange(n, device=device)[None, :] <= rows[:, None]
        k_exp, v_exp = (t.repeat_interleave(hq // hkv, 0) for t in (k, v))  # as bench.restricted: outside the timing
        t_r = timer(lambda: kernels.restricted_attention(q, k, v, rows, ptr, idx, scaling, logits_dtype=dtype))
        t_s = timer(lambda: sdpa(q, k_exp, v_exp, attn_mask=mask, scale=scaling))
        share = t_s["median_ms"] / t_r["median_ms"]
        target = RESTRICTED_TARGETS.get(n)
        out.append(
            {
                "n_keys": n,
                "rows": m,
                "budget": budget,
                "heads": hq,
                "kv_heads": hkv,
                "head_dim": d,
                "dtype": "bfloat16",
                "backend": kernels.resolve_backend(q),
                "restricted_ms": t_r["median_ms"],
                "sdpa_ms": t_s["median_ms"],
                "throughput_vs_sdpa": share,
                "target_throughput_vs_sdpa": target,
                "roofline": restricted_roofline(hq, hkv, n, m, budget, d),
                "meets_target": None if target is None else share >= target,
                "repeats": {"restricted": t_r["repeats"], "sdpa": t_s["repeats"]},
            }
        )
    return out


def random_model(name: str, dtype: torch.dtype, device: str, attn: str, seed: int = 0):
    """A random-weight model with a named model's shapes, built on ``device`` (timings do not depend on
    the weights)."""
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config

    family, shapes = MODELS[name]
    config = (LlamaConfig if family == "llama" else Qwen2Config)(**shapes)
    torch.manual_seed(seed)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, attn_implementation=attn, dtype=dtype)
    return model.eval()


def set_attention(model, name: str) -> None:
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation(name)
    else:  # pragma: no cover (older transformers)
        model.config._attn_implementation = name


def capture(device: str, tiny: bool, timer, deadline=None) -> dict:
    """capture_document vs the model's SDPA forward, same random weights and tokens."""
    from trustmass.bench.gpu_env import import_capture

    prefill, note = import_capture()
    prefill.register()
    default_threshold = prefill.CaptureOptions().max_abs_deviation
    rows = []
    for name, dtype_name, n_tokens in TINY_CAPTURE_CASES if tiny else CAPTURE_CASES:
        if _out_of_time(deadline, 20):
            rows.append({"model": name, "dtype": dtype_name, "n_tokens": n_tokens, "status": "skipped: time budget"})
            continue
        entry = {"model": name, "dtype": dtype_name, "n_tokens": n_tokens}
        try:
            entry.update(
                _capture_case(prefill, name, _dtype(dtype_name), n_tokens, device, tiny, timer, default_threshold)
            )
            entry["status"] = "ok"
        except Exception as exc:  # noqa: BLE001 -- one case's failure is a result, not the end of the check
            entry.update(status="error", error=f"{type(exc).__name__}: {exc}"[:600])
        rows.append(entry)
        if device == "cuda":
            torch.cuda.empty_cache()
    return {"import_note": note, "default_threshold": default_threshold, "cases": rows}


def _capture_case(prefill, name, dtype, n_tokens, device, tiny, timer, default_threshold) -> dict:
    model = random_model(name, dtype, device, "sdpa")
    ids = torch.randint(0, model.config.vocab_size, (n_tokens,), generator=torch.Generator().manual_seed(0)).to(device)

    def forward():
        with torch.inference_mode():
            model.model(input_ids=ids[None], use_cache=False)

    t_sdpa = timer(forward, repeats=3)
    set_attention(model, prefill.ATTENTION_NAME)
    options = prefill.CaptureOptions(min_position=min(MIN_POSITION, n_tokens // 4))  # the production validation
    result = {}

    def run_capture():
        try:
            result["capture"], result["aborted"] = (
                prefill.capture_document(model, ids, "gpu-check", "random", options),
                None,
            )
        except prefill.CaptureValidationError as exc:  # timed all the same: the abort comes after the forward
            result["capture"], result["aborted"] = None, str(exc)

    t_cap = timer(run_capture, repeats=2)
    captured, aborted = result["capture"], result["aborted"]
    dev = captured.max_abs_deviation if captured is not None else None
    bounds = getattr(captured, "bounds", None) if captured is not None else None
    over_bound = max(row[4] / b for row, b in zip(captured.deviations, bounds) if b > 0) if bounds else None
    ratio = t_cap["median_ms"] / t_sdpa["median_ms"]
    target = CAPTURE_TARGET if (n_tokens == 16384 and dtype == torch.bfloat16) else None
    params = sum(p.numel() for p in model.parameters()) / 1e9
    return {
        "parameters_b": params,
        "layers": MODELS[name][1]["num_hidden_layers"],
        "heads": MODELS[name][1]["num_attention_heads"],
        "kv_heads": MODELS[name][1]["num_key_value_heads"],
        "head_dim": MODELS[name][1]["hidden_size"] // MODELS[name][1]["num_attention_heads"],
        "sdpa_forward_s": t_sdpa["median_ms"] / 1e3,
        "capture_s": t_cap["median_ms"] / 1e3,
        "capture_over_sdpa": ratio,
        "max_abs_deviation": dev,
        "max_deviation_over_bound": over_bound,
        "validation": "passed" if aborted is None else f"aborted: {aborted}"[:600],
        "exceeds_absolute_threshold": None if dev is None else dev > default_threshold,
        "target_capture_over_sdpa": target,
        "meets_target": None if target is None else ratio <= target,
        "repeats": {"sdpa": t_sdpa["repeats"], "capture": t_cap["repeats"]},
    }


def loss_forward(device: str, tiny: bool, timer) -> dict:
    """The held-out loss's restricted continuation on the device (its per-unit cost for the paper-scale
    projection): the dense prefix, the dense continuation, and top-mass / balancing at s = 8."""
    import importlib.util

    if importlib.util.find_spec("numba") is None:
        return {
            "status": "not run",
            "reason": "numba is not installed: trustmass.loss imports trustmass.core.operator, "
            "which imports numba (the llvmlite wheel it needs is 57 MiB per CPython: not carried)",
        }
    import numpy as np

    from trustmass.loss.configurations import Configuration
    from trustmass.loss.forward import ATTENTION_NAME, RestrictedForward, register
    from trustmass.loss.policy import CellRecorder, SelectionPolicy, needs

    register()
    name, n_keys, continuation, budget = ("tiny-llama", 128, 32, 8) if tiny else ("smollm2-135m", 4096, 512, 8)
    model = random_model(name, torch.float32, device, ATTENTION_NAME)
    shape = (model.config.num_hidden_layers, model.config.num_attention_heads)
    ids = torch.randint(0, model.config.vocab_size, (n_keys,), generator=torch.Generator().manual_seed(0))
    rules = ("top_mass", "balancing")
    forward = RestrictedForward(model, ids, continuation, **needs(list(rules), budget))
    t_prefix = timer(forward.prefill, repeats=1)

    def run(policy):
        with torch.inference_mode():
            forward.logits(policy)

    out = {
        "status": "ok",
        "model": name,
        "parameters_b": sum(p.numel() for p in model.parameters()) / 1e9,
        "dtype": "float32",
        "n_tokens": n_keys,
        "continuation": continuation,
        "budget": budget,
        "prefix_s": t_prefix["median_ms"] / 1e3,
        "dense_continuation_s": timer(lambda: run(None), repeats=2)["median_ms"] / 1e3,
    }
    for rule in rules:
        policy = SelectionPolicy(Configuration(rule, rule), np.zeros(shape, dtype=bool), budget, CellRecorder(shape))
        out[f"{rule}_continuation_s"] = timer(lambda policy=policy: run(policy), repeats=2)["median_ms"] / 1e3
    return out
