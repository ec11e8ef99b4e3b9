"""Transfer success and transfer wait time: attempted, connected, and started → bridged in event time."""

import pytest

from tests.helpers.eventkit import T0, event
from tests.helpers.qa_kit import scored

T = T0 + 1_000_000  # transfer times, inside the call


def transfer(phase, at):
    return event("transfer", {"phase": phase, "target": "+15550100"}, ts_ms=at)


def tool(name, side="agent"):
    return event("tool.call", {"name": name, "arguments": "{}", "result": "ok", "side": side})


def rtvi_call(function_name):
    message = {"type": "llm-function-call-in-progress", "data": {"tool_call_id": "r1", "function_name": function_name}}
    return event("rtvi", {"side": "agent", "message": message})


# ------------------------------------------------------------------------------------- success


@pytest.mark.parametrize("name", ["transfer_success", "transfer_wait_time"])
def test_no_transfer_attempted_is_not_applicable(name):
    m = scored(name, tool("lookup_order"))
    assert (m.value, m.score, m.passed) == (None, None, None)
    assert m.details["reason"] == "No transfer attempted"


def test_started_and_bridged_is_a_success():
    m = scored("transfer_success", transfer("started", T), transfer("bridged", T + 5000))
    assert (m.value, m.score, m.passed) == (1, 100.0, True)
    assert m.details["judge"] == "heuristic"


def test_started_without_a_bridge_is_a_failure():
    m = scored("transfer_success", transfer("started", T), transfer("failed", T + 5000))
    assert (m.value, m.score, m.passed) == (0, 0.0, False)


def test_tool_call_with_transfer_in_its_name_is_an_attempt():
    m = scored("transfer_success", tool("TransferToHuman"))
    assert (m.value, m.score) == (0, 0.0)


def test_rtvi_function_call_with_transfer_in_its_name_is_an_attempt():
    m = scored("transfer_success", rtvi_call("warm_transfer"))
    assert (m.value, m.score) == (0, 0.0)


def test_simulated_users_tool_call_is_not_an_attempt():
    m = scored("transfer_success", tool("transfer_call", side="user"))
    assert m.details["reason"] == "No transfer attempted"


def test_call_ended_with_call_transfer_is_a_success():
    m = scored("transfer_success", tool("transfer_call"), ended={"reason": "call_transfer"})
    assert (m.value, m.score, m.passed) == (1, 100.0, True)


def test_call_ended_with_another_reason_is_not_a_success():
    m = scored("transfer_success", tool("transfer_call"), ended={"reason": "customer_hangup"})
    assert m.value == 0


# ----------------------------------------------------------------------------------- wait time


@pytest.mark.parametrize(
    ("wait_ms", "score", "passed"),
    [
        (0, 100.0, True),
        (10_000, 100.0, True),  # 100 up to 10 s
        (25_000, 75.0, True),  # 100 * (70 000 - 25 000) / 60 000
        (40_000, 50.0, True),  # exactly the threshold, 50
        (40_060, 49.9, False),  # 100 * 29 940 / 60 000 = 49.9
        (70_000, 0.0, False),  # 0 at 70 s
        (95_000, 0.0, False),
    ],
)
def test_wait_time_score_falls_linearly_from_10_to_70_seconds(wait_ms, score, passed):
    m = scored("transfer_wait_time", transfer("started", T), transfer("bridged", T + wait_ms))
    assert (m.value, m.score, m.passed) == (wait_ms, score, passed)


def test_wait_time_score_is_rounded_to_one_decimal():
    # 100 * (70 000 - 10 100) / 60 000 = 99.8333… → 99.8.
    m = scored("transfer_wait_time", transfer("started", T), transfer("bridged", T + 10_100))
    assert m.score == 99.8


def test_first_started_and_first_bridged_after_it_are_paired():
    m = scored(
        "transfer_wait_time",
        transfer("started", T),
        transfer("started", T + 5000),
        transfer("bridged", T + 12_000),
        transfer("bridged", T + 20_000),
    )
    assert m.value == 12_000


def test_bridged_before_any_started_is_not_paired():
    # 32 000 - 2000 = 30 000 → 100 * 40 000 / 60 000 = 66.7.
    m = scored(
        "transfer_wait_time",
        transfer("bridged", T + 1000),
        transfer("started", T + 2000),
        transfer("bridged", T + 32_000),
    )
    assert (m.value, m.score) == (30_000, 66.7)


def test_transfer_that_did_not_connect_has_no_wait_time():
    m = scored("transfer_wait_time", transfer("started", T), transfer("failed", T + 3000))
    assert (m.value, m.score, m.passed) == (None, None, None)
    assert m.details["reason"] == "Transfer did not connect"


def test_transfer_connected_only_by_the_end_reason_has_no_bridge_timestamp():
    m = scored("transfer_wait_time", transfer("started", T), ended={"reason": "call_transfer"})
    assert m.details["reason"] == "No bridge timestamp"


def test_bridge_without_a_started_event_has_no_start_to_time_from():
    m = scored("transfer_wait_time", tool("transfer_call"), transfer("bridged", T))
    assert m.details["reason"] == "No transfer start timestamp"


def test_a_bridge_alone_is_an_attempt_that_connected():
    # No `started` was sent, but the transfer happened: not "No transfer attempted".
    m = scored("transfer_success", transfer("bridged", T), ended={"reason": "call_transfer"})
    assert (m.value, m.score, m.passed) == (1, 100, True)
    m = scored("transfer_wait_time", transfer("bridged", T))
    assert m.details["reason"] == "No transfer start timestamp"


def test_a_retry_after_a_failed_transfer_is_timed_from_its_own_start():
    # The first attempt fails; the retry a minute later bridges 5 s after its own start.
    m = scored(
        "transfer_wait_time",
        transfer("started", T),
        transfer("failed", T + 6000),
        transfer("started", T + 66_000),
        transfer("bridged", T + 71_000),
    )
    assert (m.value, m.score, m.details["started_ts_ms"]) == (5000, 100, T + 66_000)
    assert (
        scored(
            "transfer_success",
            transfer("started", T),
            transfer("failed", T + 6000),
            transfer("started", T + 66_000),
            transfer("bridged", T + 71_000),
        ).passed
        is True
    )


@pytest.mark.parametrize("order", [(0, 1, 2, 3), (0, 1, 3, 2), (2, 0, 1, 3), (3, 2, 1, 0)])
def test_the_connected_attempt_is_timed_in_event_time_whatever_order_its_events_came_in(order):
    # The first attempt (1 s) failed at 7 s; the retry started at 61 s and bridged at 66 s.
    events = [
        transfer("started", T + 1000),
        transfer("started", T + 61_000),
        transfer("failed", T + 7000),
        transfer("bridged", T + 66_000),
    ]
    m = scored("transfer_wait_time", *(events[i] for i in order))
    assert (m.value, m.details["started_ts_ms"]) == (5000, T + 61_000)


def test_a_bridge_stamped_before_its_start_has_no_bridge_to_time():
    m = scored("transfer_wait_time", transfer("started", T + 200), transfer("bridged", T))
    assert m.details["reason"] == "No bridge timestamp"
