"""The run configuration: validation with messages that name the field and the fix, and defaults.

The workflow calls :func:`validate_config` once at start-up (``workflow/rules/common.smk``) on the
merged configuration (``config.yaml`` plus any ``--configfile``/``--config``).  The schema is a JSON
Schema written in YAML (``workflow/schemas/config.schema.yaml``); every object in it is closed, so a
misspelled key is an error rather than a silently ignored setting.

Errors are collected (all of them, not just the first) and raised as one :class:`ConfigError` whose
lines read like::

    config: unknown key 'enumeratoin' at top level; allowed: balancing, ...; did you mean 'enumeration'? fix: rename it
    config.enumeration.subset_cap: expected integer, got 'abc' (str); fix: set an integer, e.g. 200000 (the default)

Defaults are set once, in ``config.yaml`` (the embedded default snakemake loads first; the schema holds
none): :func:`validate_config` merges the config over it as snakemake merges ``--configfile`` (nested
mappings merge, lists and scalars are replaced), so a partial config resolves as the workflow would.
"""

from __future__ import annotations

import copy
import difflib
import functools
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from trustmass.plumbing.config_checks import cross_field_problems

__all__ = [
    "DEFAULT_CONFIG",
    "SCHEDULING_KEYS",
    "ConfigError",
    "config_slice",
    "embedded_default",
    "load_schema",
    "merged",
    "validate_config",
]

#: the embedded default config, the one place defaults are set: config.yaml at the repository root
#: (the library is installed editable from its checkout: src/trustmass/plumbing/config.py -> the root)
DEFAULT_CONFIG = Path(__file__).resolve().parents[3] / "config.yaml"

_JSON_TYPE_NAMES = {
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "boolean": "true or false",
    "array": "a list",
    "object": "a mapping (key: value)",
    "null": "null",
}
# PyYAML follows YAML 1.1: a float needs a dot, so `1e-3` is read as the *string* "1e-3".
_FLOAT_LIKE = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


class ConfigError(ValueError):
    """The configuration does not match the schema; ``problems`` holds one line per problem."""

    def __init__(self, problems: list[str], schema_path: Path | str | None = None):
        self.problems = list(problems)
        self.schema_path = schema_path
        head = f"invalid configuration ({len(self.problems)} problem{'s' if len(self.problems) != 1 else ''}):"
        tail = "Every key, its default and its meaning are listed in config.yaml"
        if schema_path is not None:
            tail += f"; the rules are in {schema_path}"
        super().__init__("\n".join([head, *(f"  - {p}" for p in self.problems), tail + "."]))


def load_schema(schema_path: Path | str) -> dict:
    """Read a JSON Schema written in YAML (or JSON) and check that it is itself a valid schema."""
    with open(schema_path, encoding="utf-8") as fh:
        schema = yaml.safe_load(fh)
    if not isinstance(schema, dict):
        raise ValueError(f"{schema_path}: a schema must be a mapping, got {type(schema).__name__}")
    jsonschema.validators.validator_for(schema).check_schema(schema)
    return schema


def validate_config(
    config: Mapping[str, Any], schema_path: Path | str, defaults: Mapping[str, Any] | Path | str | None = None
) -> dict:
    """Check ``config`` against the schema and return a resolved copy with every default filled in.

    The defaults are the embedded default config (``defaults``: a mapping or a YAML file; None:
    :data:`DEFAULT_CONFIG`, the repository's ``config.yaml``); ``config`` is merged over them as
    snakemake merges ``--configfile``.  Raises :class:`ConfigError` listing every problem (unknown keys, wrong
    types, out-of-range values, overrides for budgets that are not
    enumerated) with the field and the fix.  ``config`` itself is not modified.
    """
    schema = load_schema(schema_path)
    if defaults is None or not isinstance(defaults, Mapping):
        defaults = embedded_default() if defaults is None else _read_defaults(defaults)
    resolved = merged(defaults, config)
    validator = jsonschema.validators.validator_for(schema)(schema)
    errors = sorted(validator.iter_errors(resolved), key=lambda e: [str(p) for p in e.absolute_path])
    problems = [line for error in errors for line in _describe(error, schema, defaults)]
    if problems:
        raise ConfigError(problems, schema_path)

    problems = cross_field_problems(resolved)
    if problems:
        raise ConfigError(problems, schema_path)
    return resolved


