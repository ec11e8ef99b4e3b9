"""The judge's answers: strict schema checks, score ranges, verdict normalisation, and the recorded event."""

from __future__ import annotations

import copy
import json

import pytest

from models.cohorts import MAX_CRITERIA, MAX_QUESTION_CHARS
from models.events import JudgeResult
from models.wire import MAX_MESSAGE_BYTES, encode_event
from scorers.cohorts import CohortBook
from scorers.evaluation.judge_fields import (
    MISSING_VERDICT_REASON,
)
from scorers.judge.answers import (
    MAX_REASON_CHARS,
    JudgeAnswerError,
    judge_result_event,
    parse_evaluation_answer,
    parse_qa_answer,
)
from scorers.judge.requests import build_requests
from tests.helpers.eventkit import event, run_call
from tests.helpers.judgekit import ASSERTIONS, EVALUATION_ANSWER, QA_ANSWER, judged_call

BOOK = CohortBook(
    cohorts=[
        {
            "cohort_id": "pizza",
            "name": "Pizza",
            "agents": ["pizza-*"],
            "criteria": [
                {"name": "resolved", "kind": "llm", "question": "Did the caller get a pizza?"},
                {"name": "polite", "kind": "llm", "question": "Was the agent polite?"},
            ],
        }
    ]
)


def requests(events: list | None = None, cohorts: CohortBook | None = BOOK):
    engine, _ = run_call(events or judged_call())
    (call,) = engine.calls.values()
    return build_requests(call, cohorts)


def final_response(payload: str) -> object:
    return event(
        "rtvi",
        {
            "side": "agent",
            "message": {"type": "server-message", "data": {"text": f"<final_response>{payload}</final_response>"}},
        },
    )


def qa_with(**changes) -> str:
    answer = copy.deepcopy(QA_ANSWER)
    answer.update(changes)
    return json.dumps(answer)


def evaluation_with(**changes) -> str:
    answer = copy.deepcopy(EVALUATION_ANSWER)
    answer.update(changes)
    return json.dumps(answer)


# ---------------------------------------------------------------------------------------- QA answer


def test_ratings_are_clamped_to_0_100_and_null_stays_null():
    answer = qa_with(
        kb_recall={"score": -5, "reason": ""},
        naturalness={"score": 130.5, "reason": ""},
        transition_accuracy={"score": None, "reason": "no transitions"},
    )
    qa = parse_qa_answer(answer, requests().qa).qa
    assert (qa["kb_recall"]["score"], qa["naturalness"]["score"], qa["transition_accuracy"]["score"]) == (
        0.0,
        100.0,
        None,
    )
    assert qa["tool_call_accuracy"] == {"score": 90.0, "reason": "Right tool, right time."}


def test_issues_are_kept_as_type_severity_text():
    qa = parse_qa_answer(qa_with(), requests().qa).qa
    assert qa["hallucination"]["issues"] == QA_ANSWER["hallucination"]["issues"]


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("I think the agent did fine", "answer is not JSON"),
        ("", "empty answer"),
        ('{"kb_recall": NaN}', "NaN is not a number"),
        ("[1, 2]", "does not match the schema at the top level"),
    ],
)
def test_an_answer_that_is_not_a_json_object_is_an_error(content, problem):
    with pytest.raises(JudgeAnswerError, match=problem):
        parse_qa_answer(content, requests().qa)


@pytest.mark.parametrize(
    "broken",
    [
        {"kb_recall": {"score": "high", "reason": ""}},  # not a number
        {"kb_recall": {"score": True, "reason": ""}},  # a boolean is not a number
        {"naturalness": {"score": 50}},  # no reason
        {"hallucination": {"issues": [{"type": "lie", "severity": "major", "text": "x"}]}},  # unknown type
        {"hallucination": {"issues": [{"type": "fabrication", "severity": "huge", "text": "x"}]}},  # unknown severity
        {"extra": 1},  # a key the schema does not have
    ],
)
def test_an_answer_off_the_schema_is_an_error(broken):
    with pytest.raises(JudgeAnswerError, match="does not match the schema"):
        parse_qa_answer(qa_with(**broken), requests().qa)


