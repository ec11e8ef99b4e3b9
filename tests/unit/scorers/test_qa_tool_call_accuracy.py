"""Tool call accuracy (heuristic): valid JSON arguments, a result, and a result that is not a failure."""

import json

import pytest

from tests.helpers.eventkit import event
from tests.helpers.qa_kit import scored


def tool(name="lookup", arguments='{"id": 1}', result=None, tool_call_id=None, side="agent"):
    data = {"name": name, "arguments": arguments, "side": side}
    if result is not None:
        data["result"] = result
    if tool_call_id is not None:
        data["tool_call_id"] = tool_call_id
    return event("tool.call", data)


def rtvi(type_, data, side="agent"):
    return event("rtvi", {"side": side, "message": {"label": "rtvi-ai", "type": type_, "data": data}})


def test_call_without_tool_calls_is_not_applicable():
    m = scored("tool_call_accuracy")
    assert (m.value, m.score, m.passed) == (None, None, None)
    assert m.details["reason"] == "No tool calls"
    assert m.details["judge"] == "heuristic"


def test_good_call_scores_100():
    m = scored("tool_call_accuracy", tool(result={"balance": 12.5}))
    assert (m.value, m.score, m.passed) == (1.0, 100.0, True)
    assert (m.details["total"], m.details["good"], m.details["bad_calls"]) == (1, 1, [])


def test_invalid_json_arguments_make_a_bad_call():
    m = scored("tool_call_accuracy", tool(arguments='{"id": 1', result="ok", tool_call_id="t1"))
    assert (m.value, m.score) == (0.0, 0.0)
    assert m.details["bad_calls"] == [{"tool_call_id": "t1", "name": "lookup", "why": "arguments are not valid JSON"}]


def test_blank_arguments_are_a_tool_called_without_parameters():
    for blank in ("", "  "):
        m = scored("tool_call_accuracy", tool(arguments=blank, result="ok"))
        assert (m.value, m.details["bad_calls"]) == (1.0, [])


def test_missing_result_makes_a_bad_call():
    m = scored("tool_call_accuracy", tool())
    assert m.value == 0.0
    assert m.details["bad_calls"][0]["why"] == "no result"


def test_blank_result_is_no_result():
    m = scored("tool_call_accuracy", tool(result="   "))
    assert m.details["bad_calls"][0]["why"] == "no result"


def test_every_problem_of_a_call_is_given():
    m = scored("tool_call_accuracy", tool(arguments="{", result={"error": "x"}))
    assert m.details["bad_calls"][0]["why"] == "arguments are not valid JSON; result has an 'error' key"


@pytest.mark.parametrize(
    ("result", "why"),
    [
        ({"error": "not found"}, "result has an 'error' key"),
        ({"errors": [{"message": "bad"}]}, "result has an 'errors' key"),
        ({"success": False, "data": None}, "result says success: false"),
        ({"success": "False"}, "result says success: false"),
        ({"ok": False, "error": ""}, "result says ok: false"),
        ({"status": 404}, "result status 404"),
        ({"status": 400}, "result status 400"),
        ({"status_code": "500"}, "result status_code 500"),
        ({"statusCode": 503.0}, "result statusCode 503.0"),
        ("Error: timeout", "result starts with 'error'"),
        ("  failed to reach the CRM", "result starts with 'failed'"),
        ("FAILURE", "result starts with 'failure'"),
        ('{"error": "boom"}', "result has an 'error' key"),  # a string holding JSON is parsed
        ('{"status": "502"}', "result status 502"),
        ('"error while booking"', "result starts with 'error'"),  # a JSON string's text
    ],
)
def test_result_that_looks_like_a_failure_makes_a_bad_call(result, why):
    m = scored("tool_call_accuracy", tool(result=result))
    assert (m.value, m.score, m.passed) == (0.0, 0.0, False)
    assert m.details["bad_calls"][0]["why"] == why


