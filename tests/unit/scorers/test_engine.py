"""The shared processing engine: duplicates, redeliveries, late events, versions, the inactivity sweep."""

from __future__ import annotations

from scorers.engine import CallEngine
from scorers.inactivity import INACTIVITY_STOP_REASON
from tests.helpers.eventkit import T0, event


def started(call_id="c1", ts=T0, **data):
    return event("call.started", {"agent_id": "a1", **data}, call_id=call_id, ts_ms=ts)


def ended(call_id="c1", ts=T0 + 10_000):
    return event("call.ended", {"stop_reason": "[EXIT]"}, call_id=call_id, ts_ms=ts)


def test_an_event_id_seen_before_is_ignored():
    engine = CallEngine()
    turn = event("turn", {"role": "user", "text": "hi"})
    engine.process(started())
    assert engine.process(turn).status == "applied"
    assert engine.process(turn).status == "duplicate"
    assert len(engine.calls["c1"].turns) == 1


def test_the_same_event_sent_again_with_other_content_is_still_a_duplicate():
    # A producer's retry: the same id, type and event time. What the rest says is not compared.
    engine = CallEngine()
    engine.process(started())
    turn = event("turn", {"role": "user", "text": "hi"}, event_id="t1", ts_ms=T0 + 5)
    assert engine.process(turn).status == "applied"
    again = engine.process(event("turn", {"role": "user", "text": "hi there"}, event_id="t1", ts_ms=T0 + 5))
    assert again.status == "duplicate" and [t.text for t in engine.calls["c1"].turns] == ["hi"]


def test_another_event_under_an_id_already_applied_is_refused_with_what_each_was():
    # A producer whose id counter started again: dropping the second event as a duplicate lost it unseen.
    engine = CallEngine()
    engine.process(started())
    engine.process(event("turn", {"role": "user", "text": "hi"}, event_id="t1", ts_ms=T0 + 5))
    for reused in (
        event("turn", {"role": "user", "text": "bye"}, event_id="t1", ts_ms=T0 + 9),
        event("tool.call", {"name": "lookup", "arguments": "{}"}, event_id="t1", ts_ms=T0 + 5),
    ):
        processed = engine.process(reused)
        assert processed.status == "rejected" and processed.call is engine.calls["c1"]
        tag = reused.__struct_config__.tag
        assert processed.reason == (
            f"event 't1': call 'c1' has already applied another event under this event_id (a 'turn' event at event "
            f"time {T0 + 5}; this one is a {tag!r} event at event time {reused.ts_ms}): an event_id names one event "
            "of its call, so give this one an id of its own and send it again (or, when it belongs to another call "
            "than the one held under 'c1', give that call an id of its own: a call_id names one call)"
        )
    assert [t.text for t in engine.calls["c1"].turns] == ["hi"]
    assert engine.counters.rejected == 2 and engine.counters.duplicate == 0
    # The id stays the first event's: sent again, that one is still a duplicate.
    again = event("turn", {"role": "user", "text": "hi"}, event_id="t1", ts_ms=T0 + 5)
    assert engine.process(again).status == "duplicate"


def test_an_event_refused_takes_its_id_back_so_the_same_id_sent_again_mended_is_applied():
    # As after a restart, whose ids come from the journal of applied events only.
    engine = CallEngine()
    engine.process(started())
    engine.process(event("turn", {"role": "user", "text": "my bill is wrong"}))
    engine.process(ended())
    wrong = event("transcript.corrected", {"turn_index": 7, "text": "x"}, event_id="fix", ts_ms=T0 + 20_000)
    assert engine.process(wrong).status == "rejected"
    mended = event(
        "transcript.corrected", {"turn_index": 0, "text": "my bill is right"}, event_id="fix", ts_ms=T0 + 20_000
    )
    processed = engine.process(mended)
    assert processed.status == "applied" and processed.result.version == 2
    assert engine.process(mended).status == "duplicate"


