"""judge_score, judge_passed, nl_assertion_pass_rate and the judge_result.json document."""

from __future__ import annotations

import pytest

from tests.helpers.eventkit import event, run_call

JUDGE_INPUT = {"system_prompt": "You are a judge.", "user_content": "<reference>…</reference>"}
ASSERTIONS = ["The agent confirmed the order.", "The agent offered a drink.", "The agent said goodbye."]


def started(**scenario) -> object:
    return event("call.started", {"agent_id": "a1", "scenario": {"name": "retail__1", **scenario}})


def judged(evaluation: dict | None = None, error: str | None = None, **extra) -> object:
    data = {"model": "judge-1", **extra}
    if evaluation is not None:
        data["evaluation"] = evaluation
    if error is not None:
        data["error"] = error
    return event("judge.result", data)


def answer(score, reason: str = "Matches the reference.", **more) -> dict:
    return {"score": score, "reason": reason, "judge_input": JUDGE_INPUT, **more}


def ended() -> object:
    return event("call.ended", {"stop_reason": "[EXIT]"})


def evaluation(*events: object) -> dict:
    _, results = run_call(list(events))
    return results[-1].evaluation


def test_a_judge_answer_gives_judge_score_and_the_judge_result_document():
    doc = evaluation(started(), ended(), judged(answer(0.85)))
    assert doc["judge_score"] == 0.85
    assert doc["judge_result"] == {"score": 0.85, "reason": "Matches the reference.", "judge_input": JUDGE_INPUT}


def test_judge_passed_is_absent_without_a_threshold():
    doc = evaluation(started(), ended(), judged(answer(0.85)))
    assert "judge_passed" not in doc


@pytest.mark.parametrize(("score", "passed"), [(0.85, True), (0.8, True), (0.79, False)])
def test_judge_passed_is_score_at_least_the_threshold(score, passed):
    doc = evaluation(started(judge_threshold=0.8), ended(), judged(answer(score)))
    assert doc["judge_passed"] is passed


def test_no_judge_answer_means_no_judge_keys():
    doc = evaluation(started(judge_threshold=0.8, nl_assertions=ASSERTIONS), ended())
    assert not {"judge_score", "judge_passed", "nl_assertion_pass_rate", "judge_result"} & set(doc)


def test_a_judge_answer_after_the_end_rescores_the_call():
    _, results = run_call([started(judge_threshold=0.5), ended(), judged(answer(0.9))])
    assert [r.version for r in results] == [1, 2]
    assert "judge_score" not in results[0].evaluation
    assert (results[1].evaluation["judge_score"], results[1].evaluation["judge_passed"]) == (0.9, True)


def test_nl_verdicts_are_one_per_assertion_and_give_the_pass_rate():
    verdicts = [
        {"index": 1, "passed": True, "reason": "Said 'your order is confirmed'."},
        {"index": 2, "passed": "yes", "reason": "Offered cola."},  # not a boolean: failed, its reason kept
        {"index": 4, "passed": True, "reason": "out of range"},  # no fourth assertion: ignored
        # index 3 missing: failed
    ]
    doc = evaluation(started(nl_assertions=ASSERTIONS), ended(), judged(answer(0.7, nl_assertion_verdicts=verdicts)))
    judge = doc["judge_result"]
    assert judge["nl_assertion_verdicts"] == [
        {"index": 1, "assertion": ASSERTIONS[0], "passed": True, "reason": "Said 'your order is confirmed'."},
        {"index": 2, "assertion": ASSERTIONS[1], "passed": False, "reason": "Offered cola."},
        {"index": 3, "assertion": ASSERTIONS[2], "passed": False, "reason": "Missing verdict; treated as failed."},
    ]
    # 1 of 3 assertions held.
    assert (judge["nl_assertion_pass_count"], judge["nl_assertion_total"]) == (1, 3)
    assert judge["nl_assertion_pass_rate"] == pytest.approx(1 / 3)
    assert doc["nl_assertion_pass_rate"] == pytest.approx(1 / 3)


