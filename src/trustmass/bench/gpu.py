"""The prepared GPU check (issue 28 item 3): one command, under 8 minutes on one GPU, one JSON and one
markdown table under ``benchmarks/gpu/``.

    make gpu-check
        (= PYTHONPATH=src python3 -m trustmass.bench gpu --wheels .gpu-wheels --out benchmarks/gpu)
    python -m trustmass.bench gpu --dry-run --out /tmp/gpu-dry      (the CPU dry-run: tiny shapes, seconds)

Sections, in order (each under the time budget; one that cannot start in time is recorded as skipped,
one that fails records its error and the check goes on):

``kernel_deviation``  compiled Triton vs the PyTorch twins, fp32 and bf16 (``trustmass.bench.gpu_sections``)
``side_statistics``   one layer's capture side statistics vs its SDPA, the issue's four shapes
``restricted``        ``restricted_attention`` vs SDPA of the same rows over the same keys
``claims``            the timings of claims 40, 102, 103, 115 (``trustmass.bench.gpu_claims``)
``capture``           ``capture_document`` vs the SDPA forward of the same random-weight model
``kernel_tests``      ``pytest tests/kernels -q`` with compiled kernels (``TRITON_INTERPRET`` unset)
``stage_test``        ``pytest tests/gpu/test_stages_cuda.py`` (issue 28 item 1) where it exists
``loss_forward``      the held-out loss's restricted continuation (a per-unit cost of the projection)

Import-light: this module and the modules it imports at the top use only the standard library and
torch (transformers where a section builds a model); nothing imports polars or snakemake (tested in
``tests/unit/test_gpu_check.py``).  The JSON is described in ``benchmarks/gpu/README.md``.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path

from trustmass.bench.gpu_env import REPO, dumps, install_kernels_finder

SCHEMA_VERSION = 1
BUDGET_S = 450.0  # the whole check: 7.5 minutes of the 8-minute target
SECTIONS = (
    "kernel_deviation",
    "side_statistics",
    "restricted",
    "claims",
    "capture",
    "kernel_tests",
    "stage_test",
    "loss_forward",
)
#: seconds a section needs left to start (the heavy ones), and a cap on the pytest runs
MIN_LEFT_S = {
    "side_statistics": 40,
    "restricted": 20,
    "claims": 30,
    "capture": 30,
    "loss_forward": 40,
    "kernel_tests": 30,
    "stage_test": 30,
}
PYTEST_CAP_S = {"kernel_tests": 150, "stage_test": 120}
STAGE_TEST = "tests/gpu/test_stages_cuda.py"


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def run(
    device: str | None = None,
    tiny: bool = False,
    budget_s: float = BUDGET_S,
    sections=SECTIONS,
    wheels: str | None = None,
    print_json: bool = False,
    progress=None,
) -> dict:
    """Run the check; returns the JSON document (see benchmarks/gpu/README.md).  ``progress(doc)`` is
    called after every section with the document so far (written out, a killed run leaves its
    finished sections behind)."""
    started = time.perf_counter()
    carried = None
    if wheels:
        from trustmass.bench.gpu_wheels import install

        carried = install(wheels, REPO / ".gpu-site")
    kernels_from = install_kernels_finder()
    import torch

    from trustmass.bench.gpu_env import Timer, device_info, git_state

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    mode = "dry-run" if tiny else ("gpu" if device == "cuda" else "cpu")  # only "gpu" is a GPU measurement

    def left() -> float:
        return budget_s - (time.perf_counter() - started)

    timer = Timer(device, repeats=5, budget_s=0.5 if tiny else 3.0)
    doc = {
        "benchmark": "gpu-check",
        "schema_version": SCHEMA_VERSION,
        "mode": mode,
        "created_utc": _now(),
        "code": git_state(),
        "device": device_info(device),
        "kernels_import": kernels_from,
        "carried_wheels": None
        if carried is None
        else {k: carried[k] for k in ("unpacked", "present") if k in carried}
        | ({"missing": carried["missing"]} if "missing" in carried else {}),
        "budget_s": budget_s,
        "sections": {},
    }
    extra = [str(REPO / ".gpu-site")] if wheels else None
    for name in SECTIONS:
        if name not in sections:
            doc["sections"][name] = {"status": "not run", "reason": "not selected (--sections)"}
            continue
        if tiny and name in ("kernel_tests", "stage_test"):
            doc["sections"][name] = {
                "status": "not run",
                "reason": "dry-run: the compiled-kernel and GPU stage tests need CUDA",
            }
            continue
        if left() < (5 if tiny else MIN_LEFT_S.get(name, 10)):
            doc["sections"][name] = {
                "status": "skipped",
                "reason": f"time budget: {left():.0f} s left of {budget_s:.0f} s",
            }
            continue
        t0 = time.perf_counter()
        try:
            result = _section(name, device, tiny, timer, left, extra)
            status = result.pop("status", "ok") if isinstance(result, dict) else "ok"
            doc["sections"][name] = {"status": status, "wall_s": time.perf_counter() - t0}
            if isinstance(result, dict) and result.get("reason"):
                doc["sections"][name]["reason"] = result["reason"]
            doc[name] = result
        except Exception as exc:  # noqa: BLE001 -- a failing section is a result; the others still run
            doc["sections"][name] = {
                "status": "error",
                "wall_s": time.perf_counter() - t0,
                "error": f"{type(exc).__name__}: {exc}"[:1000],
                "traceback": traceback.format_exc()[-3000:],
            }
        finally:
            if device == "cuda":
                torch.cuda.empty_cache()
        if progress is not None:
            progress(_finished(doc, started, partial=True))
    _finished(doc, started)
    if print_json:
        print(dumps(doc))
    return doc


def _finished(doc: dict, started: float, partial: bool = False) -> dict:
    """``claims``, ``targets`` and ``wall_s`` filled in (``partial``: sections still to come)."""
    doc["claims"] = doc.get("claims") or {}
    doc["targets"] = targets(doc)
    doc["wall_s"] = time.perf_counter() - started
    doc["complete"] = not partial
    return doc


def _section(name, device, tiny, timer, left, extra):
    from trustmass.bench import gpu_sections as sec

    if name == "kernel_deviation":
        return sec.kernel_deviations(device, tiny)
    if name == "side_statistics":
        return {"rows": sec.side_statistics(device, tiny, timer, deadline=left)}
    if name == "restricted":
        return {"rows": sec.restricted(device, tiny, timer, deadline=left)}
    if name == "capture":
        return sec.capture(device, tiny, timer, deadline=left)
    if name == "loss_forward":
        return sec.loss_forward(device, tiny, timer)
    if name == "claims":
        from trustmass.bench.gpu_claims import CLAIMS

        out = {}
        for claim, fn in CLAIMS.items():
            if left() < (2 if tiny else 15):
                out[claim] = {"status": "skipped: time budget"}
                continue
            try:
                out[claim] = {"status": "ok", **fn(device, tiny, timer)}
            except Exception as exc:  # noqa: BLE001
                out[claim] = {"status": "error", "error": f"{type(exc).__name__}: {exc}"[:1000]}
            if device == "cuda":
                import torch

                torch.cuda.empty_cache()
        return out
    if name == "kernel_tests":
        return _pytest(["tests/kernels"], min(PYTEST_CAP_S[name], left() - 5), extra)
    if name == "stage_test":
        return _pytest([STAGE_TEST], min(PYTEST_CAP_S[name], left() - 5), extra)
    raise ValueError(name)


def _pytest(paths, timeout_s, extra):
    from trustmass.bench.gpu_env import run_pytest

    result = run_pytest(paths, timeout_s, extra)
    result.setdefault("status", "ran")
    if result["status"] == "ran":
        result["status"] = "ok" if result.get("exit_code") == 0 else "failed"
    return result


def targets(doc: dict) -> list[dict]:
    """Issue 28 item 2's targets against what this run measured (``met`` None where not measured)."""
    out = []
    side = [
        r
        for r in (doc.get("side_statistics") or {}).get("rows", [])
        if r.get("target_side_over_sdpa") and "side_over_sdpa" in r
    ]
    out.append(
        {
            "target": "side statistics <= 2x the layer's SDPA (bf16, N = 4,096-32,768)",
            "measured": [round(r["side_over_sdpa"], 3) for r in side] or None,
            "met": all(r["meets_target"] for r in side) if side else None,
        }
    )
    cap = [r for r in (doc.get("capture") or {}).get("cases", []) if r.get("target_capture_over_sdpa")]
    out.append(
        {
            "target": "capture <= 1.5x the SDPA forward at 16,384 tokens, bf16",
            "measured": [round(r["capture_over_sdpa"], 3) for r in cap] or None,
            "met": all(r["meets_target"] for r in cap) if cap else None,
        }
    )
    for n, share in ((32768, 0.5), (4096, 0.8)):
        rows = [
            r for r in (doc.get("restricted") or {}).get("rows", []) if r["n_keys"] == n and "throughput_vs_sdpa" in r
        ]
        out.append(
            {
                "target": f"restricted_attention >= {share:.0%} of SDPA's throughput at N = {n:,}",
                "measured": [round(r["throughput_vs_sdpa"], 3) for r in rows] or None,
                "met": all(r["meets_target"] for r in rows) if rows else None,
            }
        )
    return out


