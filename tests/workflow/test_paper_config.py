"""config/paper.yaml: the ten arms plan the paper's instance counts, offline, on the DAG itself.

The counts are read from the capture jobs snakemake plans (trustmass.cli.plan.instances_from_dryrun),
not only computed from the config, and compared with the paper's checksums in the claims table:
111,744 (four headline families, first 3 documents), 56,448 (Qwen2.5-7B at 16,384 tokens),
72,576 (the content run).  Every dry-run here runs with network connections refused and recorded:
planning the paper run must not download anything.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
import yaml

from conftest import REPO, Workflow, planned_jobs
from trustmass.cli.plan import (
    PRIMARY_DOCS,
    instances_from_dryrun,
    planned_captures,
    planned_instances,
    planned_manifest,
    resolve_config,
    summed,
)
from trustmass.plumbing.config import validate_config
from trustmass.report.claims.data import claim
from trustmass.sources import SourceError, check_declared_shape, model_shapes

pytestmark = pytest.mark.workflow

PAPER = REPO / "config" / "paper.yaml"
CONTENT = REPO / "config" / "paper-content.yaml"
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
SLURM_PROFILE = REPO / "profiles" / "slurm"

#: the ten arms (spec §2.1): config name -> hub id (base checkpoints)
ARMS = {
    "qwen2.5-1.5b": "Qwen/Qwen2.5-1.5B",
    "llama-3.2-1b": "meta-llama/Llama-3.2-1B",
    "olmo-2-1b": "allenai/OLMo-2-0425-1B",
    "qwen3-1.7b": "Qwen/Qwen3-1.7B",
    "qwen3-0.6b": "Qwen/Qwen3-0.6B",
    "qwen3-4b": "Qwen/Qwen3-4B",
    "gemma-2-2b": "google/gemma-2-2b",
    "gemma-3-1b-pt": "google/gemma-3-1b-pt",
    "qwen2.5-7b": "Qwen/Qwen2.5-7B",
    "qwen3-14b": "Qwen/Qwen3-14B",
}
HEADLINE = ["qwen2.5-1.5b", "llama-3.2-1b", "olmo-2-1b", "qwen3-1.7b"]
REFERENCE = "qwen2.5-1.5b"
SEVEN_B = "qwen2.5-7b"


def claimed(claim_id: int, name: str = "n_instances") -> int:
    return int(claim(claim_id).value(name).value)


# ---- offline dry-runs ------------------------------------------------------------------------------

#: put first on PYTHONPATH of the snakemake process (and of anything Python it starts): every
#: network connection is written to $TRUSTMASS_NETWORK_LOG and refused
_NETWORK_GUARD = '''\
"""Test guard (tests/workflow/test_paper_config.py): record and refuse every network connection."""
import os
import socket

_LOG = os.environ.get("TRUSTMASS_NETWORK_LOG")
_LOOPBACK = {None, "localhost", "127.0.0.1", "::1", b"localhost", b"127.0.0.1"}


def _refuse(what):
    with open(_LOG, "a", encoding="utf-8") as fh:
        fh.write(f"pid {os.getpid()}: {what}\\n")
    raise OSError(f"network access refused by the test guard: {what}")


if _LOG:
    _connect, _connect_ex, _getaddrinfo = socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo

    def _remote(sock, address):
        return sock.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in _LOOPBACK

    def connect(self, address):
        if _remote(self, address):
            _refuse(f"connect {address!r}")
        return _connect(self, address)

    def connect_ex(self, address):
        if _remote(self, address):
            _refuse(f"connect_ex {address!r}")
        return _connect_ex(self, address)

    def getaddrinfo(host, *args, **kwargs):
        if host not in _LOOPBACK:
            _refuse(f"getaddrinfo {host!r}")
        return _getaddrinfo(host, *args, **kwargs)

    socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo = connect, connect_ex, getaddrinfo
'''


class OfflineRun:
    """One snakemake call in a scratch directory with the network guard and an empty HF cache."""

    def __init__(self, root: Path):
        self.root = root
        self.workdir = root / "work"
        self.guard = root / "guard"
        self.hf_home = root / "hf-home"
        self.network_log = root / "network.log"
        for path in (self.workdir, self.guard):
            path.mkdir(parents=True, exist_ok=True)
        (self.guard / "sitecustomize.py").write_text(_NETWORK_GUARD, encoding="utf-8")

    def env(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("HF_", "HUGGINGFACE_")) and k != "TRANSFORMERS_CACHE"
        }
        # HF_HUB_OFFLINE is left unset on purpose: a hub call would try the network and be recorded
        env.update(
            HF_HOME=str(self.hf_home),
            TRUSTMASS_NETWORK_LOG=str(self.network_log),
            PYTHONPATH=os.pathsep.join([str(self.guard), *filter(None, [os.environ.get("PYTHONPATH")])]),
        )
        return env

    def snakemake(self, *args: str) -> subprocess.CompletedProcess:
        with pytest.MonkeyPatch.context() as mp:
            for key in [k for k in os.environ if k not in self.env()]:
                mp.delenv(key)
            for key, value in self.env().items():
                mp.setenv(key, value)
            return Workflow(self.workdir).run(*args)

    def network_attempts(self) -> list[str]:
        return self.network_log.read_text(encoding="utf-8").splitlines() if self.network_log.exists() else []

    def downloaded(self) -> list[str]:
        """Files the run left in the HF cache or under resources/ (a dry-run leaves none)."""
        found = [p for p in self.hf_home.rglob("*") if p.is_file()] if self.hf_home.exists() else []
        resources = self.workdir / "resources"
        found += [p for p in resources.rglob("*") if p.is_file()] if resources.exists() else []
        return [str(p) for p in found]


def offline_dry_run(root: Path, *args: str) -> tuple[OfflineRun, subprocess.CompletedProcess]:
    run = OfflineRun(root)
    return run, run.snakemake("--dry-run", *args)


def assert_planned_offline(run: OfflineRun, done: subprocess.CompletedProcess) -> None:
    assert done.returncode == 0, done.output
    assert not run.network_attempts(), f"the dry-run tried the network: {run.network_attempts()}"
    assert not run.downloaded(), f"the dry-run wrote files: {run.downloaded()[:5]}"


@pytest.fixture(scope="module")
def paper_config() -> dict:
    return resolve_config(PAPER)


@pytest.fixture(scope="module")
def paper_dry_run(tmp_path_factory):
    return offline_dry_run(tmp_path_factory.mktemp("paper"), "--configfile", str(PAPER))


# ---- the guard itself ------------------------------------------------------------------------------


def test_the_network_guard_records_a_hub_call(tmp_path):
    # the offline claim below is only worth something if a hub call under the guard is seen; this is
    # the call prepare_model makes for a `source: hub` model
    run = OfflineRun(tmp_path)
    code = "from trustmass.sources.models import hub_snapshot; hub_snapshot('m', 'Qwen/Qwen2.5-1.5B', None, ['config.json'])"
    done = subprocess.run(
        [sys.executable, "-c", code], check=False, env=run.env(), capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0 and "needs Hugging Face hub access" in done.stderr, done.stderr[-2000:]
    assert any("huggingface.co" in line for line in run.network_attempts()), run.network_attempts()


# ---- the configuration -----------------------------------------------------------------------------


def test_paper_config_is_valid_and_holds_the_ten_arms(paper_config):
    raw = yaml.safe_load(PAPER.read_text(encoding="utf-8"))
    assert validate_config(raw, SCHEMA)  # valid on its own, too
    models = paper_config["models"]
    assert paper_config["study"]["models"] == list(ARMS)
    for name, hub_id in ARMS.items():
        entry = models[name]
        assert (entry["source"], entry["id"], entry["dtype"]) == ("hub", hub_id, "bfloat16"), name
        assert {"layers", "heads", "kv_heads", "head_dim"} <= set(entry["declared"]), name
        assert not hub_id.lower().endswith(("-instruct", "-it")), name  # base checkpoints [C]
    assert paper_config["study"]["corpora"] == ["wikitext"]
    wikitext = paper_config["corpora"]["wikitext"]
    assert wikitext == {
        "source": "hf-dataset",
        "id": "Salesforce/wikitext",
        "config": "wikitext-103-raw-v1",
        "split": "test",
        "field": "text",
        "row_separator": "",
    }
    assert (paper_config["documents"]["doc_tokens"], paper_config["documents"]["n_docs"]) == (4096, 20)
    assert models[SEVEN_B]["documents"]["doc_tokens"] == 16384
    assert paper_config["capture"]["rows_per_head"] == 6 and paper_config["budgets"]["enumerated"] == [4, 8, 16, 32]


def test_the_config_arithmetic_gives_the_papers_checksums(paper_config):
    plan = planned_instances(paper_config)
    headline = summed(plan, HEADLINE)
    assert headline["primary_instances"] == claimed(15) == 111_744
    assert summed(plan, [SEVEN_B])["primary_instances"] == claimed(16) == 56_448
    assert summed(plan, [*HEADLINE, SEVEN_B])["primary_instances"] == claimed(1) == 168_192
    # Table 7: the headline families over all 20 documents, per budget
    assert (
        headline["instances"] // len(paper_config["budgets"]["enumerated"])
        == claimed(95, "n_instances_per_budget")
        == 186_240
    )
    assert summed(plan, [REFERENCE])["primary_instances"] // 4 == 6_048  # Table 8, per budget
    assert set(plan["primary_docs"]) == {PRIMARY_DOCS}


def test_the_claims_set_by_the_configuration_are_planned_exactly_as_the_paper_states(paper_config):
    """The claims report never judges a configuration-set count (trustmass.report.claims.configured); this is
    its separate check: config/paper.yaml plans the paper's own numbers (content run: with paper-content.yaml)."""
    from trustmass.cli.plan import paper_plan

    planned = {(r["claim"], r["value"]): r for r in paper_plan(paper_config)}
    for key in [
        (1, "n_instances"),
        (1, "n_models"),
        (15, "n_instances"),
        (16, "n_instances"),
        (17, "n_models"),
        (17, "n_lineages"),
        (17, "model_size"),
        (95, "n_instances_per_budget"),
    ]:
        assert planned[key]["equal"], planned[key]
    content = {(r["claim"], r["value"]): r for r in paper_plan(resolve_config(PAPER, CONTENT))}
    assert content[(41, "n_instances")]["equal"] and content[(41, "n_instances")]["planned"] == 72_576
    # the counts out of a grid the paper leaves unstated ([A]: 9 loss pairs, 56 replay conditions) are printed, not equal
    assert not planned[(55, "n_pairs")]["equal"]


