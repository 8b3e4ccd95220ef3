"""The method roster's names and statuses, import-light (no torch, no kvpress), and the start-up checks of the
``deploy`` config section (run by workflow/rules/common.smk, like the loss stage's rule check).

The names are derived from the roster's entries (:mod:`trustmass.deploy.roster`).
"""

from __future__ import annotations

from trustmass.deploy.roster import ROSTER, configured_methods

#: methods that run offline, in roster order
OFFLINE = tuple(m.name for m in ROSTER if m.status == "offline")
#: methods whose press downloads weights or masks from the hub
NEEDS_HUB = tuple(m.name for m in ROSTER if m.status == "needs_hub")
#: methods that need KVzip's context-reconstruction pass (a second prefill per item)
RECONSTRUCTION = tuple(m.name for m in ROSTER if m.score == "reconstruction")
#: the methods whose variants ContourKV's W/T/L tables compare against the others
CONTOURKV = tuple(m.name for m in ROSTER if m.kind == "contourkv")


def method_problems(methods, hub: bool, field: str = "deploy.methods") -> list[str]:
    """Config problems of a method list, each naming the field and the fix."""
    problems = []
    for name in methods:
        if name in NEEDS_HUB and not hub:
            problems.append(
                f"config.{field}: {name!r} needs hub access (kvpress downloads its weights); fix: remove it, "
                "or set deploy.hub: true where the hub is reachable"
            )
        elif name not in OFFLINE + NEEDS_HUB:
            problems.append(
                f"config.{field}: unknown method {name!r}; fix: use one of {', '.join(OFFLINE + NEEDS_HUB)}"
            )
    return problems


#: ``declared: {model_type: ...}`` of the Gemma 3 models, on which kvpress refuses KVzip's reconstruction pass
GEMMA3_MODEL_TYPES = ("gemma3", "gemma3_text")


def gemma3_refusal(field: str, refused, model_name: str) -> str:
    """The problem of reconstruction methods (``refused``) listed in ``field`` for a Gemma 3 model: the
    job's check (trustmass.deploy.job, on the loaded model) and the start-up one (on ``declared:``)."""
    return (
        f"{field}: {', '.join(refused)} cannot run on {model_name}: kvpress refuses KVzip's context-reconstruction "
        f"pass on Gemma 3 models; fix: remove them from {field} in a config for this model, or remove "
        f"{model_name} from deploy.models"
    )


def _gemma3_problems(config: dict, methods) -> list[str]:
    """Reconstruction methods on deployed models whose ``declared: model_type`` is Gemma 3's (a model that
    declares no model_type is checked by the job, once it is loaded)."""
    deploy = config.get("deploy") or {}
    study = config.get("study") or {}
    deployed = deploy.get("models") or (study.get("headline") or {}).get("models") or study.get("models") or []
    fields = (
        ("deploy.methods", methods),
        ("deploy.decomposition.methods", (deploy.get("decomposition") or {}).get("methods")),
        ("deploy.replay.methods", (deploy.get("replay") or {}).get("methods")),
    )
    problems = []
    for model in deployed:
        declared = ((config.get("models") or {}).get(model) or {}).get("declared") or {}
        if declared.get("model_type") not in GEMMA3_MODEL_TYPES:
            continue
        for field, names in fields:
            refused = [n for n in names or () if n in RECONSTRUCTION]
            if refused:
                problems.append("config." + gemma3_refusal(field, refused, model))
    return problems


