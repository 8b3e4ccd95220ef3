"""`snakemake --lint` finds nothing, and every path a rule names resolves from its rule file."""

import re

import pytest

from conftest import REPO

pytestmark = pytest.mark.workflow

RULE_FILES = sorted((REPO / "workflow" / "rules").glob("*.smk"))


def test_lint_is_clean(workflow):
    # snakemake --lint exits 1 on any lint (no log, no conda env, absolute paths, ...): we allow none
    done = workflow.run("--lint")
    assert done.returncode == 0 and "Lints for" not in done.output, done.output
    assert "Congratulations" in done.output, done.output


@pytest.mark.parametrize("rule_file", RULE_FILES, ids=lambda p: p.name)
def test_paths_in_rules_resolve_relative_to_the_rule_file(rule_file):
    # snakemake resolves conda:, script: and report captions relative to the file defining the rule
    text = rule_file.read_text(encoding="utf-8")
    named = re.findall(r'(?:caption=|^\s+)"(\.\./[^"]+)"', text, flags=re.MULTILINE)
    for path in named:
        assert (rule_file.parent / path).resolve().is_file(), f"{rule_file.name}: {path} does not exist"
    n_rules = len(re.findall(r"^rule \w+:", text, flags=re.MULTILINE))
    assert text.count('conda:\n        "../../envs/trustmass.yaml"') == n_rules, "every rule needs the conda env"
