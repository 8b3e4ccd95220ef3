"""trustmass.report.frames.ceiling(_claims) on synthetic ceiling records with hand-checkable values."""

import math

import numpy as np
import polars as pl
import pytest
import scipy.stats
from unit.declared_frames import assert_columns_exist, assert_in_domain
from unit.headline_dimensions import assert_dimensions, rows_of

from trustmass.core import bootstrap_closed_form as closed_form
from trustmass.core import stats
from trustmass.report import engine
from trustmass.report.catalog import statistics_rule
from trustmass.report.claims.data import claim
from trustmass.report.engine import StatisticsSettings
from trustmass.report.frames import ceiling as S
from trustmass.report.frames import ceiling_claims as CC
from trustmass.report.headline import HEADLINE_SCHEMA

FAST = StatisticsSettings(bootstrap=200)
NO_CI = StatisticsSettings(bootstrap=0)

DEFAULTS = dict(
    model="m",
    corpus="prose",
    doc="0000",
    layer=0,
    head=0,
    kv_head=0,
    group_size=1,
    query_pos=100,
    n_keys=300,
    budget=4,
    dropped_mass=0.1,
    D=1.0,
    sigma=0.5,
    phi=0.5,
    es_top=1.0,
    es_pool=1.0,
    pool_extra=24,
    n_subsets=100,
    es_bal=1.0,
    n_swaps=0,
    kappa_hat=1.0,
    c_hat=0.0,
    kappa_hat_bal=1.0,
    ef_fw=0.5,
    pi_hat=2.0,
    es_geo=1.5,
    es_lev=3.0,
    es_vote=1.0,
    bound_2dm=2.0,
    bound_var=1.5,
    enumerated=True,
    pool_is_row=False,
    es_geo_pool=1.2,
    es_lev_pool=2.0,
)
ENUMERATION_ONLY = (
    "es_pool",
    "n_subsets",
    "kappa_hat",
    "c_hat",
    "kappa_hat_bal",
    "ef_fw",
    "pi_hat",
    "es_geo",
    "es_lev",
    "es_geo_pool",
    "es_lev_pool",
)


def rec(c_hat=None, **kw):
    """One record; ``c_hat`` sets es_top = 1, ES_pool = 1 - c_hat and kappa_hat = 1/(1 - c_hat)."""
    r = dict(DEFAULTS)
    if c_hat is not None:
        kappa = math.inf if c_hat == 1.0 else 1.0 / (1.0 - c_hat)
        r.update(es_top=1.0, es_pool=1.0 - c_hat, es_bal=1.0 - c_hat, c_hat=c_hat, kappa_hat=kappa)
    r.update(kw)
    if not r["enumerated"]:
        r.update({k: None for k in ENUMERATION_ONLY})
    return r


def frame(rows):
    schema = {
        k: (
            pl.Utf8
            if isinstance(v, str)
            else pl.Boolean
            if isinstance(v, bool)
            else pl.Int64
            if isinstance(v, int)
            else pl.Float64
        )
        for k, v in DEFAULTS.items()
    }
    return pl.DataFrame(rows, schema=schema)


def docs_rows(values_by_doc, **kw):
    """Records with c_hat values per document (one row position per value)."""
    rows = []
    for doc, values in values_by_doc.items():
        for i, c in enumerate(values):
            rows.append(rec(c_hat=c, doc=doc, query_pos=100 + i, **kw))
    return rows


def only(df, **where):
    for k, v in where.items():
        df = df.filter(pl.col(k) == v)
    assert df.height == 1, df
    return df.row(0, named=True)


# ----------------------------------------------------------------------------- preparation


def test_missing_contract_columns_are_named():
    with pytest.raises(ValueError, match=r"lack the columns \['es_bal'"):
        S.prepare(frame([rec()]).drop("es_bal"))


def test_primary_slice_is_the_first_three_documents_per_model_and_corpus():
    rows = docs_rows({"0000": [0.01], "0001": [0.02], "0002": [0.03], "0003": [0.9], "0004": [0.9]})
    rows += docs_rows({"0007": [0.5], "0009": [0.5], "0011": [0.5], "0012": [0.5]}, corpus="code")
    f = S.prepare(frame(rows))
    primary = f.filter(pl.col("primary"))
    assert sorted(primary["cluster"].to_list()) == [
        "code/0007",
        "code/0009",
        "code/0011",
        "prose/0000",
        "prose/0001",
        "prose/0002",
    ]
    out = S.fig1(frame(rows), NO_CI)
    assert only(out, population="primary")["n_docs"] == 6 and only(out, population="all")["n_docs"] == 9


