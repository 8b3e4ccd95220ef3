"""The paper's own numbers (spec/paper.md §9, claims 1-126), read from ``data/claims.yaml``.

The pipeline never computes *from* these numbers: every statistic is computed from records, and the
claims report compares it with the value stated here.  This module loads the file (validated by
:mod:`trustmass.report.claims.parse`: ids 1..126 unique and complete, known codes, low <= high, exact
fractions equal to their decimals, every paper model a claim names has a role, ...), keeps how each
number was written (``1.00`` is stated to two decimals: :func:`~trustmass.report.claims.model.half_unit`)
and offers lookups::

    from trustmass.report.claims.data import claim, claims_for_stage, model_roles
    claim(24).value("median_c_hat").low          # 0.021
    [c.id for c in claims_for_stage("CERT")]     # [18, 19, 20, 21, 84, 90, 91, 92, 93, 94, 101]
    model_roles()["reference"].paper_model       # 'Qwen2.5-1.5B'
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path

import yaml

from trustmass.report.claims.model import (
    FIGURES_TABLES,
    REPRO_CODES,
    STAGES,
    Claim,
    ClaimsFileError,
    ModelRole,
    StatedFloat,
    Value,
    evaluate_formula,
)
from trustmass.report.claims.parse import ClaimsDocument, parse_claims, parse_document

__all__ = [
    "Claim",
    "ClaimsFileError",
    "ModelRole",
    "Value",
    "claim",
    "claims_for_figure_table",
    "claims_for_repro",
    "claims_for_stage",
    "evaluate_formula",
    "load_claims",
    "load_document",
    "model_roles",
    "parse_claims",
]

DEFAULT_PATH = "data/claims.yaml"


class _StatedLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """Safe YAML whose floats remember their literal (so ``1.00`` keeps its two decimals).  On libyaml's
    parser where PyYAML has it (the same constructors; the 120 kB claims file in 0.1 s instead of 1 s, which
    every snakemake start paid)."""


def _stated_float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float:
    text = loader.construct_scalar(node)
    value = yaml.SafeLoader.construct_yaml_float(loader, node)
    return StatedFloat(text.replace("_", "")) if value == value and abs(value) != float("inf") else value


_StatedLoader.add_constructor("tag:yaml.org,2002:float", _stated_float)


def load_claims(path: Path | str | None = None) -> list[Claim]:
    """All 126 claims in order, validated.  ``path`` defaults to the packaged ``data/claims.yaml``."""
    return list(load_document(path).claims)


def load_document(path: Path | str | None = None) -> ClaimsDocument:
    """The claims and model roles of ``path`` (default: the packaged file), validated."""
    if path is None:
        return _packaged()
    return _load(Path(path))


@lru_cache(maxsize=1)
def _packaged() -> ClaimsDocument:
    resource = resources.files("trustmass").joinpath(DEFAULT_PATH)
    with resources.as_file(resource) as path:
        return _load(Path(path))


def _load(path: Path) -> ClaimsDocument:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ClaimsFileError([f"cannot read the file ({exc}); fix: check the path"], path) from exc
    try:
        data = yaml.load(text, Loader=_StatedLoader)  # noqa: S506 (a SafeLoader subclass)
    except yaml.YAMLError as exc:
        raise ClaimsFileError([f"not valid YAML: {exc}"], path) from exc
    return parse_document(data, path)


# ----------------------------------------------------------------------------------- lookups


def claim(claim_id: int) -> Claim:
    """The claim with this §9 number."""
    claims = _packaged().claims
    if not (isinstance(claim_id, int) and 1 <= claim_id <= len(claims)):
        raise KeyError(f"no claim {claim_id!r}; claims are numbered 1..{len(claims)}")
    return claims[claim_id - 1]


def model_roles() -> dict[str, ModelRole]:
    """The roles the paper's arms play, by role name."""
    return {r.name: r for r in _packaged().model_roles}


def claims_for_stage(stage: str) -> list[Claim]:
    """Claims whose stage codes include ``stage`` (e.g. 'CERT'), in id order."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; allowed: {', '.join(STAGES)}")
    return [c for c in _packaged().claims if stage in c.stage]


def claims_for_repro(code: str) -> list[Claim]:
    """Claims whose reproducibility codes include ``code`` (e.g. 'S'), in id order."""
    if code not in REPRO_CODES:
        raise ValueError(f"unknown reproducibility code {code!r}; allowed: {', '.join(REPRO_CODES)}")
    return [c for c in _packaged().claims if code in c.repro]


def claims_for_figure_table(name: str) -> list[Claim]:
    """Claims reported in a figure or table ('Fig 1' .. 'Fig 4', 'Table 1' .. 'Table 8')."""
    if name not in FIGURES_TABLES:
        raise ValueError(f"unknown figure/table {name!r}; allowed: {', '.join(FIGURES_TABLES)}")
    return [c for c in _packaged().claims if name in c.figure_table]
