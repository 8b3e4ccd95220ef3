"""The transcription of the paper's numbers (data/claims.yaml) against its sentences (issue 36, item 5).

Every value quotes the words of its claim's sentence (or, with ``source:``, of that spec section) that state
its number, and every stated number appears in that quote as the paper prints it: a number written with
fewer digits than printed ("0.01" for "+0.010", "0.7" for "0.70") or more ("3.00e-7" for "3e-7") would
widen or narrow the half-unit tolerance of the decision rule.  Then the faults the issue lists, each
pinned: signs, near-ties, matches, missing directions, the reference family, spans over families,
timing, and the values set by construction or by the configuration (with the config keys that set them).
"""

from __future__ import annotations

import copy
import re
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache

import pytest
import yaml
from test_claims_data import DATA, REPO, spec_path

from trustmass.report.claims.axes import AGREES, CONTRADICTED, NOT_COMPARABLE, NOT_PRODUCED
from trustmass.report.claims.cells import StudyModels
from trustmass.report.claims.configured import IMPLIED
from trustmass.report.claims.data import ClaimsFileError, claim, load_claims, parse_claims
from trustmass.report.claims.model import StatedFloat, Value, half_unit, tolerance
from trustmass.report.claims.parse import QUOTE_ELISION, SHORT_WORDS
from trustmass.report.claims.verdicts import judge

CONFIG = REPO / "config.yaml"


@lru_cache(maxsize=1)
def _raw() -> dict:
    return yaml.safe_load(DATA.read_text(encoding="utf-8"))


def raw_document() -> dict:
    return copy.deepcopy(_raw())


def values():
    return [(c, v) for c in load_claims() for v in c.values]


# ----------------------------------------------------------------------------- what a quote prints

WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9}
WORDS |= {"ten": 10, "tenfold": 10}
#: "3×10^-7" is the paper's thin form of 3e-7
_TIMES_TEN = re.compile(r"(\d+(?:\.\d+)?)\s*[×x]\s*10\^([-+]?\d+)")
_NUMBER = re.compile(r"(?<![\w.])([-+]?)(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?|\.\d+)(?:e([-+]?\d+))?")


def printed_numbers(quote: str) -> list[Decimal]:
    """Every number a quote prints, signed, with the digits it is printed with ("+0.010" -> 0.010,
    "14(.1)" -> 14.1, "111,744" -> 111744, "3×10^-7" -> 3E-7, "four" -> 4)."""
    text = re.sub(r"(\d)\((\.\d+)\)", r"\1\2", quote).replace("−", "-")
    text = _TIMES_TEN.sub(r"\1e\2", text)
    out = []
    for sign, digits, exponent in _NUMBER.findall(text):
        literal = ("-" if sign == "-" else "") + digits.replace(",", "") + (f"e{exponent}" if exponent else "")
        out.append(Decimal(literal))
    out += [Decimal(n) for w, n in WORDS.items() if re.search(rf"\b{w}\b", quote, re.IGNORECASE)]
    return out


def _stated(x) -> tuple[Decimal, bool]:
    """A stated number as written in the claims file, and whether its printed digits count (a float
    literal: yes; an integer: any printing of the same integer, "1" for "1.00")."""
    if isinstance(x, StatedFloat):
        return Decimal(x.literal), True
    if isinstance(x, int):
        return Decimal(x), False
    return Decimal(repr(float(x))), True


def is_printed(x, quote: str) -> bool:
    """Whether the stated number ``x`` appears in ``quote`` as the paper prints it: the same value, the same
    sign, and (for a decimal) the same last digit."""
    if isinstance(x, Fraction):
        return str(x) in quote
    want, digits_count = _stated(x)
    for got in printed_numbers(quote):
        if got != want or (got < 0) != (want < 0):
            continue
        if not digits_count and got == got.to_integral_value():
            return True
        if got.as_tuple().exponent == want.as_tuple().exponent:
            return True
    return False


def stated_numbers(v: Value) -> list:
    """The numbers a value states (formulas and inferred numbers have none the sentence prints)."""
    if v.inferred or v.formula is not None:
        return []
    if v.exact is not None:
        return [v.exact]
    xs = [x for x in (v.value, v.low, v.high, v.of) if x is not None]
    for table in v.by.values():
        for entry in table.values():
            xs.extend(entry if isinstance(entry, tuple) else [entry])
    return xs


