"""The selector audit (issue 6 items 4-5): records on a tiny capture, the excess against ES_pool,
the two accountings, the statistics and Figure 3."""

import math

import numpy as np
import polars as pl
import pytest
from unit.declared_frames import assert_columns_exist, assert_in_domain

from trustmass.audit import records as au
from trustmass.ceiling.records import CeilingSettings, shard_records
from trustmass.contracts import shards
from trustmass.core.selectors.contract import run
from trustmass.core.selectors.registry import REGISTRY
from trustmass.core.selectors.selector_input import SelectorInput
from trustmass.report.engine import StatisticsSettings
from trustmass.report.frames import audit as asum
from trustmass.report.headline import HEADLINE_SCHEMA

CEIL = CeilingSettings(enumerated=(2, 4), native=(8,), native_extra=2)
AUD = au.AuditSettings(enumerated=(2, 4), native=(8,))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """(shard path, ceiling frame, audit frame) of one tiny captured document (4 rows per KV head)."""
    from capture.tiny_models import tiny_shard

    path = tiny_shard(tmp_path_factory.mktemp("audit"), n_tokens=90, rows_per_head=4, seed=3)
    ceiling = shard_records(str(path), "tiny", "words", "0000", CEIL)
    audit = au.shard_audit(str(path), ceiling, "tiny", "words", "0000", AUD)
    return str(path), ceiling, audit


def test_records_contract_and_join(tiny):
    _, ceiling, audit = tiny
    assert audit.columns == au.COLUMNS
    rows = ceiling.select(["layer", "head", "query_pos"]).n_unique()
    # every rule at every budget it is defined at (quest_page16 needs s >= 16: absent here)
    per_row = sum(1 for s in AUD.budgets for r in AUD.rules if s >= REGISTRY[r].min_budget)
    assert audit.height == rows * per_row
    assert audit["es_top"].null_count() == 0  # every record found its ceiling record
    assert not audit["tova_mismatch"].any()


def test_records_carry_their_run_contract(tiny):
    """One contract per (layer, rule, budget), the one run_contract.selector_run writes."""
    from trustmass.core.selectors.run_contract import selector_run

    _, _, audit = tiny
    per_run = audit.group_by(["layer", "rule", "budget"]).agg(pl.col("contract_sha256").n_unique().alias("n"))
    assert (per_run["n"] == 1).all()
    assert audit["contract_sha256"].n_unique() == per_run.height  # and no two runs share one
    for r in audit.unique(["layer", "rule", "budget"]).iter_rows(named=True):
        assert (
            r["contract_sha256"]
            == selector_run(REGISTRY[r["rule"]], r["budget"], "tiny/words/0000", (r["layer"],)).sha256
        )


def test_top_mass_excess_is_kappa_hat(tiny):
    _, _, audit = tiny
    top = audit.filter(pl.col("rule") == "top_mass")
    np.testing.assert_allclose(top["es_rule"].to_numpy(), top["es_top"].to_numpy(), rtol=1e-12, atol=1e-15)
    e = top.filter(pl.col("enumerated"))
    np.testing.assert_allclose(e["excess"].to_numpy(), e["kappa_hat"].to_numpy(), rtol=1e-12)
    assert e["in_pool"].all()  # A*_s is inside C_s by construction


def test_excess_at_least_one_inside_the_pool(tiny):
    """ES_pool is the minimum over s-subsets of C_s: a rule whose kept set lies in C_s cannot beat it.
    Outside C_s a rule may (ES_pool is not ES), so excess < 1 is legitimate only there."""
    _, _, audit = tiny
    e = audit.filter(pl.col("enumerated"))
    inside = e.filter(pl.col("in_pool"))
    assert inside.height > 0
    assert (inside["excess"] >= 1.0 - 1e-9).all()
    below = e.filter(pl.col("excess") < 1.0 - 1e-9)
    assert below["in_pool"].null_count() == 0 and not below["in_pool"].any()