def test_a_redelivered_position_is_skipped_even_with_a_new_event_id():
    engine = CallEngine()
    engine.process(started(), position=10)
    replayed = event("turn", {"role": "user", "text": "hi"})
    assert engine.process(replayed, position=10).status == "redelivered"
    assert engine.process(replayed, position=11).status == "applied"


def test_call_ended_publishes_version_1_and_each_post_call_event_the_next_version():
    engine = CallEngine()
    engine.process(started())
    engine.process(event("turn", {"role": "user", "text": "hi"}))
    first = engine.process(ended()).result
    second = engine.process(event("call.annotated", {"user_sentiment": "Negative"}, ts_ms=T0 + 20_000)).result
    third = engine.process(event("transcript.corrected", {"turn_index": 0, "text": "x"}, ts_ms=T0 + 30_000)).result
    assert (first.version, second.version, third.version) == (1, 2, 3)
    assert second.event_ts_ms == T0 + 20_000 and second.ended_ts_ms == T0 + 10_000


def test_a_post_call_event_before_the_end_publishes_nothing_but_counts():
    engine = CallEngine()
    engine.process(started())
    assert engine.process(event("call.annotated", {"user_sentiment": "Positive"})).result is None
    result = engine.process(ended()).result
    sentiment = next(m for m in result.metrics if m.metric == "sentiment")
    assert result.version == 1 and sentiment.score == 100.0


def test_a_correction_that_names_no_user_turn_is_rejected_and_publishes_nothing():
    engine = CallEngine()
    engine.process(started())
    engine.process(event("turn", {"role": "user", "text": "my bill is wrong"}))
    engine.process(event("turn", {"role": "agent", "text": "let me look"}))
    engine.process(ended())
    for index, why in (
        (2, "turn_index 2 names no turn of call 'c1' (its 2 turns are numbered 0 to 1)"),
        (1, "turn_index 1 of call 'c1' is the agent's turn; only user turns are corrected"),
    ):
        refused = engine.process(
            event("transcript.corrected", {"turn_index": index, "text": "x"}, event_id=f"fix-{index}")
        )
        assert refused.status == "rejected" and refused.result is None
        assert refused.reason.startswith(f"event 'fix-{index}': {why}")
    corrected = engine.process(event("transcript.corrected", {"turn_index": 0, "text": "my bill is right"}))
    wer = next(m for m in corrected.result.metrics if m.metric == "wer")
    assert corrected.result.version == 2 and wer.value == 0.25
    assert engine.counters.rejected == 2


def test_a_correction_whose_original_is_not_its_turns_text_is_refused_not_applied_to_another_turn():
    """The producer's turn 1 was refused (its role unknown), so its turn 2 is the call's turn 1: a
    correction of the producer's turn 1 that says what it replaces must not land on that turn."""
    engine = CallEngine()
    engine.process(started())
    engine.process(event("turn", {"role": "user", "text": "I want  Boston"}))
    engine.process(event("turn", {"role": "user", "text": "on Tuesday morning please"}))
    engine.process(ended())
    refused = engine.process(
        event(
            "transcript.corrected",
            {"turn_index": 1, "text": "I want Austin", "original": "I want Boston"},
            event_id="fix",
        )
    )
    assert refused.status == "rejected" and refused.result is None
    assert (
        "turn_index 1 of call 'c1' is 'on Tuesday morning please', not the text this correction replaces"
        in refused.reason
    )
    fixed = engine.process(
        event(
            "transcript.corrected",
            {"turn_index": 0, "text": "I want Austin", "original": "I want Boston"},
            event_id="fix",
        )
    )
    assert fixed.status == "applied" and fixed.result.version == 2  # (whitespace aside, the same text)


