"""The judge's QA answer in place of the heuristics: which metrics, which numbers, and when not."""

from __future__ import annotations

import copy

import pytest

from tests.helpers.eventkit import event, run_call
from tests.helpers.judgekit import QA_ANSWER, judged_call
from tests.helpers.qa_kit import metric

LLM_METRICS = ("hallucination", "kb_recall", "naturalness", "tool_call_accuracy", "transition_accuracy")


def qa_answer(**changes) -> dict:
    answer = copy.deepcopy({k: v for k, v in QA_ANSWER.items() if k != "criteria"})
    answer.update(changes)
    return answer


def results_with(qa: dict | None, events: list | None = None):
    judge = event("judge.result", {"model": "judge-test", **({"qa": qa} if qa is not None else {})})
    _, results = run_call((events or judged_call(scenario={"name": "s"})) + [judge])
    return results


def test_the_judges_answer_rescores_the_call_as_the_next_version():
    first, second = results_with(qa_answer())
    assert (first.version, second.version) == (1, 2)
    assert {metric(first, m).details["judge"] for m in LLM_METRICS} == {"heuristic"}
    assert {metric(second, m).details["judge"] for m in LLM_METRICS} == {"llm"}


def test_hallucination_score_is_100_minus_30_per_major_minus_10_per_minor():
    result = metric(results_with(qa_answer())[-1], "hallucination")
    # 2 major, 1 minor: 100 − 30×2 − 10×1 = 30; value = 3 issues; 30 < 70 → failed.
    assert (result.value, result.score, result.passed) == (3, 30.0, False)
    assert {
        k: result.details[k] for k in ("total", "major", "minor", "fabrications", "contradictions", "confusions")
    } == {"total": 3, "major": 2, "minor": 1, "fabrications": 1, "contradictions": 1, "confusions": 1}
    assert result.details["issues"][0] == {
        "type": "fabrication",
        "severity": "major",
        "text": "Delivery is free today.",
    }


def test_hallucination_score_is_floored_at_0():
    issue = {"type": "fabrication", "severity": "major", "text": "x"}
    result = metric(results_with(qa_answer(hallucination={"issues": [issue] * 4}))[-1], "hallucination")
    assert (result.value, result.score) == (4, 0.0)  # 100 − 30×4 = −20 → 0


def test_no_issues_scores_100():
    result = metric(results_with(qa_answer(hallucination={"issues": []}))[-1], "hallucination")
    assert (result.value, result.score, result.passed) == (0, 100.0, True)


@pytest.mark.parametrize(
    ("name", "value", "score", "passed"),
    [
        ("kb_recall", 0.645, 64.5, True),  # 64.5 ≥ 60
        ("tool_call_accuracy", 0.9, 90.0, True),  # 90 ≥ 80
        ("transition_accuracy", 0.75, 75.0, False),  # 75 < 80
    ],
)
def test_share_metrics_take_the_judges_score_and_its_share_as_value(name, value, score, passed):
    result = metric(results_with(qa_answer())[-1], name)
    assert (result.value, result.score, result.passed, result.details["judge"]) == (value, score, passed, "llm")
    assert result.details["judge_reason"] == QA_ANSWER[name]["reason"]


def test_naturalness_takes_the_judges_score_and_keeps_the_average_words_per_turn():
    result = metric(results_with(qa_answer())[-1], "naturalness")
    # Agent turns of 6 and 6 words → value 6.0; the judge's 55 < 60 → failed.
    assert (result.value, result.score, result.passed, result.details["judge"]) == (6.0, 55.0, False, "llm")


def test_a_score_out_of_range_is_clamped():
    result = metric(results_with(qa_answer(kb_recall={"score": 250, "reason": "!"}))[-1], "kb_recall")
    assert (result.value, result.score) == (1.0, 100.0)


def test_a_metric_with_an_invalid_answer_keeps_its_heuristic_and_the_others_use_the_judge():
    heuristic = metric(results_with(None)[0], "tool_call_accuracy")
    final = results_with(qa_answer(tool_call_accuracy={"score": "great"}))[-1]
    assert metric(final, "tool_call_accuracy") == heuristic
    assert metric(final, "kb_recall").details["judge"] == "llm"


def test_a_null_rating_keeps_the_heuristic():
    heuristic = metric(results_with(None)[0], "transition_accuracy")
    final = results_with(qa_answer(transition_accuracy={"score": None, "reason": "Not applicable."}))[-1]
    assert metric(final, "transition_accuracy") == heuristic
    assert heuristic.details["judge"] == "heuristic"


def test_a_metric_that_does_not_apply_stays_not_applicable_whatever_the_judge_says():
    events = [e for e in judged_call(scenario={"name": "s"}) if e.__struct_config__.tag != "kb.retrieval"]
    result = metric(results_with(qa_answer(), events)[-1], "kb_recall")
    assert (result.score, result.passed, result.details["reason"], result.details["judge"]) == (
        None,
        None,
        "No knowledge base retrievals in this call",
        "heuristic",
    )


def test_a_failed_qa_request_leaves_every_heuristic_in_place_and_the_llm_metrics_say_why():
    first, second = results_with({"error": "HTTP 500 from the judge"})
    for before, after in zip(first.metrics, second.metrics, strict=True):
        assert (after.value, after.score, after.passed) == (before.value, before.score, before.passed)
        rated = after.metric in LLM_METRICS
        if rated and after.score is not None:
            assert after.details == {**before.details, "judge_error": "HTTP 500 from the judge"}
            assert after.details["judge"] == "heuristic"
        else:  # a computed metric, or one that does not apply: the judge had nothing to rate
            assert after.details == before.details


def test_a_judge_result_without_qa_leaves_every_heuristic_in_place():
    first, second = results_with(None)
    assert second.metrics == first.metrics


def test_computed_metrics_are_never_overridden():
    first, second = results_with(qa_answer(wer={"score": 0, "reason": "bad"}, latency={"score": 0, "reason": "slow"}))
    # The judge rates only the five LLM metrics: an answer for any other metric is ignored.
    assert metric(second, "wer") == metric(first, "wer")
    assert metric(second, "latency") == metric(first, "latency")