def test_duplicate_records_are_refused():
    with pytest.raises(ValueError, match="read each records file once"):
        S.prepare(frame([rec(), rec()]))


def test_degenerate_records_are_excluded_and_counted():
    rows = docs_rows({"0000": [0.01, 0.02, 0.03]})
    rows.append(rec(c_hat=1.0, query_pos=900))  # ES_pool = 0: kappa_hat = inf
    rows.append(rec(es_top=0.0, es_pool=0.0, c_hat=0.0, kappa_hat=1.0, es_bal=0.0, query_pos=901))  # whole row kept
    out = only(S.fig1(frame(rows), NO_CI), population="all")
    assert out["n"] == 3 and out["n_degenerate"] == 2
    assert out["median_c_hat"] == pytest.approx(0.02)


# ----------------------------------------------------------------------------- Figure 1


def test_fig1_medians_intervals_and_remainder():
    values = {"0000": [0.01, 0.02, 0.03], "0001": [0.04, 0.05, 0.06], "0002": [0.07, 0.08, 0.09]}
    out = only(S.fig1(frame(docs_rows(values)), FAST), population="primary")
    assert out["median_c_hat"] == pytest.approx(0.05)
    assert out["median_remainder"] == pytest.approx(0.95)
    assert 0.02 <= out["median_c_hat_low"] <= 0.05 <= out["median_c_hat_high"] <= 0.08
    assert out["median_remainder_low"] == pytest.approx(1 - out["median_c_hat_high"])
    c = np.array([v for vs in values.values() for v in vs])
    docs = np.repeat(list(values), 3)
    expected = closed_form.cluster_bootstrap_quantile(c, docs, 0.5, B=200, seed=0)
    assert (out["median_c_hat_low"], out["median_c_hat_high"]) == (expected.low, expected.high)
    assert out["median_bal_residual"] == pytest.approx(0.95)  # balancing reaches ES_pool everywhere
    assert out["median_r_bal"] == 1.0


def test_r_bal_convention_and_labelled_subset():
    rows = [
        rec(c_hat=0.2, es_bal=0.9, query_pos=1),  # gap 0.2, balancing closes 0.1: r_bal = 0.5
        rec(c_hat=0.0, es_bal=1.0, query_pos=2),  # no gap: r_bal = 1 by convention
        rec(c_hat=0.3, es_bal=0.7, query_pos=3),  # closes it all: r_bal = 1
    ]
    f = S.prepare(frame(rows))
    assert f.sort("query_pos")["r_bal"].to_list() == pytest.approx([0.5, 1.0, 1.0])
    out = only(S.fig1(frame(rows), NO_CI), population="all")
    assert out["median_r_bal"] == 1.0
    assert out["n_labelled"] == 2  # kappa_hat 1.25 and 1.43 exceed 1.11
    assert out["median_c_hat_labelled"] == pytest.approx(0.25)
    assert out["median_bal_residual"] == pytest.approx(0.9)


# ----------------------------------------------------------------------------- Figure 2 and Table 6


def map_rows(perfect=True):
    """Two layers x two heads at s = 8, two docs: the cell's dropped mass predicts its label."""
    rows = []
    cells = {(0, 0): (0.6, 0.3), (0, 1): (0.5, 0.2), (1, 0): (0.1, 0.0), (1, 1): (0.2, 0.05)}
    for (layer, head), (dm, c) in cells.items():
        for doc in ("0000", "0001"):
            for i in range(3):
                rows.append(
                    rec(
                        c_hat=c,
                        dropped_mass=dm if perfect else 1 - dm,
                        layer=layer,
                        head=head,
                        doc=doc,
                        query_pos=100 + i,
                        budget=8,
                    )
                )
    return rows


