"""clean_exit and its evidence under both conversation-end policies (metrics dictionary,
docs/concepts/evaluation-rules.md#conversation-end)."""

from __future__ import annotations

import pytest

from scorers.evaluation.conversation_end import conversation_end_verdict
from tests.helpers.eventkit import event, run_call


def started(policy: str | None = None) -> object:
    scenario = {"name": "demo__end"}
    if policy is not None:
        scenario["conversation_end_policy"] = policy
    return event("call.started", {"agent_id": "a1", "scenario": scenario})


def server_message(text: str, side: str) -> object:
    return event("rtvi", {"side": side, "message": {"type": "server-message", "data": {"text": text}}})


def end_tool_call(side: str = "agent") -> object:
    return event("tool.call", {"name": "EndConversationTool", "arguments": "{}", "side": side})


def turn(role: str) -> object:
    return event("turn", {"role": role, "text": f"{role} speaks"})


def ended(stop_reason: str, **flags: bool) -> object:
    return event("call.ended", {"stop_reason": stop_reason, **flags})


def evaluation(*events: object) -> dict:
    _, results = run_call(list(events))
    return results[-1].evaluation


def end_fields(document: dict) -> tuple:
    return (document["clean_exit"], document["conversation_end_reason"])


# --------------------------------------------------------------------------- tool-only (default)


def test_tool_only_passes_when_the_agent_calls_end_conversation_tool():
    doc = evaluation(started("tool-only"), turn("user"), turn("agent"), end_tool_call(), ended("[EXIT]"))
    assert end_fields(doc) == (True, "agent_end_conversation_tool")
    assert doc["end_conversation_tool_called"] is True
    assert doc["conversation_end_policy"] == "tool-only"


def test_tool_only_fails_without_the_agent_tool():
    doc = evaluation(started("tool-only"), turn("user"), turn("agent"), ended("[TIMEOUT]"))
    assert end_fields(doc) == (False, "agent_end_conversation_tool_missing")
    assert doc["end_conversation_tool_called"] is False
    assert doc["simulator_end_reported"] is False


def test_tool_only_does_not_accept_the_simulators_end():
    doc = evaluation(started("tool-only"), turn("user"), server_message("<exit>bye</exit>", "user"), ended("[TIMEOUT]"))
    assert doc["simulator_end_reported"] is True
    assert end_fields(doc) == (False, "agent_end_conversation_tool_missing")


def test_tool_only_does_not_accept_an_inactivity_timeout_after_the_user():
    doc = evaluation(started("tool-only"), turn("agent"), turn("user"), ended("[INACTIVITY_TIMEOUT]"))
    assert end_fields(doc) == (False, "agent_end_conversation_tool_missing")


def test_the_default_policy_is_tool_only():
    doc = evaluation(started(), turn("user"), server_message("<exit>done</exit>", "user"), ended("[TIMEOUT]"))
    assert doc["conversation_end_policy"] == "tool-only"
    assert end_fields(doc) == (False, "agent_end_conversation_tool_missing")


def test_a_call_without_a_scenario_is_judged_under_tool_only():
    doc = evaluation(event("call.started", {"agent_id": "a1"}), turn("agent"), end_tool_call(), ended("[EXIT]"))
    assert doc["conversation_end_policy"] == "tool-only"
    assert end_fields(doc) == (True, "agent_end_conversation_tool")


# ------------------------------------------------------------------------- valid-terminal-state


def test_valid_terminal_state_passes_on_the_agent_tool():
    doc = evaluation(started("valid-terminal-state"), turn("agent"), end_tool_call(), ended("[EXIT]"))
    assert end_fields(doc) == (True, "agent_end_conversation_tool")


def test_valid_terminal_state_passes_on_the_simulators_reported_end():
    doc = evaluation(
        started("valid-terminal-state"),
        turn("user"),
        server_message("<exit>all done</exit>", "user"),
        ended("[SIMULATOR_EXIT]"),
    )
    assert doc["simulator_end_reported"] is True
    assert doc["end_conversation_tool_called"] is False
    assert end_fields(doc) == (True, "simulator_reported_end")


