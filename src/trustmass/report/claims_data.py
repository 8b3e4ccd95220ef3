"""The paper's own numbers (spec/paper.md §9, claims 1-126), read from ``data/claims.yaml``.

The pipeline never computes *from* these numbers: every statistic is computed from records, and the
claims report compares it with the value stated here.  This module loads the file, checks its
structure (ids 1..126 unique and complete, known stage/repro/kind/unit/population codes, low <= high,
exact fractions equal to their decimal values, ...) and offers lookups::

    from trustmass.report.claims_data import claim, claims_for_stage
    claim(24).value("median_c_hat").low          # 0.021
    [c.id for c in claims_for_stage("CERT")]     # [18, 19, 20, 21, 84, 90, 91, 92, 93, 94, 101]

Problems are collected (all of them) and raised as one :class:`ClaimsFileError` whose lines name the
claim, the field and the fix.
"""

from __future__ import annotations

import ast
import difflib
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

__all__ = [
    "CLAIM_COUNT",
    "FIGURES_TABLES",
    "KINDS",
    "POPULATIONS",
    "REPRO_CODES",
    "ROLES",
    "SECTIONS",
    "STAGES",
    "UNITS",
    "Claim",
    "ClaimsFileError",
    "Value",
    "claim",
    "claims_for_figure_table",
    "claims_for_repro",
    "claims_for_stage",
    "load_claims",
]

CLAIM_COUNT = 126
SCHEMA_VERSION = 1

#: stage codes of spec §9
STAGES = ("THY", "CAP", "INST", "CERT", "AUD", "STAT", "LOSS", "PROBE", "CURV", "TASK", "DEP", "BYTES", "RETR", "TIME")
#: reproducibility codes of spec §9
REPRO_CODES = ("T", "S", "S~", "G", "B", "H")
#: how a value is stated: a number, a range low-high, a bound (< / <= / up to: upper; >= / as few as:
#: lower), an integer count, or k out of n (``value`` of ``of``)
KINDS = ("point", "range", "upper", "lower", "count", "ratio")
UNITS = ("fraction", "percent", "nats", "points", "x", "count", "ms", "seconds", "billions", "none")
#: which records a claim is computed on: the 3-doc primary slice, the 20-doc full records, the 960
#: certification manifest, the cap-widening head subset, the content run (Table 2), the
#: task-structured contexts (§2.7), held-out loss documents, the deployment benchmarks; ``unstated``
#: where the paper does not say (spec §11.3), ``not_applicable`` for theory/configuration/timing
POPULATIONS = (
    "primary_3doc",
    "all_docs",
    "manifest",
    "depth_subset",
    "content_run",
    "task_contexts",
    "heldout_docs",
    "benchmarks",
    "unstated",
    "not_applicable",
)
#: ``result``: a measured quantity; ``bound``: a pre-registered ceiling/floor or design constraint;
#: ``parameter``: a protocol setting the claim states (cap size, document count, ...)
ROLES = ("result", "bound", "parameter")
SECTIONS = ("Abstract / §1", "§2.1", "§2.2", "§2.3", "§2.4", "§4", "App A", "App B", "App C", "App D", "App E")
FIGURES_TABLES = tuple(f"Fig {i}" for i in range(1, 5)) + tuple(f"Table {i}" for i in range(1, 9))
#: names a theory ``formula`` may use
FORMULA_NAMES = frozenset({"N", "d", "s", "sigma", "D", "sqrt"})

_CLAIM_KEYS_REQUIRED = ("id", "section", "stage", "repro", "text", "values", "statistic", "population", "figure_table", "spec_refs")
_CLAIM_KEYS_OPTIONAL = ("repro_note", "note")
_VALUE_KEYS_REQUIRED = ("name", "kind", "unit")
_VALUE_KEYS_OPTIONAL = (
    "value", "exact", "formula", "of", "low", "high", "strict", "by", "where", "over",
    "role", "approx", "inferred", "source", "note",
)
_SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")
_FRACTION = re.compile(r"^-?\d+/\d+$")

DEFAULT_PATH = "data/claims.yaml"


