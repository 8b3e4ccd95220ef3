"""Benchmark data as deployment items: the three formats, truncation, metrics, and no gating in the rows."""

import json

import polars as pl
import pytest
from test_runner import BUDGET, char_tok, item, kvzip_ready, llama  # noqa: F401 (fixtures)
from test_tasks import PROSE

from trustmass.deploy.external import benchmark_items, load_external
from trustmass.deploy.job import condition_rows


def jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_the_three_formats_load_into_one_frame(tmp_path):
    ruler = jsonl(
        tmp_path / "niah.jsonl",
        [
            {
                "index": 3,
                "input": "ctx line\nmore ctx\nWhat is it?",
                "outputs": ["5437923"],
                "length": 8177,
                "answer_prefix": " The",
            },
            {"index": 4, "input": "ctx2\nq2?", "outputs": ["1", "2"], "length": 90},
        ],
    )
    frame = load_external("ruler", ruler)
    assert frame["item_id"].to_list() == ["3", "4"] and frame["gold"].to_list() == [["5437923"], ["1", "2"]]
    assert frame["context"][0] == "ctx line\nmore ctx" and frame["question"][0] == "\nWhat is it?"  # the last line
    assert frame["answer_prefix"].to_list() == [" The", None] and frame["length"].to_list() == [8177, 90]
    lb = jsonl(
        tmp_path / "qasper.jsonl",
        [
            {
                "_id": "ab",
                "context": "doc",
                "input": "why?",
                "answers": ["because"],
                "length": 5,
                "dataset": "qasper",
                "all_classes": None,
            }
        ],
    )
    got = load_external("longbench", lb).row(0, named=True)
    assert (got["item_id"], got["question"], got["gold"], got["task"]) == ("ab", "why?", ["because"], "qasper")
    kv = tmp_path / "kvpress.parquet"
    pl.DataFrame(
        {
            "context": ["c"],
            "question": ["q"],
            "answer_prefix": ["A:"],
            "answers": [["x"]],
            "task": ["trec"],
            "max_new_tokens": [84],
            "all_classes": [["x", "y"]],
        }
    ).write_parquet(kv)
    got = load_external("kvpress", kv).row(0, named=True)
    assert got["gold"] == ["x"] and got["max_new_tokens"] == 84 and got["all_classes"] == ["x", "y"]


def test_bad_data_gets_a_clear_error(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match=r"RULER's scripts/data/prepare.py.*deploy\.benchmarks\[\]\.path"):
        load_external("ruler", tmp_path / "absent.jsonl")
    lb = jsonl(tmp_path / "bad.jsonl", [{"context": "doc", "answers": ["a"], "length": 5}])
    with pytest.raises(ValueError, match=r"lacks field\(s\) \['input'\]"):
        load_external("longbench", lb)
    with pytest.raises(ValueError, match="kind = 'babilong'"):
        load_external("babilong", lb)
    import datasets

    def offline(name, **kw):
        raise ConnectionError(f"no route to the hub for {name} {kw}")

    monkeypatch.setattr(datasets, "load_dataset", offline)  # the hub's answer here, without waiting on its retries
    with pytest.raises(FileNotFoundError, match="could not load 'simonjegou/ruler'.*'4096'.*ConnectionError"):
        load_external("kvpress", "hub:simonjegou/ruler:4096")


def kvpress_frame(n=3, context=PROSE, task="qasper"):
    return pl.DataFrame(
        {
            "context": [context] * n,
            "question": [f"\nQuestion {i}: who?" for i in range(n)],
            "answer_prefix": ["Answer:"] * n,
            "gold": [["Mr. Bennet"]] * n,
            "task": [task] * n,
            "item_id": [str(i) for i in range(n)],
            "max_new_tokens": [4] * n,
            "all_classes": [[]] * n,
            "length": [None] * n,
        }
    )


def test_items_fit_max_length_by_losing_the_middle_of_the_context():
    tok = char_tok()
    items = benchmark_items(kvpress_frame(), tok, name="lb", family="longbench", max_length=300, n_items=2)
    assert [it.item_id for it in items] == ["lb-qasper-0", "lb-qasper-1"]
    it = items[0]
    assert it.context_ids.size + it.question_ids.size == 300 and it.setting == "benchmark" and it.metric == "qa_f1"
    full = tok.encode(PROSE, add_special_tokens=False)
    room = it.context_ids.size
    assert it.context_ids.tolist() == full[: room // 2] + full[len(full) - (room - room // 2) :]
    assert it.max_new_tokens == 4 and it.score("It was Mr Bennet") == pytest.approx(100 * 2 * (2 / 4) / (2 / 4 + 1))
    with pytest.raises(ValueError, match="exceeds the model's window"):
        benchmark_items(
            kvpress_frame(), tok, name="lb", family="longbench", max_length=300, n_items=1, max_positions=256
        )
    with pytest.raises(ValueError, match="no records of tasks"):
        benchmark_items(
            kvpress_frame(), tok, name="lb", family="longbench", max_length=300, n_items=1, tasks=["hotpotqa"]
        )


def test_benchmark_rows_are_never_gated(kvzip_ready):  # noqa: F811
    tok = char_tok()
    items = benchmark_items(
        kvpress_frame(2, PROSE * 2, task="niah_single_1"), tok, name="ruler", family="ruler", max_length=420, n_items=2
    )
    deploy = {
        "methods": ["dense", "snapkv"],
        "hub": False,
        "budgets": [BUDGET],
        "max_new_tokens": 3,
        "query_aware": True,
        "alpha_safeguard": 0.2,
        "decomposition": {"methods": []},
        "contour": {"floor": 8, "floor_readings": ["counts"], "scopes": ["global"]},
    }
    rows = condition_rows(kvzip_ready, tok, items, deploy, seed=0, log=lambda _: None)
    assert rows["dense_valid"].all() and set(rows["setting"].to_list()) == {"benchmark"}  # the tiny model misses
    assert set(rows["metric"].to_list()) == {"string_match_all"} and set(rows["task"].to_list()) == {"niah_single_1"}


def test_per_task_paths_and_per_benchmark_budgets(tmp_path):
    from trustmass.deploy.external import load_benchmark
    from trustmass.deploy.job import deploy_for

    for task in ("qasper", "trec"):
        kvpress_frame(1).drop("task").rename({"gold": "answers"}).write_parquet(tmp_path / f"{task}.parquet")
    frame = load_benchmark("kvpress", str(tmp_path / "{task}.parquet"), ["qasper", "trec"])
    assert frame["task"].to_list() == ["qasper", "trec"]  # records without a task take their file's
    with pytest.raises(ValueError, match="no tasks are named"):
        load_benchmark("kvpress", str(tmp_path / "{task}.parquet"))
    deploy = {"budgets": [32, 64, 128], "benchmarks": [{"name": "lb", "budgets": [32, 128]}, {"name": "r"}]}
    assert deploy_for(deploy, "lb")["budgets"] == [32, 128]
    assert deploy_for(deploy, "r")["budgets"] == deploy_for(deploy, "niah_single")["budgets"] == [32, 64, 128]