def test_valid_terminal_state_passes_on_inactivity_after_a_final_user_turn():
    doc = evaluation(started("valid-terminal-state"), turn("agent"), turn("user"), ended("[INACTIVITY_TIMEOUT]"))
    assert doc["last_speaker"] == "user"
    assert end_fields(doc) == (True, "inactivity_timeout_after_user_final_turn")


def test_valid_terminal_state_fails_on_inactivity_after_a_final_agent_turn():
    doc = evaluation(started("valid-terminal-state"), turn("user"), turn("agent"), ended("[INACTIVITY_TIMEOUT]"))
    assert end_fields(doc) == (False, "no_valid_terminal_evidence")


def test_valid_terminal_state_never_accepts_the_overall_timeout():
    doc = evaluation(started("valid-terminal-state"), turn("agent"), turn("user"), ended("[TIMEOUT]"))
    assert end_fields(doc) == (False, "no_valid_terminal_evidence")


def test_valid_terminal_state_fails_with_no_turns_and_no_evidence():
    doc = evaluation(started("valid-terminal-state"), ended("[INACTIVITY_TIMEOUT]"))
    assert doc["last_speaker"] is None
    assert end_fields(doc) == (False, "no_valid_terminal_evidence")


# ------------------------------------------------------------------------------------ precedence


@pytest.mark.parametrize(
    ("policy", "tool", "simulator", "stop_reason", "last_speaker", "expected"),
    [
        # Every row of the reason table, under both policies.
        ("tool-only", True, False, "[EXIT]", "agent", (True, "agent_end_conversation_tool")),
        ("tool-only", False, False, "[TIMEOUT]", "agent", (False, "agent_end_conversation_tool_missing")),
        ("tool-only", False, True, "[SIMULATOR_EXIT]", "user", (False, "agent_end_conversation_tool_missing")),
        ("tool-only", False, False, "[INACTIVITY_TIMEOUT]", "user", (False, "agent_end_conversation_tool_missing")),
        ("valid-terminal-state", True, False, "[EXIT]", "agent", (True, "agent_end_conversation_tool")),
        ("valid-terminal-state", False, True, "[SIMULATOR_EXIT]", "user", (True, "simulator_reported_end")),
        (
            "valid-terminal-state",
            False,
            False,
            "[INACTIVITY_TIMEOUT]",
            "user",
            (True, "inactivity_timeout_after_user_final_turn"),
        ),
        ("valid-terminal-state", False, False, "[INACTIVITY_TIMEOUT]", "agent", (False, "no_valid_terminal_evidence")),
        ("valid-terminal-state", False, False, "[TIMEOUT]", "user", (False, "no_valid_terminal_evidence")),
        # Several kinds of evidence: the agent's tool, then the simulator's end, then the inactivity rule.
        ("valid-terminal-state", True, True, "[INACTIVITY_TIMEOUT]", "user", (True, "agent_end_conversation_tool")),
        ("valid-terminal-state", False, True, "[INACTIVITY_TIMEOUT]", "user", (True, "simulator_reported_end")),
        ("tool-only", True, True, "[EXIT]", "user", (True, "agent_end_conversation_tool")),
    ],
)
def test_conversation_end_verdict_table(policy, tool, simulator, stop_reason, last_speaker, expected):
    assert conversation_end_verdict(policy, tool, simulator, stop_reason, last_speaker) == expected


def test_the_agent_tool_outranks_the_simulators_end_in_a_call():
    doc = evaluation(
        started("valid-terminal-state"), server_message("<exit>x</exit>", "user"), end_tool_call(), ended("[EXIT]")
    )
    assert (doc["end_conversation_tool_called"], doc["simulator_end_reported"]) == (True, True)
    assert end_fields(doc) == (True, "agent_end_conversation_tool")


# -------------------------------------------------------------------------------------- evidence


def test_an_agent_side_exit_server_message_means_the_agent_ended():
    doc = evaluation(
        started(), turn("agent"), server_message("Goodbye <exit>resolved</exit>", "agent"), ended("[TIMEOUT]")
    )
    assert doc["end_conversation_tool_called"] is True
    assert doc["simulator_end_reported"] is False
    assert end_fields(doc) == (True, "agent_end_conversation_tool")