class ClaimsFileError(ValueError):
    """The claims file is malformed; ``problems`` holds one line per problem."""

    def __init__(self, problems: list[str], path: Path | str | None = None):
        self.problems = list(problems)
        self.path = path
        where = f"{path}: " if path is not None else ""
        head = f"{where}invalid claims file ({len(self.problems)} problem{'s' if len(self.problems) != 1 else ''}):"
        super().__init__("\n".join([head, *(f"  - {p}" for p in self.problems)]))


Number = float | int
ByEntry = Number | tuple[float, float]


@dataclass(frozen=True)
class Value:
    """One machine-checkable quantity a claim states (see the header of ``data/claims.yaml``)."""

    name: str
    kind: str
    unit: str
    value: Number | None = None
    low: Number | None = None
    high: Number | None = None
    of: int | None = None
    exact: Fraction | None = None
    formula: str | None = None
    strict: bool = False
    by: Mapping[str, Mapping[Any, ByEntry]] = field(default_factory=lambda: MappingProxyType({}))
    where: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    over: tuple[str, ...] = ()
    role: str = "result"
    approx: bool = False
    inferred: bool = False
    source: str | None = None
    note: str | None = None

    def bounds(self) -> tuple[float, float]:
        """The stated interval of the overall value: range (low, high); upper (-inf, value);
        lower (value, inf); point/count/ratio (value, value).  NaNs where only ``by`` or a formula
        is stated."""
        nan = math.nan
        if self.kind == "range":
            return (float(self.low), float(self.high)) if self.low is not None else (nan, nan)
        if self.value is None:
            return (nan, nan)
        v = float(self.value)
        if self.kind == "upper":
            return (-math.inf, v)
        if self.kind == "lower":
            return (v, math.inf)
        return (v, v)

    def by_dimension(self) -> str | None:
        """The single dimension the value is broken down by, or None."""
        return next(iter(self.by), None)


@dataclass(frozen=True)
class Claim:
    """One numbered claim of spec §9."""

    id: int
    section: str
    stage: tuple[str, ...]
    repro: tuple[str, ...]
    text: str
    values: tuple[Value, ...]
    statistic: str
    population: str
    figure_table: tuple[str, ...]
    spec_refs: tuple[str, ...]
    repro_note: str | None = None
    note: str | None = None

    def value(self, name: str) -> Value:
        for v in self.values:
            if v.name == name:
                return v
        known = [v.name for v in self.values]
        raise KeyError(f"claim {self.id} has no value {name!r}; it has {known}")

    @property
    def flags(self) -> tuple[str, ...]:
        """Spec tags ([A], [R], [D], [C]) mentioned in the note, repro note or value notes."""
        texts = [self.note or "", self.repro_note or ""] + [v.note or "" for v in self.values]
        joined = " ".join(texts)
        return tuple(tag for tag in ("A", "R", "D", "C") if f"[{tag}]" in joined)


# ----------------------------------------------------------------------------------- loading


def load_claims(path: Path | str | None = None) -> list[Claim]:
    """All 126 claims in order, validated.  ``path`` defaults to the packaged ``data/claims.yaml``."""
    if path is None:
        return list(_packaged_claims())
    return list(_load(Path(path)))


@lru_cache(maxsize=1)
def _packaged_claims() -> tuple[Claim, ...]:
    resource = resources.files("trustmass").joinpath(DEFAULT_PATH)
    with resources.as_file(resource) as path:
        return _load(Path(path))


def _load(path: Path) -> tuple[Claim, ...]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ClaimsFileError([f"cannot read the file ({exc}); fix: check the path"], path) from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ClaimsFileError([f"not valid YAML: {exc}"], path) from exc
    return parse_claims(data, path)


