"""trustmass.core.stats: exact values on hand-computed inputs, and property tests against oracles
(scipy, brute-force pair counting, explicit resampling)."""

import math
import time

import numpy as np
import polars as pl
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from trustmass.core import bootstrap_closed_form as closed_form
from trustmass.core import stats

FAST = settings(max_examples=60, deadline=None)
# small-integer samples produce many ties, the case that matters for ranks
tied = st.lists(st.integers(min_value=0, max_value=6), min_size=2, max_size=40)
reals = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


# ----------------------------------------------------------------------------- quantiles


class TestQuantile:
    def test_hand_values(self):
        assert stats.quantile([1, 2, 3, 4], 0.5) == 2.5
        assert stats.quantile([4, 1, 3, 2], 0.25) == 1.75  # h = 0.75: 1 + 0.75 * (2 - 1)
        assert stats.quantile([10, 0, 5], 0.9) == 9.0  # h = 1.8: 5 + 0.8 * 5
        assert stats.median([3, 1, 2]) == 2.0
        assert stats.median([7.0]) == 7.0
        assert stats.median([1.0, 2.0, 3.0, np.inf]) == 2.5 and stats.median([1.0, np.inf]) == np.inf
        assert list(stats.quantile([0, 10], [0.0, 0.3, 1.0])) == [0.0, 3.0, 10.0]

    @FAST
    @given(st.lists(reals, min_size=1, max_size=50), st.lists(st.floats(0, 1), min_size=1, max_size=5))
    def test_equals_numpy_linear_bitwise(self, values, qs):
        assert np.array_equal(stats.quantile(values, qs), np.quantile(values, qs, method="linear"))

    @FAST
    @given(st.lists(reals, min_size=1, max_size=50))
    def test_median_equals_numpy_bitwise(self, values):
        assert stats.median(values) == np.median(values)

    def test_infinite_values(self):
        # kappa_hat = +inf records: numpy interpolates inf - inf into NaN, we keep +inf
        assert list(stats.quantile([1, 2, 3, np.inf], [0.5, 0.9, 1.0])) == [2.5, np.inf, np.inf]
        assert stats.quantile([1, np.inf, np.inf], 0.9) == np.inf
        assert stats.quantile([-np.inf, 1, 2], 0.25) == -np.inf

    def test_rejects_nan_and_empty(self):
        with pytest.raises(ValueError, match="NaN"):
            stats.quantile([1.0, np.nan], 0.5)
        with pytest.raises(ValueError, match="empty"):
            stats.median([])
        with pytest.raises(ValueError, match=r"\[0, 1\]"):
            stats.quantile([1.0], 1.5)

    def test_coverage(self):
        assert stats.coverage([1.0, 1.5, 2.0, np.inf], 1.5) == 0.5
        assert stats.coverage([1.0, 1.0 + 1e-12, 1.1], 1.0 + 1e-12) == pytest.approx(2 / 3, abs=0)
        with pytest.raises(ValueError):
            stats.coverage([], 1.0)


class TestBinnedMedians:
    def test_deciles_of_a_grid(self):
        x = np.arange(100.0)
        out = stats.binned_medians(x, 2 * x)
        assert out["n"].to_list() == [10] * 10
        assert out["x_median"].to_list() == [4.5 + 10 * k for k in range(10)]
        assert out["y_median"].to_list() == [9.0 + 20 * k for k in range(10)]
        assert out["x_low"][1] == pytest.approx(9.9)

    def test_ties_share_a_bin(self):
        x = np.array([0.0] * 6 + [1.0, 2.0, 3.0, 4.0])
        out = stats.binned_medians(x, x + 1, bins=5)
        # edges 0, 0, 0, 0.4, 2.2, 4 (type 7): all zeros land in one bin, two bins stay empty
        assert out["x_high"].to_list() == pytest.approx([0.0, 0.0, 0.4, 2.2, 4.0])
        assert out["n"].to_list() == [0, 0, 6, 2, 2]
        assert out["y_median"][2] == 1.0
        assert math.isnan(out["y_median"][0])
        assert out["n"].sum() == x.size


# ----------------------------------------------------------------------------- Wilson, median cap