# --------------------------------------------------------------------------------------------------
# the markdown table


def _f(x, digits=3) -> str:
    if x is None:
        return "--"
    if isinstance(x, (list, tuple)):
        return ", ".join(_f(v, digits) for v in x)
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return f"{x:.{digits}g}" if abs(x) < 1e4 else f"{x:,.0f}"
    return str(x)


def markdown(doc: dict) -> str:
    dev = doc["device"]
    lines = [
        f"# GPU check ({doc['mode']})",
        "",
        f"{dev['name']} | driver {dev['driver'] or '--'} | CUDA {dev['cuda'] or '--'} | torch {dev['torch']} | "
        f"Triton {dev['triton'] or '--'} | transformers {dev['transformers'] or '--'} | python {dev['python']}",
        "",
        f"Code {doc['code'].get('commit') or '--'}{' (dirty)' if doc['code'].get('dirty') else ''}, "
        f"{doc['created_utc']}, {doc['wall_s']:.0f} s of a {doc['budget_s']:.0f} s budget"
        f"{'' if doc.get('complete', True) else ' (partial: written while the check was still running)'}.",
        "",
        "| section | status | seconds |",
        "|---|---|---:|",
    ]
    for name, s in doc["sections"].items():
        lines.append(
            f"| {name} | {s['status']}"
            f"{': ' + s.get('reason', s.get('error', '')) if s['status'] not in ('ok',) else ''}"
            f" | {_f(s.get('wall_s'))} |"
        )
    lines += ["", "## Targets (issue 28 item 2)", "", "| target | measured | met |", "|---|---|---|"]
    lines += [f"| {t['target']} | {_f(t['measured'])} | {_f(t['met'])} |" for t in doc["targets"]]
    kd = doc.get("kernel_deviation") or {}
    if kd.get("entries"):
        lines += [
            "",
            f"## Kernels vs twins ({kd.get('candidate')})",
            "",
            "| kernel | output | dtype | max abs deviation | rows within 1e-6 |",
            "|---|---|---|---:|---:|",
        ]
        lines += [
            f"| {e['kernel']} | {e['output']} | {e.get('dtype', 'float32')} | {e['max_abs_dev']:.3g} | {_f(e.get('exact_row_share'))} |"
            for e in kd["entries"]
        ]
    side = (doc.get("side_statistics") or {}).get("rows")
    if side:
        lines += [
            "",
            "## One layer's side statistics vs its SDPA",
            "",
            "side = the fused `side_statistics` (the capture's call); rows + column = the two functions apart; "
            "with layer LSE = the column pass fed the layer's flash log-sum-exp (one pass); bound = the H200 "
            "roofline's largest term (`benchmarks/gpu/README.md`, Kernel design).",
            "",
            "| heads | N | d | dtype | SDPA causal ms (TFLOP/s) | side ms | side / SDPA | rows + column ms | "
            "column with layer LSE / SDPA | side TFLOP/s (executed) | roofline bound ms |",
            "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in side:
            if "side_ms" not in r:
                lines.append(
                    f"| {r['heads']}/{r['kv_heads']} | {r['n_keys']:,} | {r['head_dim']} | {r['dtype']} | {r.get('status')} | | | | | | |"
                )
                continue
            roof = r.get("roofline") or {}
            lines.append(
                f"| {r['heads']}/{r['kv_heads']} | {r['n_keys']:,} | {r['head_dim']} | {r['dtype']} | {_f(r['sdpa_causal_ms'])} "
                f"({_f(r['sdpa_tflops'])}) | {_f(r['side_ms'])} | {_f(r['side_over_sdpa'])}x | "
                f"{_f(r['rows_ms'])} + {_f(r['column_ms'])} | {_f(r.get('column_with_layer_lse_over_sdpa'))} | "
                f"{_f(r['side_tflops'])} ({_f(r.get('side_executed_tflops'))}) | {_f(roof.get('bound_ms'))} |"
            )
    rest = (doc.get("restricted") or {}).get("rows")
    if rest:
        lines += [
            "",
            "## restricted_attention vs SDPA of the same rows and keys (bf16)",
            "",
            "| N | rows M | budget | restricted ms | SDPA ms | throughput vs SDPA |",
            "|---:|---:|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {r['n_keys']:,} | {r['rows']} | {r['budget']} | {_f(r.get('restricted_ms'))} | {_f(r.get('sdpa_ms'))} | "
            f"{_f(r.get('throughput_vs_sdpa')) if 'throughput_vs_sdpa' in r else r.get('status')} |"
            for r in rest
        ]
    cap = (doc.get("capture") or {}).get("cases")
    if cap:
        lines += [
            "",
            "## Capture vs the SDPA forward (random weights)",
            "",
            "| model shapes | dtype | tokens | SDPA forward s | capture s | ratio | max abs dev | dev / bound | validation |",
            "|---|---|---:|---:|---:|---:|---:|---:|---|",
        ]
        for r in cap:
            if r.get("status") == "ok":
                lines.append(
                    f"| {r['model']} | {r['dtype']} | {r['n_tokens']:,} | {_f(r['sdpa_forward_s'])} | {_f(r['capture_s'])} | "
                    f"{_f(r['capture_over_sdpa'])}x | {_f(r['max_abs_deviation'])} | {_f(r.get('max_deviation_over_bound'))} | "
                    f"{r['validation'][:160]} |"
                )
            else:
                lines.append(
                    f"| {r['model']} | {r['dtype']} | {r['n_tokens']:,} | {r.get('status')} {r.get('error', '')[:120]} | | | | | |"
                )
    claims = doc.get("claims") or {}
    if claims:
        lines += ["", "## The paper's H100 claims, measured here", "", "| claim | value | measured |", "|---|---|---|"]
        for cid, c in claims.items():
            for key, value in c.items():
                if key in ("status", "definition", "shape", "shapes", "model") or isinstance(value, dict):
                    continue
                if (
                    key.endswith(("_over_dense_layer", "_over_dense", "_over_prefill", "_percent", "_ms", "_s"))
                    or key == "error"
                ):
                    lines.append(f"| {cid} | {key} | {_f(value)} |")
    for name in ("kernel_tests", "stage_test"):
        t = doc.get(name)
        if t:
            lines += [
                "",
                f"## {name}: {t.get('status')}",
                "",
                f"passed {_f(t.get('passed'))}, failed {_f(t.get('failed'))}, errors {_f(t.get('errors'))}, skipped {_f(t.get('skipped'))}",
            ]
            lines += [f"- {f['test']}: {f['message']}" for f in t.get("failures", [])[:15]]
    return "\n".join(lines) + "\n"


def write(doc: dict, out: str | Path) -> tuple[Path, Path]:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    js, md = out / "gpu-check.json", out / "gpu-check.md"
    js.write_text(dumps(doc) + "\n", encoding="utf-8")
    md.write_text(markdown(doc), encoding="utf-8")
    return js, md


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trustmass.bench gpu", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="write gpu-check.json and gpu-check.md here (make gpu-check: benchmarks/gpu)")
    parser.add_argument("--dry-run", action="store_true", help="the CPU dry-run: --device cpu --tiny")
    parser.add_argument("--device", choices=("cuda", "cpu"), help="default: cuda when available")
    parser.add_argument("--tiny", action="store_true", help="tiny shapes (seconds on a CPU)")
    parser.add_argument(
        "--budget-s", type=float, default=BUDGET_S, help=f"time budget of the whole check (default {BUDGET_S:g})"
    )
    parser.add_argument("--sections", help=f"comma-separated subset of {','.join(SECTIONS)}")
    parser.add_argument(
        "--wheels", help="unpack the carried wheels in this folder (make gpu-wheels) into .gpu-site/ first"
    )
    args = parser.parse_args(argv)
    device = "cpu" if args.dry_run else args.device
    tiny = args.tiny or args.dry_run
    sections = tuple(args.sections.split(",")) if args.sections else SECTIONS
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)}; choose from {', '.join(SECTIONS)}")
    progress = (lambda partial: write(partial, args.out)) if args.out else None
    doc = run(
        device=device, tiny=tiny, budget_s=args.budget_s, sections=sections, wheels=args.wheels, progress=progress
    )
    if args.out:
        js, md = write(doc, args.out)
        print(f"wrote {js} and {md}", file=sys.stderr)
    print(markdown(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
