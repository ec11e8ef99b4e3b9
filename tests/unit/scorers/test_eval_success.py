"""success_breakdown, is_successful, is_task_successful, the agent-turn floor, and the shape of the
whole metrics.json document."""

from __future__ import annotations

import json

import pytest

from models.events import ScenarioSpec
from models.scenario import SuccessSignal
from scorers.evaluation.db_state import db_state_hash
from scorers.evaluation.success import rate_verdict, signal_verdicts, success_fields
from tests.helpers.eventkit import event, run_call

ALL_SIGNALS = ["is_action_match", "db_state_match", "db_state_assertion", "nl_assertion", "judge_passed", "clean_exit"]


def spec(**fields) -> ScenarioSpec:
    return ScenarioSpec(name="demo__1", **fields)


# ------------------------------------------------------------------------------ signal verdicts


@pytest.mark.parametrize(
    ("rate", "verdict"), [(1.0, True), (1, True), (0.99, False), (0.0, False), (None, None), ("N/A", None)]
)
def test_a_pass_rate_passes_only_at_one(rate, verdict):
    assert rate_verdict(rate) is verdict


def test_signal_verdicts_read_the_document():
    document = {
        "is_action_match": "N/A",
        "db_state_match": False,
        "db_state_assertion_pass_rate": 1.0,
        "nl_assertion_pass_rate": 0.5,
        "clean_exit": True,
    }
    assert signal_verdicts(document) == {
        SuccessSignal.ACTION_MATCH: None,  # "N/A": no verdict
        SuccessSignal.DB_STATE_MATCH: False,
        SuccessSignal.DB_STATE_ASSERTION: True,
        SuccessSignal.NL_ASSERTION: False,
        SuccessSignal.JUDGE_PASSED: None,  # absent
        SuccessSignal.CLEAN_EXIT: True,
    }


# --------------------------------------------------------------------------------------- buckets


def test_buckets_split_whitelisted_signals_and_list_computed_others_as_excluded():
    document = {"is_action_match": True, "db_state_match": True, "clean_exit": False}
    fields = success_fields(document, spec(success_signals=["is_action_match", "clean_exit", "judge_passed"]), 5)
    assert fields["success_breakdown"] == {
        "passed": ["is_action_match"],
        "failed": ["clean_exit"],
        "not_applicable": ["judge_passed"],
        "excluded": ["db_state_match"],  # computed, not whitelisted; the other unlisted ones have no verdict
    }


def test_any_failed_whitelisted_signal_fails_the_composite():
    fields = success_fields(
        {"is_action_match": True, "clean_exit": False}, spec(success_signals=["is_action_match", "clean_exit"]), 5
    )
    assert fields["is_successful"] is False


def test_all_applicable_whitelisted_signals_passing_succeeds():
    fields = success_fields(
        {"is_action_match": True, "clean_exit": True},
        spec(success_signals=["is_action_match", "clean_exit", "judge_passed"]),
        5,
    )
    assert (fields["is_successful"], fields["is_task_successful"]) == (True, True)


def test_excluded_signals_never_affect_the_composite():
    fields = success_fields({"db_state_match": False, "clean_exit": True}, spec(success_signals=["clean_exit"]), 5)
    assert fields["success_breakdown"]["excluded"] == ["db_state_match"]
    assert fields["is_successful"] is True


def test_a_failed_pass_rate_signal_lands_in_failed():
    fields = success_fields(
        {"db_state_assertion_pass_rate": 0.5, "clean_exit": True},
        spec(success_signals=["db_state_assertion", "clean_exit"]),
        5,
    )
    assert fields["success_breakdown"]["failed"] == ["db_state_assertion"]
    assert fields["is_successful"] is False


