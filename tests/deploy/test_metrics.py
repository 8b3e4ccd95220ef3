"""Answer scores as kvpress's evaluation computes them (RULER string matches, LongBench's per-task metrics).

The expected values are worked by hand in the comments, from LongBench's ``metrics.py`` (THUDM/LongBench,
kvpress's ``evaluation/benchmarks/longbench/calculate_metrics.py``) and the code of the packages it calls.
"""

import subprocess
import sys

import pytest
import yaml

from conftest import REPO
from trustmass.deploy.metrics import LONGBENCH, METRICS, metric_for, qa_f1, score_answer

#: LongBench's ``dataset2metric`` (eval.py), metric by metric: every LongBench task
DATASET2METRIC = {
    "qa_f1_score": ("narrativeqa", "qasper", "multifieldqa_en", "hotpotqa", "2wikimqa", "musique", "triviaqa"),
    "qa_f1_zh_score": ("multifieldqa_zh",),
    "rouge_score": ("gov_report", "qmsum", "multi_news", "samsum"),
    "rouge_zh_score": ("dureader", "vcsum"),
    "classification_score": ("trec", "lsht"),
    "retrieval_score": ("passage_retrieval_en",),
    "retrieval_zh_score": ("passage_retrieval_zh",),
    "count_score": ("passage_count",),
    "code_sim_score": ("lcc", "repobench-p"),
}


def test_string_matches_average_or_take_the_best_gold():
    assert score_answer("numbers 12 and 7", ["12", "34"], "string_match_all") == 50.0
    assert score_answer("numbers 12 and 7", ["12", "34"], "string_match_part") == 100.0
    assert score_answer("The ANSWER", "answer") == 100.0  # case ignored


def test_qa_f1_normalises_like_longbench():
    # "the" and punctuation go; pred {paris, france} vs gold {paris}: precision 1/2, recall 1, F1 2/3
    assert qa_f1("The Paris, France!", "paris") == pytest.approx(2 / 3)
    assert qa_f1("", "paris") == 0.0
    assert score_answer("Paris", ["London", "paris"], "qa_f1") == 100.0  # the best gold string


def test_chinese_f1_counts_jieba_words():
    # jieba: 北京/是/中国/的/首都/。 (。 is punctuation: dropped) vs 首都/是/北京; 3 shared words,
    # precision 3/5, recall 3/3, F1 = 2 * 0.6 / 1.6 = 0.75 (in characters it would be 5/9 vs 5/5)
    assert score_answer("北京是中国的首都。", "首都是北京", "qa_f1_zh") == pytest.approx(75.0)
    assert score_answer("。", "首都是北京", "qa_f1_zh") == 0.0  # no word left


def test_rouge_l_is_the_rouge_package_summary_level_f():
    # words counted once each (sets): answer {the cat sat on mat}, gold {the cat lay on mat}: 5 and 5;
    # LCS "the cat on the mat" -> distinct {the cat on mat} = 4: P = R = 4/5, F = 0.8 (textbook LCS F: 5/6)
    assert score_answer("the cat sat on the mat", "the cat lay on the mat", "rouge") == pytest.approx(80.0, abs=1e-5)
    # sentences split at '.', case kept: answer [The cat sat | It slept] = 5 words, gold [the cat slept] = 3;
    # union LCS of the gold sentence with each answer sentence {cat} + {slept} = 2: P 2/5, R 2/3, F 0.5
    assert score_answer("The cat sat. It slept.", "the cat slept", "rouge") == pytest.approx(50.0, abs=1e-5)
    # no sentence left: the package raises "Hypothesis is empty.", LongBench scores 0
    assert score_answer("...", "the cat slept", "rouge") == 0.0 and score_answer("", "a", "rouge") == 0.0


def test_rouge_zh_scores_jieba_words_joined_by_spaces():
    # 会议/讨论/了/预算/问题 vs 会议/讨论/了/项目/进度: LCS 3 of 5 words each, P = R = F = 0.6
    assert score_answer("会议讨论了预算问题", "会议讨论了项目进度", "rouge_zh") == pytest.approx(60.0, abs=1e-5)


def test_rouge_of_a_long_sentence_pair_is_scored_not_lost_to_the_recursion_limit():
    from rouge import Rouge

    gold = " ".join(f"w{i}" for i in range(1100))  # one sentence: the LCS back-trace walks 1,100 words deep
    with pytest.raises(RecursionError):  # the package alone, under the default limit (LongBench: 0)
        Rouge().get_scores(["w0"], [gold], avg=True)
    limit = sys.getrecursionlimit()
    # LCS "w0": R = 1/1100, P = 1/1, F = 2 * (1/1100) / (1 + 1/1100) = 2/1101
    assert score_answer("w0", gold, "rouge") == pytest.approx(100 * 2 / 1101, abs=1e-5)
    assert sys.getrecursionlimit() == limit  # restored


