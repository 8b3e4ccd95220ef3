"""The claims table (data/claims.yaml): structure, validation errors, lookups, and spot checks of the
transcription against the spec's text (spec/paper.md §9)."""

import copy
import math
import os
import re
from fractions import Fraction
from functools import lru_cache
from importlib import resources
from pathlib import Path

import pytest
import yaml

from trustmass.report.claims import data as cd
from trustmass.report.claims.data import (
    ClaimsFileError,
    claim,
    claims_for_figure_table,
    claims_for_stage,
    load_claims,
)
from trustmass.report.claims.model import KINDS, REPRO_CODES, ROLES, STAGES, UNITS

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "src" / "trustmass" / "data" / "claims.yaml"


@lru_cache(maxsize=1)
def _raw_document():
    return yaml.safe_load(DATA.read_text(encoding="utf-8"))


def raw_document():
    """A fresh copy of the file's YAML document, to mutate."""
    return copy.deepcopy(_raw_document())


# ----------------------------------------------------------------------------- structure


def test_packaged_file_is_package_data():
    assert resources.files("trustmass").joinpath("data/claims.yaml").is_file()


def test_all_126_claims_in_order():
    claims = load_claims()
    assert [c.id for c in claims] == list(range(1, 127))
    assert all(c.text and c.statistic for c in claims)
    assert all(set(c.stage) <= set(STAGES) and set(c.repro) <= set(REPRO_CODES) for c in claims)
    assert sum(len(c.values) for c in claims) >= 240


def test_value_fields_are_consistent():
    for c in load_claims():
        for v in c.values:
            assert v.kind in KINDS and v.unit in UNITS and v.role in ROLES
            if v.kind == "range" and v.low is not None:
                assert v.low <= v.high, (c.id, v.name)
            if v.kind == "ratio":
                assert v.of is not None
            if v.unit == "percent":
                for x in (v.value, v.low, v.high):
                    assert x is None or 0 <= x <= 100


WORD_NUMBERS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "tenfold": 10,
}


def numbers_in(text: str) -> set[float]:
    """Every number written in a claim's sentence (abs values; '14(.1)' reads 14.1; 2e5; 111,744)."""
    t = re.sub(r"(\d)\((\.\d+)\)", r"\1\2", text).replace("−", "-")
    out = set()
    for m in re.finditer(r"(?<![\w.])[-+]?(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?|\.\d+)(?:e(-?\d+))?", t):
        x = float(m.group(1).replace(",", ""))
        out.add(x * 10 ** int(m.group(2)) if m.group(2) else x)
    out |= {float(x) for w, x in WORD_NUMBERS.items() if re.search(rf"\b{w}\b", t, re.IGNORECASE)}
    return out


def stored_numbers(v: cd.Value) -> list[float]:
    xs = [x for x in (v.value, v.low, v.high, v.of) if x is not None]
    for table in v.by.values():
        for entry in table.values():
            xs.extend(entry if isinstance(entry, tuple) else [entry])
    return [float(x) for x in xs]


def test_every_stored_number_is_written_in_the_claim():
    """A transcription check: each number (unless marked inferred or sourced elsewhere) appears in the
    claim's own sentence."""
    missing = []
    for c in load_claims():
        written = numbers_in(c.text)
        for v in c.values:
            if v.inferred or v.source:
                continue
            for x in stored_numbers(v):
                if v.exact is not None and str(v.exact) in c.text:
                    continue
                if not any(math.isclose(abs(x), w, rel_tol=1e-12, abs_tol=1e-15) for w in written):
                    missing.append((c.id, v.name, x))
    assert missing == []


def precision_losses(claims) -> list[tuple]:
    """Stated numbers written with fewer decimals than the claim's sentence shows them ("0.9" where it
    reads "0.90"): the lost digit would widen the half-unit tolerance tenfold."""
    lost = []
    for c in claims:
        shown = set(re.findall(r"(?<![\d.])\d+\.\d+(?!\d)", c.text.replace(",", "")))
        for v in c.values:
            for attr in ("value", "low", "high"):
                x = getattr(v, attr, None)
                literal = getattr(x, "literal", None)
                if literal is None or "." not in literal:
                    continue
                padded = f"{float(literal):.{len(literal.split('.')[1]) + 1}f}"
                if padded in shown and literal not in shown:
                    lost.append((c.id, v.name, attr, literal, padded))
    return lost


def test_no_stated_number_loses_a_written_digit():
    assert precision_losses(load_claims()) == []


def test_the_precision_check_can_fail():
    from trustmass.report.claims.model import StatedFloat

    class Fake:
        id, text = 0, "agree at 0.90–0.93"
        values = [type("V", (), {"name": "v", "value": None, "low": StatedFloat("0.9"), "high": StatedFloat("0.93")})()]

    assert precision_losses([Fake]) == [(0, "v", "low", "0.9", "0.90")]