def test_in_pool_computed_everywhere_agrees(tiny):
    """Without the ES_pool shortcut every enumerated record gets in_pool; the theorem holds on all."""
    path, ceiling, audit = tiny
    t = shards.read_layer(path, 1)
    full = pl.DataFrame(au.layer_audit(t, AUD), infer_schema_length=None).with_columns(
        layer=pl.lit(1), model=pl.lit("tiny"), corpus=pl.lit("words"), doc=pl.lit("0000")
    )
    full = au.join_ceiling(full, ceiling, AUD).filter(pl.col("enumerated"))
    assert full["in_pool"].null_count() == 0 and full["in_pool"].any()
    assert (full.filter(pl.col("in_pool"))["excess"] >= 1.0 - 1e-9).all()
    mine = audit.filter(pl.col("layer") == 1, pl.col("enumerated")).sort(["head", "query_pos", "budget", "rule"])
    full = full.sort(["head", "query_pos", "budget", "rule"])
    np.testing.assert_array_equal(mine["es_rule"].to_numpy(), full["es_rule"].to_numpy())
    known = mine["in_pool"].is_not_null().to_numpy()
    np.testing.assert_array_equal(mine["in_pool"].to_numpy()[known], full["in_pool"].to_numpy()[known])


def test_label_and_ratios(tiny):
    _, _, audit = tiny
    e = audit.filter(pl.col("enumerated"), pl.col("es_pool") > 0)
    assert (e["label"] == (e["es_rule"] > AUD.kappa_threshold * e["es_pool"])).all()
    n = audit.filter(~pl.col("enumerated"))
    assert n["excess"].null_count() == n.height
    assert (n["label"] == (n["es_rule"] > AUD.kappa_threshold * n["es_bal"])).all()


def test_accountings_coincide_where_the_frozen_set_is_the_per_query_set(tiny):
    """The invariant per-query <= cache-faithful is a theorem where the two sets coincide: at the
    eviction row itself and for the rules that do not evict (Quest, block-select)."""
    _, _, audit = tiny
    at_tau = audit.filter(pl.col("query_pos") == pl.col("evict_pos"))
    assert at_tau.height > 0
    np.testing.assert_array_equal(at_tau["es_rule"].to_numpy(), at_tau["es_cf"].to_numpy())
    no_evict = audit.filter(pl.col("cf_reading") == "no_eviction")
    np.testing.assert_array_equal(no_evict["es_rule"].to_numpy(), no_evict["es_cf"].to_numpy())
    assert au.accounting_violations(at_tau).height == 0 and au.accounting_violations(no_evict).height == 0


def test_cache_faithful_set_is_frozen_at_the_eviction_row(tiny):
    """es_cf of a later row is the error of the set the rule chose at tau, scored on the later row."""
    path, _, audit = tiny
    t = shards.read_layer(path, 0)
    head = 1
    kv = head // (t["p"].shape[0] // t["values"].shape[0])
    order = np.argsort(t["positions"][kv])
    x_tau = SelectorInput.from_layer(t, head, int(order[0]))
    x_late = SelectorInput.from_layer(t, head, int(order[-1]))
    for name in ("streaming_llm", "snapkv", "h2o", "top_mass"):
        frozen = run(REGISTRY[name], x_tau, 4)
        assert frozen.max() <= x_tau.position  # nothing written after the eviction is kept
        es, _, _ = au._score(x_late, frozen)
        rec = audit.filter(
            pl.col("layer") == 0,
            pl.col("head") == head,
            pl.col("query_pos") == x_late.position,
            pl.col("budget") == 4,
            pl.col("rule") == name,
        )
        assert rec["es_cf"][0] == pytest.approx(es, rel=1e-12)
    # StreamingLLM's frozen cache: sinks + the recency window as of tau
    s = 4
    k = REGISTRY["streaming_llm"].sinks(s)
    np.testing.assert_array_equal(
        run(REGISTRY["streaming_llm"], x_tau, s), np.r_[np.arange(k), np.arange(x_tau.n_keys - (s - k), x_tau.n_keys)]
    )


def test_per_query_not_worse_than_cache_faithful_in_median(tiny):
    """Row by row the inequality is not a theorem for a heuristic rule (an old frozen set can beat a
    rule's fresh choice on one row); on the later rows the median per-query excess is not above the
    cache-faithful one for the rules whose evidence moves with the query."""
    _, _, audit = tiny
    later = audit.filter(pl.col("query_pos") > pl.col("evict_pos"), pl.col("enumerated"), pl.col("es_pool") > 0)
    for name in ("top_mass", "streaming_llm", "recency", "h2o"):
        g = later.filter(pl.col("rule") == name)
        assert g["excess"].median() <= g["excess_cf"].median() * (1 + 1e-9), name