def embedded_default(path: str | None = None) -> Any:
    """A copy of the embedded default config (:data:`DEFAULT_CONFIG`), or of its value at a slash path
    (``"statistics/map_budget"``): where library defaults (settings dataclasses) read theirs, so each
    default is written once, in config.yaml."""
    node: Any = _embedded_default()
    for key in path.split("/") if path else ():
        node = node[key]
    return copy.deepcopy(node)


@functools.cache
def _embedded_default() -> dict:
    return _read_defaults(DEFAULT_CONFIG)


def merged(base: Mapping[str, Any], update: Mapping[str, Any]) -> dict:
    """A copy of ``base`` with ``update`` merged over it, as snakemake merges ``--configfile``: nested
    mappings merge, anything else (lists, scalars, null) replaces."""
    out = copy.deepcopy(dict(base))
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merged(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _read_defaults(path: Path | str) -> dict:
    with open(path, encoding="utf-8") as fh:
        data = yaml.safe_load(fh) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: the default config must be a mapping, got {type(data).__name__}")
    return data


#: the settings that only schedule jobs (slash paths; ``*``: any entry, e.g. any model): a cluster job's run time,
#: a job's memory request.  They change no result, so :func:`config_slice` leaves them out of every rule's params
#: (raising ``certification.runtime_min`` must not re-solve the certification).  Not here because they can change
#: a result: ``certification.memory_limit_mb`` (SCIP's limit: a solve that hits it is "unsolved"),
#: ``certification.n_shards`` (which instance lands in which shard file), the work budget (``certification.bnb_work``,
#: ``scip_nodes``, ``scip_lp_iterations``: it decides every outcome), ``certification.time_limit_s`` (only a safety
#: net, but a row it stopped is status safety_stop and must be re-solved when it is raised), and
#: ``loss.threads`` / ``deploy.threads`` (torch's intra-op threads split its float reductions differently).
SCHEDULING_KEYS = ("certification/runtime_min", "models/*/mem_mb")


def config_slice(config: Mapping[str, Any], *paths: str, scheduling: bool = False) -> dict:
    """The parts of ``config`` named by slash paths, nested as in the config, without the settings that only
    schedule jobs (:data:`SCHEDULING_KEYS`; ``scheduling=True`` keeps them).

    ``config_slice(cfg, "seed", "budgets/enumerated")`` -> ``{"seed": 0, "budgets": {"enumerated": [...]}}``.
    Used for rule ``params`` (so only the keys a rule reads trigger its rerun) and for provenance.
    """
    out: dict = {}
    for path in paths:
        keys = path.split("/")
        node: Any = config
        for depth, key in enumerate(keys):
            if not isinstance(node, Mapping) or key not in node:
                raise KeyError(f"config has no '{'/'.join(keys[: depth + 1])}' (asked for '{path}')")
            node = node[key]
        target = out
        for key in keys[:-1]:
            target = target.setdefault(key, {})
        target[keys[-1]] = copy.deepcopy(node)
    if not scheduling:
        for key in SCHEDULING_KEYS:
            _drop(out, key.split("/"))
    return out


def _drop(node: Any, keys: list[str]) -> None:
    """Remove the entry at ``keys`` (``*``: every key at that level) from the nested mapping ``node``, if there."""
    if not isinstance(node, dict):
        return
    head, rest = keys[0], keys[1:]
    for key in list(node) if head == "*" else [head]:
        if key not in node:
            continue
        if rest:
            _drop(node[key], rest)
        else:
            del node[key]


# --------------------------------------------------------------------------------------------------
# messages


def _where(path: Iterable[Any]) -> str:
    out = "config"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


_NO_DEFAULT = object()


def _default_at(defaults: Mapping[str, Any], schema: Mapping[str, Any], path: Iterable[Any]) -> Any:
    """The embedded default's value of a setting (``_NO_DEFAULT`` where it sets none, or where the path
    runs through a user-named entry such as ``models.<name>``, whose settings have no default)."""
    node: Any = defaults
    for part in path:
        if part not in (schema.get("properties") or {}) or not isinstance(node, Mapping) or part not in node:
            return _NO_DEFAULT
        schema, node = schema["properties"][part], node[part]
    return node


def _fix_hint(schema: Mapping[str, Any], expected: str | None = None, default: Any = _NO_DEFAULT) -> str:
    parts = []
    if expected:
        parts.append(f"set {_JSON_TYPE_NAMES.get(expected, expected)}")
    if default is not _NO_DEFAULT:
        if default not in ({}, []) or not parts:
            parts.append(f"e.g. {_yaml_inline(default)} (the default)")
    hint = ", ".join(parts)
    if schema.get("description"):
        hint = f"{hint} — {schema['description']}" if hint else schema["description"]
    return f"; fix: {hint}" if hint else ""


def _yaml_inline(value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=True, width=10_000).strip().removesuffix("...").strip()


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _schema_at(schema: Mapping[str, Any], path: Iterable[Any]) -> Mapping[str, Any]:
    """The subschema that describes the config value at ``path`` (empty if there is none)."""
    for part in path:
        props = schema.get("properties", {})
        if isinstance(part, str) and part in props:
            schema = props[part]
        elif isinstance(part, int) and isinstance(schema.get("items"), Mapping):
            schema = schema["items"]
        elif isinstance(schema.get("additionalProperties"), Mapping):
            schema = schema["additionalProperties"]
        else:
            return {}
    return schema


def _describe(error: jsonschema.ValidationError, root: Mapping[str, Any], defaults: Mapping[str, Any]) -> list[str]:
    where = _where(error.absolute_path)
    default = _default_at(defaults, root, error.absolute_path)
    kind = error.validator
    instance = error.instance

    if kind == "additionalProperties" and error.validator_value is False and isinstance(instance, Mapping):
        allowed = sorted(error.schema.get("properties", {}))
        patterns = [re.compile(p) for p in error.schema.get("patternProperties", {})]
        unknown = [k for k in instance if k not in allowed and not any(p.search(str(k)) for p in patterns)]
        level = "at top level" if not error.absolute_path else f"in {where}"
        lines = []
        for key in unknown:
            line = f"config: unknown key {key!r} {level}; allowed: {', '.join(allowed)}"
            close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
            line += (
                f"; did you mean {close[0]!r}? fix: rename it"
                if close
                else "; fix: remove it or rename it to an allowed key"
            )
            lines.append(line)
        return lines or [f"{where}: {error.message}"]

    if kind == "type":
        expected = error.validator_value
        expected_name = " or ".join(expected) if isinstance(expected, list) else expected
        line = f"{where}: expected {expected_name}, got {instance!r} ({_type_name(instance)})"
        if isinstance(instance, str) and expected_name in ("number", "integer") and _FLOAT_LIKE.match(instance):
            if "." not in instance and "e" in instance.lower():
                line += f"; YAML reads {instance} as text: write it with a dot, e.g. 1.0e-3"
            else:
                line += (
                    "; it was read as text (quoted in YAML, or nested inside --config, which snakemake"
                    " leaves as text): write the number unquoted in a file passed with --configfile"
                )
        elif isinstance(instance, bool) and expected_name in ("number", "integer"):
            line += "; true/false are not numbers"
        return [line + _fix_hint(error.schema, expected_name if isinstance(expected, str) else None, default)]

    if "propertyNames" in error.relative_schema_path:
        owner = _schema_at(root, error.absolute_path)
        hint = f"; fix: {owner['description']}" if owner.get("description") else ""
        return [f"{where}: key {instance!r} is not allowed ({error.message}){hint}"]

    if kind in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        bound = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}[kind]
        return [
            f"{where}: got {instance!r}, must be {bound} {error.validator_value}{_fix_hint(error.schema, default=default)}"
        ]

    return [f"{where}: {error.message}{_fix_hint(error.schema, default=default)}"]