def unprinted(claims) -> list[tuple]:
    """(claim, value, number, quote) for every stated number its quote does not print."""
    return [
        (c.id, v.name, x, v.quote)
        for c in claims
        for v in c.values
        for x in stated_numbers(v)
        if not is_printed(x, v.quote or "")
    ]


def test_every_stated_number_is_printed_in_its_quote():
    assert unprinted(load_claims()) == []


@pytest.mark.parametrize(
    "x,quote,printed",
    [
        (StatedFloat("0.010"), "CE +0.010/−0.006", True),
        (StatedFloat("0.01"), "CE +0.010/−0.006", False),  # claim 124 at 230af07
        (StatedFloat("3.e-7"), "median `kappa_hat_bal` by 3e-7", True),
        (StatedFloat("3.00e-7"), "median `kappa_hat_bal` by 3e-7", False),  # claim 90 at 230af07
        (StatedFloat("3.e-7"), "moves by `3×10^-7`", True),
        (StatedFloat("0.7"), "Spearman 0.70–0.84", False),  # claim 51 at 230af07
        (StatedFloat("-0.13"), "4/133/17, −0.13 vs SnapKV", True),
        (StatedFloat("0.13"), "4/133/17, −0.13 vs SnapKV", False),
        (StatedFloat("14.1"), "costs 14(.1)–62(.2) benchmark points", True),
        (168192, "168,192 attention rows", True),
        (200000, "(2e5 → 5e6 subsets", True),
        (1, "a median 1.00", True),
        (97, "`≤ 2` on 97% of instances", True),
        (5, "five models", True),
        (Fraction(9, 22), "ES(2) = 9/22", True),
        (Fraction(9, 23), "ES(2) = 9/22", False),
    ],
)
def test_the_printed_number_check_can_fail(x, quote, printed):
    assert is_printed(x, quote) is printed


# ----------------------------------------------------------------------------- quotes and shorts


def test_every_value_quotes_words_of_its_sentence():
    spec = spec_path().read_text(encoding="utf-8") if spec_path() else None
    missing = []
    for c, v in values():
        assert v.quote, (c.id, v.name)
        where = c.text if v.source is None else spec
        if where is None:
            continue  # a value from another spec section, and the spec is absent
        missing += [(c.id, v.name, part) for part in v.quote.split(QUOTE_ELISION) if part not in where]
    assert missing == []


def test_every_claim_has_a_short_name():
    for c in load_claims():
        assert c.short and len(c.short.split()) <= SHORT_WORDS, (c.id, c.short)
    assert len({c.short for c in load_claims()}) == 126


def _problems(mutate) -> str:
    doc = raw_document()
    mutate(doc)
    with pytest.raises(ClaimsFileError) as info:
        parse_claims(doc)
    return str(info.value)


def _entry(doc, cid):
    return next(c for c in doc["claims"] if c["id"] == cid)


def test_quote_and_short_are_required_and_checked():
    assert "values[1] (enforcement_cost): missing required key 'quote'" in _problems(
        lambda d: _entry(d, 4)["values"][0].pop("quote")
    )
    assert "claim 4: missing required key 'short'" in _problems(lambda d: _entry(d, 4).pop("short"))
    long = "one two three four five six seven eight nine"
    assert "claim 4.short: 9 words" in _problems(lambda d: _entry(d, 4).__setitem__("short", long))
    msg = _problems(lambda d: _entry(d, 4)["values"][0].__setitem__("quote", "costs 14–62 points"))
    assert "(enforcement_cost).quote: 'costs 14–62 points' is not in the claim's sentence" in msg


# ----------------------------------------------------------------------------- the faults


def test_51_states_the_positive_sign_and_the_finding():
    v = claim(51).value("spearman_dropped_mass_rule_excess")
    assert v.stated_direction == "positive"
    assert dict(v.by["qk_norm"]) == {"without": (0.70, 0.84), "with": (0.36, 0.61)}
    assert v.by["qk_norm"]["without"][0].literal == "0.70"
    assert "spearman_dm_abs_excess" in v.note and "es_rule / ES_pool" in v.note  # the columns compared