def test_the_number_check_can_fail():
    assert 0.021 in numbers_in(claim(24).text) and 0.022 not in numbers_in(claim(24).text)
    assert {14.1, 62.2} <= numbers_in(claim(4).text)
    assert {111744.0, 4.0, 6.0, 3.0} <= numbers_in(claim(15).text)
    assert {200000.0, 5000000.0} <= numbers_in(claim(19).text)


# ----------------------------------------------------------------------------- spot checks


def test_claim_9_example_2_2():
    c = claim(9)
    assert c.stage == ("THY",) and c.repro == ("T",)
    es2 = c.value("es_2")
    assert es2.exact == Fraction(9, 22) and es2.value == 9 / 22
    assert c.value("kappa").exact == Fraction(11, 9)
    assert c.value("es_top_mass").value == 0.5 and c.value("ef_2").value == 0


def test_claim_11_group_vote():
    v = claim(11).value("median_vote_cost_over_top_mass")
    assert (v.kind, v.low, v.high, v.unit) == ("range", 1.06, 1.22, "x")
    assert dict(v.by["group_size"]) == {2: 1.06, 4: 1.12, 5: 1.17, 6: 1.22}
    assert v.where["budget"] == 8
    assert claim(12).value("median_vote_cost_over_es_pool").bounds() == (1.14, 1.38)


def test_claim_24_median_c_hat_and_intervals():
    c = claim(24)
    assert c.value("median_c_hat").bounds() == (0.021, 0.047)
    assert c.value("median_c_hat_ci95").bounds() == (0.017, 0.051)
    assert c.value("n_families").value == 8
    assert c.figure_table == ("Fig 1",) and "A" in c.flags


def test_claim_31_mass_cap_shares():
    v = claim(31).value("mass_cap_share_of_s8")
    assert v.unit == "percent" and dict(v.by["budget"]) == {64: (28, 34), 256: (8, 12)}


def test_table_7_numbers():
    improvements = claim(91).value("n_improvements")
    assert improvements.value == 46 and dict(improvements.by["budget"]) == {4: 0, 8: 2, 16: 8, 32: 36}
    assert sum(improvements.by["budget"].values()) == improvements.value
    cap = claim(93).value("median_c_hat_cap")
    assert (cap.kind, cap.value, cap.strict, dict(cap.where)) == ("upper", 0.108, False, {"budget": 32})
    assert claim(95).value("n_instances_per_budget").value == 186_240
    assert claim(84).value("n_unsolved").value == 21
    assert {91, 93, 94, 95} <= {c.id for c in claims_for_figure_table("Table 7")}


def test_instance_counts():
    assert claim(1).value("n_instances").value == 168_192
    assert claim(15).value("n_instances").value == 111_744
    assert claim(16).value("n_instances").value == 56_448
    assert claim(1).value("n_instances").value == 111_744 + 56_448
    assert claim(41).value("n_instances").value == 72_576


def test_bounds_and_strictness():
    v = claim(18).value("median_c_hat_certified")
    assert v.kind == "upper" and v.strict and v.bounds() == (-math.inf, 0.12)
    low = claim(46).value("retrieval_row_share")
    assert low.kind == "lower" and low.bounds() == (20, math.inf)
    few = claim(105).value("top_mass_label_rate")  # "as few as 19%": the smallest group
    assert few.kind == "point" and few.extreme == "min" and few.bounds() == (19, 19)
    assert claim(46).value("retrieval_row_share").role == "bound"
    assert claim(90).value("median_kappa_hat_bal_shift").value == 3e-7
    assert claim(72).value("bf16_score_difference").value == 1.22e-4


def test_ratios_and_wtl():
    wins = claim(6).value("wins_vs_kvzip_enforced")
    assert (wins.kind, wins.value, wins.of) == ("ratio", 93, 160)
    assert claim(6).value("losses_vs_kvzip_enforced").value == 22
    assert dict(claim(70).value("wtl_vs_compactor").by["outcome"]) == {"win": 24, "tie": 96, "loss": 40}
    assert sum(claim(75).value("wtl_vs_snapkv").by["outcome"].values()) == claim(75).value("n_conditions").value
    assert sum(claim(71).value("wtl_vs_snapkv").by["outcome"].values()) == claim(71).value("n_conditions").value