def test_a_correction_s_original_in_another_unicode_form_names_its_turn():
    """Typed on another system, the text a correction replaces may be decomposed ("ö" as "o" and a
    combining diaeresis) or carry invisible direction marks: it is still that turn's text."""
    engine = CallEngine()
    engine.process(started())
    engine.process(event("turn", {"role": "user", "text": "Ich m\u00f6chte nach M\u00fcnchen"}))
    engine.process(ended())
    fixed = engine.process(
        event(
            "transcript.corrected",
            {
                "turn_index": 0,
                "text": "Ich m\u00f6chte nach M\u00fcnster",
                "original": "Ich mo\u0308chte nach \u200eMu\u0308nchen",
            },
        )
    )
    assert fixed.status == "applied" and fixed.result.version == 2
    wer = next(m for m in fixed.result.metrics if m.metric == "wer")
    assert (wer.value, wer.details["errors"]) == (0.25, 1)


def test_a_second_start_of_an_open_call_is_rejected_and_the_first_start_stands():
    engine = CallEngine()
    engine.process(started(run_id="R", cohort_ids=["support"]))
    again = engine.process(event("call.started", {"agent_id": "a2"}, event_id="start-2", ts_ms=T0 + 500))
    assert again.status == "rejected" and again.result is None
    assert again.reason == f"event 'start-2': call 'c1' has already started (at event time {T0}); a call starts once"
    result = engine.process(ended()).result
    assert (result.agent_id, result.run_id, result.cohort_ids) == ("a1", "R", ["support"])
    assert engine.counters.rejected == 1


def test_an_in_call_event_after_the_end_is_rejected_with_a_reason():
    engine = CallEngine()
    engine.process(started())
    engine.process(ended())
    late = engine.process(event("turn", {"role": "user", "text": "hello?"}, event_id="late-1"))
    assert late.status == "rejected"
    assert "late-1" in late.reason and "'turn'" in late.reason and "already ended" in late.reason
    assert engine.process(ended()).status == "rejected"  # a second end, with its own event_id


def test_the_sweep_ends_a_silent_call_at_last_activity_plus_its_timeout():
    engine = CallEngine(allowed_lateness_ms=0)
    engine.process(started("quiet", ts=T0, inactivity_timeout_s=60))
    engine.process(event("turn", {"role": "user", "text": "hello?"}, call_id="quiet", ts_ms=T0 + 5_000))
    # Another call on the same partition moves the watermark past 5 000 + 60 000 ms.
    engine.process(started("busy", ts=T0 + 65_001))
    (synthetic,) = engine.sweep(0)
    assert synthetic.call_id == "quiet" and synthetic.ts_ms == T0 + 65_000
    assert synthetic.data.stop_reason == INACTIVITY_STOP_REASON
    result = engine.process(synthetic).result
    assert result.evaluation["stop_reason"] == "[INACTIVITY_TIMEOUT]"
    assert result.evaluation["duration_seconds"] == 65.0


def test_the_sweep_waits_for_the_allowed_lateness():
    engine = CallEngine(allowed_lateness_ms=30_000)
    engine.process(started("quiet", ts=T0))  # deadline T0 + 120 s
    engine.process(started("busy", ts=T0 + 140_000))  # watermark - lateness = T0 + 110 s < deadline
    assert engine.sweep(0) == []
    engine.process(started("busier", ts=T0 + 150_001))  # T0 + 120.001 s > deadline
    assert [e.call_id for e in engine.sweep(0)] == ["quiet"]


def test_activity_pushes_the_deadline_back():
    engine = CallEngine(allowed_lateness_ms=0)
    engine.process(started("c1", ts=T0, inactivity_timeout_s=10))
    engine.process(event("turn", {"role": "user", "text": "still here"}, call_id="c1", ts_ms=T0 + 9_000))
    engine.process(started("other", ts=T0 + 15_000))
    assert engine.sweep(0) == []  # deadline is now T0 + 19 s
    engine.process(started("other2", ts=T0 + 19_001))
    assert [e.ts_ms for e in engine.sweep(0)] == [T0 + 19_000]


def test_end_of_input_sweeps_every_open_call():
    engine = CallEngine()
    engine.process(started("a", ts=T0))
    engine.process(started("b", ts=T0 + 1))
    engine.process(ended("b", ts=T0 + 2))
    assert [e.call_id for e in engine.sweep(0, end_of_input=True)] == ["a"]


