"""A judge's answer applies only to the call it judged, whose end is 1 ms before the answer's event
time. An answer that comes after its call was forgotten and its call_id taken up again judges an end
before the new call began: it is refused, and the new call's own answer, under the same event_id,
still applies."""

from __future__ import annotations

from scorers.engine import CallEngine
from scorers.judge.answers import judge_event_id
from tests.helpers.eventkit import T0, event


def judge_answer(call_id: str, ended_ts_ms: int, reason: str):
    return event(
        "judge.result",
        {"model": "m", "qa": {"naturalness": {"score": 90, "reason": reason}}},
        call_id=call_id,
        ts_ms=ended_ts_ms + 1,
        event_id=judge_event_id(call_id),
    )


def test_an_answer_for_an_earlier_call_of_the_id_is_refused_and_the_calls_own_applies():
    engine = CallEngine(retention_after_end_ms=0, allowed_lateness_ms=0)
    engine.process(event("call.started", {"agent_id": "second"}, call_id="X", ts_ms=T0 + 90_000))
    stale = engine.process(judge_answer("X", T0 + 3_000, "for the first call"))
    assert stale.status == "rejected" and "ended at event time 1760000003000" in stale.reason
    assert "began (at event time 1760000090000)" in stale.reason
    engine.process(event("call.ended", {"stop_reason": "[EXIT]"}, call_id="X", ts_ms=T0 + 93_000))
    again = engine.process(judge_answer("X", T0 + 3_000, "for the first call"))
    assert again.status == "rejected" and "an earlier call of the id" in again.reason
    own = engine.process(judge_answer("X", T0 + 93_000, "for the second call"))
    assert own.status == "applied" and own.result is not None and own.result.version == 2
    assert engine.calls["X"].judge.qa["naturalness"]["reason"] == "for the second call"