def test_count_retrieval_classification_and_code():
    assert score_answer("I count 4 or 5 paragraphs", "4", "count") == 50.0
    assert score_answer("Paragraph 12", "Paragraph 12", "retrieval") == 100.0
    assert score_answer("Paragraph 3, not 12", "Paragraph 12", "retrieval") == 50.0
    assert score_answer("段落12", "段落12", "retrieval_zh") == 100.0
    assert score_answer("段落3或段落12", "段落12", "retrieval_zh") == 50.0  # numbers [3, 12]: one of two
    classes = ("location", "abbreviation", "number", "numeric value")
    assert score_answer("Type: number", "number", "classification", all_classes=classes) == 100.0
    assert score_answer("location or number", "number", "classification", all_classes=classes) == 50.0
    assert score_answer("# comment\nx = f(a)\n", "x = f(a)", "code_sim") == 100.0
    # trec's answer is cut at its first line before scoring
    assert score_answer("number\nlocation", "number", "classification", all_classes=classes, task="trec") == 100.0


def test_classification_keeps_longbench_skipping_loop():
    # named [x, y, x y z]; x is inside the gold and removed while iterating, so y is skipped and stays:
    # the gold among 2 named classes, 1/2 (removing every class inside the gold would give 1)
    assert score_answer("x y z", "x y z", "classification", all_classes=("x", "y", "x y z")) == 50.0
    # 。 splits nothing here: lsht's Chinese classes are plain substrings
    assert score_answer("类别：体育", "体育", "classification", all_classes=("体育", "财经"), task="lsht") == 100.0


def test_code_sim_is_fuzzywuzzy_ratio_in_longbench_difflib_mode():
    # difflib's blocks: "return " + "x" = 8 of 13 + 8 characters: 2 * 8 / 21 = 0.7619 -> 76
    assert score_answer("return self.x", "return x", "code_sim") == 76.0
    # difflib takes the longest block "aa" first and nothing else fits: 2 * 2 / 7 -> 57; the edit-distance
    # ratio of python-Levenshtein or rapidfuzz finds "aaa": 2 * 3 / 7 -> 86, not LongBench's number
    assert score_answer("aaa", "abaa", "code_sim") == pytest.approx(57.0)
    # kvpress strips the answer's leading whitespace first: "x = f(a)" == gold (raw LongBench: 2 * 8 / 20 -> 80)
    assert score_answer("    x = f(a)", "x = f(a)", "code_sim") == 100.0


def test_fuzzywuzzy_with_python_levenshtein_is_refused():
    code = (
        "import sys, types; sys.modules['Levenshtein'] = types.ModuleType('Levenshtein')\n"
        "from trustmass.deploy.metrics import score_answer\n"
        "score_answer('aaa', 'abaa', 'code_sim')"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode != 0 and "fix: pip uninstall python-Levenshtein" in run.stderr, run.stderr


def test_scoring_libraries_are_imported_only_when_a_task_needs_them():
    code = (
        "import sys\nfrom trustmass.deploy.metrics import score_answer\n"
        "score_answer('Paris', 'paris', 'qa_f1'); score_answer('4', '4', 'count')\n"
        "print(sorted(m for m in ('rouge', 'jieba', 'fuzzywuzzy') if m in sys.modules))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]"


def test_a_missing_package_names_its_pin(monkeypatch):
    monkeypatch.setitem(sys.modules, "rouge", None)  # as if rouge were not installed
    with pytest.raises(ImportError, match=r"pip install 'rouge==1\.0\.1'"):
        score_answer("a b", "a b", "rouge")


def test_every_longbench_task_has_longbench_metric():
    assert sorted(LONGBENCH) == sorted(t for tasks in DATASET2METRIC.values() for t in tasks)  # all 21
    assert {LONGBENCH[t] + "_score" for t in LONGBENCH} == set(DATASET2METRIC)
    for metric, tasks in DATASET2METRIC.items():
        assert all(metric_for("longbench", t) == metric.removesuffix("_score") for t in tasks), metric
    assert set(LONGBENCH.values()) <= set(METRICS)


def test_every_longbench_task_of_the_configs_is_scored_and_the_paper_runs_them_all():
    configured = set()
    for path in sorted((REPO / "config").glob("*.yaml")) + [REPO / "config.yaml"]:
        deploy = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("deploy") or {}
        for bench in deploy.get("benchmarks") or []:
            if "longbench" in (bench.get("family"), bench.get("format")):
                configured |= {(path.name, t) for t in bench.get("tasks") or ()}
    assert configured, "no config names a LongBench task"
    assert all(metric_for("longbench", t) for _, t in configured)
    assert {t for name, t in configured if name == "paper-deploy.yaml"} == set(LONGBENCH)


def test_metric_per_task_and_clear_errors():
    assert (
        metric_for("ruler", "niah_single_1") == "string_match_all"
        and metric_for("ruler", "qa_2") == "string_match_part"
    )
    assert metric_for("longbench", "qasper") == "qa_f1" and metric_for("longbench", "repobench-p") == "code_sim"
    assert metric_for("longbench", "gov_report") == "rouge" and metric_for("longbench", "vcsum") == "rouge_zh"
    with pytest.raises(ValueError, match="'nope' is unknown"):
        metric_for("longbench", "nope")
    with pytest.raises(ValueError, match="gold is empty"):
        score_answer("x", [], "qa_f1")
    with pytest.raises(ValueError, match="names no paragraph"):
        score_answer("3", "段落", "retrieval_zh")