def test_a_missing_metric_is_an_error():
    answer = copy.deepcopy(QA_ANSWER)
    del answer["naturalness"]
    with pytest.raises(JudgeAnswerError, match="'naturalness' is a required property"):
        parse_qa_answer(json.dumps(answer), requests().qa)


def test_criteria_verdicts_are_exactly_one_per_criterion_asked():
    # 1 answered, 2 with a non-boolean, 3 does not exist: resolved from 1, polite failed (with the
    # judge's reason, as the harness keeps it), 3 dropped.
    verdicts = [
        {"index": 1, "passed": True, "reason": "Pizza ordered."},
        {"index": 2, "passed": "yes", "reason": "Said please."},
        {"index": 3, "passed": True, "reason": "?"},
    ]
    criteria = parse_qa_answer(qa_with(criteria=verdicts), requests().qa).criteria
    assert criteria == {
        "resolved": {"passed": True, "reason": "Pizza ordered."},
        "polite": {"passed": False, "reason": "Said please."},
    }


def test_a_criterion_without_a_verdict_fails():
    criteria = parse_qa_answer(qa_with(criteria=[]), requests().qa).criteria
    assert criteria == {
        "resolved": {"passed": False, "reason": MISSING_VERDICT_REASON},
        "polite": {"passed": False, "reason": MISSING_VERDICT_REASON},
    }


def test_no_criteria_asked_means_no_criteria_recorded():
    assert parse_qa_answer(qa_with(), requests(cohorts=None).qa).criteria is None


# -------------------------------------------------------------------------------- evaluation answer


def test_the_evaluation_answer_becomes_the_judge_result_document():
    request = requests().evaluation
    document = parse_evaluation_answer(evaluation_with(), request)
    assert document == {
        "score": 0.8,
        "reason": EVALUATION_ANSWER["reason"],
        "judge_input": {"system_prompt": request.system_prompt, "user_content": request.user_content},
        "nl_assertion_verdicts": [
            {"index": 1, "assertion": ASSERTIONS[0], "passed": True, "reason": '"Hello Ann"'},
            {"index": 2, "assertion": ASSERTIONS[1], "passed": True, "reason": '"a large is $12"'},
            {"index": 3, "assertion": ASSERTIONS[2], "passed": False, "reason": "No order tool result."},
        ],
        "nl_assertion_pass_count": 2,
        "nl_assertion_total": 3,
        "nl_assertion_pass_rate": 2 / 3,
    }


def test_the_evaluation_score_is_a_float_from_0_to_1():
    document = parse_evaluation_answer(evaluation_with(score=1), requests().evaluation)
    assert document["score"] == 1.0 and isinstance(document["score"], float)


@pytest.mark.parametrize(("score", "kept"), [(1.7, 1.0), (-0.2, 0.0), (7, 1.0)])
def test_an_evaluation_score_outside_0_to_1_is_clamped_as_the_harness_keeps_it(score, kept):
    assert parse_evaluation_answer(evaluation_with(score=score), requests().evaluation)["score"] == kept


def test_missing_out_of_range_and_non_boolean_verdicts_fail_with_a_reason():
    verdicts = [
        {"index": 2, "passed": "true", "reason": "quoted"},
        {"index": 7, "passed": True, "reason": "?"},
        {"index": 0, "passed": True, "reason": "?"},
    ]
    document = parse_evaluation_answer(evaluation_with(nl_assertion_verdicts=verdicts), requests().evaluation)
    assert [(v["index"], v["passed"], v["reason"]) for v in document["nl_assertion_verdicts"]] == [
        (1, False, MISSING_VERDICT_REASON),
        (2, False, "quoted"),
        (3, False, MISSING_VERDICT_REASON),
    ]
    assert (
        document["nl_assertion_pass_count"],
        document["nl_assertion_total"],
        document["nl_assertion_pass_rate"],
    ) == (0, 3, 0.0)