@pytest.mark.parametrize(
    "result",
    [
        {"status": 399},
        {"status": 200, "success": True},
        {"status": "ok"},
        {"status": True},  # a boolean is not a status code
        {"error": None, "data": 1},
        {"errors": []},
        {"success": "true", "ok": True},
        {"status": "success"},
        {"order_id": "W1", "status": "failed"},  # the order's status: the lookup itself succeeded
        "no errors found",
        "Booked for 4pm",
        '{"booked": true}',
        [1, 2],
        0,
    ],
)
def test_result_that_does_not_look_like_a_failure_is_good(result):
    m = scored("tool_call_accuracy", tool(result=result))
    assert (m.value, m.score) == (1.0, 100.0)


def test_later_tool_call_with_the_same_id_carries_the_result():
    m = scored(
        "tool_call_accuracy", tool(tool_call_id="t1"), tool(tool_call_id="t1", arguments="", result={"ok": True})
    )
    assert (m.details["total"], m.details["good"], m.value) == (1, 1, 1.0)


def test_later_result_can_turn_a_call_bad():
    m = scored(
        "tool_call_accuracy",
        tool(tool_call_id="t1", result="pending"),
        tool(tool_call_id="t1", arguments="", result="failed: card declined"),
    )
    assert m.details["total"] == 1
    assert m.details["bad_calls"][0]["why"] == "result starts with 'failed'"


def test_tool_calls_without_an_id_are_separate_calls():
    m = scored("tool_call_accuracy", tool(result="ok"), tool(result="ok"))
    assert m.details["total"] == 2


def test_rtvi_function_calls_count_when_there_are_no_tool_call_events():
    m = scored(
        "tool_call_accuracy",
        rtvi(
            "llm-function-call-in-progress", {"tool_call_id": "r1", "function_name": "lookup", "arguments": {"id": 1}}
        ),
        rtvi("llm-function-call-stopped", {"tool_call_id": "r1", "cancelled": False, "result": {"id": 1}}),
        rtvi("llm-function-call-in-progress", {"tool_call_id": "r2", "function_name": "book"}),
    )
    # r1 good; r2 never stopped → no result. 1 / 2.
    assert (m.details["total"], m.details["good"], m.value, m.score) == (2, 1, 0.5, 50.0)
    assert m.details["bad_calls"] == [{"tool_call_id": "r2", "name": "book", "why": "no result"}]


def test_cancelled_rtvi_function_call_is_bad():
    m = scored(
        "tool_call_accuracy",
        rtvi("llm-function-call-stopped", {"tool_call_id": "r1", "cancelled": True, "function_name": "book"}),
    )
    assert m.details["bad_calls"][0]["why"] == "cancelled"


def test_completed_rtvi_call_whose_result_pipecat_did_not_report_is_good():
    # Pipecat sends `result` only at its FULL report level (the default, NONE, sends only the id and
    # `cancelled`), and never a falsy one: `cancelled: false` still says the call completed.
    m = scored(
        "tool_call_accuracy",
        rtvi("llm-function-call-in-progress", {"tool_call_id": "r1"}),
        rtvi("llm-function-call-stopped", {"tool_call_id": "r1", "cancelled": False}),
        rtvi("llm-function-call-in-progress", {"tool_call_id": "r2", "function_name": "set_flag"}),
        rtvi("llm-function-call-stopped", {"tool_call_id": "r2", "cancelled": False, "function_name": "set_flag"}),
        rtvi("llm-function-call-in-progress", {"tool_call_id": "r3", "function_name": "lookup"}),
        rtvi("llm-function-call-stopped", {"tool_call_id": "r3", "cancelled": False, "result": {"id": 3}}),
    )
    assert (m.details["total"], m.details["good"], m.value) == (3, 3, 1.0)
    assert m.details["results_not_reported"] == 2


def test_a_cancelled_call_is_not_a_result_left_unreported():
    m = scored("tool_call_accuracy", rtvi("llm-function-call-stopped", {"tool_call_id": "r1", "cancelled": True}))
    assert (m.details["good"], m.details["results_not_reported"]) == (0, 0)