def test_fig2_cells_flat_flag_and_perfect_cell_auc():
    out = S.fig2(frame(map_rows()), NO_CI).filter(pl.col("population") == "all")
    assert out.height == 4
    cell = only(out, layer=0, head=0)
    assert cell["median_dropped_mass"] == pytest.approx(0.6) and cell["flat"] and cell["label"]
    assert cell["median_kappa_hat"] == pytest.approx(1 / 0.7) and cell["n"] == 6
    low = only(out, layer=1, head=1)
    assert not low["flat"] and not low["label"]
    assert set(out["cell_auc"].to_list()) == {1.0}
    assert cell["n_flat"] == 2 and cell["n_labelled_cells"] == 2
    reversed_auc = S.fig2(frame(map_rows(perfect=False)), NO_CI)["cell_auc"].unique().to_list()
    assert reversed_auc == [0.0]


def test_fig2_reads_only_the_map_budget():
    rows = map_rows() + [rec(c_hat=0.5, dropped_mass=0.99, layer=1, head=1, budget=4)]
    out = only(S.fig2(frame(rows), NO_CI), population="all", layer=1, head=1)
    assert out["median_dropped_mass"] == pytest.approx(0.2)


def test_table6_auc_edge_interior_and_rho_depth():
    rows = []
    # six layers; labels only on the edge layers (0, 1, 4, 5) for half the rows
    for layer in range(6):
        for doc in ("0000", "0001", "0002"):
            for i in range(4):
                labelled = layer in (0, 1, 4, 5) and i < 2 or (layer == 2 and i == 0)
                c = 0.3 if labelled else 0.01
                rows.append(
                    rec(
                        c_hat=c,
                        dropped_mass=0.5 if labelled else 0.1,
                        layer=layer,
                        doc=doc,
                        query_pos=100 + i,
                        budget=8,
                        phi=c,
                        group_size=3,
                    )
                )
    out = only(S.table6(frame(rows), FAST), population="all")
    assert out["auc"] == 1.0 and out["auc_low"] == 1.0
    assert out["edge_rate"] == pytest.approx(0.5) and out["interior_rate"] == pytest.approx(0.125)
    assert out["edge_int_ratio"] == pytest.approx(4.0)
    assert out["edge_int_ratio_low"] <= 4.0 <= out["edge_int_ratio_high"]
    # per layer: median dropped mass 0.3 on the edges, 0.1 inside; label rate 0.5 / 0.25 (layer 2) / 0 (layer 3)
    expected = scipy.stats.spearmanr([0.3, 0.3, 0.1, 0.1, 0.3, 0.3], [0.5, 0.5, 0.25, 0.0, 0.5, 0.5]).statistic
    assert out["rho_depth"] == pytest.approx(expected) and 0.9 < expected < 1
    assert out["rho_phi_es_pool"] == pytest.approx(-1.0)  # es_pool = 1 - c falls as phi = c rises
    assert out["median_kappa_hat_bal"] == 1.0 and out["group_size"] == 3 and out["n_layers"] == 6


# ----------------------------------------------------------------------------- Tables 1, 2, 8


def test_table1_balancing_share_and_mass_share_of_s8():
    rows = []
    for i, (bal8, bal64) in enumerate([(0.95, 0.8), (0.99, 0.97), (0.85, 0.95)]):
        rows.append(rec(c_hat=0.2, es_bal=bal8, budget=8, dropped_mass=0.2, query_pos=i))
        rows.append(
            rec(es_top=1.0, es_bal=bal64, budget=64, dropped_mass=0.2 * (0.1 + 0.1 * i), enumerated=False, query_pos=i)
        )
    out = S.table1(frame(rows), NO_CI).filter(pl.col("population") == "all")
    s64 = only(out, model="m", budget=64)
    assert s64["median_balancing_share"] == pytest.approx(0.05)
    assert s64["balancing_beats_10pct_share"] == pytest.approx(1 / 3)
    assert s64["median_mass_share_of_map"] == pytest.approx(0.2)  # ratios 0.1, 0.2, 0.3
    assert only(out, model="m", budget=8)["median_mass_share_of_map"] == 1.0
    assert only(out, model=engine.POOLED, budget=64)["median_mass_share_of_map"] == pytest.approx(0.2)
    assert not s64["enumerated"]