def test_a_watermark_event_with_end_of_input_sweeps_its_partition():
    engine = CallEngine()
    engine.process(started("a", ts=T0))
    end_of_input = event("watermark", {"end_of_input": True}, call_id="__watermark__", ts_ms=T0)
    assert engine.process(end_of_input).status == "watermark"
    assert "__watermark__" not in engine.calls
    assert [e.call_id for e in engine.sweep(0)] == ["a"]


def test_an_end_of_input_that_names_its_calls_ends_only_those():
    """Two producers share a deployment: one's end of input must not end the other's calls, whenever
    they were last active; those end by their own inactivity, or their own end."""
    engine = CallEngine()
    engine.process(started("mine", ts=T0))
    engine.process(started("theirs", ts=T0 + 1_000))  # active before my log's last event
    engine.process(started("mine-too", ts=T0 + 2_000))
    for chunk in (["mine"], ["mine-too", "ended-already"]):  # (a log's calls may take several)
        end = event("watermark", {"end_of_input": True, "calls": chunk}, call_id="__watermark__", ts_ms=T0 + 5_000)
        assert engine.process(end).status == "watermark"
    assert sorted(e.call_id for e in engine.sweep(0)) == ["mine", "mine-too"]
    assert engine.calls["theirs"].ended is None
    assert engine.process(ended("theirs", ts=T0 + 6_000)).result is not None
    # Replay's own end of input, and an end of input that names no calls, end every open call.
    engine.process(started("late", ts=T0 + 90_000))
    engine.process(event("watermark", {"end_of_input": True}, call_id="__watermark__", ts_ms=T0 + 5_000))
    assert [e.call_id for e in engine.sweep(0)] == ["late"]


def test_ended_calls_are_forgotten_after_their_retention():
    engine = CallEngine(retention_after_end_ms=60_000)
    engine.process(started("a", ts=T0))
    engine.process(ended("a", ts=T0 + 1_000))
    engine.process(started("b", ts=T0 + 61_000))
    assert engine.forget_expired(0) == []
    engine.process(started("c", ts=T0 + 61_001))
    assert engine.forget_expired(0) == ["a"] and "a" not in engine.calls


def test_a_call_is_kept_its_retention_after_its_latest_event_not_only_after_its_end():
    # Its end stamped before its start: timed from the end, the call was forgotten at once, and its
    # start delivered again was taken up as a second call, publishing a second version 1.
    engine = CallEngine(retention_after_end_ms=60_000)
    first = started("a", ts=T0 + 100_000)
    engine.process(first)
    assert engine.process(ended("a", ts=T0)).result.version == 1
    assert engine.forget_expired(0) == []
    assert engine.process(first).status == "duplicate" and engine.counters.results == 1
    engine.process(started("b", ts=T0 + 160_001))
    assert engine.forget_expired(0) == ["a"]


def test_an_event_applied_after_the_end_moves_the_calls_retention_on():
    # A db.state stamped a day after the end re-scores the call and moves the watermark itself: the
    # call stays held, so the same db.state delivered again is a duplicate, not a new call.
    engine = CallEngine(retention_after_end_ms=60_000)
    engine.process(started("a", ts=T0))
    engine.process(ended("a", ts=T0 + 1_000))
    engine.process(started("b", ts=T0 + 86_400_000))  # (another call bears the watermark's leap out)
    db_state = event("db.state", {"side": "agent"}, call_id="a", event_id="db-1", ts_ms=T0 + 86_400_000)
    assert engine.process(db_state).result.version == 2
    assert engine.forget_expired(0) == [] and "a" in engine.calls
    assert engine.process(db_state).status == "duplicate"
    engine.process(started("c", ts=T0 + 86_460_001))
    assert engine.forget_expired(0) == ["a"] and engine.counters.calls == 3


def test_a_deadline_past_the_latest_event_time_is_held_at_it_so_the_synthetic_end_decodes_again():
    from models.events import MAX_TS_MS
    from models.wire import decode_message, encode_event

    engine = CallEngine()
    engine.process(started("late", ts=MAX_TS_MS - 1_000, inactivity_timeout_s=60))
    (synthetic,) = engine.sweep(0, end_of_input=True)
    assert synthetic.ts_ms == MAX_TS_MS
    assert decode_message(encode_event(synthetic)).events == [synthetic]


