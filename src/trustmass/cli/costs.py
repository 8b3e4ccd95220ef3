"""What a configuration costs before it is submitted: jobs per stage, projected GPU-hours and CPU-hours.

``python -m trustmass.cli.plan --configfile config/paper.yaml --costs`` prints one line per stage --
capture, ceiling/enumeration, certification, audit, held-out loss, deployment -- with its job count
(from the configuration alone, through the target lists of :mod:`trustmass.plan` the workflow's rules take) and its projected
hours from measured per-unit costs:

* CPU stages (ceiling, certification, audit): ``benchmarks/unit_costs.json``, each constant with its
  source line in ``docs/results.md`` or ``benchmarks/results.md``, its measurement date and its scaling rule.
  CPU-hours are core-hours booked (job wall time x the rule's threads).
* GPU stages (capture, loss, deployment): ``benchmarks/gpu/gpu-check.json`` of ``make gpu-check`` (a
  GPU run; a dry-run's JSON is not a measurement).  Without it the line says
  ``GPU cost: not measured yet (make gpu-check)``.

A projection, not a measurement: the per-unit costs come from smaller models and shorter runs, scaled
by the stated rules; stages and rules without a measured per-unit cost are counted, never costed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
UNIT_COSTS = REPO / "benchmarks" / "unit_costs.json"
GPU_JSON = REPO / "benchmarks" / "gpu" / "gpu-check.json"
NOT_MEASURED = "GPU cost: not measured yet (make gpu-check)"
GPU_STAGES = ("capture", "loss", "deployment")

__all__ = [
    "GPU_JSON",
    "NOT_MEASURED",
    "UNIT_COSTS",
    "format_projection",
    "job_counts",
    "load_gpu",
    "plans",
    "projection",
]


# --------------------------------------------------------------------------------------------------
# inputs


def load_units(path: str | Path = UNIT_COSTS) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def load_gpu(path: str | Path | None = GPU_JSON) -> dict | None:
    """The GPU check's JSON if it exists and was measured on a GPU (``mode: gpu``), else None."""
    if path is None or not Path(path).exists():
        return None
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    return doc if doc.get("mode") == "gpu" else None


# --------------------------------------------------------------------------------------------------
# the jobs a configuration plans (trustmass.plan: the target lists the workflow's rules take)


def _per_doc_instances(config, model) -> int:
    from trustmass.cli.instances import model_shape

    shape = model_shape(config, model)
    return (
        shape["layers"]
        * shape["heads"]
        * int(config["capture"]["rows_per_head"])
        * len(config["budgets"]["enumerated"])
    )


