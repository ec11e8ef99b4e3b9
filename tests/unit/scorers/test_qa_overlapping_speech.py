"""Overlapping speech: turns that start before the other speaker's last word ended, from word timings."""

from tests.helpers.eventkit import event
from tests.helpers.qa_kit import START_TS, scored

CALL_10S = START_TS + 10_000  # call.ended 10 000 ms after call.started


def turn(role, *words, text="x"):
    data = {"role": role, "text": text}
    if words:
        data["words"] = [list(w) for w in words]
    return event("turn", data)


def test_without_word_timings_there_are_no_overlaps_and_the_score_is_100():
    m = scored("overlapping_speech", turn("agent", text="Hello"), turn("user", text="Hi"))
    assert (m.value, m.score, m.passed) == (0, 100.0, True)
    assert m.details["total_overlap_ms"] == 0


def test_a_turn_starting_before_the_other_speakers_last_word_ended_is_one_overlap():
    # Agent's last word ends at 1000, the user starts at 800: 200 ms of a 10 000 ms call = 2 %.
    # Score 100 - 10 * 1 - 2 * 2 = 86.
    m = scored(
        "overlapping_speech",
        turn("agent", ("hello", 0, 400), ("there", 450, 1000)),
        turn("user", ("hi", 800, 1200)),
        ended_ts=CALL_10S,
    )
    assert m.value == 1
    assert m.details["total_overlap_ms"] == 200
    assert m.details["overlap_percent"] == 2.0
    assert m.details["call_length_ms"] == 10_000
    assert m.score == 86.0


def test_overlap_is_bounded_by_the_turns_own_last_word():
    # The user's "mhm" (1000–1500) lies inside the agent's 0–5000: 500 ms, not 4000. 5 % → 100 - 10 - 10 = 80.
    m = scored(
        "overlapping_speech",
        turn("agent", ("so", 0, 200), ("anyway", 4500, 5000)),
        turn("user", ("mhm", 1000, 1500)),
        ended_ts=CALL_10S,
    )
    assert (m.value, m.details["total_overlap_ms"], m.score) == (1, 500, 80.0)


def test_starting_exactly_when_the_other_stopped_is_not_an_overlap():
    m = scored("overlapping_speech", turn("agent", ("hello", 0, 1000)), turn("user", ("hi", 1000, 1300)))
    assert (m.value, m.score) == (0, 100.0)


def test_the_same_speaker_continuing_is_not_an_overlap():
    m = scored("overlapping_speech", turn("agent", ("one", 0, 1000)), turn("agent", ("two", 500, 1500)))
    assert m.value == 0


def test_turns_without_words_take_no_part():
    # The wordless user turn neither overlaps nor becomes the previous speaker for the agent's reply.
    m = scored(
        "overlapping_speech",
        turn("agent", ("hello", 0, 1000)),
        turn("user", text="hi"),
        turn("agent", ("again", 1200, 1500)),
    )
    assert m.value == 0


def test_each_turn_is_compared_with_the_other_speakers_most_recent_turn():
    # Agent speaks 0–10 000; the user talks over it twice: 2000–3000 and 4000–5000 → 2 overlaps, 2000 ms.
    # Call 20 000 ms → 10 %; score 100 - 20 - 20 = 60.
    m = scored(
        "overlapping_speech",
        turn("agent", ("long", 0, 5000), ("speech", 5000, 10_000)),
        turn("user", ("wait", 2000, 3000)),
        turn("user", ("hello", 4000, 5000)),
        ended_ts=START_TS + 20_000,
    )
    assert (m.value, m.details["total_overlap_ms"], m.details["overlap_percent"], m.score) == (2, 2000, 10.0, 60.0)


def test_a_late_turn_event_counts_only_the_shared_time():
    # The agent's reply (2500–5000) arrives before the user turn (0–3000) it cut into: 500 ms shared.
    m = scored(
        "overlapping_speech",
        turn("agent", ("sure", 2500, 5000)),
        turn("user", ("i", 0, 1000), ("need", 1000, 3000)),
        ended_ts=CALL_10S,
    )
    assert (m.value, m.details["total_overlap_ms"]) == (1, 500)