def parse_claims(data: Any, path: Path | str | None = None) -> tuple[Claim, ...]:
    """Validate the loaded YAML document and build the claims; raise :class:`ClaimsFileError`."""
    problems: list[str] = []
    if not isinstance(data, Mapping):
        raise ClaimsFileError([f"top level must be a mapping with schema_version and claims, got {type(data).__name__}"], path)
    if data.get("schema_version") != SCHEMA_VERSION:
        problems.append(f"schema_version must be {SCHEMA_VERSION}, got {data.get('schema_version')!r}")
    for key in data:
        if key not in ("schema_version", "source", "claims"):
            problems.append(_unknown(key, "top level", ("schema_version", "source", "claims")))
    raw = data.get("claims")
    if not isinstance(raw, list):
        problems.append("claims: must be a list of claims")
        raise ClaimsFileError(problems, path)

    claims: list[Claim] = []
    for position, entry in enumerate(raw, start=1):
        built = _parse_claim(entry, position, problems)
        if built is not None:
            claims.append(built)

    ids = [e.get("id") for e in raw if isinstance(e, Mapping)]
    seen: set = set()
    for i in ids:
        if i in seen:
            problems.append(f"claim id {i} appears more than once; fix: ids must be unique")
        seen.add(i)
    missing = sorted(set(range(1, CLAIM_COUNT + 1)) - seen)
    extra = sorted(i for i in seen if not (isinstance(i, int) and 1 <= i <= CLAIM_COUNT))
    if missing:
        problems.append(f"claim ids missing: {missing}; fix: transcribe every claim 1..{CLAIM_COUNT} of spec §9")
    if extra:
        problems.append(f"claim ids out of range 1..{CLAIM_COUNT}: {extra}")
    if not missing and not extra and len(ids) == CLAIM_COUNT and ids != list(range(1, CLAIM_COUNT + 1)):
        problems.append("claims must be listed in id order 1..126")
    if problems:
        raise ClaimsFileError(problems, path)
    return tuple(claims)


def _check_keys(entry: Mapping, where: str, required, optional, problems: list[str]) -> None:
    """Append a problem for every missing required key and every key that is not allowed."""
    for key in required:
        if key not in entry:
            problems.append(f"{where}: missing required key {key!r}")
    for key in entry:
        if key not in (*required, *optional):
            problems.append(_unknown(key, where, (*required, *optional)))


def _unknown(key: Any, where: str, allowed: Iterable[str]) -> str:
    allowed = list(allowed)
    guess = difflib.get_close_matches(str(key), allowed, n=1)
    hint = f"; did you mean {guess[0]!r}?" if guess else ""
    return f"{where}: unknown key {key!r}{hint} allowed: {', '.join(allowed)}"


def _codes(raw: Any, allowed: tuple[str, ...], where: str, problems: list[str]) -> tuple[str, ...]:
    items = raw if isinstance(raw, list) else [raw]
    if not items:
        problems.append(f"{where}: must name at least one code from {allowed}")
    out = []
    for item in items:
        if item not in allowed:
            problems.append(f"{where}: unknown code {item!r}; allowed: {', '.join(allowed)}")
        else:
            out.append(item)
    return tuple(out)


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _number_problem(x: Any, where: str) -> str:
    hint = ""
    if isinstance(x, str) and re.match(r"^[-+]?\d+(\.\d*)?[eE][-+]?\d+$", x):
        hint = " (YAML 1.1 reads 3e-7 as text: write 3.0e-7)"
    return f"{where}: expected a finite number, got {x!r}{hint}"


def _parse_claim(entry: Any, position: int, problems: list[str]) -> Claim | None:
    if not isinstance(entry, Mapping):
        problems.append(f"claims[{position}]: must be a mapping, got {type(entry).__name__}")
        return None
    cid = entry.get("id")
    where = f"claim {cid}" if isinstance(cid, int) and not isinstance(cid, bool) else f"claims[{position}]"
    n_before = len(problems)
    if not (isinstance(cid, int) and not isinstance(cid, bool)):
        problems.append(f"{where}: id must be an integer, got {cid!r}")
    _check_keys(entry, where, _CLAIM_KEYS_REQUIRED, _CLAIM_KEYS_OPTIONAL, problems)
    section = entry.get("section")
    if section not in SECTIONS:
        problems.append(f"{where}.section: {section!r} is not a §9 heading; allowed: {', '.join(SECTIONS)}")
    stage = _codes(entry.get("stage"), STAGES, f"{where}.stage", problems)
    repro = _codes(entry.get("repro"), REPRO_CODES, f"{where}.repro", problems)
    for key in ("text", "statistic"):
        if not (isinstance(entry.get(key), str) and entry.get(key).strip()):
            problems.append(f"{where}.{key}: must be non-empty text")
    for key in ("repro_note", "note"):
        if key in entry and not (isinstance(entry[key], str) and entry[key].strip()):
            problems.append(f"{where}.{key}: must be non-empty text when present (or leave it out)")
    population = entry.get("population")
    if population not in POPULATIONS:
        problems.append(f"{where}.population: {population!r} unknown; allowed: {', '.join(POPULATIONS)}")
    ft_raw = entry.get("figure_table")
    ft_items = [] if ft_raw is None else (ft_raw if isinstance(ft_raw, list) else [ft_raw])
    for item in ft_items:
        if item not in FIGURES_TABLES:
            problems.append(f"{where}.figure_table: {item!r} unknown; allowed: null or one of {', '.join(FIGURES_TABLES)}")
    refs = entry.get("spec_refs")
    if not (isinstance(refs, list) and all(isinstance(r, str) and r.startswith("§") for r in refs)):
        problems.append(f"{where}.spec_refs: must be a list of spec sections such as '§3.6' (may be empty)")
        refs = []
    raw_values = entry.get("values")
    values: list[Value] = []
    if not isinstance(raw_values, list):
        problems.append(f"{where}.values: must be a list (empty when the claim states no number)")
        raw_values = []
    names: set[str] = set()
    for j, raw in enumerate(raw_values, start=1):
        value = _parse_value(raw, f"{where}.values[{j}]", problems)
        if value is not None:
            if value.name in names:
                problems.append(f"{where}.values[{j}]: duplicate value name {value.name!r}")
            names.add(value.name)
            values.append(value)
    if len(problems) > n_before:
        return None
    return Claim(
        id=cid,
        section=section,
        stage=stage,
        repro=repro,
        text=entry["text"],
        values=tuple(values),
        statistic=entry["statistic"],
        population=population,
        figure_table=tuple(ft_items),
        spec_refs=tuple(refs),
        repro_note=entry.get("repro_note"),
        note=entry.get("note"),
    )


