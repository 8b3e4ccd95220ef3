"""`python -m trustmass.bench certify --shard PATH`: the certification benchmark on one capture shard."""

import numpy as np
import pytest

from trustmass.bench import certify as bench
from trustmass.bench.certify_rows import shard_rows
from trustmass.certification import runner as R
from trustmass.certification.misocp import STATUSES


@pytest.fixture(scope="module")
def tiny_shard(tmp_path_factory):
    from capture.tiny_models import tiny_shard as capture_tiny_shard

    return capture_tiny_shard(tmp_path_factory.mktemp("cap"))


@pytest.fixture(scope="module")
def same_named_shards(tmp_path_factory):
    """Two captures whose files share a name (austen/s.safetensors, stdlib/s.safetensors), with different sampled rows."""
    from capture.tiny_models import tiny_shard as capture_tiny_shard

    root = tmp_path_factory.mktemp("capture")
    (root / "austen").mkdir()
    (root / "stdlib").mkdir()
    return [
        capture_tiny_shard(root / "austen"),
        capture_tiny_shard(root / "stdlib", n_tokens=100, min_position=60, seed=2),
    ]


def test_shard_rows_respect_min_keys(tiny_shard):
    every = shard_rows(tiny_shard)
    assert every and all(r["n_keys"] <= r["query_pos"] + 1 for r in every)
    for r in every[:3]:  # n_keys is the N of the instance load_instance builds
        inst, _ = R.load_instance(tiny_shard, r["layer"], r["head"], r["kv_head"], r["query_pos"])
        assert inst.n_keys == r["n_keys"]
    cut = int(np.median([r["n_keys"] for r in every]))
    some = shard_rows(tiny_shard, min_keys=cut)
    assert 0 < len(some) <= len(every) and all(r["n_keys"] >= cut for r in some)
    with pytest.raises(ValueError, match="no sampled row"):
        bench.run(shard=tiny_shard, min_keys=10**6, budgets=(2,))


def test_shard_mode_one_row_per_budget_and_instance(tiny_shard):
    budgets = (2, 4)
    out = bench.run(
        instances=2, seed=0, shard=tiny_shard, min_keys=40, time_limit=0.3, memory_limit_mb=500.0, budgets=budgets
    )
    rows = out["instances"]
    assert out["mode"] == "shard" and len(rows) == 2 * len(budgets)
    assert [r["budget"] for r in rows] == [2, 2, 4, 4]
    assert len({(r["budget"], r["layer"], r["head"], r["query_pos"]) for r in rows}) == len(rows)
    for r in rows:
        assert r["status"] in STATUSES
        assert r["n_keys"] >= 40 and r["n_solves"] == len(r["solve_outcomes"])
        assert r["es_cert"] <= r["es_pool"] * (1 + 1e-12)  # the certified upper bound never exceeds ES_pool
        assert r["lower_bound"] <= r["es_cert"] * (1 + 1e-9)
        assert r["enumeration_seconds"] >= 0 and r["certify_seconds"] >= 0
    assert set(out["by_budget"]) == {"2", "4"}
    assert all(sorted(v["statuses"]) == v["statuses"] and len(v["statuses"]) == 2 for v in out["by_budget"].values())
    again = bench.run(
        instances=2, seed=0, shard=tiny_shard, min_keys=40, time_limit=0.3, memory_limit_mb=500.0, budgets=budgets
    )
    assert [(r["layer"], r["head"], r["query_pos"]) for r in again["instances"]] == [
        (r["layer"], r["head"], r["query_pos"]) for r in rows
    ]


def test_cli_passes_shard_and_min_keys(tmp_path, monkeypatch, capsys):
    import json

    from trustmass.bench.__main__ import main

    seen = {}

    def fake_run(instances=2, seed=0, shard=None, min_keys=0, time_limit=10.0, budgets=(4, 8, 16, 32)):
        seen.update(
            instances=instances, seed=seed, shard=shard, min_keys=min_keys, time_limit=time_limit, budgets=budgets
        )
        return {"benchmark": "certify", "mode": "shard" if shard else "records"}

    monkeypatch.setattr(bench, "run", fake_run)
    target = tmp_path / "b.json"
    assert (
        main(["certify", "--shard", "x.safetensors", "--min-keys", "40", "--instances", "1", "--out", str(target)]) == 0
    )
    assert seen == {
        "instances": 1,
        "seed": 0,
        "shard": "x.safetensors",
        "min_keys": 40,
        "time_limit": 10.0,
        "budgets": (4, 8, 16, 32),
    }
    assert (
        json.loads(target.read_text())
        == json.loads(capsys.readouterr().out)
        == {"benchmark": "certify", "mode": "shard"}
    )
    assert main(["certify", "--instances", "1"]) == 0 and seen["shard"] is None and seen["min_keys"] == 0
    assert main(["certify", "--time-limit", "120", "--budgets", "8,32"]) == 0
    assert seen["time_limit"] == 120.0 and seen["budgets"] == (8, 32)


