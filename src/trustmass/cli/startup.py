"""The start-up of a run, the same for the workflow and the command-line tools: the merged configuration
validated against the schema with config.yaml's defaults, completed (``deploy.methods: null`` spelled out as
the roster's list, so rule params name the methods; the control twins' model entries written), and checked
across keys by every stage's torch-free checker, so that a configuration a job would refuse is refused before any job starts.

``workflow/rules/common.smk`` and :func:`trustmass.cli.instances.resolve_config` both call :func:`start`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trustmass.plumbing.config import ConfigError, validate_config

__all__ = ["cross_key_problems", "start"]


def cross_key_problems(config: Mapping[str, Any]) -> list[str]:
    """Every stage's checks between keys (each line names the field and the fix): the paper roles the study
    models take, the loss stage's rules, the fixed-contract diagnostics, the deployment stage."""
    from trustmass.deploy.names import config_problems as deploy_problems
    from trustmass.loss.configurations import rule_problems as loss_rule_problems
    from trustmass.loss.diagnostic_config import config_problems as diagnostics_problems
    from trustmass.plan.controls import control_problems
    from trustmass.report.claims.roles import role_problems

    return [
        *(f"config: {p}" for p in role_problems(config)),
        *loss_rule_problems(config["loss"]["rules"]),
        *diagnostics_problems(config),
        *deploy_problems(config),
        *control_problems(config),
    ]


def start(config: Mapping[str, Any], schema: str | Path) -> dict:
    """The resolved configuration, or a :class:`~trustmass.plumbing.config.ConfigError` listing every problem."""
    from trustmass.deploy.roster import configured_methods
    from trustmass.plan.controls import control_entries

    resolved = validate_config(config, schema)
    resolved["deploy"]["methods"] = configured_methods(resolved["deploy"])
    problems = cross_key_problems(resolved)
    if problems:
        raise ConfigError(problems, schema)
    # the control twins as models of their own (trustmass.plan.controls): every model-keyed rule reads them
    resolved["models"].update(control_entries(resolved))
    return resolved
