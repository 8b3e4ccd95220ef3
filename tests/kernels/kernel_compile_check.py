"""Compile the Triton kernels for a GPU without one: Hopper (sm_90a) and Ampere (sm_80) PTX + cubin.

Run as a script (``python kernel_compile_check.py``; ``TRITON_INTERPRET`` must be unset, the script
drops it): for every kernel, with the production tile sizes (`triton_kernels._config`,
`triton_restricted._config`) and each numerics path, ``triton.compile`` lowers it for the target
and the wheel's ``ptxas`` reports registers and spills.  Prints one JSON object
``{name: {target, regs, spill_bytes, wgmma, mma, ex2, cvt_bf16, shared, error}}``.
`test_kernel_compile.py` runs it in a subprocess.  What it shows without a GPU: the kernels lower
(no interpreter-only construct), bf16/fp16 dots become tensor-core instructions, eager's roundings
become ``cvt.rn``, and the tiles fit the register file.  What it cannot show: speed, and that the
numerics match CUDA eager (``test_kernel_cuda.py`` on a GPU).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile

os.environ.pop("TRITON_INTERPRET", None)
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

P32 = "*fp32"
SCALARS = {"scaling": "fp32", "softcap": "fp32", "inv_softcap": "fp32", "nnz": "i64"}
UNIT_STRIDES = {
    "stride_qd",
    "stride_kd",
    "stride_vd",
    "stride_od",
    "stride_fn",
    "stride_pn",
    "stride_on",
    "stride_an",
    "stride_wn",
    "stride_cn",
}
ALIGNED_STRIDES = {"stride_qh", "stride_qm", "stride_qn", "stride_kh", "stride_kn", "stride_vh", "stride_vn", "D"}


def _ptxas():
    import triton

    base = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
    for name in ("ptxas-blackwell", "ptxas"):
        path = os.path.join(base, name)
        if os.path.exists(path):
            return path
    return None


def build(fn, types: dict, constexprs: dict, num_warps: int, num_stages: int, arch: int) -> dict:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    # what the JIT specialises at a real launch: 16-byte aligned tensors, head-dim strides of 1, token and
    # head strides of q/k/v that are multiples of 16 elements (d = 64 or 128)
    constexprs = {**{n: 1 for n in fn.arg_names if n in UNIT_STRIDES}, **constexprs}
    sig = {n: ("constexpr" if n in constexprs else types.get(n, SCALARS.get(n, "i32"))) for n in fn.arg_names}
    aligned = [n for n in fn.arg_names if n not in constexprs and (sig[n].startswith("*") or n in ALIGNED_STRIDES)]
    attrs = {(fn.arg_names.index(n),): [["tt.divisibility", 16]] for n in aligned}
    src = ASTSource(
        fn=fn, signature=sig, constexprs={(fn.arg_names.index(k),): v for k, v in constexprs.items()}, attrs=attrs
    )
    kernel = triton.compile(
        src, target=GPUTarget("cuda", arch, 32), options={"num_warps": num_warps, "num_stages": num_stages}
    )
    ptx = kernel.asm["ptx"]
    ttgir = kernel.asm.get("ttgir", "")
    out = {
        "target": f"sm_{arch}",
        "shared": kernel.metadata.shared,
        # loads issued ahead of the MMAs (software pipelining of the tile loop)
        "async_copies": ttgir.count("async_copy_global_to_local") + ttgir.count("async_tma_copy_global_to_local"),
        "wgmma": len(re.findall(r"wgmma\.mma_async", ptx)),
        "mma": len(re.findall(r"\bmma\.sync", ptx)),
        "ex2": len(re.findall(r"ex2\.approx", ptx)),
        "cvt_bf16": len(re.findall(r"cvt\.rn\.bf16", ptx)),
        "regs": None,
        "spill_bytes": None,
    }
    ptxas = _ptxas()
    if ptxas is not None:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "k.ptx")
            with open(path, "w") as f:
                f.write(ptx)
            arch_flag = "sm_90a" if arch == 90 else f"sm_{arch}"
            info = subprocess.run(
                [ptxas, f"-arch={arch_flag}", "-v", path, "-o", os.path.join(tmp, "k.cubin")],
                capture_output=True,
                text=True,
                check=False,
            ).stderr
        regs = re.findall(r"Used (\d+) registers", info)
        spill = re.findall(r"(\d+) bytes spill stores", info)
        out["regs"] = int(regs[0]) if regs else None
        out["spill_bytes"] = int(spill[0]) if spill else None
    return out


def _flags(dot: int, logits: int, softcap=False, window=False) -> dict:
    return dict(
        HAS_SOFTCAP=softcap,
        HAS_WINDOW=window,
        LOGITS=logits,
        DOT=dot,
        NATIVE=dot != 0,
        BITS=False,
        LIBDEVICE=True,
        FAST=dot != 0,
    )


DTYPE = {0: "fp32", 1: "bf16", 2: "fp16"}


def jobs() -> dict:
    from trustmass.kernels import triton_kernels as tk
    from trustmass.kernels import triton_restricted as tr

    def stats(dot, logits, d, rows=0, group_rows=0, arch=90, **fl):
        fast = dot != 0
        cfg = (
            tr._config("stats", d, fast, group_rows, None)
            if rows == 2
            else tk._config("stats" if rows == 0 else "rows", d, fast)
        )
        t = {"Q": f"*{DTYPE[dot]}", "K": f"*{DTYPE[dot]}", "POS": "*i64", "ROW_HI": "*i32", "M_OUT": P32, "L_OUT": P32}
        c = dict(ROWS=rows, **_flags(dot, logits, **fl), BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_D=d)
        return build(tk._stats_kernel, t, c, cfg["num_warps"], cfg["num_stages"], arch)

    def column(dot, logits, d, arch=90, **fl):
        cfg = tk._config("column", d, dot != 0)
        t = {
            "Q": f"*{DTYPE[dot]}",
            "K": f"*{DTYPE[dot]}",
            "M_IN": P32,
            "L_IN": P32,
            "ROW_HI": "*i32",
            "SLOT": "*i32",
            "F": "*fp64",
            "PC": P32,
        }
        c = dict(
            HAS_L=True,
            WANT_P=True,
            SUM64=dot == 0,
            **_flags(dot, logits, **fl),
            BLOCK_M=cfg["BLOCK_M"],
            BLOCK_N=cfg["BLOCK_N"],
            BLOCK_D=d,
        )
        return build(tk._column_kernel, t, c, cfg["num_warps"], cfg["num_stages"], arch)

    def rows(dot, logits, d, arch=90):
        cfg = tk._config("rows", d, dot != 0)
        t = {
            "Q": f"*{DTYPE[dot]}",
            "K": f"*{DTYPE[dot]}",
            "POS": "*i64",
            "M_PART": P32,
            "L_PART": P32,
            "LSE": P32,
            "OUT": P32,
        }
        c = dict(HAS_LSE=False, **_flags(dot, logits), BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_D=d)
        return build(tk._row_probs_kernel, t, c, cfg["num_warps"], cfg["num_stages"], arch)

    def epilogue(arch=90):
        t = {
            "F": "*fp64",
            "PC": P32,
            "SLOT": "*i32",
            "POS": "*i64",
            "OFF": "*i64",
            "ACC": P32,
            "WSUM": P32,
            "P_OUT": P32,
        }
        cfg = tk._config("epilogue", 64, True)
        return build(
            tk._epilogue_kernel, t, dict(WANT_P=True, BLOCK=cfg["BLOCK"]), cfg["num_warps"], cfg["num_stages"], arch
        )

    def gather(dot, logits, d, arch=90):
        cfg = tr._config("gather", d, dot != 0, 0, None)
        t = {
            "Q": f"*{DTYPE[dot]}",
            "K": f"*{DTYPE[dot]}",
            "V": f"*{DTYPE[dot]}",
            "ROWS": "*i64",
            "PTR": "*i64",
            "IDX": "*i64",
            "M_PART": P32,
            "L_PART": P32,
            "LSE_IN": P32,
            "OUT": P32,
            "MASS": P32,
            "LSE_OUT": P32,
            "BAD": "*i32",
        }
        fl = _flags(dot, logits)
        fl.pop("NATIVE")
        c = dict(HAS_LSE=False, S_PAD=16, **fl, BLOCK_K=cfg["BLOCK_K"], BLOCK_D=d)
        return build(tr._restricted_gather_kernel, t, c, cfg["num_warps"], cfg["num_stages"], arch)

    return {
        "stats-bf16-emulated-d128": lambda: stats(1, 1, 128),
        "stats-bf16-emulated-d64": lambda: stats(1, 1, 64),
        "stats-bf16-window-softcap-d128": lambda: stats(1, 1, 128, softcap=True, window=True),
        "stats-fp32-d64": lambda: stats(0, 0, 64),
        "stats-fp32-d128": lambda: stats(0, 0, 128),
        "column-bf16-emulated-d128": lambda: column(1, 1, 128),
        "column-bf16-emulated-d64": lambda: column(1, 1, 64),
        "column-bf16-window-softcap-d128": lambda: column(1, 1, 128, softcap=True, window=True),
        "column-fp16-emulated-d128": lambda: column(2, 2, 128),
        "column-bf16-flash-semantics-d128": lambda: column(1, 0, 128),
        "column-fp32-d64": lambda: column(0, 0, 64),
        "column-fp32-d128": lambda: column(0, 0, 128),
        "rows-bf16-emulated-d128": lambda: rows(1, 1, 128),
        "rows-fp32-d64": lambda: rows(0, 0, 64),
        "rows-fp32-d128": lambda: rows(0, 0, 128),
        "epilogue": lambda: epilogue(),
        "restricted-stats-bf16-d128-512-rows": lambda: stats(1, 1, 128, rows=2, group_rows=512),
        "restricted-stats-bf16-d128-4-rows": lambda: stats(1, 1, 128, rows=2, group_rows=4),
        "restricted-stats-fp32-d64": lambda: stats(0, 0, 64, rows=2, group_rows=512),
        "restricted-gather-bf16-d128": lambda: gather(1, 1, 128),
        "restricted-gather-fp32-d128": lambda: gather(0, 0, 128),
        "ampere-column-bf16-emulated-d128": lambda: column(1, 1, 128, arch=80),
        "ampere-stats-bf16-emulated-d128": lambda: stats(1, 1, 128, arch=80),
    }


def main(names: list[str]) -> int:
    import traceback

    todo = jobs()
    results = {}
    for name in names or list(todo):
        try:
            results[name] = todo[name]()
        except Exception:  # noqa: BLE001 -- report per kernel
            results[name] = {"error": traceback.format_exc()[-3000:]}
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
