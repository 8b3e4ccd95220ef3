"""README's "Extending" recipes, each followed on a scratch copy of this checkout's tracked files: the test
makes exactly the recipe's edits, then asks the scratch copy's workflow (snakemake -n, or a python one-liner
where nothing is a target) whether the new thing is planned.  Each test first shows the thing is unknown to
the unedited checkout, so it fails if the recipe stops being enough."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import planned_jobs, snakemake_command

pytestmark = pytest.mark.workflow

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def scratch(tmp_path) -> Path:
    """The checkout's tracked files as they are in its working tree (edits included, deleted ones skipped)."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True).stdout
    root = tmp_path / "checkout"
    for name in filter(None, listed.decode().split("\0")):
        source = REPO / name
        if source.is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name)
    return root


def _env(root: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(root / "src"), "PYTHONUNBUFFERED": "1"}


def _snakemake(root: Path, *args: str, snakefile: str = "Snakefile") -> str:
    """A dry-run of the scratch copy's workflow; its output (snakemake splits it over stdout and stderr)."""
    cmd = [*snakemake_command(), "--snakefile", snakefile, "--dry-run", "--cores", "1", *args]
    done = subprocess.run(
        cmd, cwd=root, env=_env(root), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    return output


def _python(root: Path, code: str):
    """``code`` run against the scratch copy's library; it prints one JSON value."""
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=root, env=_env(root), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


def _insert_after(path: Path, anchor: str, text: str) -> None:
    source = path.read_text(encoding="utf-8")
    assert source.count(anchor) == 1, f"{path.name}: the recipe's anchor {anchor!r} moved; update this test"
    path.write_text(source.replace(anchor, anchor + text), encoding="utf-8")


def _append_to_tuple(path: Path, opening: str, text: str) -> None:
    """``text`` as the last item of the tuple literal that ``opening`` starts (it closes with a ``)`` alone on a line)."""
    source = path.read_text(encoding="utf-8")
    assert source.count(opening) == 1, f"{path.name}: the recipe's anchor {opening!r} moved; update this test"
    end = source.index("\n)\n", source.index(opening))
    path.write_text(source[:end] + text + source[end:], encoding="utf-8")


def _planned_wildcards(output: str, rule: str) -> list[str]:
    """The wildcards line of every planned job of ``rule`` in a dry-run's output."""
    blocks = re.split(r"\n(?=(?:local)?rule \w+:)", output)
    return [
        m.group(1)
        for b in blocks
        if re.match(rf"(?:local)?rule {rule}:", b)
        for m in [re.search(r"wildcards: (.*)", b)]
        if m
    ]


def test_the_readme_states_the_recipes_these_tests_follow():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = " ".join(readme[readme.index("\n## Extending\n") :].split("\n## ", 2)[1].split())
    for step in (
        'statistics="trustmass.report.frames.audit:fig_x", inputs={"audit": "audit_records"}',
        'draw="trustmass.report.figures.audit:fig_x", path="results/figures/fig_x.png")',
        "trustmass.report.catalog.OUTPUTS",
        'registered = {"deployed": {"name": {options}}}',
        'batched = "module:function"',
        "one `Method` in `trustmass.deploy.roster.ROSTER`",
        "its name in `study.models`",
    ):
        assert step in section, f"README's Extending no longer says {step!r}; fix the README or this test with it"


# ---- a figure: one statistics function, one draw function, one catalog entry -------------------------

STATISTICS_FUNCTION = '''

def fig_x(inputs: Inputs, config: Mapping[str, Any]) -> Frames:
    """Audit records per rule (the README's figure recipe, from tests/recipes)."""
    records = read_parquets(inputs["audit"])
    return Frames({"fig_x": records.group_by("rule").len().sort("rule")})
'''

DRAW_FUNCTION = '''

def fig_x(frame: pl.DataFrame, population: str = "primary") -> Figure:
    """Audit records per rule (the README's figure recipe, from tests/recipes)."""
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.bar(frame["rule"].to_list(), frame["len"].to_list())
    return fig
'''

CATALOG_ENTRY = """
    Output(name="fig_x", kind="figure", title="Audit records per rule", frames=("fig_x",),
           statistics="trustmass.report.frames.audit:fig_x", inputs={"audit": "audit_records"},
           draw="trustmass.report.figures.audit:fig_x", path="results/figures/fig_x.png"),"""


def test_a_figure_is_a_statistics_function_a_draw_function_and_a_catalog_entry(scratch):
    from trustmass.report.catalog import OUTPUTS

    assert "fig_x" not in {o.name for o in OUTPUTS}
    _append(scratch / "src/trustmass/report/frames/audit.py", STATISTICS_FUNCTION)
    _append(scratch / "src/trustmass/report/figures/audit.py", DRAW_FUNCTION)
    _append_to_tuple(scratch / "src/trustmass/report/catalog.py", "OUTPUTS: tuple[Output, ...] = (", CATALOG_ENTRY)

    jobs = planned_jobs(_snakemake(scratch, "fig_x"))  # the named target
    assert jobs["render_fig_x"] == 1 and jobs["fig_x_statistics"] == 1 and jobs["audit"] >= 1, jobs
    assert jobs["fig_x"] == 1 and "render_fig1" not in jobs, jobs
    # and it is part of the default target, in `all`
    assert _python(
        scratch,
        "import json; from trustmass.report.catalog import output, statistics_rule; "
        "print(json.dumps([output('fig_x').path, statistics_rule('fig_x_statistics').function]))",
    ) == ["results/figures/fig_x.png", "fig_x"]
    assert "render_fig_x" in planned_jobs(_snakemake(scratch, "all"))
    # the catalog's own consistency tests hold for the new entry (draw signature, frames written once)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-v",
            "-p",
            "no:cacheprovider",
            "tests/unit/test_catalog.py",
            "-k",
            "fig_x or unique or modules_exist",
        ],
        cwd=scratch,
        env=_env(scratch),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "what_exists[fig_x] PASSED" in done.stdout, done.stdout[-3000:]