def test_an_agent_rtvi_function_call_to_end_conversation_tool_counts():
    call = event(
        "rtvi",
        {
            "side": "agent",
            "message": {
                "type": "llm-function-call-in-progress",
                "data": {"tool_call_id": "t1", "function_name": "EndConversationTool"},
            },
        },
    )
    doc = evaluation(started(), call, ended("[TIMEOUT]"))
    assert doc["end_conversation_tool_called"] is True


def test_the_simulated_users_end_conversation_tool_is_not_the_agents():
    doc = evaluation(started(), end_tool_call(side="user"), ended("[TIMEOUT]"))
    assert doc["end_conversation_tool_called"] is False
    assert end_fields(doc) == (False, "agent_end_conversation_tool_missing")


def test_a_server_message_without_an_exit_tag_is_no_evidence():
    doc = evaluation(
        started("valid-terminal-state"),
        server_message("<exit>unterminated", "user"),
        server_message("see you", "agent"),
        ended("[TIMEOUT]"),
    )
    assert (doc["end_conversation_tool_called"], doc["simulator_end_reported"]) == (False, False)


def test_a_string_server_message_carries_the_exit_tag_too():
    plain = event("rtvi", {"side": "user", "message": {"type": "server-message", "data": "<exit>bye</exit>"}})
    doc = evaluation(started("valid-terminal-state"), plain, ended("[TIMEOUT]"))
    assert end_fields(doc) == (True, "simulator_reported_end")


def test_call_ended_flags_report_both_ends():
    doc = evaluation(
        started("valid-terminal-state"),
        ended("[TIMEOUT]", end_conversation_tool_called=True, simulator_end_reported=True),
    )
    assert (doc["end_conversation_tool_called"], doc["simulator_end_reported"]) == (True, True)
    assert end_fields(doc) == (True, "agent_end_conversation_tool")


def test_a_false_flag_on_call_ended_does_not_erase_seen_evidence():
    doc = evaluation(started(), end_tool_call(), ended("[TIMEOUT]", end_conversation_tool_called=False))
    assert doc["end_conversation_tool_called"] is True


def test_stop_reason_exit_is_the_agents_end_and_simulator_exit_the_simulators():
    agent = evaluation(started(), ended("[EXIT]"))
    simulator = evaluation(started("valid-terminal-state"), ended("[SIMULATOR_EXIT]"))
    assert (agent["end_conversation_tool_called"], agent["clean_exit"]) == (True, True)
    assert (simulator["simulator_end_reported"], simulator["conversation_end_reason"]) == (
        True,
        "simulator_reported_end",
    )


def test_a_false_flag_on_call_ended_stands_over_what_its_stop_reason_implies():
    # A harness that forwards its own flags: the simulated user sent <exit>, and the agent never
    # called EndConversationTool, whatever the stop reason reads.
    doc = evaluation(started(), ended("[EXIT]", end_conversation_tool_called=False, simulator_end_reported=True))
    assert (doc["end_conversation_tool_called"], doc["simulator_end_reported"]) == (False, True)
    assert end_fields(doc) == (False, "agent_end_conversation_tool_missing") and doc["is_successful"] is False
    simulator = evaluation(
        started("valid-terminal-state"), turn("agent"), ended("[SIMULATOR_EXIT]", simulator_end_reported=False)
    )
    assert end_fields(simulator) == (False, "no_valid_terminal_evidence")


def test_the_inactivity_sweep_end_passes_valid_terminal_state_after_the_user():
    from scorers.engine import CallEngine

    engine = CallEngine()
    for e in (started("valid-terminal-state"), turn("agent"), turn("user")):
        engine.process(e)
    (timeout_end,) = engine.sweep(0, end_of_input=True)
    result = engine.process(timeout_end).result
    assert result.evaluation["stop_reason"] == "[INACTIVITY_TIMEOUT]"
    assert end_fields(result.evaluation) == (True, "inactivity_timeout_after_user_final_turn")