# ---- the DAG ---------------------------------------------------------------------------------------


def test_paper_dry_run_plans_offline_and_downloads_nothing(paper_dry_run, paper_config):
    run, done = paper_dry_run
    assert_planned_offline(run, done)
    jobs = planned_jobs(done.output)
    # the controls: a randomised-weights and a shuffled-text twin of each headline family, on wikitext
    twins, control_docs = 2 * len(HEADLINE), paper_config["controls"]["documents"]["n_docs"] or 20
    assert jobs["prepare_model"] == len(ARMS) + twins and jobs["prepare_corpus"] == 1
    assert jobs["tokenize_documents"] == len(ARMS) + twins
    # 20 docs per arm, 3 for the 7B at 16,384 tokens; the task contexts (§2.7) of each headline family and twin
    tasks = len(paper_config["task_contexts"]["types"]) * paper_config["task_contexts"]["per_type"]
    assert jobs["task_documents"] == len(HEADLINE) + twins
    assert jobs["capture"] == jobs["ceiling"] == 9 * 20 + 3 + len(HEADLINE) * tasks + twins * (control_docs + tasks)
    # every held-out document gets its curvature (the default slice caps it at one per model)
    assert jobs["loss_curvature"] == jobs["loss_document"] > 0


def test_the_planned_capture_jobs_give_the_papers_checksums(paper_dry_run, paper_config):
    _, done = paper_dry_run
    from_dag = instances_from_dryrun(done.output, paper_config).filter(
        pl.col("model").is_in(list(ARMS))
    )  # not the twins
    assert from_dag.equals(planned_instances(paper_config).sort("model", "corpus"))
    assert summed(from_dag, HEADLINE)["primary_instances"] == claimed(15) == 111_744
    seven_b = from_dag.filter(from_dag["model"] == SEVEN_B).row(0, named=True)
    assert (seven_b["doc_tokens"], seven_b["docs"], seven_b["layers"] * seven_b["heads"]) == (16384, 3, 784)
    assert seven_b["primary_instances"] == claimed(16) == 56_448
    # the primary slice is documents 0000-0002 of every arm
    jobs = planned_captures(done.output).filter(pl.col("corpus") == "wikitext", pl.col("model").is_in(list(ARMS)))
    firsts = jobs.filter(jobs["doc"].is_in(["0000", "0001", "0002"]))
    assert firsts.height == len(ARMS) * PRIMARY_DOCS


