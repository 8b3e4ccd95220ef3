"""The regenerated side of a claim value: :class:`Cell` (one headline row, in the claim's unit),
:class:`StudyModels` (which run model plays which of the paper's arms) and how a cell is matched to
a group or condition the paper states (:func:`matches`)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from trustmass.report.claims.model import ModelRole, Value

__all__ = ["Cell", "StudyModels", "matches", "missing", "paper_models"]


def missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


@dataclass(frozen=True)
class Cell:
    """One regenerated estimate (a headline row), in the claim's unit."""

    estimate: float
    low: float | None = None
    high: float | None = None
    group: Mapping[str, str] = field(default_factory=dict)
    models: tuple[str, ...] = ()
    context: Mapping[str, float] | None = None
    uninformative: str | None = None  # the producer's reason the estimate cannot speak to the claim

    @classmethod
    def from_row(cls, row: Mapping[str, Any], scale: float = 1.0) -> Cell:
        keys, values = row.get("by_key"), row.get("by_value")
        group = dict(zip(str(keys).split(","), str(values).split(","))) if keys and values is not None else {}
        low, high = row.get("low"), row.get("high")
        context = row.get("context")
        models = (
            (group["model"],) if "model" in group else tuple(m for m in str(row.get("models") or "").split(",") if m)
        )
        return cls(
            estimate=float(row["estimate"]) * scale,
            low=None if missing(low) else float(low) * scale,
            high=None if missing(high) else float(high) * scale,
            group=group,
            models=models,
            context=json.loads(context) if context else None,
            uninformative=row.get("uninformative") or None,
        )

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None

    @property
    def width(self) -> float:
        """The 95 % interval's width (0 without one)."""
        return (self.high - self.low) if self.has_interval else 0.0

    def crosses(self, threshold: float) -> bool:
        """Does the 95 % interval reach ``threshold`` (so the side of it is not established)?"""
        return self.has_interval and self.low <= threshold <= self.high and self.low != self.high

    def overlaps(self, other: Cell) -> bool:
        """Do the two 95 % intervals overlap (so their order is not established)?"""
        return (
            self.has_interval
            and other.has_interval
            and self.width + other.width > 0
            and self.low <= other.high
            and other.low <= self.high
        )

    def label(self) -> str:
        return ",".join(f"{v}" for v in self.group.values()) or ",".join(self.models) or "overall"


@dataclass(frozen=True)
class StudyModels:
    """The run's models as the claims see them: which role each plays, which are the paper's arms."""

    roles: Mapping[str, str] = field(default_factory=dict)  # role name -> run model
    paper_arms: frozenset[str] = frozenset()  # run models that are the paper's own checkpoints
    role_definitions: Mapping[str, ModelRole] = field(default_factory=dict)

    @classmethod
    def from_config(cls, config: Mapping[str, Any], role_definitions: Mapping[str, ModelRole]) -> StudyModels:
        """From the resolved config: ``models.<name>.roles`` of the study models, and hub ids."""
        study = list((config.get("study") or {}).get("models") or [])
        models = config.get("models") or {}
        roles, arms = {}, set()
        hub_ids = {h for r in role_definitions.values() for h in r.hub_ids}
        for name in study:
            entry = models.get(name) or {}
            for role in entry.get("roles") or []:
                roles[role] = name
            if entry.get("source") == "hub" and entry.get("id") in hub_ids:
                arms.add(name)
        return cls(roles=roles, paper_arms=frozenset(arms), role_definitions=dict(role_definitions))

    def run_model_for(self, paper_model: str) -> str | None:
        role = self.role_of(paper_model)
        return self.roles.get(role.name) if role else None

    def role_of(self, paper_model: str) -> ModelRole | None:
        return next((r for r in self.role_definitions.values() if r.paper_model == paper_model), None)

    def paper_model_of(self, run_model: str) -> str | None:
        for role, model in self.roles.items():
            if model == run_model and role in self.role_definitions:
                return self.role_definitions[role].paper_model
        return None

    def analogue(self, cells: Iterable[Cell]) -> str | None:
        """Who stands in for the paper here (None: every model behind the cells is a paper arm)."""
        models = sorted({m for c in cells for m in c.models})
        others = [m for m in models if m not in self.paper_arms]
        if not others:
            return None
        named = [f"{m} for {self.paper_model_of(m)}" if self.paper_model_of(m) else m for m in others]
        return ", ".join(named)


def matches(cell: Cell, dim: str, allowed: Any, models: StudyModels) -> bool:
    """Does the cell belong to ``dim = allowed`` (a value or a tuple of them)?  A paper model matches
    the run model in its role; a cell that does not carry the dimension matches nothing (a study-wide
    row is not the value of any one group, and a filter must not pass it silently)."""
    allowed = allowed if isinstance(allowed, tuple) else (allowed,)
    if dim == "model":
        run = {models.run_model_for(str(a)) for a in allowed} - {None}
        have = [cell.group["model"]] if "model" in cell.group else list(cell.models)
        return bool(have) and all(m in run for m in have)
    if dim not in cell.group:
        return False
    return cell.group[dim] in {str(a) for a in allowed}


def matches_all(cell: Cell, conditions: Mapping[str, Any], models: StudyModels) -> bool:
    return all(matches(cell, dim, allowed, models) for dim, allowed in conditions.items())


def matches_any(cell: Cell, conditions: Mapping[str, Any], models: StudyModels) -> bool:
    return any(matches(cell, dim, allowed, models) for dim, allowed in conditions.items())


def paper_models(value: Value) -> list[str]:
    """The paper models a value is stated for (``by: {model: ...}``, ``where: {model: ...}``)."""
    named = list(value.by.get("model", {})) if "model" in value.by else []
    where = value.where.get("model")
    if where is not None:
        named += list(where) if isinstance(where, tuple) else [where]
    return named