def test_call_length_falls_back_to_the_span_of_word_timings():
    # No call.started: words span 0–4000 ms; 200 ms overlap = 5 %; 100 - 10 - 10 = 80.
    m = scored(
        "overlapping_speech", turn("agent", ("hello", 0, 1000)), turn("user", ("hi", 800, 4000)), started_ts=None
    )
    assert m.details["call_length_ms"] == 4000
    assert m.details["overlap_percent"] == 5.0
    assert m.score == 80.0


def test_score_floors_at_zero():
    # 11 alternating overlaps of 100 ms each: 100 - 110 - … < 0 → 0.
    turns = []
    for i in range(12):
        role = "agent" if i % 2 == 0 else "user"
        turns.append(turn(role, ("w", i * 1000, i * 1000 + 1100)))
    m = scored("overlapping_speech", *turns, ended_ts=START_TS + 20_000)
    assert m.value == 11
    assert (m.score, m.passed) == (0.0, False)


def test_score_exactly_at_the_threshold_passes():
    # 2 overlaps of 250 ms in a 10 000 ms call = 5 %: 100 - 20 - 10 = 70, threshold 70.
    m = scored(
        "overlapping_speech",
        turn("agent", ("a", 0, 1000)),
        turn("user", ("b", 750, 2000)),
        turn("agent", ("c", 1750, 3000)),
        ended_ts=CALL_10S,
    )
    assert (m.value, m.score, m.passed) == (2, 70.0, True)


def test_score_is_rounded_to_one_decimal():
    # 100 ms of a 30 000 ms call = 0.333… %; 100 - 10 - 0.666… = 89.333… → 89.3.
    m = scored(
        "overlapping_speech", turn("agent", ("a", 0, 1000)), turn("user", ("b", 900, 2000)), ended_ts=START_TS + 30_000
    )
    assert m.score == 89.3
    assert m.details["overlap_percent"] == 0.33


def test_a_call_ended_by_inactivity_is_as_long_as_its_conversation_not_its_silence():
    # The last turn at 10 s; hung up then, or ended by inactivity (a sweep's 120 s, or a harness's own
    # 30 s timeout that call.started never named): the same 10 s, the same 2 %.
    words = (
        event(
            "turn",
            {"role": "agent", "text": "x", "words": [["hello", 0, 400], ["there", 450, 1000]]},
            ts_ms=CALL_10S - 5000,
        ),
        event("turn", {"role": "user", "text": "hi", "words": [["hi", 800, 1200]]}, ts_ms=CALL_10S),
    )
    hung_up = scored("overlapping_speech", *words, ended_ts=CALL_10S)
    for silence_ms in (120_000, 30_000):
        ended = scored(
            "overlapping_speech", *words, ended_ts=CALL_10S + silence_ms, ended={"stop_reason": "[INACTIVITY_TIMEOUT]"}
        )
        assert ended.details["call_length_ms"] == hung_up.details["call_length_ms"] == 10_000
        assert ended.score == hung_up.score == 86.0


def test_a_call_whose_events_span_less_than_its_words_is_as_long_as_its_words():
    # Events stamped within 1 s (a post-call upload) carrying 12 s of speech: 6000 ms of overlap was
    # 600 % of the call, not 50 %.
    m = scored(
        "overlapping_speech",
        turn("user", ("a", 0, 5000), ("b", 5000, 10000)),
        turn("agent", ("c", 4000, 12000)),
        ended_ts=START_TS + 1000,
    )
    assert (m.details["call_length_ms"], m.details["total_overlap_ms"], m.details["overlap_percent"]) == (
        12_000,
        6000,
        50.0,
    )
    assert m.score == 0.0  # 100 - 10 - 100


def test_the_overlap_percent_is_at_most_100():
    # Three turns at once: each pair's shared time counted, 3000 ms in a call of 2000.
    m = scored(
        "overlapping_speech",
        turn("agent", ("a", 0, 2000)),
        turn("user", ("b", 0, 2000)),
        turn("agent", ("c", 0, 1000)),
        ended_ts=START_TS + 1000,
    )
    assert m.details["total_overlap_ms"] > m.details["call_length_ms"] == 2000
    assert m.details["overlap_percent"] == 100.0


def test_a_call_whose_agent_never_spoke_is_not_applicable():
    """No agent speech, nobody to talk over: a 100 would pass a dead call (scorers/conversation.py)."""
    m = scored("overlapping_speech", turn("user", ("hello", 0, 400), text="hello"))
    assert (m.value, m.score, m.passed) == (None, None, None)
    assert m.details["reason"] == "The agent did not speak"