def test_a_post_call_event_for_a_call_not_held_is_rejected_without_taking_the_call_up():
    engine = CallEngine()
    processed = engine.process(
        event("call.annotated", {"user_sentiment": "Negative"}, call_id="nobody", event_id="ann-1")
    )
    assert processed.status == "rejected" and processed.call is None
    assert processed.reason == (
        "event 'ann-1': a 'call.annotated' event names call 'nobody', which is not held "
        "(it never started, or it ended and was forgotten after its retention)"
    )
    assert "nobody" not in engine.calls and engine.counters.rejected == 1 and engine.counters.calls == 0


def test_a_post_call_event_after_the_call_was_forgotten_is_rejected_and_the_old_deadline_sweeps_nothing():
    # The call's 2-day inactivity deadline outlives its 60 s retention: its entry is still in the
    # sweep's heap when the end of input comes.
    engine = CallEngine(retention_after_end_ms=60_000)
    engine.process(started("a", ts=T0, inactivity_timeout_s=172_800))
    engine.process(ended("a", ts=T0 + 1_000))
    engine.process(started("b", ts=T0 + 62_000))
    engine.forget_expired(0)
    late = engine.process(event("call.annotated", {"user_sentiment": "Negative"}, call_id="a", ts_ms=T0 + 63_000))
    assert late.status == "rejected" and "'a'" in late.reason and "a" not in engine.calls
    assert [e.call_id for e in engine.sweep(0, end_of_input=True)] == ["b"]
    assert engine.counters.calls == 2


def test_an_event_of_a_forgotten_call_is_rejected_not_taken_up_as_a_second_call():
    engine = CallEngine(retention_after_end_ms=60_000, allowed_lateness_ms=0)
    first = started("a", ts=T0)
    engine.process(first)
    engine.process(ended("a", ts=T0 + 1_000))
    engine.process(started("b", ts=T0 + 62_000))
    assert engine.forget_expired(0) == ["a"]
    for late in (event("turn", {"role": "user", "text": "still there?"}, call_id="a", ts_ms=T0 + 1_500), first):
        processed = engine.process(late)  # a late turn, then the call's own start delivered again
        assert processed.status == "rejected" and processed.result is None and "a" not in engine.calls
        assert "more than the retention (60000 ms) behind its partition's watermark" in processed.reason
    assert engine.counters.calls == 2


def test_a_new_call_reordered_within_the_allowed_lateness_is_taken_up_even_with_no_retention():
    engine = CallEngine(retention_after_end_ms=0, allowed_lateness_ms=30_000)
    engine.process(started("a", ts=T0 + 60_000))
    assert engine.process(started("b", ts=T0 + 35_000)).status == "applied"  # 25 s behind the watermark
    assert engine.process(started("c", ts=T0 + 25_000)).status == "rejected"  # 35 s behind it


def test_a_call_is_kept_the_allowed_lateness_at_least_so_its_late_events_never_start_a_second_version_1():
    # With no retention the call was forgotten as soon as the watermark passed its end: its own start,
    # delivered again within the lateness, was taken up as a new call and published version 1 again.
    engine = CallEngine(retention_after_end_ms=0, allowed_lateness_ms=30_000)
    first = started("a", ts=T0)
    engine.process(first)
    assert engine.process(ended("a", ts=T0 + 1_000)).result.version == 1
    engine.process(started("b", ts=T0 + 20_000))
    assert engine.forget_expired(0) == []  # 19 s after its end: within the lateness
    assert engine.process(first).status == "duplicate"
    engine.process(started("c", ts=T0 + 31_001))
    assert engine.forget_expired(0) == ["a"]  # past it: forgotten, and what comes of it now is too late
    again = engine.process(event("turn", {"role": "user", "text": "hello?"}, call_id="a", ts_ms=T0 + 1_000))
    assert again.status == "rejected" and again.result is None and engine.counters.results == 1