class TestWilson:
    @pytest.mark.parametrize("k, expected", [(0, 0.0158), (2, 0.0299), (8, 0.0644), (36, 0.2007)])
    def test_table7_values(self, k, expected):
        assert round(stats.wilson_upper(k, 240), 4) == expected

    def test_zero_successes_closed_form(self):
        z2n = stats.Z95**2 / 240
        assert stats.wilson_upper(0, 240) == pytest.approx(z2n / (1 + z2n), rel=1e-15)

    def test_vectorised_and_bounds(self):
        f = stats.wilson_upper(np.arange(11), 10)
        assert np.all(np.diff(f) > 0) and np.all(f >= np.arange(11) / 10 - 1e-15) and f[-1] == pytest.approx(1.0)
        with pytest.raises(ValueError):
            stats.wilson_upper(3, 2)


class TestMedianCap:
    def test_hand_values(self):
        x = [5.0, 1.0, 4.0, 2.0, 3.0]
        assert stats.median_cap(x, 0.0) == 3.0
        assert stats.median_cap(x, 0.2) == 4.0  # raise one value: the median can reach x_(4)
        assert stats.median_cap(x, 0.4) == 5.0
        assert stats.median_cap(x, 0.6) == np.inf
        assert stats.median_cap([1.0, 2.0, 3.0, 4.0], 0.25) == 3.5  # even n: (x_(3) + x_(4)) / 2

    def test_type7_quantile_is_not_a_cap(self):
        # the literal reading "q_{0.5+f}" interpolates below what one raised value reaches
        x = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
        raised = x.copy()
        raised[0] = 100.0
        assert np.quantile(x, 0.7) == pytest.approx(3.8) and np.median(raised) == 4.0
        assert stats.median_cap(x, 0.2) >= np.median(raised)

    @settings(max_examples=150, deadline=None)
    @given(
        st.lists(st.floats(-100, 100), min_size=1, max_size=40),
        st.floats(0, 0.6),
        st.data(),
    )
    def test_no_raise_of_at_most_f_n_values_exceeds_the_cap(self, values, f, data):
        x = np.array(values)
        cap = stats.median_cap(x, f)
        m = math.floor(f * x.size + 1e-9)
        chosen = data.draw(st.lists(st.integers(0, x.size - 1), max_size=m, unique=True))
        raises = data.draw(st.lists(st.floats(0, 1e9), min_size=len(chosen), max_size=len(chosen)))
        y = x.copy()
        y[chosen] += np.array(raises)
        assert np.median(y) <= cap
        # and the cap is attained: raise the m smallest values far enough
        worst = np.sort(x)
        worst[:m] = 1e12
        if math.isfinite(cap):
            assert np.median(worst) == pytest.approx(cap, rel=1e-12, abs=1e-12)
        else:
            assert np.median(worst) >= 1e11

    def test_paper_scale(self):
        # 186,240 values per budget, f = f_hi(36 of 240): the exact cap sits within two ranks of
        # the spec's literal (0.5 + f)-quantile (here 0.47 of a rank below it)
        x = np.linspace(0.0, 1.0, 186_240)
        f = stats.wilson_upper(36, 240)
        cap = stats.median_cap(x, f)
        m = math.floor(f * x.size)
        assert cap == pytest.approx((x[x.size // 2 - 1 + m] + x[x.size // 2 + m]) / 2, rel=1e-15)
        assert abs(cap - np.quantile(x, 0.5 + f)) < 2 / x.size


# ----------------------------------------------------------------------------- ranks, AUC, correlation


def brute_auc(score, label):
    pos = [s for s, y in zip(score, label) if y]
    neg = [s for s, y in zip(score, label) if not y]
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


class TestRanksAndAUC:
    @FAST
    @given(tied)
    def test_rank_average_matches_scipy(self, values):
        assert np.array_equal(stats.rank_average(values), scipy.stats.rankdata(values, method="average"))

    def test_auc_hand_values(self):
        assert stats.auc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]) == 0.75
        assert stats.auc([1, 1, 2], [False, True, True]) == 0.75  # one tie counts one half
        assert stats.auc([3, 2, 1], [1, 0, 0]) == 1.0
        assert stats.auc([3, 2, 1], [0, 1, 1]) == 0.0
        assert stats.auc([5, 5, 5, 5], [0, 1, 0, 1]) == 0.5

    @FAST
    @given(st.lists(st.tuples(st.integers(0, 5), st.booleans()), min_size=2, max_size=40))
    def test_auc_equals_pair_counting(self, pairs):
        score, label = zip(*pairs)
        if len(set(label)) < 2:
            res = stats.auc_result(score, label)
            assert math.isnan(res.value) and res.reason
            return
        expected = brute_auc(score, label)
        assert stats.auc(score, label) == pytest.approx(expected, abs=1e-12)
        codes = stats.score_codes(score)
        assert stats.auc_from_codes(codes, label) == pytest.approx(expected, abs=1e-12)
        roc = stats.roc_curve(score, label)
        assert np.trapezoid(roc.tpr, roc.fpr) == pytest.approx(expected, abs=1e-12)

    def test_degenerate_auc_has_a_reason(self):
        res = stats.auc_result([0.2, 0.3], [1, 1])
        assert math.isnan(res.value) and res.n_neg == 0 and "no negative" in res.reason
        res = stats.auc_result([0.2, 0.3], [False, False])
        assert math.isnan(res.value) and "no positive" in res.reason
        roc = stats.roc_curve([0.2, 0.3], [0, 0])
        assert roc.reason and np.isnan(roc.tpr).all()
        assert math.isnan(stats.auc_from_codes([0, 1], [1, 1]))

    def test_bad_labels(self):
        with pytest.raises(ValueError, match="0/1"):
            stats.auc([1, 2], [0, 2])
        with pytest.raises(ValueError, match="length"):
            stats.auc([1, 2, 3], [0, 1])

    def test_roc_curve_hand_points(self):
        roc = stats.roc_curve([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1])
        assert roc.thresholds.tolist() == [np.inf, 0.8, 0.4, 0.35, 0.1]
        assert roc.tpr.tolist() == [0.0, 0.5, 0.5, 1.0, 1.0]
        assert roc.fpr.tolist() == [0.0, 0.0, 0.5, 0.5, 1.0]
        assert roc.auc == 0.75

    def test_spearman_hand_values(self):
        assert stats.spearman([1, 2, 3], [1, 3, 2]) == pytest.approx(0.5)
        assert stats.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
        assert math.isnan(stats.spearman([1, 1, 1], [1, 2, 3]))

    @FAST
    @given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), min_size=3, max_size=40))
    def test_spearman_and_kendall_match_scipy(self, pairs):
        x, y = map(np.array, zip(*pairs))
        if len(set(x)) < 2 or len(set(y)) < 2:
            assert math.isnan(stats.spearman(x, y)) and math.isnan(stats.kendall_tau_b(x, y))
            return
        assert stats.spearman(x, y) == pytest.approx(scipy.stats.spearmanr(x, y).statistic, abs=1e-12)
        assert stats.kendall_tau_b(x, y) == pytest.approx(scipy.stats.kendalltau(x, y).statistic, abs=1e-12)

    def test_binary_label_spearman(self):
        # spec §8: Spearman between the 0/1 label and dropped mass (claim 86)
        label = np.array([0, 0, 1, 1, 0, 1])
        mass = np.array([0.1, 0.2, 0.3, 0.4, 0.25, 0.05])
        assert stats.spearman(label, mass) == pytest.approx(scipy.stats.spearmanr(label, mass).statistic)


