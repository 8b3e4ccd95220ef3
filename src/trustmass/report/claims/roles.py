"""The study's models as the claims see them: which paper role each plays (``models.<name>.roles``),
which are the paper's own checkpoints, and the config problems with roles (unknown role, a role
played twice, a role whose shape the model lacks)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trustmass.report.claims.data import model_roles
from trustmass.report.claims.verdicts import StudyModels

__all__ = ["role_problems", "study_models"]


def study_models(config: Mapping[str, Any]) -> StudyModels:
    """Roles and paper arms of the study models of a resolved config."""
    return StudyModels.from_config(config, model_roles())


def role_problems(config: Mapping[str, Any]) -> list[str]:
    """Each problem with the study models' ``roles``: the field and the fix."""
    known = model_roles()
    problems = []
    played: dict[str, str] = {}
    study = (config.get("study") or {}).get("models") or []
    for name in study:
        entry = (config.get("models") or {}).get(name) or {}
        declared = entry.get("declared") or {}
        for role in entry.get("roles") or []:
            where = f"config.models.{name}.roles"
            if role not in known:
                problems.append(
                    f"{where}: unknown role {role!r}; known: {', '.join(sorted(known))} (data/claims.yaml model_roles)"
                )
                continue
            if role in played:
                problems.append(
                    f"{where}: role {role!r} is already played by {played[role]!r}; fix: give each role to one study model"
                )
            played[role] = name
            size = known[role].group_size
            heads, kv_heads = declared.get("heads"), declared.get("kv_heads")
            if size is not None and heads and kv_heads and heads // kv_heads != size:
                problems.append(
                    f"{where}: role {role!r} needs {size} query head(s) per KV head, but declared is {heads}/{kv_heads}; "
                    "fix: give the role to a model with that grouping"
                )
    return problems