def test_the_certification_manifest_is_the_papers_960_at_120_s(paper_dry_run, paper_config):
    """§3.5: 4 headline families x 4 budgets x 10 deciles x 6 = 960 instances, certified at 120 s per
    solve by the paper's SCIP bisection (not the default config's branch-and-bound); the manifest
    reads the headline families' records on wikitext only (4 x 20 documents)."""
    plan = planned_manifest(paper_config)
    assert (plan["instances"], plan["per_budget"], plan["time_limit_s"]) == (960, 240, 120.0)
    assert plan["certifier"] == "paper"
    assert sorted(plan["families"]) == sorted(HEADLINE)
    assert paper_config["study"]["headline"] == {"models": HEADLINE, "corpus": "wikitext"}
    _, done = paper_dry_run
    jobs = planned_jobs(done.output)
    assert jobs["certify_manifest"] == 1 and jobs["certify_shard"] == paper_config["certification"]["n_shards"]
    block = done.output.split("rule certify_manifest:")[1].split("\n\n")[0]
    inputs = [
        p.strip()
        for p in block.split("input:")[1].split("\n")[0].split(", ")
        if p.strip().startswith("results/ceiling/")
    ]
    assert len(inputs) == len(HEADLINE) * 20 and {p.split("/")[2] for p in inputs} == set(HEADLINE)
    assert all(p.split("/")[3] == "wikitext" for p in inputs)
    # the audit scores the headline population only (and each control arm's: the twins on the same 20 documents)
    assert jobs["audit"] == 3 * len(HEADLINE) * 20
    roles = {m: paper_config["models"][m].get("roles") for m in HEADLINE}
    assert roles == {
        "qwen2.5-1.5b": ["reference"],
        "llama-3.2-1b": ["second_family"],
        "olmo-2-1b": ["group_size_1"],
        "qwen3-1.7b": ["qk_norm_family"],
    }


