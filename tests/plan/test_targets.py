"""The plan layer's target lists equal the files the workflow planned before the layer existed.

``snapshots/<config>.inputs.json`` holds the inputs (code left out) of the rules whose input lists are
per-model selections of capture documents (the map, the allocation panel, the probe, the sweep), from the
dry-run at the same commit.  ``snapshots/<config>.tsv`` holds ``rule<TAB>output`` for every output (sidecars left out) of
``snakemake --summary`` at the commit before ``trustmass.plan`` (a6d309e), for the embedded default, the
CPU panel and the paper's configuration.  Each target list of :class:`trustmass.plan.Study` must be
exactly the outputs of the rule that makes those files -- computed here without Snakemake.  When the
study legitimately changes, regenerate a snapshot with::

    snakemake --summary [--configfile F] | awk -F'\\t' 'NR>1 && $1 !~ /\\.prov\\.json$/ {print $3"\\t"$1}' | sort
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from trustmass.cli.plan import resolve_config
from trustmass.plan import Study, layout

HERE = Path(__file__).parent
REPO = HERE.parents[1]
CONFIGS = {"default": (), "cpu-panel": ("config/cpu-panel.yaml",), "paper": ("config/paper.yaml",)}


def snapshot(name: str) -> dict[str, set[str]]:
    outputs = defaultdict(set)
    for line in (HERE / "snapshots" / f"{name}.tsv").read_text().splitlines():
        rule, path = line.split("\t")
        outputs[rule].add(path)
    return outputs


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def planned(request):
    config = resolve_config(*(REPO / f for f in CONFIGS[request.param]), base=REPO / "config.yaml")
    return Study(config), snapshot(request.param)


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def planned_inputs(request):
    config = resolve_config(*(REPO / f for f in CONFIGS[request.param]), base=REPO / "config.yaml")
    return Study(config), json.loads((HERE / "snapshots" / f"{request.param}.inputs.json").read_text())


def made_by(snap: dict[str, set[str]], rule: str, suffix: str = "", exclude: tuple[str, ...] = ()) -> set[str]:
    return {p for p in snap.get(rule, ()) if p.endswith(suffix) and not p.endswith(exclude)}


def test_capture_and_ceiling_targets(planned):
    study, snap = planned
    task_shards = {layout.CAPTURE_SHARD.format(model=m, corpus=c, doc=d) for m, c, d in study.task_documents()}
    assert set(study.study_shards()) | task_shards == made_by(snap, "capture", ".safetensors")
    assert set(study.study_records()) | set(study.task_records()) == made_by(snap, "ceiling")
    access = made_by(snap, "capture", ".access.parquet")
    assert set(study.study_access_records()) == access


def test_audit_and_certification_targets(planned):
    study, snap = planned
    assert set(study.audit_records()) == made_by(snap, "audit")
    assert set(study.swap_rows()) == made_by(snap, "row_diagnostics", ".swaps.parquet")
    assert set(study.projection_rows()) == made_by(snap, "row_diagnostics", ".projection.parquet")
    assert set(study.certify_shards()) == made_by(snap, "certify_shard")
    assert set(study.headline_records()) <= made_by(snap, "ceiling")


def test_loss_targets(planned):
    study, snap = planned
    assert set(study.loss_outputs()) == made_by(snap, "loss_document", exclude=(".cells.parquet",))
    assert set(study.cells_outputs()) == made_by(snap, "loss_document", ".cells.parquet")
    assert set(study.diagnostics_outputs()) == made_by(snap, "loss_diagnostics")
    assert set(study.curvature_outputs()) == made_by(snap, "loss_curvature")
    assert set(study.allocation_outputs()) == made_by(snap, "allocation_panel")
    assert set(study.probe_recalls()) == made_by(snap, "probe_train", ".parquet")
    heldout = {layout.HELDOUT.format(model=m, corpus=c) for m in study.loss_models() for c in study.heldout_corpora()}
    assert heldout == made_by(snap, "tokenize_heldout", ".safetensors")
    maps = {layout.LOSS_MAP.format(model=m) for m in study.loss_models()}
    assert maps == made_by(snap, "loss_map")


def test_deploy_and_task_targets(planned):
    study, snap = planned
    assert set(study.deploy_outputs()) == made_by(snap, "deploy_condition")
    assert set(study.replay_outputs()) == made_by(snap, "deploy_replay")
    assert set(study.task_manifests()) == made_by(snap, "task_documents", ".json")


def test_per_model_input_selections(planned_inputs):
    """The map's, the allocation panel's and the probe's capture documents; the sweep's headline records and shards."""
    study, inputs = planned_inputs
    per_model = {
        "loss_map": (layout.LOSS_MAP, lambda m: study.map_shards(m)),
        "allocation_panel": (layout.ALLOCATION, lambda m: study.allocation_shards(m)),
        "probe_train": (layout.PROBE, lambda m: [*study.probe_shards(m)[0], *study.probe_shards(m)[1]]),
    }
    for rule, (pattern, shards) in per_model.items():
        for output, expected in inputs.get(rule, {}).items():
            model = next(m for m in study.config["models"] if pattern.format(model=m) == output)
            assert sorted(shards(model)) == expected, f"{rule} of {model}"
        planned_models = {
            "loss_map": study.loss_models(),
            "allocation_panel": [] if not study.allocation_outputs() else study.loss_models(),
            "probe_train": study.probe_models(),
        }[rule]
        assert len(inputs.get(rule, {})) == len(planned_models), rule
    (sweep,) = inputs["certify_sweep"].values()
    assert sorted([*study.headline_records(), *study.headline_shards()]) == sweep


def test_every_planned_file_is_a_layout_pattern(planned):
    """No output of the workflow lies outside the layout: each matches one of its patterns."""
    import re

    _, snap = planned
    patterns = [v for k, v in vars(layout).items() if k.isupper() and isinstance(v, str) and "/" in v]
    regexes = [re.compile("^" + re.sub(r"\\\{\w+\\\}", r"[^/]+", re.escape(p)) + "$") for p in patterns]
    stats = re.compile("^" + re.escape(layout.STATS_DIR) + r"/\w+\.parquet$")
    generated = ("results/figures/", "results/tables/", "results/claims.")  # the catalog's and the claims' outputs
    for rule, paths in snap.items():
        for path in paths:
            if path.startswith(generated) or stats.match(path) or path.startswith("resources/models/"):
                continue
            assert any(r.match(path) for r in regexes), (
                f"{rule} writes {path}, which no trustmass.plan.layout pattern names"
            )


def test_a_model_or_corpus_the_config_lacks_is_named():
    from trustmass.plan import PlanError

    study = Study(resolve_config(base=REPO / "config.yaml"))
    with pytest.raises(PlanError, match=r"model 'nope' is not defined under `models:`.*add it there"):
        study.documents_for_model("nope")
