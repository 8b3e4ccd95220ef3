"""Figures and tables from summary frames: files, panels, columns.  That restyling a figure reruns only the
plotting rules is a test of the tiny real run (tests/workflow/test_end_to_end.py)."""

import numpy as np
import polars as pl
import pytest

from trustmass.report import style, tables
from trustmass.report.engine import StatisticsSettings
from trustmass.report.figures import ceiling as figures
from trustmass.report.figures import loss as loss_figures
from trustmass.report.frames import ceiling as S
from trustmass.report.layouts import ceiling as table_layouts
from trustmass.report.layouts.ceiling import LAYOUTS

MODELS = ("alpha", "beta")
LAYERS, HEADS = 4, 3


def synthetic_records(seed=0):
    """Two models, two corpora x three documents, 4 layers x 3 heads x 3 rows, budgets 4, 8, 64."""
    rng = np.random.default_rng(seed)
    rows = []
    for model in MODELS:
        for corpus in ("prose", "code"):
            for doc in ("0000", "0001", "0002", "0003"):
                for layer in range(LAYERS):
                    for head in range(HEADS):
                        for r in range(3):
                            base = rng.uniform(0.0, 0.4)
                            for budget in (4, 8, 64):
                                enumerated = budget != 64
                                c = base * (1.0 if enumerated else 0.5) * rng.uniform(0.5, 1.0)
                                es_top = 1.0
                                rows.append(
                                    dict(
                                        model=model,
                                        corpus=corpus,
                                        doc=doc,
                                        layer=layer,
                                        head=head,
                                        kv_head=head,
                                        group_size=1,
                                        query_pos=300 + r,
                                        n_keys=301 + r,
                                        budget=budget,
                                        dropped_mass=base * 8 / budget + 0.01,
                                        D=2.0,
                                        sigma=0.5,
                                        phi=c,
                                        es_top=es_top,
                                        es_pool=(1 - c) if enumerated else None,
                                        pool_extra=4,
                                        n_subsets=100 if enumerated else None,
                                        es_bal=1 - 0.9 * c,
                                        n_swaps=1,
                                        kappa_hat=1 / (1 - c) if enumerated else None,
                                        c_hat=c if enumerated else None,
                                        kappa_hat_bal=1 / 0.95
                                        if enumerated and r == 0
                                        else (1.0 if enumerated else None),
                                        ef_fw=0.5 if enumerated else None,
                                        pi_hat=2 * (1 - c) if enumerated else None,
                                        es_geo=1.4 if enumerated else None,
                                        es_lev=5.0 if enumerated else None,
                                        es_vote=1.0 + c / 3,
                                        bound_2dm=4 * base,
                                        bound_var=3 * base,
                                        enumerated=enumerated,
                                        es_geo_pool=1.1 if enumerated else None,
                                        es_lev_pool=2.0 if enumerated else None,
                                    )
                                )
    return pl.DataFrame(rows, infer_schema_length=None)


@pytest.fixture(scope="module")
def summaries():
    return S.summarize(synthetic_records(), StatisticsSettings(bootstrap=100))


# ----------------------------------------------------------------------------- figures