def test_the_cost_projection_counts_the_dags_jobs(paper_dry_run, paper_config):
    """`python -m trustmass.cli.plan --costs` counts every job the DAG plans, the control arms' included (it counted
    the study's alone, 1,090 of the DAG's jobs: found by the rehearsal, issue 39)."""
    from trustmass.cli.costs import job_counts

    _, done = paper_dry_run
    planned = Counter()
    for rule, n in planned_jobs(done.output).items():
        planned[re.sub(r"_(randomised_weights|shuffled_text)$", "", rule)] += n
    counted = {rule: n for rules in job_counts(paper_config).values() for rule, n in rules.items()}
    assert counted == {rule: planned.get(rule, 0) for rule in counted}


def test_the_ceiling_jobs_match_the_capture_jobs(paper_dry_run):
    _, done = paper_dry_run
    assert planned_captures(done.output, rule="ceiling").equals(planned_captures(done.output))


@pytest.mark.skipif(
    importlib.util.find_spec("snakemake_executor_plugin_slurm") is None,
    reason="snakemake-executor-plugin-slurm is not installed (pip install -e '.[slurm]')",
)
def test_paper_dry_run_with_the_slurm_profile(tmp_path, paper_config):
    run, done = offline_dry_run(tmp_path, "--profile", str(SLURM_PROFILE), "--configfile", str(PAPER))
    assert_planned_offline(run, done)
    assert "profiles/slurm" in done.output
    from_dag = instances_from_dryrun(done.output, paper_config)
    assert summed(from_dag, HEADLINE)["primary_instances"] == 111_744
    assert summed(from_dag, [SEVEN_B])["primary_instances"] == 56_448
    # every capture job asks the cluster for a GPU
    blocks = [b for b in done.output.split("\n\n") if re.search(r"^rule capture:$", b, re.MULTILINE)]
    tasks = len(paper_config["task_contexts"]["types"]) * paper_config["task_contexts"]["per_type"]
    # and the task contexts' (of each headline family and its two control twins; from_dag counts the twins' documents)
    assert len(blocks) == from_dag["docs"].sum() + 3 * len(HEADLINE) * tasks
    assert all(re.search(r"^\s+resources: .*\bgpu=1\b", b, re.MULTILINE) for b in blocks), blocks[0]


