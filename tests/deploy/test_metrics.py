"""Answer scores as kvpress's evaluation computes them (RULER string matches, LongBench's per-task metrics)."""

import pytest

from trustmass.deploy.metrics import LONGBENCH, METRICS, metric_for, qa_f1, score_answer


def test_string_matches_average_or_take_the_best_gold():
    assert score_answer("numbers 12 and 7", ["12", "34"], "string_match_all") == 50.0
    assert score_answer("numbers 12 and 7", ["12", "34"], "string_match_part") == 100.0
    assert score_answer("The ANSWER", "answer") == 100.0  # case ignored


def test_qa_f1_normalises_like_longbench():
    # "the" and punctuation go; pred {paris, france} vs gold {paris}: precision 1/2, recall 1, F1 2/3
    assert qa_f1("The Paris, France!", "paris") == pytest.approx(2 / 3)
    assert qa_f1("", "paris") == 0.0
    assert score_answer("Paris", ["London", "paris"], "qa_f1") == 100.0  # the best gold string


def test_count_retrieval_classification_and_code():
    assert score_answer("I count 4 or 5 paragraphs", "4", "count") == 50.0
    assert score_answer("Paragraph 12", "Paragraph 12", "retrieval") == 100.0
    assert score_answer("Paragraph 3, not 12", "Paragraph 12", "retrieval") == 50.0
    classes = ("location", "abbreviation", "number", "numeric value")
    assert score_answer("Type: number", "number", "classification", all_classes=classes) == 100.0
    assert score_answer("location or number", "number", "classification", all_classes=classes) == 50.0
    assert score_answer("# comment\nx = f(a)\n", "x = f(a)", "code_sim") == 100.0
    # trec's answer is cut at its first line before scoring
    assert score_answer("number\nlocation", "number", "classification", all_classes=classes, task="trec") == 100.0


def test_metric_per_task_and_clear_errors():
    assert metric_for("ruler", "niah_single_1") == "string_match_all" and metric_for("ruler", "qa_2") == "string_match_part"
    assert metric_for("longbench", "qasper") == "qa_f1" and metric_for("longbench", "repobench-p") == "code_sim"
    assert all(v is None or v in METRICS for v in LONGBENCH.values())
    with pytest.raises(ValueError, match="ROUGE or on Chinese text"):
        metric_for("longbench", "gov_report")
    with pytest.raises(ValueError, match="'nope' is unknown"):
        metric_for("longbench", "nope")
    with pytest.raises(ValueError, match="gold is empty"):
        score_answer("x", [], "qa_f1")