def test_an_evaluation_score_that_is_not_a_number_is_an_error():
    with pytest.raises(JudgeAnswerError, match="judge score is not a number"):
        parse_evaluation_answer(evaluation_with(score="most of it"), requests().evaluation)


def test_without_assertions_the_document_has_no_verdicts():
    request = requests(judged_call(scenario={"name": "s", "judge": True})).evaluation
    document = parse_evaluation_answer(json.dumps({"score": 0.5, "reason": "Half done."}), request)
    assert set(document) == {"score", "reason", "judge_input"}


# ------------------------------------------------------------------------------------------- event


def test_the_event_is_deterministic_and_keeps_the_prompts():
    reqs = requests()
    qa = parse_qa_answer(qa_with(), reqs.qa)
    event = judge_result_event(
        reqs, "judge-test", qa=qa, evaluation=parse_evaluation_answer(evaluation_with(), reqs.evaluation)
    )
    assert isinstance(event, JudgeResult)
    assert (event.event_id, event.call_id, event.ts_ms) == ("c1:judge", "c1", reqs.ts_ms)
    # The evaluation's prompts are in its answered document (judge_input), not recorded twice.
    assert event.data.input == {"qa": reqs.qa.input()}
    assert event.data.evaluation["judge_input"] == reqs.evaluation.input()
    assert (event.data.qa, event.data.criteria, event.data.error) == (qa.qa, qa.criteria, None)


def test_failed_requests_are_recorded_where_each_fallback_reads_them():
    reqs = requests()
    event = judge_result_event(reqs, "judge-test", qa_error="HTTP 500 from the judge", evaluation_error="timed out")
    assert event.data.qa == {"error": "HTTP 500 from the judge"}
    assert (event.data.criteria, event.data.evaluation, event.data.error) == (None, None, "timed out")
    assert (event.data.input["system_prompt"], event.data.input["user_content"]) == (
        reqs.evaluation.system_prompt,
        reqs.evaluation.user_content,
    )


def test_a_failed_qa_request_alone_gives_no_evaluation_error():
    reqs = requests(judged_call(scenario={"name": "production"}))
    event = judge_result_event(reqs, "judge-test", qa_error="HTTP 500 from the judge")
    assert reqs.evaluation is None and event.data.error is None
    _engine, results = run_call(judged_call(scenario={"name": "production"}) + [event])
    assert "judge_score" not in results[-1].evaluation and "judge_result" not in results[-1].evaluation


def test_an_evaluation_error_scores_0_with_error_reason():
    reqs = requests()
    event = judge_result_event(reqs, "judge-test", qa_error="x", evaluation_error="the judge did not answer within 2 s")
    _, results = run_call(judged_call() + [event])
    evaluation = results[-1].evaluation
    assert (evaluation["judge_score"], evaluation["judge_passed"], evaluation["nl_assertion_pass_rate"]) == (
        0.0,
        False,
        0.0,
    )
    assert evaluation["judge_result"]["reason"] == "Error: the judge did not answer within 2 s"
    assert evaluation["judge_result"]["judge_input"] == reqs.evaluation.input()