@pytest.mark.parametrize(
    ("index", "held"),
    [
        (1.9, True),
        ("1", True),
        (True, True),
        (1.0, True),
        (1, True),
        ("1.0", False),
        ("one", False),
        (None, False),
        (2, False),
    ],
)
def test_a_verdict_names_its_assertion_as_int_reads_it(index, held):
    # Mirrors the harness's LLMJudge.judge_scenario normalisation (int(index)) and
    # tests/unit/test_llm_judge_nl_assertions.py::test_out_of_range_indices_are_dropped.
    verdicts = [{"index": index, "passed": True, "reason": "ok"}]
    doc = evaluation(
        started(nl_assertions=ASSERTIONS[:1]), ended(), judged(answer(0.9, nl_assertion_verdicts=verdicts))
    )
    (verdict,) = doc["judge_result"]["nl_assertion_verdicts"]
    assert verdict["passed"] is held
    assert doc["nl_assertion_pass_rate"] == (1.0 if held else 0.0)


def test_an_already_normalised_answer_is_kept_as_it_is():
    verdicts = [{"index": i, "assertion": a, "passed": True, "reason": "ok"} for i, a in enumerate(ASSERTIONS, start=1)]
    document = answer(
        1.0, nl_assertion_verdicts=verdicts, nl_assertion_pass_count=3, nl_assertion_total=3, nl_assertion_pass_rate=1.0
    )
    doc = evaluation(started(nl_assertions=ASSERTIONS), ended(), judged(document))
    assert doc["judge_result"] == document
    assert doc["nl_assertion_pass_rate"] == 1.0


def test_nl_fields_are_absent_when_the_scenario_has_no_assertions():
    verdicts = [{"index": 1, "passed": True, "reason": "ok"}]
    doc = evaluation(started(), ended(), judged(answer(0.9, nl_assertion_verdicts=verdicts)))
    assert "nl_assertion_pass_rate" not in doc
    assert set(doc["judge_result"]) == {"score", "reason", "judge_input"}


def test_a_judge_error_gives_score_zero_and_an_error_reason():
    doc = evaluation(
        started(judge_threshold=0.5, nl_assertions=ASSERTIONS[:2]),
        ended(),
        judged(error="request timed out", input=JUDGE_INPUT),
    )
    assert doc["judge_score"] == 0.0
    assert doc["judge_passed"] is False
    judge = doc["judge_result"]
    assert (judge["reason"], judge["judge_input"]) == ("Error: request timed out", JUDGE_INPUT)
    assert [v["passed"] for v in judge["nl_assertion_verdicts"]] == [False, False]
    assert judge["nl_assertion_verdicts"][0]["reason"] == "Judge error: request timed out"
    assert doc["nl_assertion_pass_rate"] == 0.0


def test_a_score_that_is_not_a_number_is_a_parse_error():
    doc = evaluation(started(), ended(), judged(answer("high")))
    assert doc["judge_score"] == 0.0
    assert doc["judge_result"]["reason"] == "Error: judge score is not a number: 'high'"


def test_a_failed_retry_does_not_erase_an_answer():
    doc = evaluation(started(), ended(), judged(answer(0.9)), judged(error="rate limited"))
    assert doc["judge_score"] == 0.9


def test_the_latest_answer_wins():
    doc = evaluation(started(), ended(), judged(answer(0.4)), judged(answer(0.95)))
    assert doc["judge_score"] == 0.95


def test_a_production_call_with_a_judge_answer_gets_judge_score_only():
    doc = evaluation(event("call.started", {"agent_id": "a1"}), ended(), judged(answer(0.6)))
    assert doc["judge_score"] == 0.6
    assert not {"judge_passed", "nl_assertion_pass_rate"} & set(doc)


def test_the_judge_result_rides_last_in_the_document():
    doc = evaluation(started(judge_threshold=0.5), ended(), judged(answer(0.9)))
    assert list(doc)[-1] == "judge_result"