def config_problems(config: dict) -> list[str]:
    """deploy: defined models, a prose haystack corpus, known methods (hub ones only with deploy.hub), the
    required references, decomposition and replay methods among the run ones, budgets below every length."""
    deploy = config.get("deploy") or {}
    if not deploy.get("enabled", False):
        return []
    methods = configured_methods(deploy)
    problems = [
        f"config.deploy.models: {m!r} is not a model of config.models ({', '.join(config.get('models') or {})}); "
        "fix: define it there (a deployed model need not be captured) or remove it here"
        for m in deploy.get("models") or []
        if m not in (config.get("models") or {})
    ]
    haystack = deploy.get("haystack")
    if haystack is not None and haystack not in (config.get("corpora") or {}):
        problems.append(
            f"config.deploy.haystack: {haystack!r} is not a corpus of config.corpora "
            f"({', '.join(config.get('corpora') or {})}); fix: name one, or null for the headline corpus"
        )
    problems += method_problems(methods, bool(deploy.get("hub")))
    problems += [
        f"config.deploy.methods: {need!r} is required ({why}); fix: add it"
        for need, why in (("dense", "dense-valid gating"), ("snapkv", "bytes are reported over SnapKV's"))
        if need not in methods
    ]
    decomposition = list((deploy.get("decomposition") or {}).get("methods") or [])
    for name in decomposition:
        if name not in methods:
            problems.append(
                f"config.deploy.decomposition.methods: {name!r} is not in deploy.methods; fix: add it there"
            )
        elif name == "dense" or name in RECONSTRUCTION:
            problems.append(
                f"config.deploy.decomposition.methods: {name!r} does not rank with a press score; "
                "fix: use window-scored methods (snapkv, contourkv_enforced, ...)"
            )
    if decomposition and not deploy.get("query_aware", True):
        problems.append(
            "config.deploy.decomposition.methods: the decomposition splits question-visible eviction; "
            "fix: deploy.query_aware: true, or decomposition.methods: []"
        )
    for name in (deploy.get("replay") or {}).get("methods") or []:
        if name not in methods:
            problems.append(f"config.deploy.replay.methods: {name!r} is not in deploy.methods; fix: add it there")
        elif name in CONTOURKV:
            problems.append(
                f"config.deploy.replay.methods: {name!r} has no kvpress form to replay (its bytes are "
                "the runs' ragged and layer-padded ledger); fix: remove it"
            )
    lengths, budgets = list(deploy.get("lengths") or []), list(deploy.get("budgets") or [])
    if lengths and budgets and max(budgets) >= min(lengths):
        problems.append(
            f"config.deploy.budgets: {max(budgets)} is not below the shortest item length {min(lengths)} "
            "(the budget must leave something to evict); fix: lower deploy.budgets or raise deploy.lengths"
        )
    problems += benchmark_problems(deploy)
    problems += _gemma3_problems(config, methods)
    contour = deploy.get("contour") or {}
    floor = int(contour.get("floor", 32))
    if (
        any(m in CONTOURKV for m in methods)
        and "counts" in (contour.get("floor_readings") or [])
        and budgets
        and min(budgets) < floor
    ):
        problems.append(
            f"config.deploy.budgets: {min(budgets)} is below ContourKV's floor {floor} under the 'counts' "
            "reading (the floor alone exceeds s); fix: raise the budget, lower deploy.contour.floor, or "
            "use floor_readings: [extra]"
        )
    return problems


def benchmark_problems(deploy: dict) -> list[str]:
    """deploy.benchmarks: distinct names that are no synthetic task, a metric family, tasks it can score, data
    that exists (a local file, or the hub with deploy.hub), room for the budgets."""
    from pathlib import Path

    from trustmass.deploy import metrics
    from trustmass.deploy.tasks import TASKS
    from trustmass.plan.deploy import benchmark_files

    problems, seen = [], set()
    budgets = list(deploy.get("budgets") or [])
    for i, bench in enumerate(deploy.get("benchmarks") or []):
        name, field = bench.get("name"), f"config.deploy.benchmarks[{i}]"
        if name in TASKS or name in seen:
            problems.append(
                f"{field}.name: {name!r} is {'a synthetic task' if name in TASKS else 'used twice'}; "
                "fix: give each benchmark its own name"
            )
        seen.add(name)
        family = bench.get("family") or (bench.get("format") if bench.get("format") != "kvpress" else None)
        if family is None:
            problems.append(
                f"{field}.family: format 'kvpress' holds RULER or LongBench data; fix: family: ruler | longbench"
            )
        elif family == "longbench":
            for task in bench.get("tasks") or []:
                try:
                    metrics.metric_for(family, task)
                except ValueError as err:
                    problems.append(f"{field}.tasks: {err}")
        path = str(bench.get("path", ""))
        if path.startswith("hub:") and not deploy.get("hub"):
            problems.append(
                f"{field}.path: {path!r} is read from the hub; fix: set deploy.hub: true where the hub "
                "is reachable, or point the path at a local copy"
            )
        elif not path.startswith("hub:"):
            for local in benchmark_files(bench):
                if not Path(local).is_file():
                    problems.append(
                        f"{field}.path: {local!r} does not exist; fix: point it at the benchmark's .jsonl / "
                        ".parquet (trustmass.deploy.external says where to get each format)"
                    )
        if "{task}" in path and not bench.get("tasks"):
            problems.append(f"{field}.tasks: the path is stored per task ({{task}}); fix: name the tasks to read")
        own = list(bench.get("budgets") or budgets)
        if own and max(own) >= int(bench.get("max_length", 0)):
            problems.append(
                f"{field}.max_length: {bench.get('max_length')} is not above the largest budget "
                f"{max(own)}; fix: raise it or lower the budgets"
            )
    return problems