def test_records_mode_reads_the_study_layout(tiny_shard, tmp_path):
    """The default mode: a manifest from ceiling records, instances reloaded from capture_root."""
    import shutil

    from trustmass.ceiling.records import CeilingSettings, shard_records

    root = tmp_path / "capture" / "tiny" / "words"
    root.mkdir(parents=True)
    shutil.copy(tiny_shard, root / "0000.safetensors")
    records = shard_records(
        str(root / "0000.safetensors"),
        "tiny",
        "words",
        "0000",
        CeilingSettings(enumerated=(2, 4), native=(8,), native_extra=2),
    )
    (tmp_path / "ceiling").mkdir()
    records.write_parquet(tmp_path / "ceiling" / "r.parquet")
    out = bench.run(
        instances=1,
        records_glob=str(tmp_path / "ceiling" / "*.parquet"),
        capture_root=str(tmp_path / "capture"),
        time_limit=0.3,
        memory_limit_mb=500.0,
        budgets=(2, 4),
    )
    assert [r["budget"] for r in out["instances"]] == [2, 4] and set(out["by_budget"]) == {"2", "4"}
    for r in out["instances"]:
        assert r["status"] in STATUSES and r["es_cert"] <= r["es_pool"] * (1 + 1e-12)
    with pytest.raises(FileNotFoundError, match="snakemake records"):
        bench.run(records_glob=str(tmp_path / "nowhere" / "*.parquet"))


def test_compare_mode_runs_both_certifiers_on_the_same_rows(tiny_shard):
    """`certify --compare`: one manifest, each row certified by the paper's protocol and by bnb, and
    the per-budget table of decided shares, seconds and their ratio."""
    from trustmass.bench.certify_compare import DECIDED, summarise

    out = bench.run(
        shard=tiny_shard, compare=True, min_keys=40, n_deciles=2, time_limit=5.0, paper_time_limit=2.0, budgets=(2, 4)
    )
    rows = out["instances"]
    assert out["mode"] == "compare" and len(rows) == 2 * 2  # 2 budgets x 2 deciles x 1 per stratum
    for r in rows:
        assert r["paper"]["status"] in STATUSES and r["bnb"]["status"] in STATUSES
        assert r["bnb"]["lower_over_cert"] <= 1.0 + 1e-9 and r["bnb"]["es_cert_over_pool"] <= 1.0 + 1e-12
    lines = {line["budget"]: line for line in out["summary"]}
    assert set(lines) == {2, 4, "all"} and lines["all"]["rows"] == 4
    share = sum(r["bnb"]["status"] in DECIDED for r in rows) / 4
    assert lines["all"]["bnb_decided"] == share and "median ratio" in out["table"]
    assert summarise(rows, (2, 4)) == out["summary"]
    shares = [(p["decided"], p["gap_1pct"]) for p in out["curve"]]  # bnb's budget -> gap curve: monotone
    assert shares == sorted(shares) and "gap <= 1 %" in out["curve_table"]
    assert shares[-1][1] == lines["all"]["bnb_gap_1pct"]  # the curve's last point is the run's own budget


def test_compare_mode_reloads_each_row_from_its_own_shard(same_named_shards):
    """`certify --compare --shard austen/0000.safetensors --shard stdlib/0000.safetensors` died after its first
    row (KeyError: query position not captured): the rows were looked up by file name, which both shards share."""
    shards = same_named_shards
    own = {(sh, r["layer"], r["head"], r["query_pos"]): r["n_keys"] for sh in shards for r in shard_rows(sh)}
    assert len({key[1:] for key in own}) == len(own)  # the two shards sampled different rows
    out = bench.run(
        shard=shards,
        compare=True,
        min_keys=1,
        n_deciles=1,
        per_stratum=100,
        time_limit=5.0,
        budgets=(2,),
        certifiers=("bnb",),
    )
    rows = out["instances"]
    assert len(rows) == len(own) and {r["shard"] for r in rows} == set(shards)  # every row of both shards, once
    assert all(r["n_keys"] == own[(r["shard"], r["layer"], r["head"], r["query_pos"])] for r in rows)
    assert all(r["bnb"]["status"] in STATUSES for r in rows)


def test_a_certifier_left_out_is_not_run_in_every_column(tiny_shard):
    """`--certifiers bnb` printed the paper's columns as 0 % (decided none) and nan: they were not run."""
    import json

    from trustmass.bench.certify_compare import COLUMNS, NOT_RUN

    out = bench.run(
        shard=tiny_shard, compare=True, min_keys=40, n_deciles=2, time_limit=5.0, budgets=(2, 4), certifiers=("bnb",)
    )
    assert out["certifiers"] == ["bnb"] and all(r["paper"]["status"] == NOT_RUN for r in out["instances"])
    for line in out["summary"]:
        assert all(line[f"paper_{c}"] is None for c in COLUMNS) and line["median_ratio"] is None
        assert line["bnb_decided"] is not None and line["bnb_median_s"] >= 0
    json.dumps(out, allow_nan=False)  # nothing in it is NaN
    body = out["table"].splitlines()[2:]
    assert len(body) == len(out["summary"])
    for text in body:
        cells = [c.strip() for c in text.strip("|").split("|")]
        assert cells[2:5] == [NOT_RUN] * 3 and cells[8] == NOT_RUN  # the paper's columns and the ratio
        assert NOT_RUN not in cells[5:8] and "nan" not in text
    with pytest.raises(ValueError, match="unknown scip; fix: --certifiers"):
        bench.run(shard=tiny_shard, compare=True, min_keys=40, n_deciles=2, budgets=(2,), certifiers=("scip",))
