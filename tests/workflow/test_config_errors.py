"""A bad configuration stops the workflow at start-up with a message naming the field and the fix.

Snakemake merges every --configfile over config.yaml, so each case is an override file that adds
the mistake to an otherwise valid configuration.
"""

import pytest

pytestmark = pytest.mark.workflow


def _fails_with(workflow, text, *expected):
    bad = workflow.write_config("bad.yaml", text)
    done = workflow.run("--dry-run", "--configfile", str(bad))
    assert done.returncode != 0, done.output
    for fragment in expected:
        assert fragment in done.output, done.output
    assert "Job stats:" not in done.output  # stopped before building the DAG
    return done.output


def test_misspelled_top_level_key(workflow):
    _fails_with(
        workflow,
        "enumeratoin:\n  subset_cap: 5\n",
        "config: unknown key 'enumeratoin' at top level",
        "allowed: access_law, balancing, benchmark, budgets, cache_dir, capture, certification, controls, corpora, "
        "deploy, diagnostics, documents",
        "did you mean 'enumeration'?",
    )


def test_an_access_law_tail_longer_than_the_documents(workflow):
    _fails_with(
        workflow,
        "access_law:\n  tail_rows: [8, 4096]\n",
        "config.access_law.tail_rows: 4096 rows are longer than the 2048-token documents of documents",
        "fix: at most 2048",
    )


def test_misspelled_nested_key(workflow):
    _fails_with(
        workflow,
        "enumeration:\n  subset_cpa: 5\n",
        "unknown key 'subset_cpa' in config.enumeration",
        "did you mean 'subset_cap'?",
    )


def test_wrong_type(workflow):
    _fails_with(
        workflow,
        "enumeration:\n  subset_cap: abc\n",
        "config.enumeration.subset_cap: expected integer, got 'abc' (str)",
        "fix: set an integer, e.g. 200000",
    )


def test_every_problem_is_reported_at_once(workflow):
    output = _fails_with(
        workflow,
        "seed: -1\nbenchmark:\n  n_keys: many\nlabels:\n  kappa: 1.2\n",
        "config.seed: got -1, must be >= 0",
        "config.benchmark.n_keys: expected integer, got 'many'",
        "unknown key 'kappa' in config.labels",
    )
    assert "3 problems" in output


def test_an_unknown_paper_role(workflow):
    _fails_with(
        workflow,
        "models:\n  smollm2-135m:\n    roles: [referense]\n",
        "config.models.smollm2-135m.roles: unknown role 'referense'",
        "known: deployment_llama",
    )


def test_a_headline_corpus_outside_the_study(workflow):
    _fails_with(
        workflow,
        "study:\n  headline:\n    corpus: wikitext\n",
        "config.study.headline.corpus: 'wikitext' is not in study.corpora",
    )


def test_a_loss_rule_the_registry_lacks(workflow):
    _fails_with(
        workflow,
        "loss:\n  rules: [snapkv, snapvk, tova]\n",
        "config.loss.rules: 'snapvk' is not a selector of the registry",
        "config.loss.rules: 'tova' has no batched version for the restricted forward; fix: use one of top_mass",
    )


def test_a_heldout_range_inside_the_capture_documents(workflow):
    _fails_with(
        workflow,
        "loss:\n  heldout:\n    first_doc: 1\n",
        "config.loss.heldout.first_doc: 1 chunks of 512 tokens start inside the capture documents",
        "fix: loss.heldout.first_doc: 12 or more",
    )


def test_a_loss_budget_above_the_visible_keys(workflow):
    _fails_with(
        workflow,
        "loss:\n  budget: 500\n",
        "config.loss.budget: 500 is not below the 448 keys the first restricted row sees",
    )


def test_a_hub_method_offline_and_a_budget_above_the_items(workflow):
    _fails_with(
        workflow,
        "deploy:\n  methods: [dense, snapkv, kvzap, snapvk]\n  budgets: [2048]\n  replay: {methods: [snapkv]}\n",
        "config.deploy.methods: 'kvzap' needs hub access",
        "config.deploy.methods: unknown method 'snapvk'",
        "config.deploy.budgets: 2048 is not below the shortest item length 1024",
    )


def test_diagnostics_pairs_rules_and_budgets_the_forward_cannot_run(workflow):
    _fails_with(
        workflow,
        "diagnostics:\n  swaps: {pairs: [[h2o, snapvk], [quest, quest]], forward_pairs: [[geometric, h2o]], row_budgets: [8, 300], "
        "budget: 500}\n"
        "  margin: {host: value_aware_mass, rules: [value_aware_mii, geometric], budgets: [8, 600]}\n",
        "config.diagnostics.swaps.pairs[0]: 'snapvk' is not a selector of the registry",
        "config.diagnostics.swaps.pairs[1]: ['quest', 'quest'] is not a pair of two different rules",
        "config.diagnostics.margin: 'geometric' has no batched version for the restricted forward",
        "config.diagnostics.swaps.forward_pairs[0]: 'geometric' has no batched version",
        "config.diagnostics.swaps.budget: 500 is not below the 448 keys the first restricted row sees",
        "config.diagnostics.margin.budgets: 600 is not below the 448 keys",
        "config.diagnostics.swaps.row_budgets: 300 is not below the 257 keys the earliest sampled rows see",
    )