@pytest.mark.parametrize(
    "stand_in",
    [
        "The function `book_table` failed and returned no result.",
        "The function `book_table` is not currently available.",
    ],
)
def test_pipecats_stand_in_result_for_a_failed_or_missing_function_is_a_failure(stand_in):
    # What Pipecat's LLM services give the model when a handler raised or the function is not registered.
    m = scored(
        "tool_call_accuracy",
        rtvi(
            "llm-function-call-stopped",
            {"tool_call_id": "r1", "cancelled": False, "function_name": "book_table", "result": stand_in},
        ),
    )
    assert m.value == 0.0
    assert m.details["bad_calls"][0]["why"].startswith("result says 'The function `book_table`")
    assert scored("tool_call_accuracy", tool(result=stand_in)).value == 0.0
    assert scored("tool_call_accuracy", tool(result="The function lookup returned 3 rows.")).value == 1.0


def test_rtvi_arguments_given_as_text_must_be_valid_json():
    m = scored(
        "tool_call_accuracy",
        rtvi("llm-function-call-in-progress", {"tool_call_id": "r1", "arguments": "{oops"}),
        rtvi("llm-function-call-stopped", {"tool_call_id": "r1", "cancelled": False, "result": "ok"}),
    )
    assert m.details["bad_calls"][0]["why"] == "arguments are not valid JSON"


def test_rtvi_function_calls_are_ignored_when_tool_call_events_exist():
    # Never both: the RTVI message (a bad, unfinished call) describes the same call again.
    m = scored(
        "tool_call_accuracy",
        rtvi("llm-function-call-in-progress", {"tool_call_id": "r9", "function_name": "lookup"}),
        tool(tool_call_id="t1", result="ok"),
    )
    assert (m.details["total"], m.value) == (1, 1.0)


def test_tool_calls_of_the_simulated_user_do_not_count():
    m = scored(
        "tool_call_accuracy",
        tool(result="ok", side="user"),
        rtvi("llm-function-call-in-progress", {"tool_call_id": "r1"}, side="user"),
    )
    assert m.details["reason"] == "No tool calls"


def test_bad_calls_list_is_capped_at_20():
    m = scored("tool_call_accuracy", *[tool(tool_call_id=f"t{i}") for i in range(25)])
    assert (m.details["total"], m.details["good"]) == (25, 0)
    assert len(m.details["bad_calls"]) == 20
    assert m.details["bad_calls"][0]["tool_call_id"] == "t0"


def test_share_at_the_threshold_passes():
    # 4 good of 5 = 0.8 → 80.0, threshold 80.
    m = scored("tool_call_accuracy", *[tool(result="ok") for _ in range(4)], tool())
    assert (m.value, m.score, m.passed) == (0.8, 80.0, True)


def test_value_has_four_decimals_and_score_one():
    # 2 / 3 = 0.6666… → value 0.6667, score 66.7.
    m = scored("tool_call_accuracy", tool(result="ok"), tool(result="ok"), tool(result=json.dumps({"errors": ["x"]})))
    assert (m.value, m.score, m.passed) == (0.6667, 66.7, False)


def test_arguments_sent_as_an_object_are_a_good_call_as_the_same_json_text_is():
    """Most SDKs hand a tool's arguments over decoded: an object is taken as it is, never as invalid JSON."""
    from scorers.engine import CallEngine
    from tests.helpers.eventkit import event

    def accuracy(arguments):
        engine = CallEngine()
        engine.process(event("call.started", {"agent_id": "a"}))
        engine.process(event("tool.call", {"name": "lookup", "arguments": arguments, "result": {"ok": True}}))
        result = engine.process(event("call.ended", {"stop_reason": "[EXIT]"})).result
        return next(m for m in result.metrics if m.metric == "tool_call_accuracy")

    as_object, as_text = accuracy({"order_id": 7}), accuracy('{"order_id": 7}')
    assert (
        (as_object.value, as_object.details["bad_calls"]) == (as_text.value, as_text.details["bad_calls"]) == (1.0, [])
    )