def test_the_sweeps_end_of_a_call_it_let_go_at_once_comes_back_as_a_duplicate():
    # A quiet partition: the next event is past the call's deadline and its retention together, so
    # the sweep ends the call and the same step forgets it; its recorded end then comes back.
    engine = CallEngine(retention_after_end_ms=60_000, allowed_lateness_ms=0)
    engine.process(started("a", ts=T0, inactivity_timeout_s=60))
    engine.process(started("b", ts=T0 + 500_000))
    (swept,) = engine.sweep(0)
    assert engine.process(swept).result.version == 1
    assert engine.forget_expired(0) == ["a"]
    again = engine.process(swept)
    assert again.status == "duplicate" and again.result is None and "a" not in engine.calls


def test_a_producers_event_with_the_sweeps_id_does_not_keep_the_call_from_ending():
    engine = CallEngine(allowed_lateness_ms=0)
    engine.process(started("a", ts=T0, inactivity_timeout_s=60))
    engine.process(
        event("turn", {"role": "user", "text": "hi"}, call_id="a", ts_ms=T0 + 1_000, event_id="a:inactivity-timeout")
    )
    engine.process(started("b", ts=T0 + 100_000))
    (swept,) = engine.sweep(0)
    assert swept.event_id == "a:inactivity-timeout:2"
    assert engine.process(swept).result.evaluation["stop_reason"] == INACTIVITY_STOP_REASON


def test_a_scorer_that_raises_loses_that_event_only_and_the_result_says_so():
    from scorers.qa.naturalness import Naturalness
    from scorers.registry import ScorerRegistry, qa_metrics, signal_scorers

    class Fragile(Naturalness):
        def update(self, acc, event, call):
            if event.data.text == "boom":
                raise ZeroDivisionError("a bug")
            super().update(acc, event, call)

    class Broken(Naturalness):
        name = "broken_metric"

        def finalize(self, acc, call):
            raise KeyError("missing")

    metrics = [Fragile() if m.name == "naturalness" else m for m in qa_metrics()] + [Broken()]
    engine = CallEngine(registry=ScorerRegistry.build(signal_scorers(), metrics))
    engine.process(started())
    engine.process(event("turn", {"role": "agent", "text": "boom"}, event_id="t-boom"))
    engine.process(event("turn", {"role": "agent", "text": "Your order ships today."}))
    result = engine.process(ended()).result
    by_name = {m.metric: m for m in result.metrics}
    error = "ZeroDivisionError on event 't-boom': a bug"
    assert by_name["naturalness"].details["scorer_error"] == error and by_name["naturalness"].score is not None
    assert result.evaluation["scorer_errors"] == {"naturalness": error}
    assert by_name["broken_metric"].score is None
    assert by_name["broken_metric"].details["reason"] == "scoring failed: KeyError: 'missing'"
    assert len(result.evaluation["turns"]) == 2  # the failing event is applied for everything else


def test_a_recorded_sweep_end_for_a_call_that_has_ended_otherwise_is_a_duplicate_not_a_dead_letter():
    engine = CallEngine()
    engine.process(started("a"))
    engine.process(ended("a"))
    earlier_owners_end = event(
        "call.ended", {"stop_reason": INACTIVITY_STOP_REASON}, call_id="a", event_id="a:inactivity-timeout"
    )
    assert engine.process(earlier_owners_end).status == "duplicate"
    assert engine.process(event("call.ended", {"stop_reason": "[EXIT]"}, call_id="a")).status == "rejected"


def test_a_sweeps_end_under_the_same_id_at_another_time_is_superseded_not_refused():
    # Two workers that swept the call at different points (one had an event more) record ends that
    # share the sweep's id but not its event time: the second is a sweep's end that no longer applies.
    engine = CallEngine(allowed_lateness_ms=0)
    engine.process(started("a", ts=T0, inactivity_timeout_s=60))
    engine.process(started("b", ts=T0 + 100_000))
    (swept,) = engine.sweep(0)
    engine.process(swept)
    other_workers_end = event(
        "call.ended",
        {"stop_reason": INACTIVITY_STOP_REASON},
        call_id="a",
        event_id=swept.event_id,
        ts_ms=swept.ts_ms + 1_000,
    )
    assert engine.process(other_workers_end).status == "duplicate"