# ---- a selector: one class (its contract, its registry names, its batched mask if the loss batches it) ---

SELECTOR_CLASS = '''

@dataclass(frozen=True)
class Newest(TokenRule):
    """The s newest keys, scored by the audit (the README's selector recipe, from tests/recipes)."""

    evidence: ClassVar[frozenset] = frozenset()
    audit_role: ClassVar[str] = "scored"
    cache_faithful: ClassVar[str] = "frozen_prefill"
    registered: ClassVar[dict] = {"deployed": {"newest": {}}}
    batched: ClassVar[str] = "trustmass.loss.selection:recency_mask"  # the positional control's: exact for it

    def select(self, x: SelectorInput, budget: int) -> np.ndarray:
        return recent(x.n_keys, checked_budget(budget))
'''

SELECTOR_CHECK = """
import json
from trustmass.core.selectors.registry import REGISTRY, audit_rules
from trustmass.loss.configurations import BATCHED_RULES, rule_problems
from trustmass.loss.selection import RULES
print(json.dumps(["newest" in REGISTRY, "newest" in audit_rules(), "newest" in BATCHED_RULES, "newest" in RULES,
                  rule_problems(["newest"])]))
"""


def test_a_selector_is_one_class(scratch):
    from trustmass.loss.configurations import rule_problems

    assert rule_problems(["newest"]), "the unedited checkout must refuse the new selector"
    _append(scratch / "src/trustmass/core/selectors/deployed.py", SELECTOR_CLASS)  # the recipe's only edit

    assert _python(scratch, SELECTOR_CHECK) == [True, True, True, True, []]
    config = scratch / "newest.yaml"
    config.write_text("loss:\n  rules: [snapkv, newest]\n", encoding="utf-8")
    jobs = planned_jobs(_snakemake(scratch, "loss_table", "--configfile", str(config)))
    assert jobs["loss_document"] >= 1 and jobs["loss_statistics"] == 1, jobs


# ---- a deployment method: one roster entry (plus its press class where kvpress lacks it) ----------------

ROSTER_ENTRY = '\n    _uniform("knorm_recipe", "kvpress.KnormPress", _contract("key_norm", "none", "0")),'

PARAMS_PROBE = (  # a model-keyed rule's params follow the job's model: read the trained reference's
    'include: "Snakefile"\n_p = workflow.get_rule("deploy_condition").params.config\n'
    "from types import SimpleNamespace\n"
    'print("PARAMS", __import__("json").dumps(_p(SimpleNamespace(model="smollm2-135m")) if callable(_p) else _p))\n'
)


def test_a_deployment_method_is_one_roster_entry(scratch):
    from trustmass.deploy.names import method_problems

    assert method_problems(["knorm_recipe"], hub=False), "the unedited checkout must refuse the new method"
    _insert_after(
        scratch / "src/trustmass/deploy/roster.py",
        'Method("dense", "dense", _contract("none", "none", "0", "keep_all")),',
        ROSTER_ENTRY,
    )

    check = (
        "import json; from trustmass.deploy.names import method_problems; "
        "from trustmass.deploy.roster import default_methods; from trustmass.deploy.contracts import CONTRACTS; "
        "print(json.dumps([method_problems(['knorm_recipe'], hub=False), 'knorm_recipe' in default_methods(), "
        "CONTRACTS['knorm_recipe']['ranking']]))"
    )
    assert _python(scratch, check) == [[], True, "key_norm"]
    # the deploy dry-run on the CPU panel's deploy overlay (methods: null, the default list) plans it: its params name it
    (scratch / "probe.smk").write_text(PARAMS_PROBE, encoding="utf-8")
    configs = [str(scratch / "config" / name) for name in ("models-packaged.yaml", "deploy-cpu.yaml")]
    output = _snakemake(scratch, "table3", "--configfile", *configs, snakefile="probe.smk")
    params = json.loads(output.split("PARAMS ", 1)[1].splitlines()[0])
    assert "knorm_recipe" in params["deploy"]["methods"], params["deploy"]["methods"]
    assert planned_jobs(output)["deploy_condition"] >= 1


# ---- a model: one `models:` entry in a config file and its name in study.models -------------------------

MODEL_CONFIG = """\
models:
  smollm2-360m:
    source: hub
    id: HuggingFaceTB/SmolLM2-360M
    dtype: float32
    declared: {layers: 32, heads: 15, kv_heads: 5, head_dim: 64}
    lineage: SmolLM2
    parameters_b: 0.36
    mem_mb: 4000
study:
  models: [smollm2-135m, smollm2-360m]
"""


def test_a_model_is_one_config_entry_and_its_name_in_the_study(scratch):
    config = scratch / "config" / "recipe-model.yaml"
    config.write_text(MODEL_CONFIG, encoding="utf-8")
    output = _snakemake(scratch, "--configfile", str(config))
    captured = _planned_wildcards(output, "capture")
    assert any("model=smollm2-360m" in w for w in captured), captured
    assert any("model=smollm2-135m" in w for w in captured), captured
    assert any("model=smollm2-360m" in w for w in _planned_wildcards(output, "prepare_model"))