def test_126_a_match_states_no_order():
    assert all(v.stated_direction is None for v in claim(126).values)
    assert claim(126).value("predicted_share").bounds() == (0.86, 0.95)


@pytest.mark.parametrize(
    "cid,name", [(71, "mean_margin_vs_snapkv"), (72, "margin_vs_snapkv"), (122, "margin_vs_snapkv")]
)
def test_a_near_tie_states_no_sign(cid, name):
    v = claim(cid).value(name)
    assert v.stated_direction is None and v.kind == "point" and "near-tie" in v.note


def test_stated_directions_are_transcribed():
    rising = claim(25).value("median_c_hat_labelled")
    assert (rising.direction, rising.than) == ("positive", 0.047) and rising.by_construction
    level = claim(32).value("balancing_share_over_s32")
    assert (level.direction, level.than, level.has_size) == ("positive", 1, False)
    rules = claim(48).value("median_rule_excess")
    assert (rules.direction, rules.than) == ("above", "median_top_mass_excess")
    raises = claim(109).value("cache_faithful_over_per_query")
    assert (raises.direction, raises.than, raises.source) == ("positive", 1, "§5")
    for name in ("median_geometric_ratio_reference", "median_leverage_ratio_reference"):  # 88: "rises to"
        v = claim(88).value(name)
        assert (v.direction, v.along, v.extreme) == ("increasing", "budget", "max")
    assert claim(97).value("allocation_delta_es_sign").stated_direction == "positive"  # "sign holds at 16 ..."
    assert claim(72).value("deficit_vs_contourkv_enforced").direction == "positive"  # "trails ... by 9.39"


@pytest.mark.parametrize("cid", [41, 87])
def test_the_reference_family_claims_name_it(cid):
    for v in claim(cid).values:
        assert v.where.get("model") == "Qwen2.5-1.5B", (cid, v.name)


def test_29_is_a_span_over_families():
    span = claim(29).value("coverage_kappa_hat_le_1_5")
    assert not span.by and span.over == ("model",) and span.bounds() == (0.75, 0.95)
    clears = claim(29).value("coverage_kappa_hat_le_2")
    assert (clears.kind, clears.value, clears.over) == ("lower", 0.91, ("model",))


def test_90_and_124_keep_the_printed_digits():
    shift = claim(90).value("median_kappa_hat_bal_shift")
    assert shift.value == 3e-7 and half_unit(shift.value) == pytest.approx(5e-8)
    assert tolerance(shift.value) == pytest.approx(3e-8)  # 60x the 5e-10 that "3.00e-7" gave
    probe = claim(124).value("probe_ce_change").by["model"]["Qwen2.5-1.5B"]
    assert probe.literal == "0.010" and half_unit(probe) == pytest.approx(5e-4)


def test_18_counts_the_distribution_free_cap():
    counted = [v for v in claim(18).values if not v.alternative]
    assert [v.name for v in counted] == ["median_c_hat_certified_cap"]
    manifest = claim(18).value("median_c_hat_certified")
    assert manifest.alternative and manifest.reading


def test_76_allocation_is_a_size_not_an_exception():
    costs = claim(76).value("hit_rate_change")
    assert not costs.exceptions and set(costs.by["variant"]) == {"doc_rows_ranking", "doc_boundary_eviction"}
    allocation = claim(76).value("allocation_hit_rate_change")
    assert (allocation.kind, allocation.value, allocation.stated_direction) == ("point", 0, None)
    row = {"by_key": "model,variant", "by_value": "m,allocation_swapped", "models": "m"}
    assert judge(allocation, [{**row, "estimate": 100.0, "low": 100.0, "high": 100.0}]).size.status == CONTRADICTED
    assert judge(allocation, [{**row, "estimate": 0.0, "low": 0.0, "high": 0.0}]).size.status == AGREES


# ----------------------------------------------------------------------------- timing


def test_every_timing_value_is_marked_and_says_what_it_needs():
    for c, v in values():
        if ("TIME" in c.stage and v.role != "parameter") or v.unit in ("ms", "seconds"):
            assert v.timing, (c.id, v.name)
        if v.timing:
            assert v.needs and "CUDA GPU" in v.needs, (c.id, v.name)
    assert claim(72).value("cost_over_prefill").timing  # a ratio of times outside the TIME stage