def test_tova_mismatch_is_detected():
    from trustmass.core.selectors.deployed import TOVA, TovaIdentityError

    x = SelectorInput(p=np.array([0.3, 0.2, 0.2, 0.3]), values=np.eye(4))
    assert run(REGISTRY["tova"], x, 2).tolist() == run(REGISTRY["top_mass"], x, 2).tolist()
    with pytest.raises(TovaIdentityError):

        class Broken(TOVA):
            @staticmethod
            def evict(p, budget):
                return np.arange(budget)

        Broken().select(SelectorInput(p=np.array([0.1, 0.2, 0.7])), 1)


# ----------------------------------------------------------------------------- statistics
def synthetic_records(seed=0, docs=4, n=200):
    """Audit-like records: two rules, excess = f(dropped mass) + noise for 'snapkv', pure noise for 'recency'."""
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(docs):
        for i in range(n):
            dm = rng.uniform(0, 0.5)
            es_pool = 1.0
            for rule, es in (
                ("snapkv", 1.0 + 2 * dm + rng.normal(0, 0.05)),
                ("recency", 1.0 + rng.uniform(0, 1)),
                ("h2o", 1.2 + dm),
                ("quest", 1.5 + dm),
                ("streaming_llm", 2.0 + dm),
                ("top_mass", 1.0 + dm / 2),
            ):
                for budget, enumerated in ((8, True), (64, False)):
                    rows.append(
                        {
                            "model": "m",
                            "corpus": "c",
                            "doc": f"{d:04d}",
                            "layer": 0,
                            "head": 0,
                            "kv_head": 0,
                            "row": i % 6,
                            "query_pos": 100 + i,
                            "evict_pos": 100,
                            "budget": budget,
                            "rule": rule,
                            "n_kept_zero": 0,
                            "in_pool": False,
                            "es_rule": es,
                            "es_cf": es * 1.5,
                            "cf_reading": "frozen_prefill",
                            "tova_mismatch": False,
                            "dropped_mass": dm,
                            "D": 1.0,
                            "es_top": 1.0 + dm / 2,
                            "es_pool": es_pool if enumerated else None,
                            "es_bal": 1.0,
                            "kappa_hat": (1.0 + dm / 2) if enumerated else None,
                            "enumerated": enumerated,
                            "excess": es / es_pool if enumerated else None,
                            "excess_cf": 1.5 * es / es_pool if enumerated else None,
                            "over_top": es / (1.0 + dm / 2),
                            "over_bal": es,
                            "label": es > 1.11 * (es_pool if enumerated else 1.0),
                        }
                    )
    return pl.DataFrame(rows, infer_schema_length=None)


SUM = asum.AuditStatisticsSettings(summary=StatisticsSettings(bootstrap=50, primary_docs=3))


def test_audit_table_statistics():
    records = synthetic_records()
    t = asum.audit_table(records, SUM)
    prim = t.filter(pl.col("population") == "primary")
    snap = prim.filter(pl.col("rule") == "snapkv", pl.col("budget") == 8).row(0, named=True)
    f = records.filter(pl.col("rule") == "snapkv", pl.col("budget") == 8, pl.col("doc") < "0003")
    assert snap["n"] == f.height and snap["n_docs"] == 3
    assert snap["median_excess"] == pytest.approx(float(np.median(f["excess"].to_numpy())))
    assert snap["label_share"] == pytest.approx(float(f["label"].mean()))
    assert snap["spearman_dm_excess"] > 0.9 and snap["auc"] > 0.9
    assert snap["spearman_dm_abs_excess"] > 0.9  # es_rule - ES_pool = 2 dm + noise here
    assert snap["median_excess_low"] <= snap["median_excess"] <= snap["median_excess_high"]
    assert snap["median_excess_cf"] == pytest.approx(1.5 * snap["median_excess"], rel=1e-2)
    rec = prim.filter(pl.col("rule") == "recency", pl.col("budget") == 8).row(0, named=True)
    assert abs(rec["auc"] - 0.5) < 0.1
    cert = prim.filter(pl.col("rule") == asum.CERTIFICATE, pl.col("budget") == 8).row(0, named=True)
    assert cert["median_excess"] == pytest.approx(float(np.median(f["kappa_hat"].to_numpy())))
    pooled = prim.filter(pl.col("rule") == "snapkv", pl.col("budget").is_null())
    assert pooled.height == 1 and pooled["n"][0] == snap["n"]  # one enumerated budget here
    native = prim.filter(pl.col("rule") == "snapkv", pl.col("budget") == 64).row(0, named=True)
    assert native["median_excess"] is None and native["median_over_top"] is not None