def test_the_event_of_an_enormous_call_fits_in_one_message():
    big = "é" * 5_000  # two bytes a character
    longest_question = "é" * MAX_QUESTION_CHARS  # (and as many criteria as a cohort may hold)
    book = CohortBook(
        cohorts=[
            {
                "cohort_id": "all",
                "name": "All",
                "agents": ["*"],
                "criteria": [
                    {"name": f"q{i}", "kind": "llm", "question": longest_question} for i in range(MAX_CRITERIA)
                ],
            }
        ]
    )
    # Scenario assertions are inlined in their verdicts whole: 100 of 200 characters is a lot already.
    scenario = {
        "name": "huge",
        "reference_answer": [{"note": big}] * 20,
        "nl_assertions": ["é" * 200] * 100,
        "judge_include_conversation": True,
    }
    events = [
        event(
            "call.started",
            {
                "agent_id": "a",
                "agent_config": {"prompt": big * 20, "flow": {"n": big * 20}},
                "variables": {f"v{i}": big for i in range(20)},
                "scenario": scenario,
            },
        )
    ]
    for _ in range(60):
        events.append(event("kb.retrieval", {"passages": [big] * 10}))
        for side in ("agent", "user"):
            events.append(event("tool.call", {"name": big, "arguments": big, "result": big, "side": side}))
        events.append(event("node.transition", {"to": big}))
        events.append(final_response(big))
    events += [event("turn", {"role": "agent" if i % 2 else "user", "text": big}) for i in range(500)]
    events.append(event("call.ended", {"stop_reason": "[EXIT]"}))
    reqs = requests(events, book)
    answer = {
        "hallucination": {"issues": [{"type": "fabrication", "severity": "major", "text": big * 4}] * 100},
        **{
            name: {"score": 50, "reason": big * 4}
            for name in ("kb_recall", "naturalness", "tool_call_accuracy", "transition_accuracy")
        },
        "criteria": [{"index": i, "passed": True, "reason": big * 4} for i in range(1, MAX_CRITERIA + 1)],
    }
    evaluation = {
        "score": 0.5,
        "reason": big * 4,
        "nl_assertion_verdicts": [{"index": i, "passed": True, "reason": big * 4} for i in range(1, 101)],
    }
    judge_event = judge_result_event(
        reqs,
        "m",
        qa=parse_qa_answer(json.dumps(answer), reqs.qa),
        evaluation=parse_evaluation_answer(json.dumps(evaluation), reqs.evaluation),
    )
    assert len(encode_event(judge_event)) < MAX_MESSAGE_BYTES


def test_answers_too_large_to_record_are_recorded_as_failed_requests_and_the_heuristics_stay():
    reqs = requests()
    qa = parse_qa_answer(qa_with(), reqs.qa)
    evaluation = parse_evaluation_answer(evaluation_with(), reqs.evaluation)
    whole = judge_result_event(reqs, "m", qa=qa, evaluation=evaluation)
    limit = len(encode_event(whole)) - 1
    event = judge_result_event(reqs, "m", qa=qa, evaluation=evaluation, max_bytes=limit)
    assert len(encode_event(event)) <= limit and event.data.evaluation is None and event.data.criteria is None
    assert event.data.qa["error"].startswith("the judge's answers are too large to record (")
    assert event.data.error == event.data.qa["error"]
    _, results = run_call(judged_call() + [event])
    assert results[-1].evaluation["judge_result"]["reason"].startswith("Error: the judge's answers are too large")
    assert all(m.details["judge"] == "heuristic" for m in results[-1].metrics)
    tiny = judge_result_event(reqs, "m", qa=qa, evaluation=evaluation, max_bytes=200)
    assert tiny.data.input == {} and tiny.data.error.startswith("the judge's answers are too large")


def test_a_lone_surrogate_in_an_answer_is_replaced_so_the_answer_can_be_recorded():
    reqs = requests()
    answer = json.loads(qa_with())
    answer["kb_recall"]["reason"] = "cut emoji HALF here"
    # The JSON escape of half a surrogate pair, as a model that cut an emoji in two writes it.
    content = json.dumps(answer).replace("HALF", "\\ud83d")
    qa = parse_qa_answer(content, reqs.qa)
    assert qa.qa["kb_recall"]["reason"] == "cut emoji \ufffd here"
    assert len(encode_event(judge_result_event(reqs, "m", qa=qa))) > 0  # encodes: no lone surrogate left


def test_a_verdict_reason_that_is_not_text_is_cut_as_text():
    reqs = requests()
    evaluation = json.loads(evaluation_with())
    evaluation["nl_assertion_verdicts"][0]["reason"] = list(range(100_000))
    document = parse_evaluation_answer(json.dumps(evaluation), reqs.evaluation)
    reason = document["nl_assertion_verdicts"][0]["reason"]
    assert reason.startswith("[0, 1, 2") and reason.endswith("more characters]") and len(reason) < MAX_REASON_CHARS + 40