def _parse_value(raw: Any, where: str, problems: list[str]) -> Value | None:
    if not isinstance(raw, Mapping):
        problems.append(f"{where}: must be a mapping with name, kind, unit and numbers")
        return None
    n_before = len(problems)
    _check_keys(raw, where, _VALUE_KEYS_REQUIRED, _VALUE_KEYS_OPTIONAL, problems)
    name, kind, unit = raw.get("name"), raw.get("kind"), raw.get("unit")
    if not (isinstance(name, str) and _SNAKE.match(name)) and not (isinstance(name, str) and name == "D"):
        problems.append(f"{where}.name: {name!r} must be snake_case (e.g. median_c_hat)")
    where = f"{where} ({name})" if isinstance(name, str) else where
    if kind not in KINDS:
        problems.append(f"{where}.kind: {kind!r} unknown; allowed: {', '.join(KINDS)}")
    if unit not in UNITS:
        problems.append(f"{where}.unit: {unit!r} unknown; allowed: {', '.join(UNITS)}")
    role = raw.get("role", "result")
    if role not in ROLES:
        problems.append(f"{where}.role: {role!r} unknown; allowed: {', '.join(ROLES)}")
    for flag in ("strict", "approx", "inferred"):
        if flag in raw and not isinstance(raw[flag], bool):
            problems.append(f"{where}.{flag}: must be true or false")
    for key in ("value", "low", "high"):
        if key in raw and not _is_number(raw[key]):
            problems.append(_number_problem(raw[key], f"{where}.{key}"))
    has_value, has_range = "value" in raw, ("low" in raw or "high" in raw)
    has_formula, has_by = "formula" in raw, "by" in raw
    if "of" in raw and (kind != "ratio" or not isinstance(raw["of"], int) or isinstance(raw["of"], bool) or raw["of"] <= 0):
        problems.append(f"{where}.of: only for kind ratio, a positive integer (k of n)")

    # which numbers each kind takes
    if kind == "range":
        if has_value or has_formula:
            problems.append(f"{where}: a range takes low/high (or by with [low, high] pairs), not value/formula")
        if has_range and not ("low" in raw and "high" in raw):
            problems.append(f"{where}: a range needs both low and high")
        if not has_range and not has_by:
            problems.append(f"{where}: a range needs low/high or by")
        if "low" in raw and "high" in raw and _is_number(raw["low"]) and _is_number(raw["high"]) and raw["low"] > raw["high"]:
            problems.append(f"{where}: low {raw['low']} > high {raw['high']}; fix: swap them")
    elif kind in KINDS:
        if has_range:
            problems.append(f"{where}: low/high belong to kind range only")
        if not (has_value or has_formula or has_by):
            problems.append(f"{where}: kind {kind} needs value, formula or by")
        if kind in ("count", "ratio") and has_value and not (isinstance(raw["value"], int) and raw["value"] >= 0):
            problems.append(f"{where}.value: a {kind} must be a non-negative integer, got {raw['value']!r}")
        if kind == "ratio":
            if "of" not in raw:
                problems.append(f"{where}: a ratio needs `of` (the n in k of n)")
            elif has_value and isinstance(raw["value"], int) and isinstance(raw["of"], int) and raw["value"] > raw["of"]:
                problems.append(f"{where}: ratio {raw['value']} of {raw['of']} has k > n")
        if has_formula and kind in ("count", "ratio"):
            problems.append(f"{where}: a {kind} cannot be a formula")
    if "strict" in raw and kind not in ("upper", "lower"):
        problems.append(f"{where}.strict: only for kind upper or lower")

    exact = None
    if "exact" in raw:
        if not (isinstance(raw["exact"], str) and _FRACTION.match(raw["exact"])):
            problems.append(f"{where}.exact: must be a fraction string such as '9/22'")
        elif not has_value or not _is_number(raw.get("value")):
            problems.append(f"{where}.exact: needs the decimal value beside it")
        else:
            exact = Fraction(raw["exact"])
            if abs(float(exact) - raw["value"]) > 1e-15 * max(1.0, abs(raw["value"])):
                problems.append(f"{where}.exact: {raw['exact']} = {float(exact)!r} differs from value {raw['value']!r}")
    formula = raw.get("formula")
    if formula is not None:
        _check_formula(formula, f"{where}.formula", problems)

    unit_ok = unit in UNITS
    for key in ("value", "low", "high"):
        x = raw.get(key)
        if unit_ok and _is_number(x) and unit == "percent" and not (0 <= x <= 100):
            problems.append(f"{where}.{key}: {x} is outside 0..100 for unit percent")

    by = _parse_by(raw.get("by"), kind, raw.get("of"), unit, f"{where}.by", problems) if has_by else {}
    where_cond = raw.get("where", {})
    if not isinstance(where_cond, Mapping) or not all(isinstance(k, str) and _SNAKE.match(k) for k in where_cond):
        problems.append(f"{where}.where: must be a mapping {{dimension: condition}} with snake_case dimensions")
        where_cond = {}
    else:
        for k, cond in where_cond.items():
            items = cond if isinstance(cond, list) else [cond]
            if not all(isinstance(c, (str, int, float)) and not isinstance(c, bool) for c in items):
                problems.append(f"{where}.where.{k}: a condition is a number, text or a list of them")
    over = raw.get("over", [])
    if not (isinstance(over, list) and all(isinstance(o, str) and _SNAKE.match(o) for o in over)):
        problems.append(f"{where}.over: must be a list of snake_case dimensions, e.g. [model, budget]")
        over = []
    for key in ("source", "note"):
        if key in raw and not (isinstance(raw[key], str) and raw[key].strip()):
            problems.append(f"{where}.{key}: must be non-empty text")
    if len(problems) > n_before:
        return None
    return Value(
        name=name,
        kind=kind,
        unit=unit,
        value=raw.get("value"),
        low=raw.get("low"),
        high=raw.get("high"),
        of=raw.get("of"),
        exact=exact,
        formula=formula,
        strict=raw.get("strict", False),
        by=MappingProxyType({k: MappingProxyType(v) for k, v in by.items()}),
        where=MappingProxyType({k: (tuple(v) if isinstance(v, list) else v) for k, v in where_cond.items()}),
        over=tuple(over),
        role=role,
        approx=raw.get("approx", False),
        inferred=raw.get("inferred", False),
        source=raw.get("source"),
        note=raw.get("note"),
    )