def test_table2_share_auc_and_pooled_budgets():
    rows = []
    for doc in ("0000", "0001", "0002"):
        for budget in (4, 8):
            for i, c in enumerate([0.0, 0.05, 0.2, 0.3]):
                rows.append(rec(c_hat=c, dropped_mass=c, budget=budget, doc=doc, query_pos=i, corpus="code"))
    out = S.table2(frame(rows), FAST).filter(pl.col("population") == "all")
    pooled = only(out.filter(pl.col("budget").is_null()), corpus="code")
    assert pooled["n"] == 24 and pooled["label_share"] == 0.5 and pooled["auc"] == 1.0
    assert pooled["label_share_low"] == pooled["label_share_high"] == 0.5  # every document alike
    assert only(out, budget=8)["n"] == 12
    assert pooled["share90"] == 0.5 and pooled["median_kappa_hat"] == pytest.approx((1 / 0.95 + 1 / 0.8) / 2)


def test_table8_profile_and_group_vote():
    rows = [
        rec(c_hat=0.0, es_vote=1.0, query_pos=1, budget=8),  # top-mass attains ES_pool; vote = top
        rec(c_hat=0.5, es_vote=1.5, query_pos=2, budget=8),  # degraded
        rec(c_hat=0.05, es_vote=0.95, query_pos=3, budget=8),  # improved
        rec(c_hat=0.6, es_vote=1.2, query_pos=4, budget=8, pi_hat=math.inf),
    ]
    out = only(S.table8(frame(rows), NO_CI), population="all")
    assert out["top_attains_share"] == 0.25
    assert out["vote_degraded_share"] == 0.5 and out["vote_improved_share"] == 0.25
    assert out["median_vote_over_top"] == pytest.approx(1.1)
    assert out["coverage_1_5"] == 0.5 and out["coverage_2"] == 0.75  # kappa 1, 2, 1.05, 2.5
    assert out["share90"] == 0.5 and out["label_share"] == 0.5
    assert out["median_pi_hat"] == 2.0 and out["p99_pi_hat"] == math.inf
    assert out["median_geo_ratio"] == 1.5 and out["median_lev_pool_ratio"] == 2.0


# ----------------------------------------------------------------------------- headline


def study_rows(budgets=(4, 8, 64)):
    """Two families (group sizes 1 and 2) at ``budgets``; 64 is native (not enumerated)."""
    rows = []
    for model, group in (("a", 1), ("b", 2)):
        for doc in ("0000", "0001", "0002", "0003"):
            for layer in range(5):
                for i, c in enumerate([0.0, 0.02, 0.05, 0.3]):
                    for budget in budgets:
                        rows.append(
                            rec(
                                c_hat=None if budget == 64 else c,
                                model=model,
                                doc=doc,
                                layer=layer,
                                head=i % 2,
                                budget=budget,
                                query_pos=100 + i,
                                dropped_mass=(c + 0.01 * layer) * (0.5 if budget == 64 else 1),
                                group_size=group,
                                es_vote=1.0 if group == 1 else 1.0 + c,
                                enumerated=budget != 64,
                                phi=c,
                            )
                        )
    return rows


def test_headline_values_exist_in_the_claims_file():
    for spec in CC.HEADLINE:
        claim(spec.claim).value(spec.value)  # raises KeyError when the name is not the claim's
    covered = {spec.claim for spec in CC.HEADLINE}
    assert {2, 8, 11, 12, 13, 14, 22, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 37, 38} <= covered


