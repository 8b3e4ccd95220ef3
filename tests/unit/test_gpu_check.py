"""The prepared GPU check (trustmass.bench.gpu, issue 28 item 3) on the CPU: import-light, and its dry-run.

The check must run on a machine with torch, Triton and numpy only, so its modules and the kernel,
capture and restricted-attention modules it drives are imported here in a child python in which
polars and snakemake cannot be imported; and the whole check runs end to end in its CPU dry-run
mode (tiny shapes, seconds) in such a child, its JSON read back and its structure checked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO

#: a child python in which importing polars or snakemake fails, as on the GPU machine
BLOCKED = textwrap.dedent(
    """\
    import sys
    class _Blocked:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("polars", "snakemake"):
                raise ModuleNotFoundError(f"No module named {name!r} (made unimportable by the test)", name=name)
            return None
    sys.meta_path.insert(0, _Blocked())
    """
)
LIGHT = [
    "trustmass.bench.__main__",
    "trustmass.bench.gpu",
    "trustmass.bench.gpu_env",
    "trustmass.bench.gpu_sections",
    "trustmass.bench.gpu_claims",
    "trustmass.bench.gpu_wheels",
    "trustmass.kernels",
    "trustmass.kernels.reference",
    "trustmass.kernels.restricted",
    "trustmass.sources.attention",
]


def _child(code: str, timeout: float = 240, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", BLOCKED + textwrap.dedent(code)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **env},
    )


def test_the_check_and_the_kernel_chains_import_without_polars_or_snakemake():
    done = _child(
        f"""
        import importlib
        for name in {LIGHT!r}:
            importlib.import_module(name)
        assert not any(m.split(".")[0] in ("polars", "snakemake") for m in sys.modules), sorted(sys.modules)
        from trustmass.bench.gpu_env import import_capture
        prefill, note = import_capture()  # polars stubbed where capture/access.py needs it
        assert prefill.capture_document and prefill.CaptureOptions
        print("NOTE", note)
        """
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "NOTE" in done.stdout


def test_the_capture_chain_without_polars():
    """``trustmass.capture.prefill`` itself, without the check's stub.  capture/access.py imported
    polars at module level (outside bench/ and cli/) until 2026-12-04 and now imports it where the
    access-law frame is built; should that come back (a tree without that change), this is an expected
    failure naming the module, and the check's polars stub keeps the capture running on the GPU."""
    done = _child("import trustmass.capture.prefill\n")
    if done.returncode and "capture/access.py" in done.stderr and "polars" in done.stderr:
        pytest.xfail("src/trustmass/capture/access.py imports polars at module level (the access-law frame)")
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu-dry-run")
    done = _child(
        f"""
        import runpy
        sys.argv = ["trustmass.bench", "gpu", "--dry-run", "--out", {str(out)!r}]
        try:
            runpy.run_module("trustmass.bench", run_name="__main__", alter_sys=True)
        except SystemExit as exc:
            assert not exc.code, exc.code
        real = [m for m, mod in sys.modules.items() if m.split(".")[0] in ("polars", "snakemake") and getattr(mod, "__file__", None)]
        assert not real, f"imported for real: {{real}}"  # (the check's polars stub has no file)
        """,
        TRITON_INTERPRET="1",  # the kernel comparison runs under Triton's interpreter where triton is installed
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads((out / "gpu-check.json").read_text()), (out / "gpu-check.md").read_text(), done


def test_the_dry_run_writes_the_json_and_the_table(dry_run):
    doc, md, _ = dry_run
    from trustmass.bench.gpu import SECTIONS

    assert doc["benchmark"] == "gpu-check" and doc["mode"] == "dry-run" and doc["schema_version"] == 1
    assert {"name", "driver", "cuda", "torch", "triton", "python"} <= set(doc["device"])
    assert list(doc["sections"]) == list(SECTIONS)
    statuses = {name: s["status"] for name, s in doc["sections"].items()}
    assert "error" not in statuses.values(), doc["sections"]
    assert statuses["kernel_tests"] == statuses["stage_test"] == "not run"
    for name in ("side_statistics", "restricted", "claims", "capture"):
        assert statuses[name] == "ok", (name, doc["sections"][name])
    assert len(doc["targets"]) == 4 and all({"target", "measured", "met"} <= set(t) for t in doc["targets"])
    assert doc["device"]["torch"] in md and "| section | status | seconds |" in md


def test_the_dry_run_measures_every_section(dry_run):
    doc, _, _ = dry_run
    side = doc["side_statistics"]["rows"]
    assert side and all(
        r["separate_ms"] == pytest.approx(r["rows_ms"] + r["column_ms"]) and r["sdpa_causal_ms"] > 0 for r in side
    )
    assert all(
        r["side_over_sdpa"] == pytest.approx(r["side_ms"] / r["sdpa_causal_ms"]) and r["side_ms"] > 0 for r in side
    )
    assert all(r["roofline"]["bound_ms"] > 0 and r["roofline"]["passes"] == 2 for r in side)
    assert {r["dtype"] for r in side} == {"float32", "bfloat16"}
    rest = doc["restricted"]["rows"]
    assert rest and all(r["throughput_vs_sdpa"] == pytest.approx(r["sdpa_ms"] / r["restricted_ms"]) for r in rest)
    cases = doc["capture"]["cases"]
    assert cases and all(c["status"] == "ok" and c["max_abs_deviation"] < 1e-2 and c["capture_s"] > 0 for c in cases)
    kd = doc["kernel_deviation"]
    if doc["sections"]["kernel_deviation"]["status"] == "ok":  # triton installed: the interpreter ran the comparison
        kernels = {"sampled_row_probs", "column_mass_and_window_sums", "side_statistics", "restricted_attention"}
        assert {e["kernel"] for e in kd["entries"]} == kernels
        assert {e["dtype"] for e in kd["entries"]} == {"float32", "bfloat16"}
        assert all(e["max_abs_dev"] < 1e-4 for e in kd["entries"] if e["dtype"] == "float32"), kd["entries"]
        # bf16: the interpreter's fp32 dot of the bf16 values vs the twin's bf16 matmul -- a logit may round
        # the other way (a bf16 step), most rows agree to 1e-6
        assert all(e["max_abs_dev"] < 2e-2 for e in kd["entries"]), kd["entries"]
        assert all(e["exact_row_share"] >= 0.5 for e in kd["entries"] if "exact_row_share" in e), kd["entries"]


def test_the_dry_run_times_the_claims(dry_run):
    claims = dry_run[0]["claims"]
    assert set(claims) == {"40", "102", "103", "115"} and all(c["status"] == "ok" for c in claims.values()), claims
    c40 = claims["40"]
    assert (
        len(c40["dropped_mass_cost_over_dense_layer"]) == len(c40["n_keys"])
        and c40["dropped_mass_time_per_layer_ms"] > 0
    )
    assert claims["102"]["swap_pairs"] == 192 and claims["102"]["swap_round_cost_share_percent"] > 0
    c103 = claims["103"]
    assert len(c103["prefill_mask_cost_over_dense"]) == len(c103["mu_cost_over_dense"]) == len(c103["shapes"]) >= 1
    c115 = claims["115"]  # structure only: tiny shapes on a shared CPU order no timings (a ratio once came out 0.16)
    assert c115["reconstruction_cost_over_prefill"] > 0 and c115["snapkv_compresskv_cost_over_prefill"] > 0
    assert (
        c115["reconstruction_time_s"] > 0
        and c115["prefill_time_s"] > 0
        and c115["compresskv_cost_over_prefill"] is None
    )
    assert c115["reconstruction_cost_over_prefill"] == pytest.approx(
        c115["reconstruction_time_s"] / c115["prefill_time_s"]
    )


def test_wheel_tags():
    from trustmass.bench.gpu_wheels import compatible

    assert compatible("transformers-5.2.0-py3-none-any.whl", (3, 12))
    assert compatible("tokenizers-0.22.2-cp39-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", (3, 12))
    assert compatible("regex-2026.11.19-cp312-cp312-manylinux2014_x86_64.manylinux_2_17_x86_64.whl", (3, 12))
    assert not compatible("regex-2026.11.19-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.whl", (3, 12))
    assert not compatible("safetensors-0.8.0-cp310-abi3-manylinux_2_17_x86_64.whl", (3, 9))
    assert not compatible("tokenizers-0.22.2-cp39-abi3-macosx_11_0_arm64.whl", (3, 12))


def test_wheels_already_present_are_not_unpacked(tmp_path):
    import zipfile

    from trustmass.bench.gpu_wheels import install

    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for name, files in {
        "pytest-9.2.0-py3-none-any.whl": {"pytest/__init__.py": ""},
        "zzcarried-1.0-py3-none-any.whl": {
            "zzcarried/__init__.py": "X = 1\n",
            "zzcarried-1.0.dist-info/METADATA": "Name: zzcarried\nVersion: 1.0\n",
        },
    }.items():
        with zipfile.ZipFile(wheels / name, "w") as archive:
            for path, text in files.items():
                archive.writestr(path, text)
    site = tmp_path / "site"
    try:
        report = install(wheels, site)
    finally:
        sys.path.remove(str(site))
    assert report["unpacked"] == ["zzcarried-1.0-py3-none-any.whl"] and report["present"][0].startswith("pytest==")
    assert (site / "zzcarried" / "__init__.py").read_text() == "X = 1\n" and not (site / "pytest").exists()