def test_content_run_plans_the_table_2_population(tmp_path):
    config = resolve_config(PAPER, CONTENT)
    run, done = offline_dry_run(tmp_path, "--configfile", str(PAPER), str(CONTENT))
    assert_planned_offline(run, done)
    from_dag = instances_from_dryrun(done.output, config)
    assert set(from_dag["model"]) == {REFERENCE, f"{REFERENCE}.randomised", f"{REFERENCE}.shuffled"}  # + the controls
    # the controls read every corpus too (claim 41 compares them)
    assert set(from_dag.filter(pl.col("model") != REFERENCE)["corpus"]) == {"handbook-fr", "stdlib", "wikitext"}
    from_dag = from_dag.filter(pl.col("model") == REFERENCE)
    assert sorted(from_dag["corpus"]) == ["handbook-fr", "stdlib", "wikitext"]
    assert summed(from_dag)["primary_instances"] == claimed(41) == 72_576
    # its documents are the ten-arm run's, so the wikitext shards are shared, not captured twice
    assert config["documents"] == resolve_config(PAPER)["documents"]


# ---- declared shapes -------------------------------------------------------------------------------

#: the attention-relevant part of each arm's public config.json [R], as transformers reads it
PUBLIC_CONFIGS = {
    "qwen2.5-1.5b": dict(
        model_type="qwen2",
        hidden_size=1536,
        intermediate_size=8960,
        num_hidden_layers=28,
        num_attention_heads=12,
        num_key_value_heads=2,
        vocab_size=151936,
    ),
    "llama-3.2-1b": dict(
        model_type="llama",
        hidden_size=2048,
        intermediate_size=8192,
        num_hidden_layers=16,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=64,
        vocab_size=128256,
    ),
    "olmo-2-1b": dict(
        model_type="olmo2",
        hidden_size=2048,
        intermediate_size=8192,
        num_hidden_layers=16,
        num_attention_heads=16,
        num_key_value_heads=16,
        vocab_size=100352,
    ),
    "qwen3-1.7b": dict(
        model_type="qwen3",
        hidden_size=2048,
        intermediate_size=6144,
        num_hidden_layers=28,
        num_attention_heads=16,
        num_key_value_heads=8,
        head_dim=128,
        vocab_size=151936,
    ),
    "qwen3-0.6b": dict(
        model_type="qwen3",
        hidden_size=1024,
        intermediate_size=3072,
        num_hidden_layers=28,
        num_attention_heads=16,
        num_key_value_heads=8,
        head_dim=128,
        vocab_size=151936,
    ),
    "qwen3-4b": dict(
        model_type="qwen3",
        hidden_size=2560,
        intermediate_size=9728,
        num_hidden_layers=36,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=128,
        vocab_size=151936,
    ),
    "gemma-2-2b": dict(
        model_type="gemma2",
        hidden_size=2304,
        intermediate_size=9216,
        num_hidden_layers=26,
        num_attention_heads=8,
        num_key_value_heads=4,
        head_dim=256,
        vocab_size=256000,
        sliding_window=4096,
        attn_logit_softcapping=50.0,
        query_pre_attn_scalar=256,
    ),
    "gemma-3-1b-pt": dict(
        model_type="gemma3_text",
        hidden_size=1152,
        intermediate_size=6912,
        num_hidden_layers=26,
        num_attention_heads=4,
        num_key_value_heads=1,
        head_dim=256,
        vocab_size=262144,
        sliding_window=512,
        query_pre_attn_scalar=256,
    ),
    "qwen2.5-7b": dict(
        model_type="qwen2",
        hidden_size=3584,
        intermediate_size=18944,
        num_hidden_layers=28,
        num_attention_heads=28,
        num_key_value_heads=4,
        vocab_size=152064,
    ),
    "qwen3-14b": dict(
        model_type="qwen3",
        hidden_size=5120,
        intermediate_size=17408,
        num_hidden_layers=40,
        num_attention_heads=40,
        num_key_value_heads=8,
        head_dim=128,
        vocab_size=151936,
    ),
}