def test_headline_rows_and_columns():
    out = CC.headline(frame(study_rows()), FAST)
    assert out.columns[:11] == [
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
    ]
    c24 = out.filter(
        (pl.col("claim_id") == 24) & (pl.col("value_name") == "median_c_hat") & (pl.col("population") == "all")
    )
    assert c24["by_key"].unique().to_list() == ["model,budget"]
    assert sorted(c24["by_value"].to_list()) == ["a,4", "a,8", "b,4", "b,8"]
    assert c24["estimate"].to_list() == pytest.approx([0.035] * 4)  # percent claims stay fractions
    assert c24["n_instances"].to_list() == [80] * 4 and c24["n_docs"].to_list() == [4] * 4
    primary = out.filter((pl.col("claim_id") == 24) & (pl.col("population") == "primary"))
    assert set(primary["n_docs"].to_list()) == {3}
    c14 = only(out, claim_id=14, population="all")
    assert c14["estimate"] == 1.0 and c14["by_value"] == "1" and c14["models"] == "a"
    c11 = only(out, claim_id=11, population="all")
    assert c11["by_key"] == "group_size,budget" and c11["by_value"] == "2,8" and c11["estimate"] == pytest.approx(1.035)
    assert only(out, claim_id=15, value_name="n_instances", population="all")["estimate"] == 2 * 4 * 5 * 4 * 2
    assert only(out, claim_id=15, value_name="n_instances", population="primary")["estimate"] == 2 * 3 * 5 * 4 * 2
    c31 = out.filter((pl.col("claim_id") == 31) & (pl.col("population") == "all"))
    assert c31["by_value"].to_list() == ["a,64", "b,64"] and c31["estimate"].to_list() == pytest.approx([0.5, 0.5])
    c34 = out.filter(pl.col("claim_id") == 34)
    assert c34.height == 4 and set(c34["by_key"].to_list()) == {"model"}
    # every claim value the synthetic study can speak to is produced on both populations
    assert set(out.filter(pl.col("population") == "primary")["claim_id"]) == set(
        out.filter(pl.col("population") == "all")["claim_id"]
    )


def test_headline_rows_carry_the_dimensions_their_claims_filter_on():
    """A claim value's ``where`` matches only rows carrying its dimension: each row says the budget
    it was computed at (the map budget, 4, 32) or that it pools the budgets."""
    out = CC.headline(frame(study_rows((4, 8, 32, 64))), NO_CI).filter(pl.col("population") == "all")
    assert_dimensions(out)

    def groups(claim_id, value):
        got = rows_of(out, claim_id, value)
        return dict(zip(zip(got["by_key"], got["by_value"]), got["estimate"]))

    assert groups(11, "median_vote_cost_over_top_mass") == {("group_size,budget", "2,8"): pytest.approx(1.035)}
    assert groups(12, "median_vote_cost_over_es_pool").keys() == {("group_size,budget", "2,8")}
    assert groups(13, "vote_degraded_share") == {
        ("group_size,budget", "2,8"): 0.75
    }  # es_vote = 1 + c > es_top but at c = 0
    assert groups(13, "vote_improved_share") == {("group_size,budget", "2,8"): 0.0}
    assert groups(14, "vote_over_top_mass") == {("group_size", "1"): 1.0}  # every budget: no budget dimension
    assert groups(29, "coverage_kappa_hat_le_1_5") == {("model,budget", "a,4"): 1.0, ("model,budget", "b,4"): 1.0}
    assert groups(29, "coverage_kappa_hat_le_2") == {("model,budget", "a,4"): 1.0, ("model,budget", "b,4"): 1.0}
    assert groups(35, "auc_dropped_mass").keys() == {("model,budget", "a,8"), ("model,budget", "b,8")}
    assert groups(38, "spearman_phi_es_pool_per_family").keys() == {
        ("model,budget", "a,pooled"),
        ("model,budget", "b,pooled"),
    }
    assert groups(88, "median_geometric_ratio_s32") == {("model,budget", "a,32"): 1.5, ("model,budget", "b,32"): 1.5}
    assert groups(88, "median_leverage_ratio_s32") == {("model,budget", "a,32"): 3.0, ("model,budget", "b,32"): 3.0}
    map16 = CC.headline(frame(study_rows((4, 16))), StatisticsSettings(bootstrap=0, map_budget=16))
    assert set(rows_of(map16, 11, "median_vote_cost_over_top_mass")["by_value"]) == {
        "2,16"
    }  # the map budget, whichever


def test_summarize_is_fast_and_reuses_frames():
    import time

    rows = [{**r, "corpus": corpus} for corpus in ("a", "b", "c", "d", "e") for r in study_rows()]
    started = time.perf_counter()
    frames = S.summarize(frame(rows), StatisticsSettings(bootstrap=1000))
    assert time.perf_counter() - started < 30
    assert list(frames) == [f for f in statistics_rule("ceiling_statistics").frames if not f.startswith("headline_")]
    for name, schema in (
        ("fig1", S.FIG1_SCHEMA),
        ("fig2", S.FIG2_SCHEMA),
        ("table1", S.TABLE1_SCHEMA),
        ("table2", S.TABLE2_SCHEMA),
        ("table6", S.TABLE6_SCHEMA),
        ("table8", S.TABLE8_SCHEMA),
    ):
        assert dict(frames[name].schema) == schema, name
    assert dict(CC.headline(frame(rows), NO_CI, frames=frames).schema) == HEADLINE_SCHEMA


