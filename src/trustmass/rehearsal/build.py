"""Build the rehearsal's local Hugging Face cache from the configurations themselves.

Every ``source: hub`` model of the plans gets a small model of its architecture under its own ``id`` and
``revision`` (:mod:`~trustmass.rehearsal.architectures`); every ``source: hf-dataset`` corpus its dataset under
its ``id``, ``config`` and ``split``; every ``hub:`` benchmark path of ``deploy.benchmarks`` its records under
each ``data_dir``; each hub-only deployment method what kvpress downloads for each deployed model
(:mod:`~trustmass.rehearsal.assets`).  Seeded: the same configurations give the same files and commits.
``<hf_home>/rehearsal.json`` lists what was built.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from trustmass.rehearsal import assets, data, hub
from trustmass.rehearsal.architectures import public_config, write_model
from trustmass.rehearsal.plans import PLANS, REPO, config_files, paper_files
from trustmass.rehearsal.tokenizers import family_of, write_tokenizer

__all__ = ["MANIFEST", "build", "hub_models"]

MANIFEST = "rehearsal.json"
Log = Callable[[str], None]


def _resolved(files: Iterable[Path]) -> dict:
    from trustmass.cli.instances import resolve_config

    return resolve_config(*[str(f) for f in files])


def _doc_tokens(config: Mapping[str, Any], model: str) -> int:
    entry = config["models"][model]
    return int({**config["documents"], **(entry.get("documents") or {})}["doc_tokens"])


def hub_models(plans: Iterable[str], repo: Path = REPO) -> dict[str, dict]:
    """Every ``source: hub`` model of the plans by hub id: its revision, declared shape and the scale of its
    documents (the rehearsal's length over the paper's), from the configurations."""
    found: dict[str, dict] = {}
    for plan in plans:
        paper, rehearsal = _resolved(paper_files(plan, repo)), _resolved(config_files(plan, repo))
        for name, entry in rehearsal["models"].items():
            if entry.get("source") != "hub":
                continue
            key = (entry["id"], entry.get("revision"))
            if name not in paper["models"]:  # a deployed-only model restated for a plan that does not deploy
                continue
            scale = _doc_tokens(rehearsal, name) / _doc_tokens(paper, name)
            known = found.setdefault(
                entry["id"], {"revision": entry.get("revision"), "declared": entry.get("declared"), "names": []}
            )
            if (entry["id"], known["revision"]) != key:
                raise ValueError(f"{entry['id']} is configured at two revisions ({known['revision']}, {key[1]})")
            known["names"].append(name)
            known["window_scale"] = min(scale, known.get("window_scale", scale))
    return found


def _hub_benchmarks(config: Mapping[str, Any]) -> list[tuple[str, str | None, dict]]:
    """(dataset id, data_dir, entry) of every ``hub:`` path of ``deploy.benchmarks``."""
    out = []
    if not config["deploy"].get("enabled"):
        return out
    for bench in config["deploy"].get("benchmarks") or []:
        path = str(bench["path"])
        if not path.startswith("hub:"):
            continue
        name, _, data_dir = path[4:].partition(":")
        for task in bench.get("tasks") or [None]:
            out.append((name, data_dir.format(task=task) if task else (data_dir or None), bench))
    return out


def build(
    hf_home: Path,
    plans: Iterable[str] = tuple(PLANS),
    *,
    repo: Path = REPO,
    cache: Path | None = None,
    seed: int = 0,
    log: Log = print,
) -> dict:
    """Write the cache under ``hf_home`` (``hub/`` and ``datasets/``) for ``plans``; the manifest."""
    plans = list(plans)
    hf_home = Path(hf_home).resolve()
    hub_cache, datasets_cache, work = hf_home / "hub", hf_home / "datasets", hf_home / "rehearsal-build"
    cache = Path(cache or repo / "resources" / "cache").resolve()
    started = time.time()
    manifest: dict[str, Any] = {"plans": plans, "seed": seed, "models": {}, "datasets": [], "files": {}}
    configs = {plan: _resolved(config_files(plan, repo)) for plan in plans}

    # models, under their own ids and revisions
    shapes: dict[str, dict] = {}
    for repo_id, spec in hub_models(plans, repo).items():
        facts = public_config(repo_id, spec["declared"])
        family = family_of(facts["model_type"])
        tokenizer = write_tokenizer(family, work / "tokenizers" / family, repo, cache, log=log)
        with tempfile.TemporaryDirectory(dir=work, prefix="model-") as tmp:
            info = write_model(
                repo_id, Path(tmp), tokenizer, declared=spec["declared"], window_scale=spec["window_scale"]
            )
            snapshot, commit = hub.write_repo(hub_cache, repo_id, _files(Path(tmp)), spec["revision"])
        shapes[repo_id] = {**info, "kv_heads": facts["kv_heads"], "group": facts["heads"] // facts["kv_heads"]}
        manifest["models"][repo_id] = {
            "revision": spec["revision"] or "main",
            "commit": commit,
            "family": family,
            "configured_as": spec["names"],
            **info,
        }
        log(f"model {repo_id}: {info['model_type']}, {info['parameters']:,} parameters, commit {commit[:12]}")

    # datasets: hf-dataset corpora, hub benchmarks
    done: set[tuple] = set()
    for config in configs.values():
        for name, entry in config["corpora"].items():
            if entry.get("source") != "hf-dataset" or name not in _used_corpora(config):
                continue
            key = (entry["id"], entry.get("config"), None)
            if key in done:
                continue
            field = entry.get("field", "text")
            rows = [{field: r["text"]} for r in data.wikitext_rows(seed)]
            hub.write_dataset(
                datasets_cache, entry["id"], {entry.get("split", "test"): rows}, config=entry.get("config")
            )
            done.add(key)
            manifest["datasets"].append({"id": entry["id"], "config": entry.get("config"), "rows": len(rows)})
            log(f"dataset {entry['id']} ({entry.get('config')}): {len(rows):,} rows")
        for name, data_dir, bench in _hub_benchmarks(config):
            key = (name, None, data_dir)
            if key in done:
                continue
            sentences = max(8, int(bench["max_length"]) // 10)  # a context longer than max_length: truncated
            if bench["family"] == "ruler":
                rows = data.ruler_rows(seed, int(bench["max_length"]), sentences)
            else:
                rows = data.longbench_rows(seed, data_dir, sentences)
            hub.write_dataset(datasets_cache, name, {"test": rows}, data_dir=data_dir)
            done.add(key)
            manifest["datasets"].append({"id": name, "data_dir": data_dir, "rows": len(rows)})
        log(f"benchmarks: {sum(1 for k in done if k[2])} data_dirs")

    # what the hub-only methods download, for each deployed model
    for config in configs.values():
        deploy = config["deploy"]
        if not deploy.get("enabled") or not deploy.get("hub"):
            continue
        methods = set(deploy.get("methods") or ()) | set((deploy.get("replay") or {}).get("methods") or ())
        deployed = {
            config["models"][m]["id"] for m in deploy.get("models") or () if config["models"][m].get("source") == "hub"
        }
        for repo_id in sorted(deployed):
            s = shapes[repo_id]
            if "kvzap" in methods:
                name = assets.kvzap_repo(repo_id)
                with tempfile.TemporaryDirectory(dir=work, prefix="kvzap-") as tmp:
                    assets.write_kvzap(
                        Path(tmp),
                        name,
                        hidden=s["hidden_size"],
                        kv_heads=s["kv_heads"],
                        layers=s["layers"]["rehearsal"],
                    )
                    _, commit = hub.write_repo(hub_cache, name, _files(Path(tmp)))
                manifest["files"][name] = commit
            if "fastkvzip" in methods:
                import torch

                path = assets.fastkvzip_file(repo_id, s["group"])
                assets.write_fastkvzip_gates(
                    work / "fastkvzip" / path,
                    repo_id,
                    hidden=s["hidden_size"],
                    kv_heads=s["kv_heads"],
                    group=s["group"],
                    layers=s["layers"]["rehearsal"],
                    dtype=torch.bfloat16,
                )
        if "fastkvzip" in methods:
            gates = {p.relative_to(work / "fastkvzip").as_posix(): p for p in (work / "fastkvzip").rglob("*.pt")}
            _, commit = hub.write_repo(hub_cache, assets.FASTKVZIP_REPO, gates)
            manifest["files"][assets.FASTKVZIP_REPO] = {"commit": commit, "files": sorted(gates)}
        if "duo_attention" in methods and (assets.BOOKSUM, "train") not in done:
            hub.write_dataset(datasets_cache, assets.BOOKSUM, {"train": data.booksum_rows(seed)})
            done.add((assets.BOOKSUM, "train"))
            manifest["datasets"].append({"id": assets.BOOKSUM, "split": "train"})
        log(f"hub-only methods: {', '.join(sorted(methods & {'kvzap', 'fastkvzip', 'duo_attention'}))}")

    shutil.rmtree(work / "fastkvzip", ignore_errors=True)
    manifest["seconds"] = round(time.time() - started, 1)
    (hf_home / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def _files(folder: Path) -> dict[str, Path]:
    return {p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*")) if p.is_file()}


def _used_corpora(config: Mapping[str, Any]) -> set[str]:
    used = set(config["study"]["corpora"])
    for key in (config["deploy"].get("haystack"), config["task_contexts"].get("haystack")):
        if key:
            used.add(key)
    return used