def test_figure1_panels_bars_and_titles(summaries, tmp_path):
    fig = figures.figure1(summaries["fig1"], "primary")
    full, zoom = fig.axes
    # two models x two enumerated budgets: one block and one cap per bar in each panel
    assert len(full.patches) == 2 * 2 * 2 and len(zoom.patches) == 2 * 2 * 2
    heights = sorted(p.get_height() + p.get_y() for p in full.patches)
    assert heights[-1] == pytest.approx(1.0)  # block + cap reach top-mass = 1
    text = fig._suptitle.get_text()
    assert "Figure 1" in text and "primary slice" in text and "6 documents" in text
    labels = [t.get_text() for t in zoom.texts]
    assert any(t.startswith("ĉ=") for t in labels) and set(MODELS) <= set(labels)
    assert full.get_ylabel().startswith("residual error")
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("ES_pool" in t for t in legend) and any("balancing" in t for t in legend)
    path = tmp_path / "fig1.png"
    style.save(fig, path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not [p for p in tmp_path.iterdir() if ".tmp" in p.name]


def test_figure2_one_row_of_two_heatmaps_per_model(summaries, tmp_path):
    fig = figures.figure2(summaries["fig2"], "all")
    images = [ax for ax in fig.axes if ax.images]
    assert len(images) == 2 * len(MODELS)
    for ax in images:
        assert ax.images[0].get_array().shape == (LAYERS, HEADS)
        assert ax.get_xlabel() == "query head" and ax.get_ylabel() == "layer"
    colorbars = [ax for ax in fig.axes if not ax.images and ax.get_ylabel()]
    assert len(colorbars) == 2 * len(MODELS)
    assert {"median dropped mass m̄ at s = 8", "median κ̂ at s = 8 (≥ 1.5 saturates)"} == {
        ax.get_ylabel() for ax in colorbars
    }
    titles = " ".join(ax.get_title(loc="left") for ax in images)
    assert all(m in titles for m in MODELS) and "cell-level AUC" in titles and "flat cells" in titles
    assert "all documents" in fig._suptitle.get_text()
    style.save(fig, tmp_path / "fig2.png")
    assert (tmp_path / "fig2.png").stat().st_size > 10_000


def test_figures_without_data_say_so():
    empty = S.fig1(synthetic_records().filter(pl.col("budget") == 64))
    fig = figures.figure1(empty)
    assert "no enumerated-budget records" in fig.axes[0].texts[0].get_text()
    with pytest.raises(ValueError, match="population"):
        figures.figure2(pl.DataFrame({"x": [1]}))


def test_figure4_fits_its_axis_to_the_estimates_and_writes_out_a_clipped_interval():
    """Three held-out documents can give a share interval of -25 (the CPU panel's Qwen random cells):
    the share axis stays near the estimates and the clipped end is written at the edge; the figure
    grows with the number of configurations instead of overprinting their labels."""
    from conftest import REPO

    one = pl.read_parquet(REPO / "reference/default/results/stats/loss_table.parquet")
    three = pl.concat([one.with_columns(pl.lit(m).alias("model")) for m in ("a", "b", "c")])
    three = three.with_columns(
        pl.when((pl.col("model") == "b") & (pl.col("config") == "random"))
        .then(-24.7)
        .otherwise(pl.col("share_low"))
        .alias("share_low")
    )
    small, big = loss_figures.figure4(one), loss_figures.figure4(three)
    bottom, top = big.axes[0].get_ylim()
    assert -3 < bottom < 0 < 1 < top < 3
    assert [t.get_text() for t in big.axes[0].texts] == ["-25"]
    assert not small.axes[0].texts  # nothing clipped on the default run's frame
    assert big.get_figheight() > 2 * small.get_figheight()


def test_style_lives_in_one_dict():
    assert {"remainder_color", "cap_color", "balancing_color", "mass_cmap", "kappa_cmap", "dpi", "rule_colors"} <= set(
        style.STYLE
    )
    assert figures.STYLE is style.STYLE and loss_figures.STYLE is style.STYLE  # one style for every figure


# ----------------------------------------------------------------------------- tables


def test_table1_layout_and_pooled_row(summaries, tmp_path):
    table = tables.write(LAYOUTS["table1"], summaries["table1"], tmp_path / "t1.csv", tmp_path / "t1.md")
    assert table.columns == ["population", "model", "statistic", "s4", "s8", "s64"]
    primary = table.filter(pl.col("population") == "primary")
    assert primary["model"].to_list() == ["alpha"] * 3 + ["beta"] * 3 + ["(pooled)"]
    share = primary.filter(pl.col("statistic").str.contains("s = 8 value"))
    assert share["s8"].to_list() == [1.0, 1.0, 1.0]
    csv = pl.read_csv(tmp_path / "t1.csv")
    assert csv.columns == table.columns and csv.height == table.height
    md = (tmp_path / "t1.md").read_text()
    assert "| s = 64 ‡ |" in md and "| s = 4 |" in md and "(pooled)" in md
    assert md.count("### ") == 2  # primary and all (4 documents, not 3: they differ)


def test_table2_6_8_columns_and_markdown(summaries, tmp_path):
    t2 = table_layouts.table2(summaries["table2"])
    assert t2.columns[:4] == ["population", "model", "corpus", "budgets"]
    assert {"label_share", "label_share_low", "auc", "auc_high", "median_kappa_hat"} <= set(t2.columns)
    assert t2.filter(pl.col("population") == "primary")["budgets"].to_list()[:3] == ["pooled", "4", "8"]
    md2 = tables.markdown(LAYOUTS["table2"], summaries["table2"], kappa_threshold=1.11)
    assert "share κ̂ > 1.11" in md2 and "[" in md2
    t6 = table_layouts.table6(summaries["table6"])
    assert t6.height == 2 * len(MODELS) and {
        "auc",
        "edge_int_ratio",
        "rho_depth",
        "rho_phi_es_pool",
        "median_kappa_hat_bal",
    } <= set(t6.columns)
    t8 = table_layouts.table8(summaries["table8"])
    assert t8.filter(pl.col("population") == "all")["budget"].to_list() == [4, 8, 4, 8]
    md8 = tables.markdown(LAYOUTS["table8"], summaries["table8"])
    assert "p99 π̂" in md8 and "vote degrades" in md8
    row = md8.splitlines()[6]
    assert row.startswith("| alpha | 4 |") and row.count("|") == len(table_layouts.TABLE8_COLUMNS) + 3


def test_identical_populations_are_written_once(tmp_path):
    three_docs = synthetic_records().filter(pl.col("doc") != "0003")
    frames = S.summarize(three_docs, StatisticsSettings(bootstrap=0))
    md = tables.markdown(LAYOUTS["table6"], frames["table6"])
    assert tables.SAME_AS_PRIMARY in md and md.count("| alpha |") == 1


def test_missing_summary_columns_are_named():
    with pytest.raises(ValueError, match="lacks"):
        table_layouts.table8(pl.DataFrame({"population": ["all"], "model": ["m"]}))


def test_a_switched_off_panel_renders_as_an_empty_table_that_says_so(tmp_path):
    import polars as pl

    from trustmass.report.layouts.loss import LAYOUTS
    from trustmass.report.tables import write

    table = write(LAYOUTS["probe_table"], pl.DataFrame(), tmp_path / "t.csv", tmp_path / "t.md")
    assert table.height == 0
    assert "switched off in the configuration" in (tmp_path / "t.md").read_text()


def test_the_swap_figure_draws_a_row_of_panels_per_model():
    """Three models' curves in one panel joined their points into one line with vertical jumps (the
    CPU panel's first run): each model gets its own row."""
    from conftest import REPO
    from trustmass.report.figures.diagnostics import swap_figure

    one = pl.read_parquet(REPO / "reference/default/results/stats/swap_curves.parquet")
    two = pl.concat([one.with_columns(pl.lit(m).alias("model")) for m in ("a", "b")])
    single, double = swap_figure(one), swap_figure(two)
    outcomes = one["outcome"].n_unique()
    assert len(single.axes) == outcomes and len(double.axes) == 2 * outcomes
    assert double.axes[outcomes].get_title().startswith("b\n")
    drawn = [line for line in double.axes[0].lines if line.get_marker() == "o"]
    assert all(np.all(np.diff(line.get_xdata()) > 0) for line in drawn)  # one point per fraction: no vertical jumps
