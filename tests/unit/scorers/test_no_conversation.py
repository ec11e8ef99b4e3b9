"""A call whose agent never spoke is flagged `no_conversation` and passes none of its metrics."""

from scorers.engine import CallEngine
from tests.helpers.eventkit import event


def result_of(*middle, ended=True):
    engine = CallEngine()
    engine.process(event("call.started", {"agent_id": "a1"}, event_id="s"))
    for e in middle:
        engine.process(e)
    return engine.process(event("call.ended", {"stop_reason": "[CANCELLED]"}, event_id="end")).result


def test_a_call_with_no_turns_at_all_is_flagged_and_passes_nothing():
    result = result_of()
    assert result.no_conversation is True
    assert [m.metric for m in result.metrics if m.passed is not None] == []


def test_a_call_where_only_the_user_spoke_is_flagged():
    result = result_of(event("turn", {"role": "user", "text": "Hello? Anyone there?"}))
    assert result.no_conversation is True
    assert {m.metric for m in result.metrics if m.passed} == {"wer"}  # the user's speech was transcribed


def test_an_agent_turn_of_punctuation_alone_is_no_speech():
    assert result_of(event("turn", {"role": "agent", "text": " … "})).no_conversation is True


def test_a_call_where_the_agent_spoke_is_a_conversation():
    assert result_of(event("turn", {"role": "agent", "text": "Hi, how can I help?"})).no_conversation is False