def _parse_by(raw: Any, kind: Any, of: Any, unit: Any, where: str, problems: list[str]) -> dict:
    if not (isinstance(raw, Mapping) and len(raw) == 1):
        problems.append(f"{where}: must be one mapping {{dimension: {{key: number}}}}, e.g. {{budget: {{4: 0.39, 8: 0.21}}}}")
        return {}
    (dim, table), = raw.items()
    if not (isinstance(dim, str) and _SNAKE.match(dim)):
        problems.append(f"{where}: dimension {dim!r} must be snake_case")
        return {}
    if not (isinstance(table, Mapping) and table):
        problems.append(f"{where}.{dim}: must be a non-empty mapping {{key: number}}")
        return {}
    out: dict[Any, ByEntry] = {}
    for key, entry in table.items():
        at = f"{where}.{dim}[{key!r}]"
        if kind == "range" and not _is_number(entry):
            # a range is stated per group as [low, high]; a number is a group's point value inside it
            if not (isinstance(entry, list) and len(entry) == 2 and all(_is_number(e) for e in entry)):
                problems.append(f"{at}: a range entry is [low, high] or a number")
                continue
            if entry[0] > entry[1]:
                problems.append(f"{at}: low {entry[0]} > high {entry[1]}; fix: swap them")
            out[key] = (entry[0], entry[1])
            numbers = entry
        elif isinstance(entry, str) and _FRACTION.match(entry):
            out[key] = Fraction(entry)
            numbers = [float(Fraction(entry))]
        elif _is_number(entry):
            if kind in ("count", "ratio") and not (isinstance(entry, int) and entry >= 0):
                problems.append(f"{at}: a {kind} entry must be a non-negative integer")
            if kind == "ratio" and isinstance(of, int) and isinstance(entry, int) and entry > of:
                problems.append(f"{at}: {entry} of {of} has k > n")
            out[key] = entry
            numbers = [entry]
        else:
            problems.append(f"{at}: expected a number or a fraction string such as '1/6', got {entry!r}")
            continue
        if unit == "percent" and not all(0 <= n <= 100 for n in numbers):
            problems.append(f"{at}: outside 0..100 for unit percent")
    return {dim: out}