def test_the_headline_population_is_one_corpus_and_table2_compares_corpora():
    rows = [{**r, "corpus": corpus} for corpus in ("prose", "code") for r in study_rows()]
    population = engine.HeadlinePopulation(models=("a",), corpus="prose")
    frames = S.summarize(frame(rows), NO_CI, population)
    assert set(frames["fig1"]["model"]) == {"a"} and set(frames["table8"]["model"]) == {"a"}
    assert set(frames["table2"]["corpus"]) == {"prose", "code"} and set(frames["table2"]["model"]) == {"a"}
    pooled = S.summarize(frame(rows), NO_CI)  # no headline population: every model and corpus
    n_headline = int(frames["fig1"].filter(pl.col("population") == "all")["n"].sum())
    n_pooled = int(pooled["fig1"].filter(pl.col("population") == "all", pl.col("model") == "a")["n"].sum())
    assert n_pooled == 2 * n_headline
    head = CC.headline(frame(rows), NO_CI, population, frames, content={"prose": "prose", "code": "code"})
    code = head.filter(pl.col("claim_id") == 41, pl.col("value_name") == "median_kappa_hat_code")
    assert set(code["by_value"].to_list()) == {"a,code,4", "a,code,8"}  # per budget, the code corpus only
    assert only(head, claim_id=15, value_name="n_instances", population="all")["models"] == "a"


def test_bootstrap_mean_matches_the_generic_cluster_bootstrap():
    rng = np.random.default_rng(3)
    x = (rng.random(200) < 0.3).astype(float)
    clusters = rng.integers(0, 7, size=200).astype(str)
    settings = StatisticsSettings(bootstrap=300, seed=5)
    low, high = engine.bootstrap_mean(x, clusters, settings)
    iv = stats.cluster_bootstrap({"x": x}, lambda d: d["x"].mean(), cluster=clusters, B=300, seed=5)
    assert (low, high) == pytest.approx((iv.low, iv.high), abs=1e-12)


def test_settings_from_config():
    s = StatisticsSettings.from_config(
        {
            "seed": 7,
            "labels": {"kappa_threshold": 1.2},
            "statistics": {"bootstrap": 10, "map_budget": 16, "figure_population": "all"},
        }
    )
    assert (s.seed, s.kappa_threshold, s.bootstrap, s.map_budget, s.primary_docs) == (7, 1.2, 10, 16, 3)
    with pytest.raises(ValueError, match="unknown keys"):
        StatisticsSettings.from_config({"statistics": {"bootstrapp": 10}})


def test_claim_100_family_order_over_the_threshold_sweep():
    # family b labels more rows than family a at every threshold: the order never flips (tau = +1)
    rows = []
    for model, kappas in (("a", [1.0, 1.05, 1.2, 1.6]), ("b", [1.02, 1.3, 1.5, 2.0])):
        for doc in ("0000", "0001", "0002"):
            for i, k in enumerate(kappas):
                c = 1.0 - 1.0 / k
                rows.append(rec(c_hat=c, model=model, doc=doc, query_pos=100 + i, budget=8))
    head = CC.headline(frame(rows), NO_CI)
    tau = only(head, claim_id=100, population="all")
    assert tau["estimate"] == 1.0 and tau["by_value"] == "8" and tau["n_instances"] == 2
    single = CC.headline(frame([r for r in rows if r["model"] == "a"]), NO_CI)
    assert single.filter(pl.col("claim_id") == 100).height == 0  # one family has no order to keep


def test_the_declarations_read_columns_of_the_claim_frames_and_stay_in_their_domains():
    specs, frames = CC.claim_frames(frame(study_rows((4, 8, 32, 64))), NO_CI)
    assert_columns_exist(specs, {name: f for name, f in frames.items() if f.height})
    assert assert_in_domain(specs, frames) > len(specs)
    shared = next(s for s in specs if s.claim == 11)
    assert shared.where == {"group_size": (2,)} and shared.at == {"budget": 8}  # "shared", "map" made literal
