"""The start-up checks of the ``diagnostics`` config block (boundary swaps and the margin split),
torch-free: the workflow reads them when it parses the Snakefile, naming the field and the fix."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trustmass.loss.configurations import rule_problems


def config_problems(config: Mapping[str, Any]) -> list[str]:
    """Every problem of ``config['diagnostics']`` (nothing when the block is switched off)."""
    diag = config.get("diagnostics") or {}
    if not diag.get("enabled", False):
        return []
    swaps, margin = diag["swaps"], diag["margin"]
    problems = []
    in_forward = swaps["forward_pairs"] is None  # then every pair also runs through the restricted forward
    for k, pair in enumerate(swaps["pairs"]):
        problems += _pair_problems(pair, f"config.diagnostics.swaps.pairs[{k}]", batched=in_forward)
    for k, pair in enumerate(swaps["forward_pairs"] or []):
        problems += _pair_problems(pair, f"config.diagnostics.swaps.forward_pairs[{k}]", batched=True)
    problems += rule_problems([margin["host"], *margin["rules"]], "config.diagnostics.margin")
    if margin["host"] in margin["rules"]:
        problems.append(
            f"config.diagnostics.margin.rules: the host {margin['host']!r} is among the rules it is compared with; "
            "fix: remove it from rules"
        )
    loss = config["loss"]
    doc_tokens = int(loss["heldout"]["doc_tokens"] or config["documents"]["doc_tokens"])
    keys = doc_tokens - int(loss["continuation"])
    for field, budget in [("swaps.budget", swaps["budget"]), *(("margin.budgets", b) for b in margin["budgets"])]:
        if int(budget) >= keys:
            problems.append(
                f"config.diagnostics.{field}: {budget} is not below the {keys} keys the first restricted row sees "
                f"(loss.heldout.doc_tokens {doc_tokens} - loss.continuation {loss['continuation']}), so nothing would be "
                "evicted; fix: a smaller budget or longer held-out documents"
            )
    lowest = int(config["capture"]["min_position"]) + 1
    for field, budgets in (
        ("swaps.row_budgets", swaps["row_budgets"]),
        ("projection.budgets", diag["projection"]["budgets"]),
    ):
        for budget in budgets:
            if int(budget) >= lowest:
                problems.append(
                    f"config.diagnostics.{field}: {budget} is not below the {lowest} keys the earliest sampled rows "
                    f"see (capture.min_position {config['capture']['min_position']}); fix: budgets below {lowest}"
                )
    return problems


def _pair_problems(pair, field: str, batched: bool) -> list[str]:
    """A pair X -> Y of registry rules (with a batched version where it runs through the forward)."""
    if len(pair) != 2 or pair[0] == pair[1]:
        return [f"{field}: {pair!r} is not a pair of two different rules X -> Y; fix: e.g. [h2o, snapkv]"]
    found = rule_problems(pair, field)
    return found if batched else [p for p in found if "is not a selector" in p]