def test_task_success_ignores_only_a_failed_clean_exit():
    only_exit = success_fields(
        {"is_action_match": True, "clean_exit": False}, spec(success_signals=["is_action_match", "clean_exit"]), 5
    )
    with_action = success_fields(
        {"is_action_match": False, "clean_exit": False}, spec(success_signals=["is_action_match", "clean_exit"]), 5
    )
    assert (only_exit["is_successful"], only_exit["is_task_successful"]) == (False, True)
    assert (with_action["is_successful"], with_action["is_task_successful"]) == (False, False)


def test_no_applicable_whitelisted_signal_is_na_and_task_success_is_not_written():
    fields = success_fields(
        {"is_action_match": "N/A", "clean_exit": True}, spec(success_signals=["is_action_match", "judge_passed"]), 5
    )
    assert fields["success_breakdown"] == {
        "passed": [],
        "failed": [],
        "not_applicable": ["is_action_match", "judge_passed"],
        "excluded": ["clean_exit"],
    }
    assert fields["is_successful"] == "N/A"
    assert "is_task_successful" not in fields


def test_without_a_whitelist_every_signal_gates():
    fields = success_fields({"is_action_match": True, "db_state_match": False, "clean_exit": True}, spec(), 5)
    assert fields["success_breakdown"] == {
        "passed": ["is_action_match", "clean_exit"],
        "failed": ["db_state_match"],
        "not_applicable": ["db_state_assertion", "nl_assertion", "judge_passed"],
        "excluded": [],
    }
    assert (fields["is_successful"], fields["is_task_successful"]) == (False, False)


def test_a_whitelist_name_that_is_no_signal_gates_nothing():
    fields = success_fields({"clean_exit": False}, spec(success_signals=["clean_exitt", "is_action_match"]), 5)
    assert fields["success_breakdown"]["failed"] == []
    assert fields["success_breakdown"]["excluded"] == ["clean_exit"]
    assert fields["is_successful"] == "N/A"


def test_an_empty_whitelist_gates_nothing():
    fields = success_fields({"clean_exit": True}, spec(success_signals=[]), 5)
    assert fields["is_successful"] == "N/A"
    assert fields["success_breakdown"]["excluded"] == ["clean_exit"]


# ------------------------------------------------------------------------------ agent-turn floor


def test_fewer_agent_llm_calls_than_the_floor_force_failure():
    document = {"is_action_match": True, "clean_exit": True}
    fields = success_fields(document, spec(success_signals=["is_action_match", "clean_exit"]), 1)  # 1 < default 2
    assert (fields["is_successful"], fields["is_task_successful"], fields["insufficient_agent_turns"]) == (
        False,
        False,
        True,
    )
    assert fields["min_agent_turns"] == 2  # the floor it fell short of: scenarios each carry their own
    assert success_fields(document, spec(min_agent_turns=5), 4)["min_agent_turns"] == 5
    # The breakdown still shows what each signal said; the run summary skips the call per signal.
    assert fields["success_breakdown"]["passed"] == ["is_action_match", "clean_exit"]


def test_a_stalled_call_fails_even_when_nothing_was_applicable():
    fields = success_fields({"is_action_match": "N/A"}, spec(success_signals=["is_action_match"]), 0)
    assert (fields["is_successful"], fields["is_task_successful"]) == (False, False)


def test_reaching_the_floor_is_enough():
    fields = success_fields({"clean_exit": True}, spec(min_agent_turns=3), 3)
    assert "insufficient_agent_turns" not in fields and "min_agent_turns" not in fields
    assert fields["is_successful"] is True


def test_a_floor_of_zero_disables_the_check():
    fields = success_fields({"clean_exit": True}, spec(min_agent_turns=0), 0)
    assert "insufficient_agent_turns" not in fields


def test_a_call_without_a_scenario_has_no_floor():
    fields = success_fields({"clean_exit": True}, None, 0)
    assert "insufficient_agent_turns" not in fields
    assert fields["is_successful"] is True


def tokens(n_calls: int, side: str = "agent") -> object:
    entries = [{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}] * n_calls
    return event("rtvi", {"side": side, "message": {"type": "metrics", "data": {"tokens": entries}}})