def _check_formula(formula: Any, where: str, problems: list[str]) -> None:
    if not isinstance(formula, str):
        problems.append(f"{where}: must be a Python expression in {sorted(FORMULA_NAMES)}")
        return
    try:
        tree = ast.parse(formula, mode="eval")
    except SyntaxError:
        problems.append(f"{where}: {formula!r} is not a valid expression")
        return
    allowed_nodes = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Call, ast.Name, ast.Load, ast.Constant,
                     ast.operator, ast.unaryop)
    for node in ast.walk(tree):
        if not isinstance(node, allowed_nodes):
            problems.append(f"{where}: {formula!r} uses {type(node).__name__}; only arithmetic and sqrt()")
            return
        if isinstance(node, ast.Name) and node.id not in FORMULA_NAMES:
            problems.append(f"{where}: unknown name {node.id!r}; allowed: {sorted(FORMULA_NAMES)}")


def evaluate_formula(formula: str, **names: float) -> float:
    """Evaluate a value's ``formula`` (already validated) for given N, d, s, sigma, D."""
    tree = ast.parse(formula, mode="eval")
    env = {"sqrt": math.sqrt, **names}
    return float(eval(compile(tree, "<formula>", "eval"), {"__builtins__": {}}, env))  # the AST was validated: arithmetic and sqrt only


# ----------------------------------------------------------------------------------- lookups


def claim(claim_id: int) -> Claim:
    """The claim with this §9 number."""
    claims = _packaged_claims()
    if not (isinstance(claim_id, int) and 1 <= claim_id <= len(claims)):
        raise KeyError(f"no claim {claim_id!r}; claims are numbered 1..{len(claims)}")
    return claims[claim_id - 1]


def claims_for_stage(stage: str) -> list[Claim]:
    """Claims whose stage codes include ``stage`` (e.g. 'CERT'), in id order."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; allowed: {', '.join(STAGES)}")
    return [c for c in _packaged_claims() if stage in c.stage]


def claims_for_repro(code: str) -> list[Claim]:
    """Claims whose reproducibility codes include ``code`` (e.g. 'S'), in id order."""
    if code not in REPRO_CODES:
        raise ValueError(f"unknown reproducibility code {code!r}; allowed: {', '.join(REPRO_CODES)}")
    return [c for c in _packaged_claims() if code in c.repro]


def claims_for_figure_table(name: str) -> list[Claim]:
    """Claims reported in a figure or table ('Fig 1' .. 'Fig 4', 'Table 1' .. 'Table 8')."""
    if name not in FIGURES_TABLES:
        raise ValueError(f"unknown figure/table {name!r}; allowed: {', '.join(FIGURES_TABLES)}")
    return [c for c in _packaged_claims() if name in c.figure_table]
