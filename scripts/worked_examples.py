"""Rule worked_examples: recompute the paper's worked examples; fail if any disagrees.

Glue only: the examples and their expected values live in trustmass.selfcheck.worked_examples.
"""

from trustmass.plumbing.rule_io import run_rule  # first: it opens the job's log before anything heavy imports


def main(snakemake, started):
    import json
    import sys

    from trustmass.plumbing.provenance import write_json
    from trustmass.plumbing.rule_io import finish
    from trustmass.selfcheck.worked_examples import worked_examples

    def verdicts(node, where="$"):
        """Every (location, ok) pair in the result, at any depth."""
        if isinstance(node, dict):
            if "ok" in node:
                yield where, node
            for key, value in node.items():
                if isinstance(value, (dict, list)):
                    yield from verdicts(value, f"{where}.{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                yield from verdicts(value, f"{where}[{i}]")

    result = worked_examples()
    checks = list(verdicts(result))
    failed = [(where, check) for where, check in checks if check["ok"] is not True]
    print(f"{len(checks)} checks, {len(failed)} failed")
    for where, check in failed:
        print(f"FAILED {where}: {json.dumps(check)}")
    if not checks:
        sys.exit("worked_examples: the library returned no checks (no 'ok' fields); nothing was verified")
    if failed or result.get("all_ok", True) is not True:
        sys.exit(f"worked_examples: {len(failed)} of {len(checks)} checks disagree with the paper (listed above)")

    write_json(snakemake.output.json, result)
    finish(snakemake, [snakemake.output.json], snakemake.input.code, {}, started, checks=len(checks))


run_rule(snakemake, main)
