"""Judge answers read as the NeMo harness's LLMJudge reads them (nemo_voice_agent/evaluation/utils.py,
`_parse_response` and `judge_scenario`), case by case from its tests/unit/test_llm_judge_nl_assertions.py
and from the answers real OpenAI-compatible servers give (JSON in a code fence)."""

from __future__ import annotations

import json

import pytest

from scorers.evaluation.judge_fields import MISSING_VERDICT_REASON
from scorers.judge.answer_json import extract_json
from scorers.judge.answers import JudgeAnswerError, parse_evaluation_answer, parse_qa_answer
from scorers.judge.requests import build_requests
from tests.helpers.eventkit import run_call
from tests.helpers.judgekit import ASSERTIONS, QA_ANSWER, judged_call


def evaluation_request():
    engine, _ = run_call(judged_call())
    (call,) = engine.calls.values()
    return build_requests(call, None).evaluation


def qa_request():
    engine, _ = run_call(judged_call())
    (call,) = engine.calls.values()
    return build_requests(call, None).qa


def verdict(index, passed=True, reason="ok"):
    return {"index": index, "passed": passed, "reason": reason}


def parsed(answer: dict | str) -> dict:
    return parse_evaluation_answer(answer if isinstance(answer, str) else json.dumps(answer), evaluation_request())


def test_json_in_a_json_code_fence_is_the_answer():
    content = (
        'Here is my verdict:\n```json\n{"score": 0.8, "reason": "fine", "nl_assertion_verdicts": ['
        '{"index": 1, "passed": true, "reason": "a"}]}\n```'
    )
    document = parse_evaluation_answer(content, evaluation_request())
    assert document["score"] == 0.8 and document["reason"] == "fine"
    assert [v["passed"] for v in document["nl_assertion_verdicts"]] == [True, False, False]


def test_a_flat_object_with_a_score_inside_prose_is_the_answer():
    assert extract_json('I would say {"score": 0.5, "reason": "half"} overall.') == {"score": 0.5, "reason": "half"}


def test_prose_without_an_object_is_no_answer():
    with pytest.raises(ValueError):
        extract_json("The agent did fine.")


def test_a_qa_answer_in_a_code_fence_is_kept():
    # The QA judges get the same tolerance: a fenced answer no longer falls back to the heuristics.
    answer = parse_qa_answer(f"```json\n{json.dumps(QA_ANSWER)}\n```", qa_request())
    assert answer.qa["naturalness"]["score"] == QA_ANSWER["naturalness"]["score"]


def test_happy_path_two_passes_one_fail():
    # Mirrors test_happy_path_two_passes_one_fail.
    document = parsed(
        {
            "score": 0.67,
            "reason": "Partial",
            "nl_assertion_verdicts": [verdict(1), verdict(2, False, "Missed"), verdict(3)],
        }
    )
    assert [v["passed"] for v in document["nl_assertion_verdicts"]] == [True, False, True]
    assert [v["assertion"] for v in document["nl_assertion_verdicts"]] == ASSERTIONS
    assert document["nl_assertion_pass_rate"] == 2 / 3


def test_missing_verdict_fills_with_false():
    # Mirrors test_missing_verdict_fills_with_false.
    document = parsed({"score": 0.5, "reason": "x", "nl_assertion_verdicts": [verdict(1), verdict(3)]})
    assert [(v["passed"], v["reason"]) for v in document["nl_assertion_verdicts"]] == [
        (True, "ok"),
        (False, MISSING_VERDICT_REASON),
        (True, "ok"),
    ]


def test_out_of_range_and_non_int_indices_are_dropped():
    # Mirrors test_out_of_range_indices_are_dropped.
    document = parsed(
        {"score": 0.33, "reason": "x", "nl_assertion_verdicts": [verdict(0), verdict(99), verdict("foo"), verdict(2)]}
    )
    assert [v["passed"] for v in document["nl_assertion_verdicts"]] == [False, True, False]


def test_strict_passed_boolean():
    # Mirrors test_strict_passed_boolean: 1 and "true" are not true.
    document = parsed(
        {"score": 0.5, "reason": "x", "nl_assertion_verdicts": [verdict(1, 1), verdict(2, "true"), verdict(3, True)]}
    )
    assert [v["passed"] for v in document["nl_assertion_verdicts"]] == [False, False, True]
    assert document["nl_assertion_pass_rate"] == 1 / 3


def test_verdicts_emitted_out_of_order_get_sorted_by_index():
    # Mirrors test_verdicts_emitted_out_of_order_get_sorted_by_index.
    document = parsed(
        {
            "score": 1.0,
            "reason": "x",
            "nl_assertion_verdicts": [
                verdict(3, reason="third"),
                verdict(1, reason="first"),
                verdict(2, reason="second"),
            ],
        }
    )
    assert [v["reason"] for v in document["nl_assertion_verdicts"]] == ["first", "second", "third"]


@pytest.mark.parametrize("index", ["1", 1.9, 1.0])
def test_an_index_int_reads_names_that_assertion(index):
    document = parsed({"score": 1.0, "reason": "x", "nl_assertion_verdicts": [verdict(index)]})
    assert document["nl_assertion_verdicts"][0]["passed"] is True


def test_of_two_verdicts_for_one_assertion_the_later_counts():
    document = parsed(
        {"score": 1.0, "reason": "x", "nl_assertion_verdicts": [verdict(1, True, "first"), verdict(1, False, "second")]}
    )
    assert (document["nl_assertion_verdicts"][0]["passed"], document["nl_assertion_verdicts"][0]["reason"]) == (
        False,
        "second",
    )


def test_an_answer_without_a_reason_keeps_its_score_with_an_empty_reason():
    assert (parsed({"score": 0.9})["score"], parsed({"score": 0.9})["reason"]) == (0.9, "")


def test_an_answer_without_a_verdict_list_fails_every_assertion_and_keeps_its_score():
    document = parsed({"score": 0.9, "reason": "x"})
    assert document["score"] == 0.9
    assert [v["reason"] for v in document["nl_assertion_verdicts"]] == [MISSING_VERDICT_REASON] * 3


@pytest.mark.parametrize(("score", "kept"), [("0.8", 0.8), (1.5, 1.0), (-1, 0.0), (True, 1.0)])
def test_a_score_is_read_with_float_and_held_to_0_1(score, kept):
    assert parsed({"score": score, "reason": "x"})["score"] == kept


@pytest.mark.parametrize("answer", [{"reason": "no score"}, {"score": "high"}, {"score": None}, [0.5]])
def test_an_answer_without_a_readable_score_is_an_error(answer):
    with pytest.raises(JudgeAnswerError):
        parsed(answer)
