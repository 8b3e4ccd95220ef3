"""The registry of claim-value declarations (trustmass.report.declared): every stage's declarations name values
of the claims file, no two of them write the same cells, and the converted producers write no hand rows."""

from __future__ import annotations

import ast
import importlib
import inspect
import itertools
import math

import polars as pl
import pytest
from unit.declared_frames import assert_columns_exist, assert_in_domain

from trustmass.report.catalog import HEADLINE_FRAMES
from trustmass.report.declared import DECLARING_MODULES, declarations, undeclared
from trustmass.report.headline import HeadlineValue, check_value

#: the modules whose claim values are all declared (HEADLINE tuples read by declared_rows): no hand-made headline
#: row, no HeadlineValue made inside a function; a converted module joins this list
HAND_ROW_FREE = (
    "trustmass.report.frames.audit",
    "trustmass.report.frames.ceiling",
    "trustmass.report.frames.ceiling_claims",
    "trustmass.report.frames.ceiling_values",
    "trustmass.report.frames.certification",
    "trustmass.report.frames.gpu",
    "trustmass.report.frames.selfcheck",
    "trustmass.bench.certify",
)
#: the stages whose every declaration states the values its statistic can take (``domain``)
WITH_DOMAINS = ("ceiling", "audit", "certification", "sweep", "selfcheck", "gpu")


def test_the_registry_lists_every_headline_stage_of_the_catalog():
    assert set(DECLARING_MODULES) == {f.removeprefix("headline_") for f in HEADLINE_FRAMES}


def test_an_unknown_stage_is_an_error_naming_the_stages():
    with pytest.raises(KeyError, match="no stage 'nope'.*'audit'"):
        declarations(["nope"])


def test_every_declaration_names_a_value_of_the_claims_file():
    specs = [spec for stage_specs in declarations().values() for spec in stage_specs]
    assert len(specs) > 100
    for spec in specs:
        check_value(spec.claim, spec.value)  # KeyError naming the claim's values


def test_converted_stages_declare_values_and_modules_still_converting_are_named():
    found = declarations()
    for stage in WITH_DOMAINS:
        assert found[stage], stage
    missing = undeclared()
    assert all(m.rsplit(".", 1)[0] in {mod for mods in DECLARING_MODULES.values() for mod, _ in mods} for m in missing)
    assert not [m for m in missing if any(m.startswith(f"{mod}.") for mod in HAND_ROW_FREE)]


def _cells(spec: HeadlineValue) -> tuple:
    """What a declaration writes, apart from its filter: claim, value, frame and the group's dimensions."""
    return spec.claim, spec.value, spec.source, tuple(spec.keys) + tuple(spec.at)


def _allowed(value) -> set:
    return set(value) if isinstance(value, (tuple, list)) else {value}


def _overlap(a: HeadlineValue, b: HeadlineValue) -> bool:
    """Can one frame row pass both filters?  A column only one of them filters does not separate them."""
    return all(_allowed(a.where[c]) & _allowed(b.where[c]) for c in set(a.where) & set(b.where))


def test_no_two_declarations_write_the_same_cells_from_the_same_frame():
    for stage, specs in declarations().items():
        for a, b in itertools.combinations(specs, 2):
            assert not (_cells(a) == _cells(b) and _overlap(a, b)), (stage, a, b)


def test_the_overlap_check_can_fail():
    a = HeadlineValue(18, "median_c_hat_certified", "f", "x", ("budget",), {"budget": (8, 32)})
    assert _overlap(a, HeadlineValue(18, "median_c_hat_certified", "f", "y", ("budget",), {"budget": 32}))
    assert not _overlap(a, HeadlineValue(18, "median_c_hat_certified", "f", "y", ("budget",), {"budget": 4}))
    assert _overlap(a, HeadlineValue(18, "median_c_hat_certified", "f", "y", ("budget",), {"rule": "x"}))


@pytest.mark.parametrize("stage", WITH_DOMAINS)
def test_every_declaration_states_its_domain(stage):
    for spec in declarations([stage])[stage]:
        low, high = spec.domain
        assert low < high and (math.isfinite(low) or math.isfinite(high)), spec


def _hand_rows(source: str) -> list[str]:
    """Hand-made headline rows in a module's source: ``row``/``rows_from_frame`` imported from the headline module
    or called by bare name, and HeadlineValue built inside a function (a declaration belongs at module level)."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "trustmass.report.headline":
            found += [f"imports {a.name}" for a in node.names if a.name in ("row", "rows_from_frame")]
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("row", "rows_from_frame")
        ):
            found.append(f"calls {node.func.id}() at line {node.lineno}")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Call) and getattr(inner.func, "id", None) == "HeadlineValue":
                    found.append(f"builds HeadlineValue inside {getattr(node, 'name', 'a lambda')}()")
    return found


@pytest.mark.parametrize("module", HAND_ROW_FREE)
def test_converted_modules_make_no_hand_rows(module):
    assert _hand_rows(inspect.getsource(importlib.import_module(module))) == []


def test_the_hand_row_scan_can_fail():
    hand = (
        "from trustmass.report.headline import row\n"
        "def f(x):\n    spec = HeadlineValue(1, 'n', 's', 'c', ())\n    return [row(1, 'n', x, 'all')]\n"
    )
    assert sorted(_hand_rows(hand)) == ["builds HeadlineValue inside f()", "calls row() at line 4", "imports row"]
    assert _hand_rows("first = frame.row(0, named=True)\n") == []  # a polars row is no headline row


def test_the_frame_checks_can_fail():
    frame = pl.DataFrame({"population": ["all"], "share": [1.5], "n": [3]})
    spec = HeadlineValue(21, "improved_share", "f", "share", (), domain=(0.0, 1.0))
    assert_columns_exist([spec], {"f": frame})
    with pytest.raises(AssertionError, match="shared"):
        assert_columns_exist([HeadlineValue(21, "improved_share", "f", "shared", ())], {"f": frame})
    with pytest.raises(AssertionError, match="1.5"):
        assert_in_domain([spec], {"f": frame})


def test_every_value_a_run_can_answer_has_a_producer_or_says_what_it_needs():
    """A value no declaration produces reads "not produced" on every run: its reason must name what is missing
    (``needs:``), unless the configuration sets it, it is a protocol setting or an alternative reading."""
    from trustmass.report.claims.data import load_claims

    declared = {(s.claim, s.value) for specs in declarations().values() for s in specs}
    silent = [
        (c.id, v.name)
        for c in load_claims()
        for v in c.values
        if (c.id, v.name) not in declared and not (v.needs or v.configured or v.role == "parameter" or v.alternative)
    ]
    assert silent == []
