"""The access-law statistics (trustmass.report.frames.access), figure and table, on records made by the
capture's own record writer from hand-built dense attention."""

import numpy as np
import polars as pl
import pytest

from trustmass.capture.access import AccessLaws, AccessOptions
from trustmass.core.access_law import participation_ratio, total_variation
from trustmass.report.engine import HeadlinePopulation, StatisticsSettings
from trustmass.report.frames.access import summarize
from trustmass.report.render import render

T, HEADS, LAYERS, TAILS, DILUTION = 24, 3, 2, (4, 8), 8
TARGET = (5, 6)


def causal_attention(rng, n):
    """A random causal attention matrix [n, n] (rows on the simplex of their visible keys)."""
    logits = rng.normal(scale=2.0, size=(n, n))
    logits[np.triu_indices(n, 1)] = -np.inf
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True)


def records(seed, corpus, doc, task=None, target_heads=None):
    """The access records of one document whose heads attend as drawn (``target_heads``: the heads whose
    last rows put mass on the target, the others none)."""
    rng = np.random.default_rng(seed)
    laws = AccessLaws(AccessOptions(tail_rows=TAILS, dilution_rows=DILUTION, target=TARGET if task else ()))
    laws.n_tokens, laws.decode_token = T, 0
    dense = {}
    for layer in range(LAYERS):
        P = np.stack([causal_attention(rng, T) for _ in range(HEADS)])
        if target_heads is not None:
            for h in range(HEADS):
                if h not in target_heads:
                    P[h, -DILUTION:, list(TARGET)] = 0.0
                    P[h] /= P[h].sum(axis=1, keepdims=True)
        decode = rng.dirichlet(np.full(T + 1, 0.5), size=HEADS)
        windows = laws.options.windows
        laws.prefill[layer] = {
            "column_mass": P.sum(axis=1),
            "tails": np.stack([P[:, -k:].sum(axis=1) for k in windows], axis=1),
            "last": P[:, -1],
            "group": 1,
        }
        laws.decode[layer] = decode
        dense[layer] = (P, decode)
    return laws.frame(model="m", corpus=corpus, doc=doc, doc_id=f"{corpus}-{doc}", task=task), dense


@pytest.fixture(scope="module")
def study():
    docs = [records(i, "prose", f"{i:04d}") for i in range(3)]
    tasks = [records(10, "tasks", "0000", "niah_single", target_heads={1}), records(11, "tasks", "0001", "vt")]
    frame = pl.concat([f for f, _ in docs + tasks])
    frames = summarize(
        frame, StatisticsSettings(bootstrap=50), HeadlinePopulation(("m",), "prose"), list(TAILS), DILUTION
    )
    return frames, docs, tasks


def test_access_law_frame_medians_and_prop3(study):
    frames, docs, _ = study
    law = frames["access_law"].filter((pl.col("population") == "all") & (pl.col("corpus") == "prose"))
    assert law["tail_rows"].to_list() == list(TAILS)
    assert law["n"].to_list() == [3 * LAYERS * HEADS] * 2 and law["n_docs"].to_list() == [3, 3]
    assert law["triangle_share"].to_list() == [1.0, 1.0]  # Prop. 3 holds in every cell
    for k, rec in zip(TAILS, law.iter_rows(named=True)):
        tv_star_tail, tv_star_all, tv_last_tail = [], [], []
        for _, dense in docs:
            for P, decode in dense.values():
                p_star = decode[:, :-1] / decode[:, :-1].sum(axis=1, keepdims=True)
                tv_star_tail += list(total_variation(p_star, P[:, -k:].mean(axis=1)))
                tv_star_all += list(total_variation(p_star, P.mean(axis=1)))
                tv_last_tail += list(total_variation(P[:, -1], P[:, -k:].mean(axis=1)))
        assert rec["tv_decode_tail"] == pytest.approx(np.median(tv_star_tail))
        assert rec["tv_decode_all"] == pytest.approx(np.median(tv_star_all))
        assert rec["tv_last_tail"] == pytest.approx(np.median(tv_last_tail))
        assert rec["tv_decode_tail_low"] <= rec["tv_decode_tail"] <= rec["tv_decode_tail_high"]
    assert set(frames["access_law"]["corpus"].unique().to_list()) == {"prose", "tasks"}


def test_dilution_is_the_participation_ratio_of_the_heads_target_mass(study):
    frames, _, tasks = study
    dilution = frames["access_dilution"]
    assert dilution.height == 2 * LAYERS and set(dilution["n_heads"].to_list()) == {HEADS}
    one_head = dilution.filter(pl.col("task") == "niah_single")
    assert one_head["r_eff"].to_list() == pytest.approx([1.0] * LAYERS)  # only head 1 reads the target
    assert one_head["top_head_share"].to_list() == pytest.approx([1.0] * LAYERS)
    _, dense = tasks[1]
    for layer, (P, _) in dense.items():
        m = P[:, -DILUTION:, list(TARGET)].sum(axis=(1, 2))  # m_h = sum over the last rows of A_h(q, i*)
        rec = dilution.filter((pl.col("task") == "vt") & (pl.col("layer") == layer)).row(0, named=True)
        assert rec["r_eff"] == pytest.approx(participation_ratio(m)) and 1.0 <= rec["r_eff"] <= HEADS
        assert rec["target_mass"] == pytest.approx(m.sum()) and rec["target"] == "5..6"


def test_layers_frame_marks_the_headline_population(study):
    frames, _, _ = study
    layers = frames["access_layers"]
    assert set(layers.filter(pl.col("headline"))["corpus"].to_list()) == {"prose"}
    assert set(layers["law"].unique().to_list()) == {"last", "tail", "all", "debiased", "decode"}
    assert layers.filter(pl.col("law") == "decode")["tv_decode"].max() == 0.0


def test_the_figure_and_the_table_render(study, tmp_path):
    frames, _, _ = study
    for name, frame in frames.items():
        frame.write_parquet(tmp_path / f"{name}.parquet")
    summary = render(
        "access_figure",
        [str(tmp_path / "access_layers.parquet"), str(tmp_path / "access_dilution.parquet")],
        {"png": str(tmp_path / "access_law.png")},
        {},
    )
    assert summary["rows"] == [frames["access_layers"].height, frames["access_dilution"].height]
    assert (tmp_path / "access_law.png").stat().st_size > 10_000
    files = {"csv": str(tmp_path / "t.csv"), "md": str(tmp_path / "t.md"), "html": str(tmp_path / "t.html")}
    assert (
        render("access_table", [str(tmp_path / "access_law.parquet")], files, {})["rows"] == frames["access_law"].height
    )
    text = (tmp_path / "t.md").read_text(encoding="utf-8")
    assert "| m | prose | 4 | 18 | 3 |" in text and "Prop. 3 holds" in text