@pytest.fixture(scope="module")
def public_shapes():
    return {name: model_shapes(cfg) for name, cfg in PUBLIC_CONFIGS.items()}


def test_declared_shapes_agree_with_the_arms_configs(paper_config, public_shapes):
    # what prepare_model and capture check: head_dim derived from hidden/heads where the config has
    # none (Qwen2.5, OLMo 2), stated where it differs (Gemma 2: 256, not 2304 / 8), QK-norm per arch
    for name in ARMS:
        check_declared_shape(public_shapes[name], paper_config["models"][name]["declared"], name=name)


def test_a_wrong_checkpoint_is_caught_by_its_declared_shape(paper_config, public_shapes):
    # Qwen2.5-1.5B's checkpoint where the config expects Qwen3-1.7B: every differing field is named
    with pytest.raises(SourceError) as err:
        check_declared_shape(
            public_shapes[REFERENCE], paper_config["models"]["qwen3-1.7b"]["declared"], name="qwen3-1.7b"
        )
    text = str(err.value)
    assert "qwen3-1.7b" in text
    for line in ("heads: declared 16", "kv_heads: declared 8", "qk_norm: declared True"):
        assert line in text, text
    assert "layers:" not in text  # both have 28 layers
    # and any other arm in place of any arm, except the one pair whose attention shapes coincide
    same_shape = {frozenset({"qwen3-1.7b", "qwen3-0.6b"})}
    for expected in ARMS:
        for actual in ARMS:
            if actual == expected or frozenset({actual, expected}) in same_shape:
                continue
            with pytest.raises(SourceError):
                check_declared_shape(public_shapes[actual], paper_config["models"][expected]["declared"], name=expected)


def test_capture_checks_the_declared_shape_before_any_compute():
    # scripts/capture.py: model_shapes reads config.json (and a meta-device model, no weights); the
    # check must come before the documents are read, the weights loaded and the prefill run
    source = (REPO / "scripts" / "capture.py").read_text(encoding="utf-8")
    code = [line for line in source.splitlines() if not line.lstrip().startswith(("#", "from ", "import "))]
    text = "\n".join(code)
    check = text.index("check_declared_shape(")
    for later in ("load_documents(", "load_prepared_model(", "capture_document(", "write_shard("):
        assert check < text.index(later), f"scripts/capture.py calls {later} before check_declared_shape"
    assert "snakemake.params.declared" in text[:check]


# ---- deployment: off on the base arms, the paper's grid in the companion --------------------------------

PAPER_DEPLOY = REPO / "config" / "paper-deploy.yaml"


def test_paper_config_plans_no_deployment_and_its_claims_do_not_wait_for_one(paper_dry_run):
    _, done = paper_dry_run
    jobs = planned_jobs(done.output)
    assert not {"deploy_condition", "deploy_replay", "deploy_statistics", "render_table3"} & set(jobs), jobs
    assert jobs["claims_report"] == 1


def test_paper_deploy_companion_plans_the_papers_grid_offline(tmp_path):
    config = resolve_config(PAPER, PAPER_DEPLOY)
    deploy = config["deploy"]
    assert {"kvzap", "duo_attention", "fastkvzip"} <= set(deploy["methods"]) and deploy["hub"]
    run, done = offline_dry_run(
        tmp_path, "table3", "table4", "table5", "bytes_table", "--configfile", str(PAPER), str(PAPER_DEPLOY)
    )
    assert_planned_offline(run, done)
    jobs = planned_jobs(done.output)
    assert jobs["deploy_condition"] == 4 * (4 * 4 + 4)  # models x (tasks x lengths + the benchmark entries)
    assert {b["family"] for b in deploy["benchmarks"]} == {"ruler", "longbench"}
    assert all(b["budgets"] == [32, 128] for b in deploy["benchmarks"])  # the paper's benchmark budgets
    assert jobs["deploy_replay"] == 4 and jobs["deploy_statistics"] == 1
    assert "capture" not in jobs  # deployed models are not captured
