"""Certification stage: manifest, per-instance rows (always), Table 7 and the sweep."""

import math

import numpy as np
import polars as pl
import pytest
from unit.declared_frames import assert_columns_exist, assert_in_domain
from unit.headline_dimensions import assert_dimensions, rows_of
from unit.instances import random_instance

from trustmass.ceiling.records import CeilingSettings, shard_records
from trustmass.certification import manifest as M
from trustmass.certification import runner as R
from trustmass.certification.misocp import (
    CONFIRMED_OPTIMAL,
    IMPROVED,
    SAFETY_STOP,
    STATUSES,
    UNDECIDED,
    UNSOLVED,
    WITHIN_1PCT,
)
from trustmass.core import operator as op
from trustmass.core.stats import median_cap, wilson_upper
from trustmass.report.frames import certification as F

# ------------------------------------------------------------------------------------------ manifest


def fake_records(models=("a", "b"), budgets=(4, 8, 16, 32), docs=("0000", "0001", "0002", "0003"), n_rows=30, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for m in models:
        for doc in docs:
            for layer in range(3):
                for r in range(n_rows):
                    for s in budgets:
                        es_top = float(rng.uniform(0.1, 1.0))
                        es_pool = es_top * float(rng.uniform(0.5, 1.0))
                        rows.append(
                            {
                                "model": m,
                                "corpus": "c",
                                "doc": doc,
                                "layer": layer,
                                "head": r % 3,
                                "kv_head": 0,
                                "query_pos": 300 + r,
                                "budget": s,
                                "dropped_mass": float(rng.uniform()),
                                "pool_extra": 2,
                                "D": 1.0,
                                "es_top": es_top,
                                "es_pool": es_pool,
                                "es_bal": es_pool * float(rng.choice([1.0, 1.0, 1.05])),
                                "c_hat": 1 - es_pool / es_top,
                                "kappa_hat": es_top / es_pool,
                                "kappa_hat_bal": 1.0,
                            }
                        )
    return pl.DataFrame(rows)


def test_manifest_stratification_and_determinism():
    rec = fake_records()
    man = M.manifest(rec, per_stratum=6, seed=0, n_shards=5, primary_docs=3)
    assert man.height == 2 * 4 * 10 * 6  # models x budgets x deciles x per stratum
    counts = man.group_by("model", "budget", "decile").len()
    assert counts.height == 80 and set(counts["len"].to_list()) == {6}
    assert set(man["doc"].unique().to_list()) <= {"0000", "0001", "0002"}  # primary slice only
    assert man["instance"].to_list() == list(range(man.height))
    assert set(man.group_by("shard").len()["len"].to_list()) == {96}
    assert man.columns == M.MANIFEST_COLUMNS
    # deciles are ordered in dropped mass within (model, budget)
    g = (
        man.filter((pl.col("model") == "a") & (pl.col("budget") == 8))
        .group_by("decile")
        .agg(pl.col("dropped_mass").min().alias("lo"), pl.col("dropped_mass").max().alias("hi"))
        .sort("decile")
    )
    assert all(h <= lo for h, lo in zip(g["hi"].to_list()[:-1], g["lo"].to_list()[1:]))
    again = M.manifest(
        rec.sample(fraction=1.0, shuffle=True, seed=3), per_stratum=6, seed=0, n_shards=5, primary_docs=3
    )
    assert again.equals(man)  # input order does not matter
    other = M.manifest(rec, per_stratum=6, seed=1, n_shards=5, primary_docs=3)
    assert not other.equals(man)


def test_manifest_small_strata_take_everything():
    rec = fake_records(models=("a",), budgets=(4,), docs=("0000",), n_rows=2)  # 6 records -> some deciles empty
    man = M.manifest(rec, per_stratum=3, seed=0, budgets=(4,))
    assert man.height == 6


# ---------------------------------------------------------------------------------- certification


@pytest.fixture(scope="module")
def tiny_capture(tmp_path_factory):
    from capture.tiny_models import tiny_shard

    path = tiny_shard(tmp_path_factory.mktemp("cap"))
    records = shard_records(
        str(path), "tiny", "words", "0000", CeilingSettings(enumerated=(2, 4), native=(8,), native_extra=2)
    )
    return str(path), records


def test_certify_rows_one_row_per_instance(tiny_capture):
    path, records = tiny_capture
    man = M.manifest(records, per_stratum=1, seed=0, budgets=(2, 4), n_shards=2, primary_docs=None)
    assert man.height == 20
    bogus = man.head(1).with_columns(instance=pl.lit(999, dtype=pl.Int64), query_pos=pl.lit(7, dtype=pl.Int64))
    part = pl.concat([man.filter(pl.col("decile") < 2), bogus])  # 4 real instances + one that cannot be reloaded
    settings = R.CertificationSettings(time_limit_s=1.0, memory_limit_mb=1000.0)
    out = R.certify_rows(part, lambda m, c, d: path, settings, workers=1)
    assert out.height == part.height and out["instance"].to_list() == sorted(part["instance"].to_list())
    assert set(out["status"].to_list()) <= set(STATUSES)
    crashed = out.filter(pl.col("instance") == 999).row(0, named=True)
    assert crashed["status"] == UNSOLVED and "reload failed" in crashed["message"]
    ok = out.filter(pl.col("instance") != 999).join(man, on="instance", suffix="_m")
    # the incumbent recomputed from the capture is the record's ES_pool
    np.testing.assert_allclose(ok["es_pool"].to_numpy(), ok["es_pool_record"].to_numpy(), rtol=1e-9)
    assert (ok["es_cert"] <= ok["es_pool"] * (1 + 1e-12)).all()
    assert (ok["lower_bound"] <= ok["es_cert"] * (1 + 1e-9)).all()
    for r in ok.iter_rows(named=True):
        assert len(r["best"]) == r["budget"] and all(0 <= j <= r["query_pos"] for j in r["best"])
    assert UNSOLVED not in ok["status"].to_list()
    improved = ok.filter(pl.col("status") == IMPROVED)
    assert (improved["es_cert"] < 0.99 * improved["es_pool"]).all()
    # the table reads it (one row per budget)
    t7 = F.table7(records, man.filter(pl.col("decile") < 2), out.filter(pl.col("instance") != 999))
    assert t7["n_manifest"].to_list() == [2, 2]


def test_timeout_and_memory_give_a_status_row():
    inst = random_instance(3, n=60, d=16)
    row = R.certify_one(inst, 8, 2, R.CertificationSettings(time_limit_s=0.01))
    assert row["status"] == SAFETY_STOP and row["es_cert"] <= row["es_pool"] and len(row["best"]) == 8
    row = R.certify_one(inst, 8, 2, R.CertificationSettings(scip_lp_iterations=1))
    assert row["solve_outcomes"].startswith("worklimit") and row["status"] in (UNDECIDED, WITHIN_1PCT)
    assert row["work"] > 0 and row["nodes"] > 0
    row = R.certify_one(inst, 8, 2, R.CertificationSettings(time_limit_s=5, memory_limit_mb=0.0))
    assert row["status"] == UNSOLVED
    row = R.certify_one(inst, 80, 2, R.CertificationSettings())  # s > N: pool_optimum / certify raise -> a row
    assert row["status"] in STATUSES and "seconds" in row


# ---------------------------------------------------------------------------------------- Table 7


def synthetic(k_by_budget, n=240, unsolved_by_budget=None, seed=0):
    """A manifest + certified frame with k improved (by 10 %) of n solved per budget."""
    rng = np.random.default_rng(seed)
    unsolved_by_budget = unsolved_by_budget or {}
    man_rows, cert_rows, i = [], [], 0
    for s, k in k_by_budget.items():
        u = unsolved_by_budget.get(s, 0)
        for j in range(n + u):
            es_top = 1.0
            es_pool = float(rng.uniform(0.8, 1.0))
            man_rows.append(
                {
                    "instance": i,
                    "shard": 0,
                    "model": "m",
                    "corpus": "c",
                    "doc": "0000",
                    "layer": 0,
                    "head": 0,
                    "kv_head": 0,
                    "query_pos": j,
                    "budget": s,
                    "decile": 0,
                    "dropped_mass": 0.1,
                    "pool_extra": 2,
                    "D": 1.0,
                    "es_top": es_top,
                    "es_pool": es_pool,
                    "es_bal": es_pool,
                    "c_hat": 1 - es_pool,
                    "kappa_hat": 1 / es_pool,
                    "kappa_hat_bal": 1.0,
                }
            )
            status = IMPROVED if j < k else (UNSOLVED if j >= n else CONFIRMED_OPTIMAL)
            es_cert = 0.9 * es_pool if status == IMPROVED else es_pool
            cert_rows.append(
                {
                    "instance": i,
                    "status": status,
                    "es_pool": es_pool,
                    "es_cert": es_cert,
                    "lower_bound": 0.0,
                    "improvement": 1 - es_cert / es_pool,
                    "seconds": 1.0,
                }
            )
            i += 1
    return pl.DataFrame(man_rows), pl.DataFrame(cert_rows)


def test_table7_wilson_and_caps():
    k = {4: 0, 8: 2, 16: 8, 32: 36}
    man, cert = synthetic(k, unsolved_by_budget={32: 5})
    rng = np.random.default_rng(1)
    records = pl.DataFrame(
        {
            "model": ["m"] * 4000,
            "corpus": ["c"] * 4000,
            "doc": [f"{(i // 4) % 20:04d}" for i in range(4000)],
            "budget": [4, 8, 16, 32] * 1000,
            "c_hat": rng.uniform(0, 0.2, 4000),
            "kappa_hat_bal": np.where(rng.uniform(size=4000) < 0.9, 1.0, 1.1),
        }
    )
    t7 = F.table7(records, man, cert)
    assert t7["improved"].to_list() == [0, 2, 8, 36]
    assert t7["n_solved"].to_list() == [240] * 4
    np.testing.assert_allclose(t7["f_hi"].to_numpy(), [0.0158, 0.0299, 0.0644, 0.2007], atol=5e-5)
    r32 = t7.filter(pl.col("budget") == 32).row(0, named=True)
    c32 = records.filter(pl.col("budget") == 32)["c_hat"].to_numpy()
    assert r32["cap_f_hi"] == median_cap(c32, wilson_upper(36, 240))
    assert r32["f_hi_unsolved"] == pytest.approx(wilson_upper(41, 245)) and r32["cap_unsolved"] >= r32["cap_f_hi"]
    assert r32["n_unsolved"] == 5 and r32["n_records"] == 1000 and r32["n_docs"] == 20
    # substitution: 36 of 240 improved by 10 % -> c_hat and kappa_hat_bal recomputed
    sub = F.substitute(man, cert).filter(pl.col("budget") == 32)
    imp = sub.filter(pl.col("status") == IMPROVED)
    np.testing.assert_allclose(imp["c_hat_after"].to_numpy(), 1 - 0.9 * imp["es_pool"].to_numpy())
    np.testing.assert_allclose(imp["kappa_hat_bal_after"].to_numpy(), 1 / 0.9)
    assert r32["beats_bal_before"] == 0.0 and r32["beats_bal_after"] == pytest.approx(36 / 245)
    assert r32["manifest_median_c_hat_after"] >= r32["manifest_median_c_hat_before"]
    assert r32["median_improvement"] == pytest.approx(0.1) and r32["max_improvement"] == pytest.approx(0.1)
    frac = float(((records.filter(pl.col("budget") == 32)["kappa_hat_bal"] - 1).abs() <= 1e-12).mean())
    assert r32["kappa_hat_bal_eq_1"] == pytest.approx(frac)
    assert r32["worst_cell_margin"] == pytest.approx(frac - 0.5 - wilson_upper(36, 240))
    assert r32["median_kappa_hat_bal_cap"] == 1.0
    head = F.headline(t7, F.substitute(man, cert), None, "m")
    assert set(head.columns) >= {
        "claim_id",
        "value_name",
        "by_key",
        "by_value",
        "population",
        "estimate",
        "low",
        "high",
        "n_instances",
        "n_docs",
        "models",
    }
    assert {18, 21, 84, 90, 91, 92, 93, 94, 95} <= set(head["claim_id"].to_list())
    n91 = head.filter((pl.col("claim_id") == 91) & (pl.col("by_key") == "budget"))["estimate"].to_list()
    assert n91 == [0, 2, 8, 36]
    share = head.filter(pl.col("value_name") == "improved_share")["estimate"].item()
    assert share == pytest.approx(46 / 960)


def test_table7_counts_documents_not_model_document_pairs():
    """Claim 95's "20 docs": four families on the same 20 documents are 20 documents, not 80."""
    man, cert = synthetic({4: 0, 8: 0, 16: 0, 32: 0})
    rows = [
        {"model": m, "corpus": "wikitext", "doc": f"{d:04d}", "budget": s, "c_hat": 0.03, "kappa_hat_bal": 1.0}
        for m in ("a", "b", "c", "d")
        for d in range(20)
        for s in (4, 8, 16, 32)
    ]
    t7 = F.table7(pl.DataFrame(rows), man, cert)
    assert t7["n_docs"].to_list() == [20] * 4 and t7["n_records"].to_list() == [80] * 4
    head = F.headline(t7, None, None, "a,b,c,d")
    assert head.filter(pl.col("claim_id") == 95, pl.col("value_name") == "n_docs")["estimate"].to_list() == [20.0]


def test_headline_names_are_claim_values():
    from trustmass.report.claims.data import load_claims

    claims = load_claims()
    claims = claims if isinstance(claims, dict) else {c.id: c for c in claims}
    man, cert = synthetic({32: 3}, n=20)
    rec = pl.DataFrame(
        {
            "model": ["m"] * 10,
            "corpus": ["c"] * 10,
            "doc": ["0000"] * 10,
            "budget": [32] * 10,
            "c_hat": np.linspace(0, 0.1, 10),
            "kappa_hat_bal": [1.0] * 10,
        }
    )
    rows = pl.DataFrame(
        [
            {
                "model": "m",
                "corpus": "c",
                "doc": "0000",
                "layer": 0,
                "head": 0,
                "kv_head": 0,
                "query_pos": i,
                "budget": 32,
                "extra": e,
                "es_pool": 0.5,
                "kappa_hat": 1.2,
                "c_hat": 0.1,
                "seconds": 0.0,
            }
            for i in range(3)
            for e in (4, 5, 6)
        ]
    )
    head = F.headline(F.table7(rec, man, cert), F.substitute(man, cert), F.sweep_table(rows), "m")
    for cid, name in head.select("claim_id", "value_name").unique().iter_rows():
        assert name in {v.name for v in claims[cid].values}, (cid, name)


# ------------------------------------------------------------------------------------------ sweep


def test_sweep_subset_counts_and_table():
    assert [math.comb(32 + e, 32) for e in (4, 5, 6)] == [58_905, 435_897, 2_760_681]
    rows = []
    for i in range(10):
        for e, es in ((4, 1.0), (5, 0.95), (6, 0.9)):
            es_pool = es if i < 5 else 1.0
            rows.append(
                {
                    "model": "m",
                    "corpus": "c",
                    "doc": "0000",
                    "layer": i,
                    "head": 0,
                    "kv_head": 0,
                    "query_pos": 300,
                    "budget": 32,
                    "extra": e,
                    "es_pool": es_pool,
                    "kappa_hat": 1.2 / es_pool,
                    "c_hat": 1 - es_pool / 1.2,
                    "seconds": 0.0,
                }
            )
    t = F.sweep_table(pl.DataFrame(rows), kappa_threshold=1.25)
    assert t["subsets"].to_list() == [58_905, 435_897, 2_760_681]
    assert t["label_rate"].to_list() == [0.0, 0.5, 0.5]
    assert t["improved_over_base"].to_list() == [0.0, 0.5, 0.5]
    assert t["median_gap_shift"][0] == 0.0 and t["median_gap_shift"][2] > 0


def test_sweep_heads_span_depth_and_are_seeded():
    rec = fake_records(models=("a",), budgets=(32,), docs=("0000",), n_rows=6)
    h = M.sweep_heads(rec, 1, seed=0)
    assert h["layer"].to_list() == [0, 1, 2]
    assert h.equals(M.sweep_heads(rec, 1, seed=0))
    assert M.sweep_heads(rec, 2, seed=0).height == 6


def test_sweep_rows_reproduce_the_record_at_the_record_extra(tiny_capture):
    path, records = tiny_capture
    heads = M.sweep_heads(records, 1, seed=0)
    inst = M.sweep_instances(records, heads, budget=4, primary_docs=None)
    base = int(inst["pool_extra"][0])
    rows = R.sweep_rows(inst, [base, base + 1], lambda m, c, d: path)
    assert rows.height == 2 * inst.height
    chk = rows.filter(pl.col("extra") == base).join(
        inst.select(*M.IDENTITY, pl.col("es_pool").alias("rec")), on=M.IDENTITY
    )
    np.testing.assert_allclose(chk["es_pool"].to_numpy(), chk["rec"].to_numpy(), rtol=1e-12)
    wider = rows.filter(pl.col("extra") == base + 1).join(chk.select(*M.IDENTITY, "rec"), on=M.IDENTITY)
    assert (wider["es_pool"] <= wider["rec"] * (1 + 1e-12)).all()  # a wider pool never does worse
    assert op is not None


# ------------------------------------------------------------------------------------------ headline


def sweep_rows(budget=32):
    """Ten heads; the widest pool (e = 6) lowers ES_pool by 10 % on half of them."""
    rows = []
    for i in range(10):
        for e, es in ((4, 1.0), (5, 0.95), (6, 0.9)):
            es_pool = es if i < 5 else 1.0
            rows.append(
                {
                    "model": "m",
                    "corpus": "c",
                    "doc": "0000",
                    "layer": i,
                    "head": 0,
                    "kv_head": 0,
                    "query_pos": 300,
                    "budget": budget,
                    "extra": e,
                    "es_pool": es_pool,
                    "kappa_hat": 1.2 / es_pool,
                    "c_hat": 1 - es_pool / 1.2,
                    "seconds": 0.0,
                }
            )
    return pl.DataFrame(rows)


def test_claims_18_93_94_read_the_substituted_median_and_flag_infinite_caps():
    man, cert = synthetic({8: 2, 32: 13}, n=20)  # f_hi: 0.30 at s = 8, 0.82 at s = 32 (the cap is infinite)
    rec = pl.DataFrame(
        {
            "model": ["m"] * 20,
            "corpus": ["c"] * 20,
            "doc": ["0000"] * 20,
            "budget": [8, 32] * 10,
            "c_hat": np.linspace(0, 0.19, 20),
            "kappa_hat_bal": [1.0] * 20,
        }
    )
    t7 = F.table7(rec, man, cert)
    head = F.headline(t7, F.substitute(man, cert), F.sweep_table(sweep_rows()), "m")
    assert_dimensions(head)
    by_budget = {r["budget"]: r for r in t7.iter_rows(named=True)}
    assert math.isfinite(by_budget[8]["cap_f_hi"]) and math.isinf(by_budget[32]["cap_f_hi"])

    def by_value(cid, name):
        return {r["by_value"]: r for r in rows_of(head, cid, name).iter_rows(named=True)}

    used = by_value(18, "median_c_hat_certified")  # the manifest's median after substitution
    assert {k: r["estimate"] for k, r in used.items()} == {
        s: by_budget[int(s)]["manifest_median_c_hat_after"] for s in ("8", "32")
    }
    assert {r["population"] for r in used.values()} == {"primary"} and used["32"]["n_instances"] == 20
    cap = by_value(18, "median_c_hat_certified_cap")
    assert cap["8"]["estimate"] == by_budget[8]["cap_f_hi"] and cap["8"]["uninformative"] is None
    reason = (
        "the Wilson cap is infinite: 13 improved of n = 20 solved instances per budget give f_hi = 0.82, "
        "so half the records or more may be raised"
    )
    assert f"{wilson_upper(13, 20):.2f}" == "0.82" and cap["32"]["uninformative"] == reason
    assert by_value(93, "median_c_hat_cap")["32"]["uninformative"] == reason  # kept, with its by: budget 32
    kb = by_value(94, "median_kappa_hat_bal_cap")
    assert kb["8"]["estimate"] == 1.0 and kb["8"]["uninformative"] is None and kb["32"]["uninformative"] == reason
    for cid, name in ((90, "median_c_hat_s32"), (92, "optimum_beats_balancing_share")):
        assert set(by_value(cid, name)) == {"32,before", "32,after"}, name
        assert set(rows_of(head, cid, name)["by_key"]) == {"budget,substitution"}


def test_claims_19_20_carry_the_sweep_budget_and_both_readings_of_the_shift():
    sweep = F.sweep_table(sweep_rows(), kappa_threshold=1.25)
    assert sweep["budget"].to_list() == [32] * 3
    head = F.headline(pl.DataFrame(schema=F.TABLE7_SCHEMA), None, sweep, "m")
    assert_dimensions(head)
    rates = rows_of(head, 20, "label_rate")
    assert rates["by_key"].to_list() == ["budget,pool_extra"] * 3 and rates["by_value"].to_list() == [
        "32,4",
        "32,5",
        "32,6",
    ]
    # median c_hat: 1/6 at e = 4; (1/6 + 1/4) / 2 at e = 6 (half the heads at ES_pool 0.9 of 1.2)
    relative, points = (
        rows_of(head, 19, "median_gap_change").row(0, named=True),
        rows_of(head, 19, "median_gap_change_points").row(0, named=True),
    )
    assert relative["estimate"] == pytest.approx(0.25) and points["estimate"] == pytest.approx(1 / 24)
    assert relative["by_value"] == points["by_value"] == "32"
    at16 = F.headline(pl.DataFrame(schema=F.TABLE7_SCHEMA), None, F.sweep_table(sweep_rows(16), budget=16), "m")
    assert set(rows_of(at16, 19, "median_gap_change_points")["by_value"]) == {
        "16"
    }  # the sweep's budget, not a constant


def test_the_declarations_read_columns_of_the_claim_frames_and_stay_in_their_domains():
    """Every declared column exists (a misspelt one would drop its value silently), every estimate lies in the
    declared domain: the certified shifts are >= 0 (substitution only lowers ES), improvements > 1 %."""
    man, cert = synthetic({8: 2, 16: 0, 32: 13}, n=20, unsolved_by_budget={16: 2})
    rec = pl.DataFrame(
        {
            "model": ["m"] * 30,
            "corpus": ["c"] * 30,
            "doc": [f"{i % 3:04d}" for i in range(30)],
            "budget": [8, 16, 32] * 10,
            "c_hat": np.linspace(0, 0.19, 30),
            "kappa_hat_bal": [1.0, 1.2, 1.0] * 10,
        }
    )
    frames = F.claim_frames(F.table7(rec, man, cert), F.substitute(man, cert), F.sweep_table(sweep_rows()), "m")
    specs = (*F.HEADLINE, *F.SWEEP_HEADLINE)
    assert_columns_exist(specs, frames)
    assert assert_in_domain(specs, frames) >= len(specs)
    shifts = frames["manifest_budgets"]["median_c_hat_shift"].to_list()
    assert min(shifts) >= 0 and max(shifts) > 0  # the improved budgets moved; none moved down
