"""Validation of the claims document (``data/claims.yaml``) into :mod:`trustmass.report.claims.model`
objects: every problem is collected (all of them) and raised as one :class:`ClaimsFileError` whose
lines name the claim, the field and the fix."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from types import MappingProxyType
from typing import Any

from trustmass.report.claims.configured import IMPLIED
from trustmass.report.claims.model import (
    CLAIM_COUNT,
    DIMENSIONS,
    DIRECTIONS,
    EXTREMES,
    FIGURES_TABLES,
    KINDS,
    POPULATIONS,
    REPRO_CODES,
    ROLES,
    SCHEMA_VERSION,
    SECTIONS,
    STAGES,
    UNITS,
    ByEntry,
    Claim,
    ClaimsFileError,
    ModelRole,
    Value,
    formula_problem,
)

__all__ = ["ClaimsDocument", "parse_claims", "parse_document"]

_TOP_KEYS = ("schema_version", "source", "model_roles", "claims")
_CLAIM_KEYS_REQUIRED = tuple(
    "id section stage repro text values statistic population figure_table spec_refs short".split()
)
_CLAIM_KEYS_OPTIONAL = ("repro_note", "note")
_VALUE_KEYS_REQUIRED = ("name", "kind", "unit", "quote")
_VALUE_KEYS_OPTIONAL = tuple(
    "value exact formula of low high strict by where over role approx inferred extreme direction along source note "
    "than exceptions exclude at configured by_construction reading alternative needs config_keys timing".split()
)
_ROLE_KEYS_REQUIRED = ("paper_model", "hub_ids", "plays")
_ROLE_KEYS_OPTIONAL = ("group_size",)
_SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")
_CONFIG_KEY = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$")
_FRACTION = re.compile(r"^-?\d+/\d+$")
#: a claim's ``short`` names it in the summary in at most this many words
SHORT_WORDS = 8
#: the parts of a quote with words left out between them
QUOTE_ELISION = " … "
#: how a parameter's note says that no configuration key sets it (its config_keys: [])
NO_CONFIG_KEY = "no configuration key"
#: kinds stated by low/high (or by with [low, high] pairs)
_INTERVAL_KINDS = ("range", "ci_within")


@dataclass(frozen=True)
class ClaimsDocument:
    """The validated claims file: the 126 claims and the model roles they refer to."""

    claims: tuple[Claim, ...]
    model_roles: tuple[ModelRole, ...]


def parse_claims(data: Any, path: Path | str | None = None) -> tuple[Claim, ...]:
    """The claims of a loaded YAML document (see :func:`parse_document`)."""
    return parse_document(data, path).claims


def parse_document(data: Any, path: Path | str | None = None) -> ClaimsDocument:
    """Validate the loaded YAML document and build claims and roles; raise :class:`ClaimsFileError`."""
    problems: list[str] = []
    if not isinstance(data, Mapping):
        raise ClaimsFileError(
            [f"top level must be a mapping with schema_version and claims, got {type(data).__name__}"], path
        )
    if data.get("schema_version") != SCHEMA_VERSION:
        problems.append(f"schema_version must be {SCHEMA_VERSION}, got {data.get('schema_version')!r}")
    for key in data:
        if key not in _TOP_KEYS:
            problems.append(_unknown(key, "top level", _TOP_KEYS))
    roles = _parse_roles(data.get("model_roles"), problems)
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
    _check_paper_models(claims, roles, problems)
    if problems:
        raise ClaimsFileError(problems, path)
    return ClaimsDocument(tuple(claims), tuple(roles))


def _parse_roles(raw: Any, problems: list[str]) -> list[ModelRole]:
    if not (isinstance(raw, Mapping) and raw):
        problems.append(
            "model_roles: must map role names to {paper_model, hub_ids, plays}, e.g. reference: {paper_model: Qwen2.5-1.5B, ...}"
        )
        return []
    roles = []
    for name, entry in raw.items():
        where = f"model_roles.{name}"
        if not (isinstance(name, str) and _SNAKE.match(name)):
            problems.append(f"{where}: role names are snake_case")
            continue
        if not isinstance(entry, Mapping):
            problems.append(f"{where}: must be a mapping with {', '.join(_ROLE_KEYS_REQUIRED)}")
            continue
        n_before = len(problems)
        _check_keys(entry, where, _ROLE_KEYS_REQUIRED, _ROLE_KEYS_OPTIONAL, problems)
        hub_ids = entry.get("hub_ids")
        if not (isinstance(hub_ids, list) and all(isinstance(h, str) and "/" in h for h in hub_ids)):
            problems.append(f"{where}.hub_ids: a list of hub ids such as [Qwen/Qwen2.5-1.5B] (may be empty)")
        size = entry.get("group_size")
        if size is not None and not (isinstance(size, int) and not isinstance(size, bool) and size >= 1):
            problems.append(f"{where}.group_size: a positive integer (query heads per KV head)")
        for key in ("paper_model", "plays"):
            if not (isinstance(entry.get(key), str) and entry.get(key).strip()):
                problems.append(f"{where}.{key}: must be non-empty text")
        if len(problems) == n_before:
            roles.append(ModelRole(name, entry["paper_model"], tuple(hub_ids), entry["plays"], size))
    models = [r.paper_model for r in roles]
    for m in sorted({m for m in models if models.count(m) > 1}):
        problems.append(f"model_roles: paper model {m!r} has more than one role; fix: one role per paper model")
    return roles


def _check_paper_models(claims: Iterable[Claim], roles: Iterable[ModelRole], problems: list[str]) -> None:
    """Every paper model a value is stated for (``where: {model: ...}``, ``by: {model: ...}``) has a role,
    so that a run can judge it on the model that plays that role."""
    known = {r.paper_model for r in roles}
    for c in claims:
        for v in c.values:
            named = list(v.by.get("model", {})) if "model" in v.by else []
            for conditions in (v.where, v.exceptions, v.exclude):
                stated = conditions.get("model")
                if stated is not None:
                    named += list(stated) if isinstance(stated, tuple) else [stated]
            for m in named:
                if m not in known:
                    problems.append(
                        f"claim {c.id} ({v.name}): paper model {m!r} has no entry in model_roles; fix: add a role for it"
                    )


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
        hint = " (YAML 1.1 reads 3e-7 as text: write 3.e-7 for one printed digit, 3.0e-7 for two)"
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
    for key in ("text", "statistic", "short"):
        if key in entry and not (isinstance(entry.get(key), str) and entry.get(key).strip()):
            problems.append(f"{where}.{key}: must be non-empty text")
    short = entry.get("short")
    if isinstance(short, str) and len(short.split()) > SHORT_WORDS:
        problems.append(f"{where}.short: {len(short.split())} words; fix: name the claim in at most {SHORT_WORDS}")
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
            problems.append(
                f"{where}.figure_table: {item!r} unknown; allowed: null or one of {', '.join(FIGURES_TABLES)}"
            )
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
    text = entry.get("text") if isinstance(entry.get("text"), str) else ""
    for value in values:
        if value.source is None and value.quote is not None:
            for part in value.quote.split(QUOTE_ELISION):
                if part not in text:
                    problems.append(
                        f"{where} ({value.name}).quote: {part!r} is not in the claim's sentence; fix: copy the words "
                        "exactly (or name the spec section the value comes from in `source:`)"
                    )
        if value.direction in ("above", "below") and value.than not in names - {value.name}:
            problems.append(
                f"{where} ({value.name}).than: {value.than!r} is not another value of this claim; known: {sorted(names - {value.name})}"
            )
        if value.configured is not None and value.configured not in IMPLIED:
            problems.append(
                f"{where} ({value.name}).configured: {value.configured!r} unknown; known: {', '.join(sorted(IMPLIED))} "
                "(trustmass.report.claims.configured)"
            )
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
        short=entry["short"],
    )


def _parse_value(raw: Any, where: str, problems: list[str]) -> Value | None:
    if not isinstance(raw, Mapping):
        problems.append(f"{where}: must be a mapping with name, kind, unit and numbers")
        return None
    n_before = len(problems)
    name, kind, unit = raw.get("name"), raw.get("kind"), raw.get("unit")
    if not (isinstance(name, str) and _SNAKE.match(name)) and not (isinstance(name, str) and name == "D"):
        problems.append(f"{where}.name: {name!r} must be snake_case (e.g. median_c_hat)")
    where = f"{where} ({name})" if isinstance(name, str) else where
    _check_keys(raw, where, _VALUE_KEYS_REQUIRED, _VALUE_KEYS_OPTIONAL, problems)
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
    if "of" in raw and (
        kind != "ratio" or not isinstance(raw["of"], int) or isinstance(raw["of"], bool) or raw["of"] <= 0
    ):
        problems.append(f"{where}.of: only for kind ratio, a positive integer (k of n)")

    # which numbers each kind takes
    if kind in _INTERVAL_KINDS:
        if has_value or has_formula:
            problems.append(f"{where}: a {kind} takes low/high (or by with [low, high] pairs), not value/formula")
        if has_range and not ("low" in raw and "high" in raw):
            problems.append(f"{where}: a {kind} needs both low and high")
        if not has_range and not has_by:
            problems.append(f"{where}: a {kind} needs low/high or by")
        if (
            "low" in raw
            and "high" in raw
            and _is_number(raw["low"])
            and _is_number(raw["high"])
            and raw["low"] > raw["high"]
        ):
            problems.append(f"{where}: low {raw['low']} > high {raw['high']}; fix: swap them")
    elif kind in KINDS:
        if has_range:
            problems.append(f"{where}: low/high belong to kinds range and ci_within only")
        if not (has_value or has_formula or has_by):
            problems.append(f"{where}: kind {kind} needs value, formula or by")
        if kind in ("count", "ratio") and has_value and not (isinstance(raw["value"], int) and raw["value"] >= 0):
            problems.append(f"{where}.value: a {kind} must be a non-negative integer, got {raw['value']!r}")
        if kind == "ratio":
            if "of" not in raw:
                problems.append(f"{where}: a ratio needs `of` (the n in k of n)")
            elif (
                has_value and isinstance(raw["value"], int) and isinstance(raw["of"], int) and raw["value"] > raw["of"]
            ):
                problems.append(f"{where}: ratio {raw['value']} of {raw['of']} has k > n")
        if has_formula and kind in ("count", "ratio"):
            problems.append(f"{where}: a {kind} cannot be a formula")
    if "strict" in raw and kind not in ("upper", "lower"):
        problems.append(f"{where}.strict: only for kind upper or lower")
    extreme, direction, along = raw.get("extreme"), raw.get("direction"), raw.get("along")
    if extreme is not None and (extreme not in EXTREMES or kind != "point" or not raw.get("over")):
        problems.append(
            f"{where}.extreme: {extreme!r} must be one of {', '.join(EXTREMES)}, on a point value with `over` (the "
            f"groups it is the extreme of)"
        )
    if direction is not None and direction not in DIRECTIONS:
        problems.append(f"{where}.direction: {direction!r} unknown; allowed: {', '.join(DIRECTIONS)}")
    if (direction in ("increasing", "decreasing", "order")) != (along is not None):
        problems.append(
            f"{where}.along: needed exactly with direction increasing/decreasing/order (the dimension, e.g. budget)"
        )
    if along is not None and along not in DIMENSIONS:
        problems.append(_unknown_dimension(along, f"{where}.along"))
    if direction == "order" and along is not None and along not in (raw.get("by") or {}):
        problems.append(f"{where}.along: direction order compares the groups of `by`; along must be its dimension")
    than = raw.get("than")
    if direction in ("above", "below") and not isinstance(than, str):
        problems.append(f"{where}.than: direction {direction} compares with another value of the claim: its name")
    if direction in ("positive", "negative") and than is not None and not _is_number(than):
        problems.append(f"{where}.than: for direction {direction}, the number the sign is taken against (default 0)")
    if than is not None and direction not in ("above", "below", "positive", "negative"):
        problems.append(f"{where}.than: only with direction above/below/positive/negative")
    for key in ("configured", "by_construction", "reading", "needs"):
        if key in raw and not (isinstance(raw[key], str) and raw[key].strip()):
            problems.append(f"{where}.{key}: must be non-empty text")
    if "by_construction" in raw and direction is None:
        problems.append(f"{where}.by_construction: says why a stated direction cannot fail; the value states none")
    if "alternative" in raw and not isinstance(raw["alternative"], bool):
        problems.append(f"{where}.alternative: must be true or false")
    keys = raw.get("config_keys", [])
    if not (isinstance(keys, list) and all(isinstance(k, str) and _CONFIG_KEY.match(k) for k in keys)):
        problems.append(f"{where}.config_keys: must be a list of dotted config keys, e.g. [documents.n_docs]")
        keys = []
    if "by_construction" in raw and not keys:
        problems.append(f"{where}.config_keys: a by_construction value names the config keys its construction rests on")
    if "configured" in raw and not keys:
        problems.append(
            f"{where}.config_keys: a configured value names the config keys that set it, e.g. [deploy.budgets]"
        )
    if role == "parameter" and "config_keys" not in raw:
        problems.append(
            f"{where}.config_keys: a parameter names the config keys that set it (config_keys: [] where none does, "
            "and the note says so)"
        )
    elif role == "parameter" and not keys and NO_CONFIG_KEY not in str(raw.get("note", "")):
        problems.append(f"{where}.note: a parameter with config_keys: [] says why: '{NO_CONFIG_KEY} sets it: ...'")
    if "timing" in raw and not isinstance(raw["timing"], bool):
        problems.append(f"{where}.timing: must be true or false")
    if raw.get("alternative") and "reading" not in raw:
        problems.append(f"{where}.alternative: an alternative reading needs `reading:` (how the sentence is read)")

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
    where_cond = _conditions(raw, "where", where, problems, DIMENSIONS)
    at_cond = _conditions(raw, "at", where, problems, None)
    exceptions = _conditions(raw, "exceptions", where, problems, DIMENSIONS)
    exclude = _conditions(raw, "exclude", where, problems, DIMENSIONS)
    for dim in {**exceptions, **exclude}:
        if dim in where_cond:
            problems.append(f"{where}: {dim} is both a `where` filter and an exception; state the groups once")
    if has_by and isinstance(raw.get("by"), Mapping):
        for dim in raw["by"]:
            if isinstance(dim, str) and dim not in DIMENSIONS:
                problems.append(_unknown_dimension(dim, f"{where}.by"))
    over = raw.get("over", [])
    if not (isinstance(over, list) and all(isinstance(o, str) and _SNAKE.match(o) for o in over)):
        problems.append(f"{where}.over: must be a list of snake_case dimensions, e.g. [model, budget]")
        over = []
    for key in ("source", "note", "quote"):
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
        where=where_cond,
        at=at_cond,
        exceptions=exceptions,
        exclude=exclude,
        than=raw.get("than"),
        configured=raw.get("configured"),
        by_construction=raw.get("by_construction"),
        reading=raw.get("reading"),
        alternative=raw.get("alternative", False),
        needs=raw.get("needs"),
        over=tuple(over),
        role=role,
        approx=raw.get("approx", False),
        inferred=raw.get("inferred", False),
        extreme=extreme,
        direction=direction,
        along=along,
        source=raw.get("source"),
        note=raw.get("note"),
        quote=raw.get("quote"),
        config_keys=tuple(keys),
        timing=raw.get("timing", False),
    )


def _unknown_dimension(dim: Any, where: str) -> str:
    guess = difflib.get_close_matches(str(dim), sorted(DIMENSIONS), n=1)
    hint = f"; did you mean {guess[0]!r}?" if guess else ""
    return (
        f"{where}: no headline row carries the dimension {dim!r}, so the condition would match nothing{hint} "
        f"known: {', '.join(sorted(DIMENSIONS))} (a condition the paper states that no row carries belongs in `at`)"
    )


def _conditions(raw: Mapping, key: str, where: str, problems: list[str], dimensions) -> Mapping:
    """A ``{dimension: condition}`` field (a condition is a number, text or a list of them), read-only;
    ``dimensions``: the allowed dimensions (None: any snake_case name)."""
    cond = raw.get(key, {})
    if not isinstance(cond, Mapping) or not all(isinstance(k, str) and _SNAKE.match(k) for k in cond):
        problems.append(f"{where}.{key}: must be a mapping {{dimension: condition}} with snake_case dimensions")
        return MappingProxyType({})
    for k, c in cond.items():
        items = c if isinstance(c, list) else [c]
        if not all(isinstance(x, (str, int, float)) and not isinstance(x, bool) for x in items):
            problems.append(f"{where}.{key}.{k}: a condition is a number, text or a list of them")
        if dimensions is not None and k not in dimensions:
            problems.append(_unknown_dimension(k, f"{where}.{key}"))
    return MappingProxyType({k: (tuple(v) if isinstance(v, list) else v) for k, v in cond.items()})


def _parse_by(raw: Any, kind: Any, of: Any, unit: Any, where: str, problems: list[str]) -> dict:
    if not (isinstance(raw, Mapping) and len(raw) == 1):
        problems.append(
            f"{where}: must be one mapping {{dimension: {{key: number}}}}, e.g. {{budget: {{4: 0.39, 8: 0.21}}}}"
        )
        return {}
    ((dim, table),) = raw.items()
    if not (isinstance(dim, str) and _SNAKE.match(dim)):
        problems.append(f"{where}: dimension {dim!r} must be snake_case")
        return {}
    if not (isinstance(table, Mapping) and table):
        problems.append(f"{where}.{dim}: must be a non-empty mapping {{key: number}}")
        return {}
    out: dict[Any, ByEntry] = {}
    for key, entry in table.items():
        at = f"{where}.{dim}[{key!r}]"
        if "," in str(key):
            problems.append(
                f"{at}: a group key cannot hold a comma (headline rows join group values with commas); fix: use spaces"
            )
        if kind in _INTERVAL_KINDS and not _is_number(entry):
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
    problem = formula_problem(formula)
    if problem:
        problems.append(f"{where}: {problem}")
