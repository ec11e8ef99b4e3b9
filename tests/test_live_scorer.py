"""The live worker's per-message logic without Kafka: journal, restore, redelivery after a crash."""

from __future__ import annotations

import json

import msgspec

from eventkit import T0
from scorers.engine import CallEngine
from streams.journal import encode_segment, segment_key
from streams.live import LiveScorer


def message(type_: str, data: dict, event_id: str, ts: int, call_id: str = "c1") -> bytes:
    return json.dumps({"v": 1, "type": type_, "event_id": event_id, "call_id": call_id, "ts_ms": ts, "data": data}).encode()


MESSAGES = [
    message("call.started", {"agent_id": "a1"}, "e1", T0),
    message("turn", {"role": "user", "text": "hello"}, "e2", T0 + 1000),
    message("call.ended", {"stop_reason": "[EXIT]"}, "e3", T0 + 2000),
    message("call.annotated", {"user_sentiment": "Positive"}, "e4", T0 + 9000),
]


def run(live: LiveScorer, offsets: range, journal: dict[bytes, bytes]) -> list:
    """Handle the messages at `offsets`, writing the journal as the Faust agent does."""
    results = []
    for offset in offsets:
        out = live.handle(MESSAGES[offset], "callqa.events", 0, offset)
        for call_id, entries in out.journal.items():
            journal[segment_key(call_id, live.next_segment(call_id))] = encode_segment(0, entries)
        results.extend(out.results)
    return results


def test_a_restarted_worker_restores_calls_from_the_journal_and_skips_what_they_applied():
    journal: dict[bytes, bytes] = {}
    first = LiveScorer(CallEngine())
    published = run(first, range(0, 3), journal)
    assert [r.version for r in published] == [1]

    restarted = LiveScorer(CallEngine())
    assert restarted.restore_partition(0, journal.items()) == 1
    again = run(restarted, range(3, 4), journal)
    assert [r.version for r in again] == [2]
    assert restarted.engine.calls["c1"].events_applied == 4


def test_a_result_lost_in_a_crash_is_published_again_when_its_message_is_redelivered():
    journal: dict[bytes, bytes] = {}
    first = LiveScorer(CallEngine())
    lost = run(first, range(0, 3), journal)  # the journal reached the broker, the result did not

    restarted = LiveScorer(CallEngine())
    restarted.restore_partition(0, journal.items())
    # Offsets were not committed: Kafka delivers offsets 1 and 2 again.
    republished = run(restarted, range(1, 3), journal)
    assert [msgspec.json.encode(r) for r in republished] == [msgspec.json.encode(lost[0])]
    # A redelivery of a message that produced no result publishes nothing.
    assert run(restarted, range(1, 2), journal) == []


def test_redelivered_events_are_not_journaled_twice():
    journal: dict[bytes, bytes] = {}
    live = LiveScorer(CallEngine())
    run(live, range(0, 3), journal)
    segments = len(journal)
    run(live, range(0, 3), journal)
    assert len(journal) == segments


def test_a_malformed_message_is_dead_lettered_with_its_position():
    live = LiveScorer(CallEngine())
    out = live.handle(b"{not json", "callqa.events", 2, 41)
    (letter,) = out.dead_letters
    assert (letter.topic, letter.partition, letter.offset) == ("callqa.events", 2, 41)
    assert letter.original == b"{not json" and letter.reason.startswith("event without a readable event_id")


def test_replay_forgets_ended_calls_after_their_retention_as_the_live_worker_does():
    from streams.replay import replay

    day = 86_400_000
    log = [
        message("call.started", {"agent_id": "a1"}, "r1", T0, call_id="A"),
        message("call.ended", {"stop_reason": "[EXIT]"}, "r2", T0 + 1_000, call_id="A"),
        message("call.started", {"agent_id": "a1"}, "r3", T0 + day + 2_000, call_id="B"),  # A's retention has passed
        message("call.annotated", {"user_sentiment": "Negative"}, "r4", T0 + day + 3_000, call_id="A"),
        message("watermark", {"end_of_input": True, "partition": 0}, "r5", T0 + day + 4_000, call_id="__watermark__"),
    ]
    live, live_results, live_letters = LiveScorer(CallEngine()), [], []
    for offset, raw in enumerate(log):
        out = live.handle(raw, "callqa.events", 0, offset)
        live_results += [(r.call_id, r.version) for r in out.results]
        live_letters += [letter.event_id for letter in out.dead_letters]
    replayed, letters = [], []
    report = replay(log, CallEngine(), 1, lambda r: replayed.append((r.call_id, r.version)),
                    lambda rejected, index: letters.append(rejected.event_id))
    assert replayed == live_results == [("A", 1), ("B", 1)]
    assert letters == live_letters == ["r4"]
    assert report.calls == 2  # the forgotten call still counts as replayed