def test_the_floor_counts_the_agents_llm_calls_from_token_usage():
    started = event("call.started", {"agent_id": "a1", "scenario": {"name": "demo__1"}})
    end_tool = event("tool.call", {"name": "EndConversationTool", "arguments": "{}"})
    ended = event("call.ended", {"stop_reason": "[EXIT]"})
    _, stalled = run_call([started, tokens(1), tokens(5, side="user"), end_tool, ended])
    doc = stalled[-1].evaluation
    assert doc["token_usage"]["agent"]["n_calls"] == 1  # user-side calls do not count
    assert (doc["is_successful"], doc["insufficient_agent_turns"]) == (False, True)


def agent_turn(text: str) -> object:
    return event("turn", {"role": "agent", "text": text})


def test_token_usage_is_preferred_to_the_agents_turns():
    started = event("call.started", {"agent_id": "a1", "scenario": {"name": "demo__1"}})
    ended = event("call.ended", {"stop_reason": "[EXIT]"})
    _, results = run_call([started, agent_turn("Hello."), agent_turn("Sure."), agent_turn("Bye."), tokens(1), ended])
    assert results[-1].evaluation["insufficient_agent_turns"] is True  # 1 LLM call reported, 3 turns


@pytest.mark.parametrize(("agent_turns", "stalled"), [(1, True), (2, False)])
def test_without_agent_token_usage_the_floor_counts_the_agents_turns(agent_turns, stalled):
    # A pipeline with usage metrics off reports no tokens: the harness falls back to the messages
    # of the agent's LLM context, here its turns; the user's token metrics do not count.
    started = event("call.started", {"agent_id": "a1", "scenario": {"name": "demo__1"}})
    user = event("turn", {"role": "user", "text": "Hi there."})
    ended = event("call.ended", {"stop_reason": "[EXIT]"})
    turns = [agent_turn(f"Answer {n}.") for n in range(agent_turns)]
    _, results = run_call([started, user, *turns, tokens(4, side="user"), ended])
    doc = results[-1].evaluation
    assert doc["token_usage"]["agent"]["n_calls"] == 0
    assert doc.get("insufficient_agent_turns", False) is stalled
    assert doc["is_successful"] is not stalled  # clean exit, the one signal with a verdict here


# --------------------------------------------------------------------------- the whole document


EXPECTED_DB = {"orders": {"o1": {"status": "placed"}}}


def full_scenario_call() -> list:
    scenario = {
        "name": "airline__7",
        "success_signals": ["db_state_match", "clean_exit", "nl_assertion"],
        "reference_answer": {"status": "placed"},
        "expected_db_hash": db_state_hash(EXPECTED_DB),
        "db_state_assertions": [
            {
                "func_name": "field_equals",
                "side": "agent",
                "arguments": {"path": "orders.o1.status"},
                "assert_value": "placed",
            }
        ],
        "nl_assertions": ["The agent confirmed the booking."],
        "judge_threshold": 0.5,
    }
    judge = {
        "score": 0.9,
        "reason": "ok",
        "judge_input": {"system_prompt": "s", "user_content": "u"},
        "nl_assertion_verdicts": [{"index": 1, "passed": True, "reason": "confirmed"}],
    }
    return [
        event("call.started", {"agent_id": "a1", "scenario": scenario}),
        event("attempt.discarded", {"reason": "0 conversation turns (bots never exchanged audio)"}),
        event("turn", {"role": "user", "text": "book it"}),
        tokens(2),
        event(
            "rtvi",
            {
                "side": "agent",
                "message": {
                    "type": "server-message",
                    "data": {"text": '<final_response>{"status": "placed"}</final_response>'},
                },
            },
        ),
        event("turn", {"role": "agent", "text": "done"}),
        event("db.state", {"side": "agent", "db": EXPECTED_DB}),
        event("tool.call", {"name": "EndConversationTool", "arguments": "{}"}),
        event("call.ended", {"stop_reason": "[EXIT]", "trace_metrics": {"spans": 3}}),
        event("judge.result", {"evaluation": judge}),
    ]