def plans(config: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The configuration and each of its control arms' (``controls.arms``, :mod:`trustmass.plan.controls`): every
    plan the workflow runs.  The arms' twins are jobs like any model's -- in config/paper.yaml more than half of
    the captures -- so a count or cost of the configuration alone falls short of its DAG.  An arm runs only what
    its claims read (the headline frames): a switchable stage whose statistics have none (the fixed-contract
    diagnostics) plans no job there, so it is switched off in the arm's plan here."""
    import copy

    from trustmass.plan import Study
    from trustmass.report.catalog import STATISTICS

    unread = [
        r.when for r in STATISTICS if r.when and "/" in r.when and not any(f.startswith("headline_") for f in r.frames)
    ]
    out = [config]
    for arm in Study(config).arms().values():
        arm_config = copy.deepcopy(arm.config)
        for switch in unread:
            *path, key = switch.split("/")
            node = arm_config
            for part in path:
                node = node[part]
            node[key] = False
        out.append(arm_config)
    return out


def _merged(counts: list[dict[str, dict[str, int]]]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for count in counts:
        for stage, rules in count.items():
            for rule, n in rules.items():
                out.setdefault(stage, {}).setdefault(rule, 0)
                out[stage][rule] += n
    return out


def captured_documents(config) -> list[dict]:
    """One entry per capture job: the documents and task contexts of the study and of each control arm, each with
    its tokens and instances."""
    return [d for plan in plans(config) for d in _captured_documents(plan)]


def _captured_documents(config) -> list[dict]:
    from trustmass.plan import Study

    study = Study(config)
    docs = [
        {"model": m, "corpus": c, "doc": int(d), "tokens": int(study.documents_for_model(m)["doc_tokens"])}
        for m, c, d in [*study.study_documents(), *study.task_documents()]
    ]
    for d in docs:
        d["instances"] = _per_doc_instances(config, d["model"])
    return docs


def job_counts(config: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """Jobs per stage and rule (the rules whose outputs the study's targets need), the control arms' included (their
    copies of a pooled rule, ``certify_shard_shuffled_text``, counted with it)."""
    return _merged([_job_counts(plan) for plan in plans(config)])


def _job_counts(config: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    from trustmass.plan import Study

    study = Study(config)
    docs = _captured_documents(config)
    headline = study.headline_documents()
    diagnostics = study.switch("diagnostics/enabled")
    return {
        "capture": {"capture": len(docs)},
        "ceiling": {"ceiling": len(docs)},
        "certification": {"certify_manifest": 1, "certify_shard": len(study.certify_shards()), "certify_sweep": 1},
        "audit": {"audit": len(headline), "row_diagnostics": len(headline) if diagnostics else 0},
        "loss": {
            "loss_document": len(study.loss_documents()),
            "loss_curvature": len(study.curvature_outputs()),
            "loss_map": len(study.loss_models()),
            "probe_train": len(study.probe_models()),
            "allocation_panel": len(study.allocation_outputs()),
            "loss_diagnostics": len(study.diagnostics_outputs()),
        },
        "deployment": {"deploy_condition": len(study.deploy_outputs()), "deploy_replay": len(study.replay_outputs())},
    }


def loss_configurations(config, model: str) -> int:
    """Configurations of one held-out document of ``model`` (trustmass.loss.configurations.plan)."""
    from trustmass.loss.configurations import plan
    from trustmass.plan import Study

    loss = config["loss"]
    probe = loss.get("probe") or {}
    alphas = tuple(probe.get("alpha_grid") or ()) if model in Study(config).probe_models() else ()
    return len(plan(tuple(loss["rules"]), int(loss["random_seeds"]), tuple(loss["accounting"]), alphas))


# --------------------------------------------------------------------------------------------------
# per-unit costs


def _shape(config, model) -> dict:
    entry = (config.get("models") or {}).get(model) or {}
    declared = entry.get("declared") or {}
    return {
        "layers": int(declared["layers"]),
        "heads": int(declared["heads"]),
        "head_dim": declared.get("head_dim"),
        "parameters_b": entry.get("parameters_b"),
    }


def capture_reference(gpu: Mapping) -> dict | None:
    """The measured capture case the projection scales from: bf16, Qwen2.5-1.5B first, then the most tokens."""
    cases = [c for c in (gpu.get("capture") or {}).get("cases", []) if c.get("status") == "ok"]
    if not cases:
        return None
    return sorted(cases, key=lambda c: (c["dtype"] != "bfloat16", c["model"] != "qwen2.5-1.5b", -c["n_tokens"]))[0]


def capture_seconds(ref: Mapping, shape: Mapping, tokens: int) -> float:
    """The two-term rule of unit_costs.json: the forward scales with parameters x tokens, the side
    statistics (capture minus forward) with layers x heads x head_dim x tokens^2."""
    forward = ref["sdpa_forward_s"] * (shape["parameters_b"] * tokens) / (ref["parameters_b"] * ref["n_tokens"])
    side_units = shape["layers"] * shape["heads"] * shape["head_dim"] * tokens**2
    ref_units = ref["layers"] * ref["heads"] * ref["head_dim"] * ref["n_tokens"] ** 2
    return forward + max(0.0, ref["capture_s"] - ref["sdpa_forward_s"]) * side_units / ref_units


def loss_document_seconds(
    measured: Mapping, shape: Mapping, tokens: int, continuation: int, configurations: int
) -> float:
    restricted = [v for k, v in measured.items() if k.endswith("_continuation_s") and not k.startswith("dense")]
    per_config = sum(restricted) / len(restricted) * continuation / measured["continuation"]
    prefix = measured["prefix_s"] * tokens / measured["n_tokens"]
    return (prefix + configurations * per_config) * shape["parameters_b"] / measured["parameters_b"]


def projection(config: Mapping[str, Any], units: Mapping | None = None, gpu: Mapping | None = None) -> list[dict]:
    """One row per stage: jobs (per rule), the units costed, gpu_hours / cpu_hours (None: not costed
    -- see ``basis``), and the basis of the number; the control arms' jobs and units added to the study's."""
    units = load_units() if units is None else units
    per_plan = [_projection(plan, units, gpu) for plan in plans(config)]
    rows = []
    for stage_rows in zip(*per_plan):
        row = dict(stage_rows[0])
        row["jobs"] = _merged([{"s": r["jobs"]} for r in stage_rows])["s"]
        row["units"] = _merged([{"s": r["units"]} for r in stage_rows]).get("s", {})
        for key in ("gpu_hours", "cpu_hours"):
            values = [r[key] for r in stage_rows]
            row[key] = None if any(v is None for v in values) else sum(values)
        rows.append(row)
    return rows


def _projection(config: Mapping[str, Any], units: Mapping, gpu: Mapping | None) -> list[dict]:
    jobs = _job_counts(config)
    from trustmass.plan import Study

    study = Study(config)
    docs = _captured_documents(config)
    cpu = units["cpu"]
    rows = []

    # capture (GPU)
    row = {
        "stage": "capture",
        "jobs": jobs["capture"],
        "units": {"documents": len(docs)},
        "gpu_hours": None,
        "cpu_hours": None,
    }
    ref = capture_reference(gpu) if gpu else None
    if gpu is None:
        row["basis"] = NOT_MEASURED
    elif ref is None or not ref.get("parameters_b"):
        row["basis"] = "GPU cost: not measured (the gpu-check JSON has no completed capture case)"
    else:
        try:
            seconds = sum(capture_seconds(ref, _shape(config, d["model"]), d["tokens"]) for d in docs)
            row["gpu_hours"] = seconds / 3600
            row["basis"] = (
                f"{ref['model']} {ref['dtype']} {ref['n_tokens']:,} tokens on {gpu['device']['name']}: capture "
                f"{ref['capture_s']:.3g} s, forward {ref['sdpa_forward_s']:.3g} s; scaled per document (unit_costs.json gpu.capture)"
            )
        except (KeyError, TypeError) as exc:
            row["basis"] = f"GPU cost: not projected (a model lacks declared.head_dim or parameters_b: {exc})"
    rows.append(row)

    # ceiling / enumeration (CPU)
    c = cpu["ceiling"]
    instances = sum(d["instances"] for d in docs)
    core_s = sum(c["core_seconds_per_unit"] * d["instances"] * d["tokens"] / c["at_doc_tokens"] for d in docs)
    rows.append(
        {
            "stage": "ceiling/enumeration",
            "jobs": jobs["ceiling"],
            "units": {"instances": instances},
            "gpu_hours": None,
            "cpu_hours": core_s / 3600,
            "basis": f"{c['core_seconds_per_unit'] * 1e3:.2f} core-ms per instance at {c['at_doc_tokens']:,} keys, "
            f"x tokens / {c['at_doc_tokens']:,} ({c['measured']})",
        }
    )

    # certification (CPU)
    from trustmass.cli.instances import planned_manifest

    cert = planned_manifest(config)
    rule = cpu["certification"]["per_certifier"].get(cert["certifier"])
    row = {
        "stage": "certification",
        "jobs": jobs["certification"],
        "units": {"instances": cert["instances"]},
        "gpu_hours": None,
    }
    if rule is None:
        row.update(cpu_hours=None, basis=f"no measured per-instance cost for certifier {cert['certifier']!r}")
    else:
        per = rule["seconds_per_unit_over_budget"] * cert["budget_s"]
        row.update(
            cpu_hours=per * cert["instances"] / 3600,
            basis=f"{cert['certifier']}: {per:.0f} s per instance ({rule['seconds_per_unit_over_budget']:.3g} x "
            f"a budget of {cert['budget_s']:.3g} s per probe, "
            f"median, {cpu['certification']['measured']}); manifest and sweep not costed",
        )
    rows.append(row)

    # audit (CPU)
    a = cpu["audit"]
    headline = [d for d in docs if study.headline.contains(d["model"], d["corpus"])]
    core_s = sum(a["core_seconds_per_unit"] * d["instances"] * d["tokens"] / a["at_doc_tokens"] for d in headline)
    rows.append(
        {
            "stage": "audit",
            "jobs": jobs["audit"],
            "units": {"instances": sum(d["instances"] for d in headline)},
            "gpu_hours": None,
            "cpu_hours": core_s / 3600,
            "basis": f"{a['core_seconds_per_unit'] * 1e3:.1f} core-ms per headline instance at "
            f"{a['at_doc_tokens']:,} keys, x tokens / {a['at_doc_tokens']:,} ({a['measured']})",
        }
    )

    # held-out loss (GPU)
    loss_docs = study.loss_documents()
    row = {
        "stage": "loss",
        "jobs": jobs["loss"],
        "units": {"heldout_documents": len(loss_docs)},
        "gpu_hours": None,
        "cpu_hours": None,
    }
    measured = (gpu or {}).get("loss_forward")
    if gpu is None:
        row["basis"] = NOT_MEASURED
    elif not measured or not measured.get("parameters_b"):
        why = ((gpu.get("sections") or {}).get("loss_forward") or {}).get("reason") or "no loss_forward section"
        row["basis"] = f"GPU cost: not measured (gpu-check's loss_forward: {why})"
    else:
        loss = config["loss"]
        try:
            seconds = 0.0
            for model, _, _ in loss_docs:
                tokens = int(loss["heldout"].get("doc_tokens") or study.documents_for_model(model)["doc_tokens"])
                seconds += loss_document_seconds(
                    measured,
                    _shape(config, model),
                    tokens,
                    int(loss["continuation"]),
                    loss_configurations(config, model),
                )
            row["gpu_hours"] = seconds / 3600
            row["basis"] = (
                f"loss_document only: {measured['model']} on {gpu['device']['name']}, scaled (unit_costs.json gpu.loss)"
            )
        except (KeyError, TypeError) as exc:
            row["basis"] = f"GPU cost: not projected (a model lacks parameters_b: {exc})"
    rows.append(row)

    # deployment (GPU)
    n = sum(jobs["deployment"].values())
    rows.append(
        {
            "stage": "deployment",
            "jobs": jobs["deployment"],
            "units": {},
            "gpu_hours": 0.0 if n == 0 else None,
            "cpu_hours": 0.0 if n == 0 else None,
            "basis": "stage off (deploy.enabled: false)"
            if n == 0
            else (NOT_MEASURED if gpu is None else "GPU cost: not measured (make gpu-check has no deployment section)"),
        }
    )
    return rows


# --------------------------------------------------------------------------------------------------
# printing


def _hours(x) -> str:
    return "--" if x is None else f"{x:,.1f}"


def format_projection(rows: list[dict], gpu: Mapping | None = None) -> str:
    lines = [f"{'stage':<20} {'jobs':>6}  {'GPU-hours':>10} {'CPU-hours':>10}  jobs per rule; basis"]
    for r in rows:
        jobs = ", ".join(f"{n:,} {rule}" for rule, n in r["jobs"].items() if n)
        units = ", ".join(f"{v:,} {k}" for k, v in r["units"].items())
        lines.append(
            f"{r['stage']:<20} {sum(r['jobs'].values()):>6,}  {_hours(r['gpu_hours']):>10} {_hours(r['cpu_hours']):>10}  "
            f"{jobs or 'none'}{f' ({units})' if units else ''}; {r['basis']}"
        )
    gpu_stages = [r for r in rows if r["stage"] in GPU_STAGES]
    cpu_stages = [r for r in rows if r["stage"] not in GPU_STAGES]
    gpu_missing = [r["stage"] for r in gpu_stages if r["gpu_hours"] is None]
    cpu_missing = [r["stage"] for r in cpu_stages if r["cpu_hours"] is None]
    gpu_total = "--" if gpu_missing else _hours(sum(r["gpu_hours"] for r in gpu_stages))
    cpu_total = _hours(sum(r["cpu_hours"] for r in cpu_stages if r["cpu_hours"] is not None))
    notes = [
        f"GPU-hours not projected for {', '.join(gpu_missing)}" if gpu_missing else "",
        f"CPU-hours leave out {', '.join(cpu_missing)}" if cpu_missing else "",
        "CPU-hours are core-hours booked (job wall time x the rule's threads)",
    ]
    lines.append(
        f"{'total':<20} {sum(sum(r['jobs'].values()) for r in rows):>6,}  {gpu_total:>10} {cpu_total:>10}  "
        + "; ".join(n for n in notes if n)
    )
    source = "none (make gpu-check)" if gpu is None else f"{gpu['device']['name']} ({gpu.get('created_utc')})"
    lines.append(f"per-unit costs: {UNIT_COSTS.relative_to(REPO)}; GPU measurements: {source}")
    return "\n".join(lines)


def print_costs(
    config: Mapping[str, Any], gpu_json: str | Path | None = GPU_JSON, unit_costs: str | Path = UNIT_COSTS
) -> int:
    gpu = load_gpu(gpu_json)
    print(format_projection(projection(config, load_units(unit_costs), gpu), gpu))
    return 0