def test_per_family_values():
    assert dict(claim(97).value("allocation_delta_es").by["model"]) == {
        "Llama-3.2-1B": 0.044,
        "OLMo-2-1B": 0.144,
        "Qwen2.5-1.5B": 0.255,
        "Qwen3-1.7B": 1.032,
    }
    assert dict(claim(56).value("map_share_of_all_cell_gain").by["model"]) == {
        "Qwen3-0.6B": 55,
        "Qwen3-1.7B": 15,
        "Qwen3-4B": 31,
    }
    assert claim(125).value("random_share_of_all_cell_gain").by["model"]["Qwen3-1.7B"] == 77
    assert dict(claim(20).value("label_rate").by["pool_extra"]) == {4: 35.6, 5: 37.8, 6: 38.7}
    pi = claim(22)
    assert dict(pi.value("median_pi_hat").by["budget"]) == {4: 1.07, 32: 1.79}
    assert dict(pi.value("p99_pi_hat").by["budget"]) == {4: 2.2, 32: 6.8}


def test_compound_codes_are_lists():
    assert claim(35).repro == ("S~", "G")
    assert claim(38).repro == ("S", "S~")
    assert claim(49).repro == ("T", "S") and claim(49).repro_note == "(runtime check)"
    assert claim(41).stage == ("CAP", "INST", "STAT")
    assert claim(11).repro_note.startswith("Sizes 2 (Qwen3-0.6B)")


def test_theory_formulas():
    v = claim(81).value("es_nonzero_minimum")
    assert v.kind == "lower" and cd.evaluate_formula(v.formula, N=6) == pytest.approx(2 / 36)
    assert cd.evaluate_formula(claim(80).value("ef_bound").formula, sigma=3.0, s=9) == 1.0
    assert claim(79).value("es_of_set").by["kept_points"]["{0 1 3}"] == Fraction(1, 6)


# ----------------------------------------------------------------------------- lookups


def test_lookups():
    assert [c.id for c in claims_for_stage("CERT")] == [18, 19, 20, 21, 84, 90, 91, 92, 93, 94, 101]
    assert all("TIME" in c.stage for c in claims_for_stage("TIME"))
    assert [c.id for c in cd.claims_for_repro("H")] == [40, 69, 102, 103, 115]
    assert claim(126).id == 126
    with pytest.raises(KeyError):
        claim(0)
    with pytest.raises(KeyError, match="has no value"):
        claim(9).value("nonexistent")
    with pytest.raises(ValueError, match="unknown stage"):
        claims_for_stage("INSTANCE")


# ----------------------------------------------------------------------------- validation


def problems_of(mutate) -> str:
    doc = raw_document()
    mutate(doc)
    with pytest.raises(ClaimsFileError) as info:
        cd.parse_claims(doc, "claims.yaml")
    return str(info.value)


def by_id(doc, cid):
    return next(c for c in doc["claims"] if c["id"] == cid)


def test_validation_missing_and_duplicate_ids():
    msg = problems_of(lambda d: d["claims"].pop(4))
    assert "missing: [5]" in msg
    msg = problems_of(lambda d: d["claims"].append(copy.deepcopy(d["claims"][0])))
    assert "claim id 1 appears more than once" in msg


def test_validation_reversed_range():
    def mutate(d):
        v = by_id(d, 24)["values"][0]
        v["low"], v["high"] = v["high"], v["low"]

    assert "claim 24.values[1] (median_c_hat): low 0.047 > high 0.021" in problems_of(mutate)


def test_validation_enums_and_typos():
    assert "unknown code 'INSTANT'" in problems_of(lambda d: by_id(d, 2).__setitem__("stage", ["INSTANT"]))
    assert "unit: 'percents' unknown" in problems_of(lambda d: by_id(d, 2)["values"][0].__setitem__("unit", "percents"))
    assert "kind: 'interval' unknown" in problems_of(lambda d: by_id(d, 2)["values"][0].__setitem__("kind", "interval"))
    assert "population: 'primary' unknown" in problems_of(lambda d: by_id(d, 2).__setitem__("population", "primary"))
    msg = problems_of(lambda d: by_id(d, 2).__setitem__("statistc", "x"))
    assert "unknown key 'statistc'; did you mean 'statistic'?" in msg
    assert "figure_table: 'Figure 1' unknown" in problems_of(
        lambda d: by_id(d, 2).__setitem__("figure_table", "Figure 1")
    )


def test_validation_numbers():
    msg = problems_of(lambda d: by_id(d, 90)["values"][2].__setitem__("value", "3e-7"))
    assert "write 3.e-7 for one printed digit" in msg
    msg = problems_of(lambda d: by_id(d, 9)["values"][1].__setitem__("exact", "9/23"))
    assert "9/23" in msg and "differs from value" in msg
    msg = problems_of(lambda d: by_id(d, 27)["values"][0]["by"]["budget"].__setitem__(4, 139))
    assert "outside 0..100 for unit percent" in msg
    msg = problems_of(lambda d: by_id(d, 6)["values"][0].__setitem__("value", 161))
    assert "has k > n" in msg
    msg = problems_of(lambda d: by_id(d, 81)["values"][0].__setitem__("formula", "__import__('os')"))
    assert "formula" in msg