def test_a_judges_answer_recorded_twice_is_a_duplicate_whatever_it_says():
    # Its id and event time are the call's own (`<call_id>:judge`, 1 ms after its end): the first wins.
    engine = CallEngine()
    engine.process(started())
    engine.process(ended())
    answers = [
        event(
            "judge.result",
            {"model": "m", "evaluation": {"score": score, "reason": "ok"}},
            event_id="c1:judge",
            ts_ms=T0 + 10_001,
        )
        for score in (0.9, 0.2)
    ]
    assert engine.process(answers[0]).result.version == 2
    assert engine.process(answers[1]).status == "duplicate"


def test_a_judges_answer_does_not_move_its_partitions_time():
    # A log recorded with the judge's answers (`--judge --record`) must sweep what the log without
    # them sweeps: the answer is stamped 1 ms after its call's end, by whoever asked.
    engine = CallEngine(allowed_lateness_ms=0)
    engine.process(started("quiet", ts=T0, inactivity_timeout_s=60))
    engine.process(started("busy", ts=T0))
    engine.process(ended("busy", ts=T0 + 60_000))  # the quiet call's deadline, not past it
    assert not engine.anything_due(0)
    judged = event(
        "judge.result", {"model": "m", "evaluation": {"score": 0.9, "reason": "ok"}}, call_id="busy", ts_ms=T0 + 60_001
    )
    assert engine.process(judged).result.version == 2
    assert not engine.anything_due(0) and engine.sweep(0) == []
    engine.process(event("turn", {"role": "user", "text": "hi"}, call_id="other", ts_ms=T0 + 60_001))
    assert [e.call_id for e in engine.sweep(0)] == ["quiet"]  # any other event moves it


def test_an_event_after_a_sweeps_end_says_the_sweep_ended_its_call_and_what_a_late_producer_sets():
    """Calls sent once they end, beside another producer's (or a clock behind the others'): the sweep
    ends them at once, and a bare "already ended" read as if the producer had sent events after its end."""
    engine = CallEngine(allowed_lateness_ms=30_000)
    engine.process(started("current", T0 + 600_000), partition=0)  # the partition's time: ten minutes on
    engine.process(started("late", T0), partition=0)
    for swept in engine.sweep(0):
        engine.process(swept, partition=0)
    refused = engine.process(
        event("turn", {"role": "user", "text": "hi"}, call_id="late", ts_ms=T0 + 1_000), partition=0
    )
    assert refused.status == "rejected"
    assert f"which has already ended: the inactivity sweep ended it at event time {T0 + 120_000}" in refused.reason
    assert "inactivity timeout (120000 ms) and the allowed lateness (30000 ms)" in refused.reason
    assert "CALLQA_ALLOWED_LATENESS_MS of at least its delay" in refused.reason
    # A call that ended by its own end says no more than that.
    engine.process(ended("current", T0 + 601_000), partition=0)
    after = engine.process(
        event("turn", {"role": "user", "text": "hi"}, call_id="current", ts_ms=T0 + 602_000), partition=0
    )
    assert after.reason.endswith("which has already ended")


def test_an_event_time_in_seconds_refused_as_too_late_says_so():
    engine = CallEngine()
    engine.process(started("c1", T0), partition=0)
    refused = engine.process(started("c2", T0 // 1000), partition=0)
    assert refused.status == "rejected" and "more than the retention" in refused.reason
    assert refused.reason.endswith(
        "days after 1970: ts_ms is Unix time in milliseconds, not seconds, nor time since the call started)"
    )
    stale = engine.process(started("c3", T0 - 2 * 86_400_000), partition=0)  # (plausible, only too old)
    assert stale.status == "rejected" and "1970" not in stale.reason