def test_a_timing_off_a_cuda_device_is_not_produced():
    v = claim(69).value("reconstruction_score_cost_over_prefill")
    cpu = {"by_key": "model,length,device", "by_value": "m,1024,cpu", "estimate": 10.0, "models": "m"}
    verdict = judge(v, [cpu])
    assert verdict.size.status == NOT_PRODUCED and "cpu" in verdict.size.reason and "CUDA GPU" in verdict.size.reason
    gpu = {**cpu, "by_value": "m,1024,cuda:0"}
    assert judge(v, [gpu], StudyModels()).size.status == AGREES


# ----------------------------------------------------------------------------- construction and configuration


def _config_has(config: dict, dotted: str) -> bool:
    node = config
    for part in dotted.split("."):
        if not (isinstance(node, dict) and part in node):
            return False
        node = node[part]
    return True


def test_every_config_key_exists_in_the_default_config():
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    absent = [(c.id, v.name, k) for c, v in values() for k in v.config_keys if not _config_has(config, k)]
    assert absent == []


def test_configured_and_constructed_values_name_their_keys():
    for c, v in values():
        if v.configured or v.by_construction:
            assert v.config_keys, (c.id, v.name)
    for entry in _raw()["claims"]:
        for v in entry["values"]:
            if v.get("role") == "parameter":
                assert "config_keys" in v, (entry["id"], v["name"])
                assert v["config_keys"] or "no configuration key" in v.get("note", ""), (entry["id"], v["name"])
    assert "a configured value names the config keys" in _problems(
        lambda d: _entry(d, 1)["values"][0].pop("config_keys")
    )
    assert "a parameter names the config keys" in _problems(lambda d: _entry(d, 15)["values"][1].pop("config_keys"))


@pytest.mark.parametrize(
    "cid,name,configured,key",
    [
        (46, "retrieval_row_share", "retrieval_row_share", "task_contexts.retrieval_rows"),
        (110, "quest_page_size", "quest_page_size", "budgets.enumerated"),
        (60, "contourkv_bytes_over_snapkv_enforced", "enforced_byte_ratio", "deploy.budgets"),
        (75, "bytes_over_snapkv", "enforced_byte_ratio", "deploy.budgets"),
        (83, "auc_ci_half_width", "document_clusters", "documents.n_docs"),
        (41, "auc_ci_half_width", "document_clusters", "documents.n_docs"),
        (41, "share_ci_half_width", "document_clusters", "documents.n_docs"),
        (94, "median_kappa_hat_bal_cap", "certification_sample", "certification.per_stratum"),
        (94, "worst_cell_margin", "certification_sample", "certification.per_stratum"),
    ],
)
def test_numbers_the_configuration_sets(cid, name, configured, key):
    v = claim(cid).value(name)
    assert v.configured == configured and key in v.config_keys
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    implied = IMPLIED[configured](config)
    assert implied.how and "does not determine" not in implied.how
    verdict = judge(v, [{"by_key": None, "by_value": None, "estimate": 1.0, "models": "m"}], implied=implied)
    assert verdict.size.status == NOT_COMPARABLE


def test_what_the_default_configuration_implies():
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    assert IMPLIED["retrieval_row_share"](config).value == pytest.approx(100 * 2 / 6)
    assert IMPLIED["quest_page_size"](config).value == (2, 8)
    assert IMPLIED["enforced_byte_ratio"](config).value == (0.0, 1.0)
    assert "10 manifest instances per budget" in IMPLIED["certification_sample"](config).how
    wider = {**config, "task_contexts": {**config["task_contexts"], "retrieval_rows": 3}}
    assert IMPLIED["retrieval_row_share"](wider).value == pytest.approx(50.0)
    # the claims report is given a slice of the config: without task_contexts it says so, and no number
    sliced = {k: v for k, v in config.items() if k != "task_contexts"}
    implied = IMPLIED["retrieval_row_share"](sliced)
    assert implied.value is None and "not in the configuration the claims report was given" in implied.how


def test_96_dropped_mass_fall_is_at_least_1_by_construction():
    v = claim(96).value("dropped_mass_fall")
    assert v.by_construction and set(v.config_keys) == {"budgets.enumerated", "budgets.native"}
    assert judge(v, [{"by_key": "model", "by_value": "m", "estimate": 0.5}]).direction.status == "by construction"
