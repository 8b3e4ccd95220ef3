"""The method roster's names and statuses, import-light (no torch, no kvpress), for start-up config checks.

``methods.METHODS`` is the roster itself and is tested to hold exactly these names.
"""

from __future__ import annotations

#: methods that run offline, in roster order
OFFLINE = (
    "dense", "snapkv", "pyramidkv", "tova", "streaming_llm", "knorm", "keydiff", "criticalkv",
    "expected_attention", "compactor", "h2o", "adakv", "kvzip",
    "contourkv_enforced", "contourkv_unenforced", "contourkv_recon_enforced", "contourkv_recon_unenforced",
)  # fmt: skip
#: methods whose press downloads weights or masks from the hub
NEEDS_HUB = ("kvzap", "duo_attention", "fastkvzip")
#: methods that need KVzip's context-reconstruction pass (a second prefill per item)
RECONSTRUCTION = ("kvzip", "contourkv_recon_enforced", "contourkv_recon_unenforced")
#: the methods whose variants ContourKV's W/T/L tables compare against the others
CONTOURKV = ("contourkv_enforced", "contourkv_unenforced", "contourkv_recon_enforced", "contourkv_recon_unenforced")


def method_problems(methods, hub: bool, field: str = "deploy.methods") -> list[str]:
    """Config problems of a method list, each naming the field and the fix."""
    problems = []
    for name in methods:
        if name in NEEDS_HUB and not hub:
            problems.append(f"config.{field}: {name!r} needs hub access (kvpress downloads its weights); fix: remove it, "
                            "or set deploy.hub: true where the hub is reachable")
        elif name not in OFFLINE + NEEDS_HUB:
            problems.append(f"config.{field}: unknown method {name!r}; fix: use one of {', '.join(OFFLINE + NEEDS_HUB)}")
    return problems