def test_a_scenario_document_keeps_the_contract_key_order():
    _, results = run_call(full_scenario_call())
    assert list(results[-1].evaluation) == [
        "scenario_name",
        "scenario_directory",
        "total_turns",
        "turns",
        "duration_seconds",
        "scenario_duration",
        "latency_stats",
        "latencies",
        "stop_reason",
        "inactivity_timeout_seconds",
        "clean_exit",
        "end_conversation_tool_called",
        "simulator_end_reported",
        "last_speaker",
        "conversation_end_policy",
        "conversation_end_reason",
        "is_action_match",
        "token_usage",
        "success_breakdown",
        "is_successful",
        "is_task_successful",
        "auto_retry_count",
        "db_state_expected_hash",
        "db_state_actual_hash",
        "db_state_match",
        "db_state_assertion_verdicts",
        "db_state_assertion_pass_rate",
        "nl_assertion_pass_rate",
        "judge_score",
        "judge_passed",
        "auto_retry_reasons",
        "trace_metrics",
        "judge_result",
    ]


def test_a_scenario_document_scores_every_signal():
    _, results = run_call(full_scenario_call())
    doc = results[-1].evaluation
    assert doc["is_action_match"] is True
    assert (doc["db_state_match"], doc["db_state_assertion_pass_rate"], doc["nl_assertion_pass_rate"]) == (
        True,
        1.0,
        1.0,
    )
    assert (doc["judge_score"], doc["judge_passed"], doc["clean_exit"]) == (0.9, True, True)
    assert doc["success_breakdown"] == {
        "passed": ["db_state_match", "nl_assertion", "clean_exit"],
        "failed": [],
        "not_applicable": [],
        "excluded": ["is_action_match", "db_state_assertion", "judge_passed"],
    }
    assert (doc["is_successful"], doc["is_task_successful"]) == (True, True)
    json.dumps(doc)  # the document is plain JSON


def test_a_production_call_gets_the_full_always_present_document():
    _, results = run_call(
        [
            event("call.started", {"agent_id": "a1"}),
            event("turn", {"role": "agent", "text": "hello"}),
            event("call.ended", {"stop_reason": "[TIMEOUT]"}),
        ]
    )
    doc = results[-1].evaluation
    assert list(doc) == [
        "scenario_name",
        "scenario_directory",
        "total_turns",
        "turns",
        "duration_seconds",
        "scenario_duration",
        "latency_stats",
        "latencies",
        "stop_reason",
        "inactivity_timeout_seconds",
        "clean_exit",
        "end_conversation_tool_called",
        "simulator_end_reported",
        "last_speaker",
        "conversation_end_policy",
        "conversation_end_reason",
        "is_action_match",
        "token_usage",
        "success_breakdown",
        "is_successful",
        "is_task_successful",
        "auto_retry_count",
    ]
    assert (doc["is_action_match"], doc["clean_exit"], doc["conversation_end_policy"]) == ("N/A", False, "tool-only")
    # Every signal is whitelisted; only clean_exit has a verdict, and it failed.
    assert doc["success_breakdown"]["failed"] == ["clean_exit"]
    assert (doc["is_successful"], doc["is_task_successful"]) == (False, True)


def test_a_production_call_that_ended_cleanly_succeeds():
    # clean_exit is always a bool, so a production call always has a verdict; "[EXIT]" is the agent's end.
    _, results = run_call([event("call.started", {"agent_id": "a1"}), event("call.ended", {"stop_reason": "[EXIT]"})])
    doc = results[-1].evaluation
    assert (doc["is_successful"], doc["is_task_successful"]) == (True, True)
    assert "insufficient_agent_turns" not in doc
