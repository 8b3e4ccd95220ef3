"""What a claim of the paper is, as data: :class:`Claim`, its machine-checkable :class:`Value` s, the
:class:`ModelRole` s the paper's arms play, and the precision a number was stated with.

No I/O here: :mod:`trustmass.report.claims.parse` validates the YAML document into these objects
and :mod:`trustmass.report.claims.data` loads the packaged file and offers lookups.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from types import MappingProxyType
from typing import Any

__all__ = [
    "CLAIM_COUNT",
    "DIMENSIONS",
    "DIRECTIONS",
    "EXTREMES",
    "FIGURES_TABLES",
    "FORMULA_NAMES",
    "KINDS",
    "POPULATIONS",
    "REPRO_CODES",
    "ROLES",
    "SECTIONS",
    "STAGES",
    "UNITS",
    "Claim",
    "ClaimsFileError",
    "ModelRole",
    "StatedFloat",
    "Value",
    "evaluate_formula",
    "half_unit",
    "tolerance",
]

CLAIM_COUNT = 126
SCHEMA_VERSION = 2

#: stage codes of spec §9
STAGES = ("THY", "CAP", "INST", "CERT", "AUD", "STAT", "LOSS", "PROBE", "CURV", "TASK", "DEP", "BYTES", "RETR", "TIME")
#: reproducibility codes of spec §9
REPRO_CODES = ("T", "S", "S~", "G", "B", "H")
#: how a value is stated, each with its own size comparison (trustmass.report.claims.verdicts):
#: point (a number, met within the precision it was written with), range (low-high), upper / lower
#: (a bound; ``strict`` for < / >), count (an integer, equal), ratio (k of n), identity (exactly
#: equal, e.g. "equals top-mass exactly"), ci_within (the 95 % interval lies inside low-high)
KINDS = ("point", "range", "upper", "lower", "count", "ratio", "identity", "ci_within")
UNITS = ("fraction", "percent", "nats", "points", "x", "count", "ms", "seconds", "billions", "none")
#: ``extreme``: the stated number is the largest ("up to X") or smallest ("as few as X") over the groups
EXTREMES = ("max", "min")
#: ``direction``: the sign, trend or order the paper states, judged apart from the size of the number:
#: positive / negative (the sign, or the side of a number ``than``: "worse than top-mass" is above 1),
#: above / below (another value of the same claim, ``than: <value name>``, group by group),
#: increasing / decreasing (the trend along a dimension, ``along``), order (the regenerated groups of
#: ``by`` in the order of the paper's numbers for them, pair by pair; ``along`` names the dimension)
DIRECTIONS = ("positive", "negative", "above", "below", "increasing", "decreasing", "order")
#: the dimensions a headline row's group may carry (``by_key``) and a ``where`` / ``by`` / ``exceptions``
#: / ``exclude`` / ``along`` may name; a condition on any other dimension could never match a row, so
#: it fails the claims file's load.  Conditions the paper states that no row carries (the context length
#: a number was measured at, the device) are ``at`` conditions: shown, not filtered on.
DIMENSIONS = frozenset(
    {
        "model",
        "budget",
        "group_size",
        "pool_extra",
        "family_set",
        "selector",
        "bound",
        "content",
        "corpus",
        "rows",
        "storage",
        "substitution",
        "qk_norm",
        "outcome",
        "variant",
        "opponent",
        "rule",
        "kept_points",
        "unit_budget",
        "probe_rank",
        "setting",
        "task",
        "length",
        "method",
        "layer",
        "comparison",
        "device",
    }
)
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
#: a size is met within half a unit of the printed digits, but never more than this share of the number
#: itself: "0.01" is met by 0.009-0.011, not by 0.005 (half its unit)
SIZE_RELATIVE_CAP = 0.1
#: "about X", "≈ X": within this share of X
APPROX_RELATIVE = 0.2


class ClaimsFileError(ValueError):
    """The claims file is malformed; ``problems`` holds one line per problem."""

    def __init__(self, problems: list[str], path: Any = None):
        self.problems = list(problems)
        self.path = path
        where = f"{path}: " if path is not None else ""
        head = f"{where}invalid claims file ({len(self.problems)} problem{'s' if len(self.problems) != 1 else ''}):"
        super().__init__("\n".join([head, *(f"  - {p}" for p in self.problems)]))


class StatedFloat(float):
    """A float that remembers how the claims file wrote it ("1.00" is not "1.0")."""

    literal: str

    def __new__(cls, literal: str) -> StatedFloat:
        obj = super().__new__(cls, float(literal))
        obj.literal = literal
        return obj


def half_unit(x: float | int | Fraction) -> float:
    """Half a unit in the last digit ``x`` was written with: 0.005 for "1.07" or "1.00", 0.5 for "19",
    5e-9 for "3.0e-7"; 0 for an exact fraction.  The paper's number stands for every value that
    rounds to it, so a point or a range endpoint is met within this distance."""
    if isinstance(x, Fraction):
        return 0.0
    if isinstance(x, int) and not isinstance(x, bool):
        return 0.5
    text = x.literal if isinstance(x, StatedFloat) else repr(float(x))
    exponent = Decimal(text.strip().lstrip("+-")).as_tuple().exponent
    return 0.5 * 10.0 ** int(exponent)


def tolerance(x: float | int | Fraction, approx: bool = False) -> float:
    """How far a regenerated number may sit from the paper's ``x`` and still agree in size: half a unit of
    the printed digits (:func:`half_unit`) capped at :data:`SIZE_RELATIVE_CAP` of ``|x|``, so the slack is
    never a sizeable part of the number; "about X" (``approx``) allows :data:`APPROX_RELATIVE` of ``|x|``."""
    if approx:
        return max(half_unit(x), APPROX_RELATIVE * abs(float(x))) if float(x) else half_unit(x)
    return min(half_unit(x), SIZE_RELATIVE_CAP * abs(float(x)))


Number = float | int
ByEntry = Number | Fraction | tuple[float, float]


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
    extreme: str | None = None
    direction: str | None = None
    along: str | None = None
    than: str | Number | None = None  # above/below: another value's name; positive/negative: the number (0)
    exceptions: Mapping[str, tuple] = field(default_factory=lambda: MappingProxyType({}))  # the paper's exceptions
    exclude: Mapping[str, tuple] = field(default_factory=lambda: MappingProxyType({}))  # groups judged elsewhere
    at: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))  # stated conditions no row carries
    configured: str | None = None  # set by the run's configuration: trustmass.report.claims.configured
    by_construction: str | None = None  # why the stated direction cannot fail on any data
    reading: str | None = None  # how an ambiguous sentence is read
    alternative: bool = False  # another reading of an ambiguous sentence: shown, not counted
    needs: str | None = None  # what a run needs to produce the value (when no default run does)
    source: str | None = None
    note: str | None = None
    quote: str | None = None  # the words of the sentence that state the number (required; ' … ' joins elided parts)
    config_keys: tuple[str, ...] = ()  # the config keys that set the number (configured) or its construction
    timing: bool = False  # a time or a ratio of times: judged only where measured on a CUDA device

    def bounds(self) -> tuple[float, float]:
        """The stated interval of the overall value: range/ci_within (low, high); upper (-inf, value);
        lower (value, inf); point/count/ratio/identity (value, value).  NaNs where only ``by`` or a
        formula is stated."""
        nan = math.nan
        if self.kind in ("range", "ci_within"):
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

    @property
    def sign_bound(self) -> bool:
        """A bound at zero ("all CIs < 0", "rank correlation > 0") states a sign: it is judged as a
        direction (negative for an upper bound, positive for a lower), it has no size."""
        return (
            self.kind in ("upper", "lower")
            and self.formula is None
            and self.value is not None
            and float(self.value) == 0
        )

    @property
    def stated_direction(self) -> str | None:
        """The direction judged for this value: its ``direction``, or the sign a bound at zero states."""
        if self.direction is not None:
            return self.direction
        if self.sign_bound:
            return "negative" if self.kind == "upper" else "positive"
        return None

    @property
    def has_size(self) -> bool:
        """Whether the value states a size to compare: a number or range, not only a sign ("all CIs < 0")
        or a side of a number stated as a direction ("worse than top-mass": ``kind: lower, value: 1,
        direction: positive, than: 1``)."""
        side_only = self.kind in ("upper", "lower") and self.direction in ("positive", "negative")
        return not (self.sign_bound or side_only) and (
            self.value is not None or self.low is not None or self.formula is not None or bool(self.by)
        )


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
    short: str | None = None  # a few words (at most 8) that name the claim in the summary (required)

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


@dataclass(frozen=True)
class ModelRole:
    """A part one of the paper's arms plays in its claims (the reference family, the group-size-1
    family, ...).  A study model takes the role with ``roles: [<name>]`` in its config entry; claims
    that name ``paper_model`` are then judged on that model."""

    name: str
    paper_model: str
    hub_ids: tuple[str, ...]
    plays: str
    group_size: int | None = None  # the role needs this many query heads per KV head


_FORMULA_NODES = (
    ast.Expression,
    ast.BinOp,
    ast.UnaryOp,
    ast.Call,
    ast.Name,
    ast.Load,
    ast.Constant,
    ast.operator,
    ast.unaryop,
)
_SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")


def formula_problem(formula: Any) -> str | None:
    """Why ``formula`` is not an arithmetic expression in :data:`FORMULA_NAMES` (None: it is)."""
    if not isinstance(formula, str):
        return f"must be a Python expression in {sorted(FORMULA_NAMES)}"
    try:
        tree = ast.parse(formula, mode="eval")
    except SyntaxError:
        return f"{formula!r} is not a valid expression"
    for node in ast.walk(tree):
        if not isinstance(node, _FORMULA_NODES):
            return f"{formula!r} uses {type(node).__name__}; only arithmetic and sqrt()"
        if isinstance(node, ast.Name) and node.id not in FORMULA_NAMES:
            return f"unknown name {node.id!r}; allowed: {sorted(FORMULA_NAMES)}"
    return None


def evaluate_formula(formula: str, **names: float) -> float:
    """Evaluate a value's ``formula`` (validated by :func:`formula_problem`) for given N, d, s, sigma, D."""
    problem = formula_problem(formula)
    if problem:
        raise ValueError(f"formula: {problem}")
    tree = ast.parse(formula, mode="eval")
    env = {"sqrt": math.sqrt, **names}
    return float(
        eval(compile(tree, "<formula>", "eval"), {"__builtins__": {}}, env)
    )  # the AST is arithmetic and sqrt only