# ----------------------------------------------------------------------------- bootstrap


def frame(n_docs=6, rows=30, seed=3):
    rng = np.random.default_rng(seed)
    doc = np.repeat(np.arange(n_docs), rows)
    return pl.DataFrame(
        {
            "doc": doc,
            "c_hat": np.round(rng.random(doc.size) * 0.1 + 0.01 * doc, 3),
            "mass": rng.random(doc.size),
        }
    )


def manual_replicates(df, column, statistic, B, seed):
    """The documented resampling, spelled out: draw n_docs clusters with replacement per resample."""
    keys = np.unique(df["doc"].to_numpy())
    picks = np.random.default_rng(seed).integers(0, keys.size, size=(B, keys.size))
    values = df[column].to_numpy()
    docs = df["doc"].to_numpy()
    return np.array([statistic(np.concatenate([values[docs == keys[p]] for p in row])) for row in picks])


class TestClusterBootstrap:
    def test_matches_explicit_resampling(self):
        df = frame()
        iv = stats.cluster_bootstrap(df, lambda d: np.median(d["c_hat"]), B=200, seed=7, columns=["c_hat"])
        reps = manual_replicates(df, "c_hat", np.median, 200, 7)
        assert iv.estimate == np.median(df["c_hat"].to_numpy())
        assert (iv.low, iv.high) == tuple(np.quantile(reps, [0.025, 0.975]))
        assert iv.B == 200 and iv.n_clusters == 6 and iv.seed == 7 and iv.level == 0.95

    def test_two_constant_documents(self):
        # doc 0 all zeros, doc 1 all ones: a resample's mean is 0, 1/2 or 1
        df = pl.DataFrame({"doc": [0, 0, 1, 1], "v": [0.0, 0.0, 1.0, 1.0]})
        reps = stats.bootstrap_replicates(df, lambda d: d["v"].mean(), B=400, seed=1, columns=["v"])
        assert set(np.unique(reps)) == {0.0, 0.5, 1.0}
        assert np.mean(reps == 0.5) == pytest.approx(0.5, abs=0.08)
        iv = stats.cluster_bootstrap(df, lambda d: d["v"].mean(), B=400, seed=1, columns=["v"])
        assert (iv.estimate, iv.low, iv.high) == (0.5, 0.0, 1.0)

    def test_input_forms_agree(self):
        df = frame()
        f_np = lambda d: float(np.mean(d["c_hat"]))
        a = stats.cluster_bootstrap(df, f_np, B=50, seed=2, columns=["c_hat"])
        b = stats.cluster_bootstrap(df, lambda d: d["c_hat"].mean(), B=50, seed=2)  # polars per resample
        c = stats.cluster_bootstrap({k: df[k].to_numpy() for k in df.columns}, f_np, B=50, seed=2)
        d = stats.cluster_bootstrap(df["c_hat"].to_numpy(), np.mean, cluster=df["doc"].to_numpy(), B=50, seed=2)
        for other in (b, c, d):
            assert (other.estimate, other.low, other.high) == pytest.approx((a.estimate, a.low, a.high), rel=1e-12)

    def test_seeded(self):
        df = frame()
        f = lambda d: np.median(d["c_hat"])
        one = stats.cluster_bootstrap(df, f, B=100, seed=5, columns=["c_hat"])
        assert one == stats.cluster_bootstrap(df, f, B=100, seed=5, columns=["c_hat"])
        assert one != stats.cluster_bootstrap(df, f, B=100, seed=6, columns=["c_hat"])

    def test_one_cluster_has_no_spread(self):
        df = pl.DataFrame({"doc": [0] * 5, "v": [1.0, 2.0, 3.0, 4.0, 5.0]})
        iv = stats.cluster_bootstrap(df, lambda d: np.median(d["v"]), B=20, columns=["v"])
        assert (iv.low, iv.estimate, iv.high) == (3.0, 3.0, 3.0)

    def test_quantile_fast_path_equals_generic(self):
        df = frame(n_docs=9, rows=25)
        for q in (0.5, 0.9, 0.99):
            f = stats.median if q == 0.5 else (lambda v: stats.quantile(v, q))  # noqa: B023
            generic = stats.cluster_bootstrap(df, lambda d: f(d["c_hat"]), B=150, seed=4, columns=["c_hat"])  # noqa: B023
            fast = closed_form.cluster_bootstrap_quantile(
                df["c_hat"].to_numpy(), df["doc"].to_numpy(), q=q, B=150, seed=4
            )
            assert fast == generic

    @pytest.mark.parametrize("n_docs,rows,infinite", [(2, 3, False), (9, 25, True), (40, 7, True)])
    def test_quantile_bisection_equals_scan_and_generic(self, monkeypatch, n_docs, rows, infinite):
        df = frame(n_docs=n_docs, rows=rows)
        values = df["c_hat"].to_numpy().copy()
        if infinite:
            values[::5] = np.inf  # kappa_hat = +inf records, and ties
        for q in (0.5, 0.9, 0.25):
            f = stats.median if q == 0.5 else (lambda v: stats.quantile(v, q))  # noqa: B023
            generic = stats.cluster_bootstrap(
                {"v": values, "doc": df["doc"].to_numpy()}, lambda d: f(d["v"]), B=120, seed=9, columns=["v"]
            )  # noqa: B023
            bisection = closed_form.cluster_bootstrap_quantile(values, df["doc"].to_numpy(), q=q, B=120, seed=9)
            with monkeypatch.context() as m:
                m.setattr(closed_form, "_BISECT_LIMIT", 0)  # the scan, one resample at a time
                scan = closed_form.cluster_bootstrap_quantile(values, df["doc"].to_numpy(), q=q, B=120, seed=9)
            assert bisection == scan == generic

    @pytest.mark.parametrize("n_docs,rows,n_codes", [(2, 4, 3), (6, 30, 12), (25, 40, 700)])
    def test_auc_fast_path_equals_generic(self, n_docs, rows, n_codes):
        rng = np.random.default_rng(n_docs)
        doc = np.repeat(np.arange(n_docs), rows)
        codes = rng.integers(0, n_codes, doc.size)  # ties when n_codes is small
        label = rng.random(doc.size) < 0.4
        label[doc == 0] = True  # resamples drawing only document 0 have no negatives: NaN, omitted
        generic = stats.cluster_bootstrap(
            {"c": codes, "y": label},
            lambda d: stats.auc_from_codes(d["c"], d["y"], n_codes),
            cluster=doc,
            B=200,
            seed=5,
            nan_policy="omit",
        )
        fast = closed_form.cluster_bootstrap_auc(codes, label, doc, B=200, seed=5, n_codes=n_codes)
        assert fast == generic
        assert n_docs > 2 or fast.n_invalid > 0  # two documents: some resamples are document 0 twice

    def test_vector_statistic(self):
        df = frame()
        reps = stats.bootstrap_replicates(
            df, lambda d: [np.median(d["c_hat"]), np.mean(d["mass"])], B=30, columns=["c_hat", "mass"]
        )
        assert reps.shape == (30, 2)
        low, high = stats.percentile_interval(reps)
        assert low.shape == (2,) and np.all(low <= high)
        with pytest.raises(TypeError, match="scalar"):
            stats.cluster_bootstrap(df, lambda d: [1.0, 2.0], B=5, columns=["c_hat"])

    def test_nan_policy(self):
        # two documents with one label each: resamples drawing only one document have no AUC
        df = pl.DataFrame({"doc": [0, 0, 1, 1], "s": [0.1, 0.2, 0.3, 0.9], "y": [0, 0, 1, 1]})
        f = lambda d: stats.auc(d["s"], d["y"])
        prop = stats.cluster_bootstrap(df, f, B=100, seed=0, columns=["s", "y"])
        assert math.isnan(prop.low) and prop.n_invalid > 0
        omit = stats.cluster_bootstrap(df, f, B=100, seed=0, columns=["s", "y"], nan_policy="omit")
        assert omit.low == omit.high == 1.0 and omit.n_invalid == prop.n_invalid

    def test_paired_difference_uses_the_same_resamples(self):
        df = frame().with_columns(shifted=pl.col("c_hat") + 1.0)
        iv = stats.paired_bootstrap_difference(
            df, lambda d: np.mean(d["c_hat"]), lambda d: np.mean(d["shifted"]), B=200, columns=["c_hat", "shifted"]
        )
        assert iv.estimate == pytest.approx(-1.0) and iv.low == pytest.approx(-1.0) and iv.high == pytest.approx(-1.0)
        assert iv.excludes(0.0)
        same = stats.paired_bootstrap_difference(
            df, lambda d: np.median(d["c_hat"]), lambda d: np.median(d["c_hat"]), B=50, columns=["c_hat"]
        )
        assert (same.low, same.high) == (0.0, 0.0)
        # resampled independently, the same two samples give a genuinely wide interval
        ind = stats.independent_bootstrap_difference(df, df, lambda d: np.mean(d["c_hat"]), B=200, columns=["c_hat"])
        assert ind.estimate == 0.0 and ind.low < -0.005 and ind.high > 0.005

    def test_speed_at_record_scale(self):
        rng = np.random.default_rng(0)
        n = 100_000
        doc = rng.integers(0, 20, n)
        values = rng.random(n)
        start = time.perf_counter()
        closed_form.cluster_bootstrap_quantile(values, doc, B=1000)
        assert time.perf_counter() - start < 5.0
        codes = stats.score_codes(values)
        label = rng.random(n) < 0.3
        start = time.perf_counter()
        stats.cluster_bootstrap(
            {"doc": doc, "code": codes, "y": label}, lambda d: stats.auc_from_codes(d["code"], d["y"]), B=100
        )
        assert time.perf_counter() - start < 5.0