def test_validation_reports_every_problem_at_once():
    def mutate(d):
        by_id(d, 3)["population"] = "nowhere"
        by_id(d, 4)["values"][0]["unit"] = "pts"

    doc = raw_document()
    mutate(doc)
    with pytest.raises(ClaimsFileError) as err:
        cd.parse_claims(doc)
    assert len(err.value.problems) == 2


def test_load_from_a_path(tmp_path):
    path = tmp_path / "claims.yaml"
    doc = raw_document()
    doc["schema_version"] = 1
    path.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    with pytest.raises(ClaimsFileError, match="schema_version must be 2"):
        load_claims(path)
    doc["schema_version"] = 2
    path.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    assert len(load_claims(path)) == 126


# ----------------------------------------------------------------------------- against the spec itself


def spec_path() -> Path | None:
    candidates = [
        os.environ.get("TRUSTMASS_SPEC"),
        REPO / "spec" / "paper.md",
        REPO.parent / "shared" / "spec" / "paper.md",
        REPO.parents[1] / "shared" / "spec" / "paper.md",  # a worktree under work/wt/<name>
    ]
    return next((Path(p) for p in candidates if p and Path(p).is_file()), None)


def spec_claims(text: str) -> dict[int, dict]:
    section = text[text.index("## 9. Numbered list") : text.index("## 10.")]
    items, current, heading = {}, None, None
    for line in section.splitlines():
        if line.startswith("### "):
            heading, current = line[4:].strip(), None
            continue
        m = re.match(r"^(\d+)\. (.*)$", line)
        if m and heading not in ("Stage codes", "Reproducibility codes"):
            current = int(m.group(1))
            items[current] = {"heading": heading, "raw": m.group(2).strip()}
        elif current is not None and line.strip():
            items[current]["raw"] += " " + line.strip()
        else:
            current = None
    pattern = re.compile(r"^(?P<text>.*?) — (?P<stage>[A-Z/]+) — \*\*(?P<repro>[^*]+)\*\*(?P<tail>.*)$")
    for item in items.values():
        item.update(pattern.match(item["raw"]).groupdict())
    return items


@pytest.mark.skipif(spec_path() is None, reason="spec/paper.md not available (set TRUSTMASS_SPEC)")
def test_text_stage_and_repro_match_the_spec():
    spec = spec_claims(spec_path().read_text(encoding="utf-8"))
    assert sorted(spec) == list(range(1, 127))
    for c in load_claims():
        s = spec[c.id]
        assert c.text == s["text"].strip(), c.id
        assert c.stage == tuple(s["stage"].split("/")), c.id
        assert c.repro == tuple(r.strip() for r in s["repro"].split("/")), c.id
        assert s["heading"].startswith(c.section.split(" / ")[-1]) or c.section == s["heading"], c.id
        tail = s["tail"].strip().lstrip(".").strip()
        assert (c.repro_note or "") == (tail[:-1] if tail.startswith("(") and tail.endswith(").") else tail), c.id


# ----------------------------------------------------------------------------- kinds, roles, precision


def _value_of(doc, cid, name):
    entry = next(c for c in doc["claims"] if c["id"] == cid)
    return next(v for v in entry["values"] if v["name"] == name)


@pytest.mark.parametrize(
    "cid,name,change,problem",
    [
        (105, "top_mass_label_rate", {"over": []}, "extreme"),
        (22, "median_pi_hat", {"along": None}, "along"),
        (24, "median_c_hat_ci95", {"low": None}, "ci_within needs both low and high"),
        (
            14,
            "vote_over_top_mass",
            {"where": {"group_size": 1, "model": "OLMo-3"}},
            "'OLMo-3' has no entry in model_roles",
        ),
        (79, "es_of_set", {"by": {"kept_points": {"{0,2}": "1/2"}}}, "cannot hold a comma"),
    ],
)
def test_new_value_fields_are_validated(cid, name, change, problem):
    doc = raw_document()
    value = _value_of(doc, cid, name)
    for key, new in change.items():
        if new is None:
            value.pop(key, None)
        else:
            value[key] = new
    with pytest.raises(ClaimsFileError, match=problem):
        cd.parse_claims(doc)


def test_model_roles_are_validated_and_one_per_paper_model():
    doc = raw_document()
    doc["model_roles"]["twin"] = dict(doc["model_roles"]["reference"])
    with pytest.raises(ClaimsFileError, match="more than one role"):
        cd.parse_claims(doc)
    doc = raw_document()
    doc["model_roles"]["reference"]["hub_ids"] = "Qwen/Qwen2.5-1.5B"
    with pytest.raises(ClaimsFileError, match="hub_ids"):
        cd.parse_claims(doc)
    roles = cd.model_roles()
    assert roles["group_size_1"].group_size == 1 and roles["reference"].paper_model == "Qwen2.5-1.5B"