def test_headline_rows_match_the_claims():
    from trustmass.report.claims.data import claim

    frames = asum.summarize(synthetic_records(), SUM, qk_norm={"m": False})
    h = frames["headline_audit"]
    assert dict(h.schema) == HEADLINE_SCHEMA
    for cid, value in h.select(["claim_id", "value_name"]).unique().iter_rows():
        claim(cid).value(value)  # raises if the claims file lacks it
    assert {48, 49, 50, 51, 105, 106, 107, 108, 109} <= set(h["claim_id"].to_list())
    tova = h.filter(pl.col("claim_id") == 49)
    assert (tova["estimate"] == 0).all()
    # claim 51 is placed by QK-norm class; claim 109 carries only the frozen-set SnapKV reading
    spear = h.filter(pl.col("claim_id") == 51)
    assert spear.height and (spear["by_key"] == "model,rule,qk_norm").all()
    assert all(v.endswith(",without") for v in spear["by_value"].to_list())
    cf = h.filter(pl.col("claim_id") == 109, pl.col("population") == "primary")
    for name in ("cache_faithful_median_excess", "cache_faithful_over_per_query"):
        rows = cf.filter(pl.col("value_name") == name)
        assert sorted(rows["by_value"].to_list()) == ["m,frozen_snapkv,8", "m,sequential,8"], name
    ratio = cf.filter(pl.col("value_name") == "cache_faithful_over_per_query").sort("by_value")
    assert ratio["uninformative"].to_list()[0] is None and "1 by construction" in ratio["uninformative"].to_list()[1]
    table = frames["audit_table"].filter(pl.col("population") == "primary", pl.col("budget") == 8)
    streaming = table.filter(pl.col("rule") == "streaming_llm")["median_excess"][0]
    assert cf.filter(pl.col("by_value") == "m,sequential,8")["estimate"][0] == pytest.approx(streaming)
    # unknown QK-norm class: no claim-51 row rather than a guess
    unknown = asum.summarize(synthetic_records(), SUM, qk_norm={"m": None})["headline_audit"]
    assert unknown.filter(pl.col("claim_id") == 51).height == 0


def test_fig3_renders(tmp_path):
    from trustmass.report import style, tables
    from trustmass.report.figures import audit as figures
    from trustmass.report.layouts.audit import LAYOUTS

    frames = asum.summarize(synthetic_records(), SUM)
    roc = frames["fig3_roc"]
    assert set(roc["rule"].unique()) >= {"snapkv", "recency", asum.CERTIFICATE}
    out = tmp_path / "fig3.png"
    style.save(figures.figure3(roc, frames["audit_table"], band=(0.76, 0.85)), out)
    assert out.stat().st_size > 10_000
    table = tables.write(LAYOUTS["audit_table"], frames["audit_table"], tmp_path / "a.csv", tmp_path / "a.md")
    assert table.height > 0 and "| model | rule | s |" in (tmp_path / "a.md").read_text()
    assert not math.isnan(roc.filter(pl.col("rule") == "snapkv")["auc"][0])


def test_claim_108_is_the_first_native_budget_where_every_audited_rule_clears_070():
    table = pl.DataFrame(
        [
            {
                "population": "primary",
                "model": m,
                "rule": r,
                "budget": s,
                "auc": auc,
                "n": 10,
                "n_docs": 3,
                "n_degenerate": 0,
            }
            for m, per_budget in {"a": {64: 0.6, 128: 0.75, 256: 0.9}, "b": {64: 0.5, 128: 0.6, 256: 0.65}}.items()
            for s, auc in per_budget.items()
            for r in ("snapkv", "h2o")
        ]
    )
    first = asum.first_budget_clearing(table).sort("model")
    assert first["x"].to_list() == [128.0, math.inf]  # b never clears it within the audited budgets


def test_the_declarations_read_columns_of_the_claim_frames_and_stay_in_their_domains():
    records = asum.prepare(synthetic_records(), SUM)
    table = asum.audit_table(records, SUM)
    frames = asum.claim_frames(table, records, SUM, qk_norm={"m": True})
    assert_columns_exist(asum.HEADLINE, frames)
    assert assert_in_domain(asum.HEADLINE, frames) >= len(asum.HEADLINE)
    assert set(frames["cache_faithful"]["rule"]) == {"frozen_snapkv", "sequential"}
