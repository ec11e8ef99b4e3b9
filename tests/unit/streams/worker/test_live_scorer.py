"""The live worker's per-message logic without Kafka: journal, restore, redelivery after a crash."""

from __future__ import annotations

import json

import msgspec

from models.wire import encode_event
from scorers.engine import CallEngine
from streams.journal.call_journal import (
    PARTITION_SEGMENT_PREFIX,
    PartitionSegment,
    decode_partition_segment,
    encode_segment,
    segment_key,
)
from streams.worker.live_scorer import LiveScorer
from tests.helpers.eventkit import T0
from tests.helpers.workerkit import handle_as_the_worker_does, message

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
    published = run(first, range(3), journal)
    assert [r.version for r in published] == [1]

    restarted = LiveScorer(CallEngine())
    assert restarted.restore_partition(0, journal.items()) == 1
    again = run(restarted, range(3, 4), journal)
    assert [r.version for r in again] == [2]
    assert restarted.engine.calls["c1"].events_applied == 4


def test_a_restore_counts_nothing_as_applied_or_published():
    # /health's counters doubled with every restore (each rebalance): re-folding is no new work.
    journal: dict[bytes, bytes] = {}
    first = LiveScorer(CallEngine())
    run(first, range(3), journal)
    counted = (first.engine.counters.applied, first.engine.counters.results, first.engine.counters.calls)
    assert counted == (3, 1, 1)
    first.release_partitions({0})
    assert first.restore_partition(0, journal.items()) == 1
    assert (first.engine.counters.applied, first.engine.counters.results, first.engine.counters.calls) == counted
    restarted = LiveScorer(CallEngine())
    restarted.restore_partition(0, journal.items())
    assert (restarted.engine.counters.applied, restarted.engine.counters.results) == (0, 0)
    run(restarted, range(3, 4), journal)
    assert (restarted.engine.counters.applied, restarted.engine.counters.results) == (1, 1)


def test_a_result_lost_in_a_crash_is_published_again_when_its_message_is_redelivered():
    journal: dict[bytes, bytes] = {}
    first = LiveScorer(CallEngine())
    lost = run(first, range(3), journal)  # the journal reached the broker, the result did not

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
    run(live, range(3), journal)
    segments = len(journal)
    run(live, range(3), journal)
    assert len(journal) == segments


def test_a_malformed_message_is_dead_lettered_with_its_position():
    live = LiveScorer(CallEngine())
    out = live.handle(b"{not json", "callqa.events", 2, 41)
    (letter,) = out.dead_letters
    assert (letter.topic, letter.partition, letter.offset) == ("callqa.events", 2, 41)
    assert letter.original == b"{not json" and letter.reason.startswith("event without a readable event_id")


def test_replay_forgets_ended_calls_after_their_retention_as_the_live_worker_does():
    from streams.replay.log_replay import replay

    day = 86_400_000
    log = [
        message("call.started", {"agent_id": "a1"}, "r1", T0, call_id="A"),
        message("call.ended", {"stop_reason": "[EXIT]"}, "r2", T0 + 1_000, call_id="A"),
        # A's retention has passed: two calls say so (one call's leap alone does not move the time).
        message("call.started", {"agent_id": "a1"}, "r3", T0 + day + 2_000, call_id="B"),
        message("call.started", {"agent_id": "a1"}, "r3c", T0 + day + 2_500, call_id="C"),
        message("call.annotated", {"user_sentiment": "Negative"}, "r4", T0 + day + 3_000, call_id="A"),
        message("watermark", {"end_of_input": True, "partition": 0}, "r5", T0 + day + 4_000, call_id="__watermark__"),
    ]
    live, live_results, live_letters = LiveScorer(CallEngine()), [], []
    for offset, raw in enumerate(log):
        out = live.handle(raw, "callqa.events", 0, offset)
        live_results += [(r.call_id, r.version) for r in out.results]
        live_letters += [letter.event_id for letter in out.dead_letters]
    replayed, letters = [], []
    report = replay(
        log,
        CallEngine(),
        1,
        lambda r: replayed.append((r.call_id, r.version)),
        lambda rejected, index: letters.append(rejected.event_id),
    )
    assert replayed == live_results == [("A", 1), ("B", 1), ("C", 1)]
    assert letters == live_letters == ["r4"]
    assert report.calls == 3  # the forgotten call still counts as replayed


def segments(table: dict[bytes, bytes]) -> dict[bytes, bytes]:
    """The journal's segments holding events (not the watermarks, nor a segment kept only as the
    latest commit point)."""
    return {
        key: value
        for key, value in table.items()
        if key.startswith(PARTITION_SEGMENT_PREFIX) and decode_partition_segment(value).entries
    }


def commit_points(table: dict[bytes, bytes]) -> list[PartitionSegment]:
    return [
        segment
        for key, value in table.items()
        if key.startswith(PARTITION_SEGMENT_PREFIX)
        for segment in [decode_partition_segment(value)]
        if not segment.entries
    ]


def test_a_message_larger_than_the_default_limit_accepted_under_a_raised_one_is_restored():
    big_text = "word " * 300_000  # 1.5 MB: over the default 1 MiB
    log = [
        message("call.started", {"agent_id": "a1"}, "b1", T0),
        message("turn", {"role": "user", "text": big_text}, "b2", T0 + 1_000),
    ]
    table: dict[bytes, bytes] = {}
    live = LiveScorer(CallEngine(), max_message_bytes=4_000_000)
    for offset, raw in enumerate(log):
        assert not handle_as_the_worker_does(live, raw, offset, table).dead_letters
    restarted = LiveScorer(CallEngine(), max_message_bytes=4_000_000)
    restarted.restore_partition(0, table.items())
    assert restarted.engine.calls["c1"].events_applied == 2


def test_the_message_that_makes_a_call_expire_journals_nothing_for_it_and_a_restore_does_not_bring_it_back():
    # The late annotation re-scores A and moves the watermark past A's retention: A is forgotten in
    # the very message that changed it.
    log = [
        message("call.started", {"agent_id": "a1"}, "x1", T0, call_id="A"),
        message("call.ended", {"stop_reason": "[EXIT]"}, "x2", T0 + 10, call_id="A"),
        message("call.annotated", {"user_sentiment": "Negative"}, "x3", T0 + 100_000, call_id="A"),
    ]
    table: dict[bytes, bytes] = {}
    live = LiveScorer(CallEngine(retention_after_end_ms=60_000))
    outs = [handle_as_the_worker_does(live, raw, offset, table) for offset, raw in enumerate(log)]
    assert [(r.call_id, r.version) for r in outs[2].results] == [("A", 2)] and outs[2].forget == ["A"]
    assert outs[2].journal == {} and segments(table) == {}
    # What is left: the segment that forgot A, which the next segment supersedes.
    assert [(point.forgotten, point.through_offset) for point in commit_points(table)] == [(("A",), 2)]
    restarted = LiveScorer(CallEngine(retention_after_end_ms=60_000))
    assert restarted.restore_partition(0, table.items()) == 0 and "A" not in restarted.engine.calls


def test_a_partition_released_and_restored_forgets_each_ended_call_once():
    log = [
        message("call.started", {"agent_id": "a1"}, "y1", T0, call_id="A"),
        message("call.ended", {"stop_reason": "[EXIT]"}, "y2", T0 + 1, call_id="A"),
    ]
    table: dict[bytes, bytes] = {}
    live = LiveScorer(CallEngine(retention_after_end_ms=1_000))
    for offset, raw in enumerate(log):
        handle_as_the_worker_does(live, raw, offset, table)
    live.release_partitions({0})
    live.restore_partition(0, table.items())
    # (Past the retention and the allowed lateness, which the retention is never shorter than.)
    out = live.handle(
        message("call.started", {"agent_id": "a1"}, "y3", T0 + 40_000, call_id="B"), "callqa.events", 0, 2
    )
    assert out.forget == ["A"]


def test_a_restore_does_not_bring_back_a_call_forgotten_after_its_retention_and_the_next_message_forgets_it():
    # A and B share the first segment; A's retention passes while B lives on, so the segment stays.
    log = [
        message("call.started", {"agent_id": "a1"}, "z1", T0, call_id="A"),
        message("call.started", {"agent_id": "a1"}, "z2", T0 + 1, call_id="B"),
        message("call.ended", {"stop_reason": "[EXIT]"}, "z3", T0 + 2, call_id="A"),
        message("turn", {"role": "user", "text": "hi"}, "z4", T0 + 100_000, call_id="B"),
    ]
    table: dict[bytes, bytes] = {}
    live = LiveScorer(CallEngine(retention_after_end_ms=60_000))
    outs = [
        handle_as_the_worker_does(live, raw, offset, table, write=offset in (2, 3)) for offset, raw in enumerate(log)
    ]
    assert outs[3].forget == ["A"] and len(segments(table)) == 2  # the segment of A and B, and B's turn

    restarted = LiveScorer(CallEngine(retention_after_end_ms=60_000))
    assert restarted.restore_partition(0, table.items()) == 1  # B: A's entries are retired
    assert "A" not in restarted.engine.calls
    late = message("call.annotated", {"user_sentiment": "Negative"}, "z5", T0 + 100_001, call_id="A")
    out = handle_as_the_worker_does(restarted, late, 4, table)
    assert out.results == [] and [letter.event_id for letter in out.dead_letters] == ["z5"]
    assert "A" not in restarted.owned


def test_a_batch_item_refused_by_the_engine_names_its_place_in_the_batch_after_an_item_refused_at_decoding():
    live = LiveScorer(CallEngine())
    for offset, raw in enumerate(MESSAGES[:3]):  # c1 starts and ends
        live.handle(raw, "callqa.events", 0, offset)

    def items(tag: str) -> list[dict]:
        return [
            {
                "v": 1,
                "type": "turn",
                "event_id": f"bad-{tag}",
                "call_id": "c1",
                "ts_ms": T0 + 3_000,
                "data": {"role": "robot", "text": "x"},
            },
            {
                "v": 1,
                "type": "turn",
                "event_id": f"late-{tag}",
                "call_id": "c1",
                "ts_ms": T0 + 3_001,
                "data": {"role": "user", "text": "after the end"},
            },
        ]

    one_call = {"v": 1, "call_id": "c1", "events": items("one")}
    across_calls = {
        "v": 1,
        "events": [
            *items("across"),
            {
                "v": 1,
                "type": "call.started",
                "event_id": "z",
                "call_id": "other",
                "ts_ms": T0 + 3_002,
                "data": {"agent_id": "a1"},
            },
        ],
    }
    for offset, (tag, batch) in enumerate((("one", one_call), ("across", across_calls)), start=7):
        out = live.handle(msgspec.msgpack.encode(batch), "callqa.events", 0, offset)
        assert [(letter.event_id, letter.batch_index) for letter in out.dead_letters] == [
            (f"bad-{tag}", 0),
            (f"late-{tag}", 1),
        ]


def test_a_refused_batch_item_is_dead_lettered_alone_not_with_the_whole_batch():
    """A thousand items refused one by one, each carrying the whole batch, made hundreds of megabytes."""
    from models.wire import decode_message
    from streams.partitioning import partition_for

    home = partition_for("c1", 4)
    live = LiveScorer(CallEngine(), topic_partitions=4)
    for offset, raw in enumerate(MESSAGES[:3]):
        live.handle(raw, "callqa.events", home, offset)
    # (A field the contract does not know stays in the dead letter: the item's own bytes, not a re-encoding.)
    after_the_end = [
        {
            **json.loads(message("turn", {"role": "user", "text": f"late {k}" * 50}, f"late-{k}", T0 + 3_000 + k)),
            "producer_meta": {"host": "h1"},
        }
        for k in range(200)
    ]
    offsets = iter(range(10, 20))
    for encode in (lambda doc: json.dumps(doc).encode(), msgspec.msgpack.encode):
        batch = encode({"v": 1, "call_id": "c1", "events": after_the_end})
        for partition in (home, (home + 1) % 4):  # refused by the engine, then as strays
            out = live.handle(batch, "callqa.events", partition, next(offsets))
            assert len(out.dead_letters) == 200
            for index, letter in enumerate(out.dead_letters):
                assert letter.batch_index == index and len(letter.original) < len(batch) / 100
                assert letter.original == encode(after_the_end[index]) and letter.original in batch  # (its own bytes)
                (event,) = decode_message(letter.original).events
                assert event.event_id == letter.event_id == f"late-{index}"
    # A message that is no batch is kept whole, as it came.
    single = message("turn", {"role": "user", "text": "late"}, "late-x", T0 + 9_000)
    (letter,) = live.handle(single, "callqa.events", home, next(offsets)).dead_letters
    assert letter.original == single and letter.batch_index is None


def test_an_event_reusing_an_applied_id_is_dead_lettered_and_the_same_event_again_is_not():
    live = LiveScorer(CallEngine())
    live.handle(message("call.started", {"agent_id": "a1"}, "s1", T0), "callqa.events", 0, 0)
    live.handle(message("turn", {"role": "user", "text": "hi"}, "t1", T0 + 5), "callqa.events", 0, 1)
    batch = {
        "v": 1,
        "call_id": "c1",
        "events": [
            {
                "v": 1,
                "type": "turn",
                "event_id": "t1",
                "call_id": "c1",
                "ts_ms": T0 + 5,
                "data": {"role": "user", "text": "hi"},
            },
            {
                "v": 1,
                "type": "turn",
                "event_id": "t1",
                "call_id": "c1",
                "ts_ms": T0 + 8,
                "data": {"role": "agent", "text": "yes?"},
            },
        ],
    }
    out = live.handle(msgspec.msgpack.encode(batch), "callqa.events", 0, 2)
    (letter,) = out.dead_letters
    assert (letter.event_id, letter.batch_index, letter.offset) == ("t1", 1, 2)
    assert (
        f"(a 'turn' event at event time {T0 + 5}; this one is a 'turn' event at event time {T0 + 8})" in letter.reason
    )
    assert [turn.text for turn in live.engine.calls["c1"].turns] == ["hi"]
    assert live.engine.counters.duplicate == 1


def test_results_a_redelivered_message_produced_for_other_calls_by_its_sweep_are_published_again():
    # Y is silent; a later event of X (or an idle tick) moves the partition's time past Y's deadline.
    prelude = [
        message("call.started", {"agent_id": "a1"}, "p1", T0, call_id="Y"),
        message("call.started", {"agent_id": "a1"}, "p2", T0 + 1, call_id="X"),
    ]
    for trigger in (
        message("turn", {"role": "user", "text": "hi"}, "p3", T0 + 200_000, call_id="X"),
        message("watermark", {"partition": 0}, "tick", T0 + 200_000, call_id="__watermark__"),
    ):
        table: dict[bytes, bytes] = {}
        live = LiveScorer(CallEngine())
        for offset, raw in enumerate(prelude):
            handle_as_the_worker_does(live, raw, offset, table)
        first = handle_as_the_worker_does(live, trigger, 2, table)  # journaled; the result send is lost
        assert ("Y", 1) in [(r.call_id, r.version) for r in first.results]

        restarted = LiveScorer(CallEngine())
        restarted.restore_partition(0, table.items())
        again = restarted.handle(trigger, "callqa.events", 0, 2)  # offset 2 was not committed
        assert sorted(msgspec.json.encode(r) for r in again.results) == sorted(
            msgspec.json.encode(r) for r in first.results
        )
        # Delivered once more, or any later message: nothing is published twice.
        assert restarted.handle(trigger, "callqa.events", 0, 2).results == []


def test_a_restored_worker_starts_at_the_journaled_watermark_and_sweeps_as_the_uninterrupted_one():
    # An idle tick moves the partition's time to T0 + 140 s without changing any call; D then
    # arrives 40 s behind it with a 5 s timeout: the tick's time has already passed D's deadline.
    log = [
        message("call.started", {"agent_id": "a1"}, "w1", T0 + 130_000, call_id="C"),
        message("watermark", {"partition": 0}, "tick", T0 + 140_000, call_id="__watermark__"),
        message("call.started", {"agent_id": "a1", "inactivity_timeout_s": 5}, "w2", T0 + 100_000, call_id="D"),
        message("turn", {"role": "agent", "text": "reply"}, "w3", T0 + 101_000, call_id="D"),
        message("call.ended", {"stop_reason": "[EXIT]"}, "w4", T0 + 102_000, call_id="D"),
    ]

    def outcomes(restart_after: int | None) -> list:
        table: dict[bytes, bytes] = {}
        live, seen = LiveScorer(CallEngine()), []
        for offset, raw in enumerate(log):
            out = handle_as_the_worker_does(live, raw, offset, table)
            seen.append(
                (
                    [(r.call_id, r.evaluation["stop_reason"]) for r in out.results],
                    [letter.event_id for letter in out.dead_letters],
                )
            )
            if offset == restart_after:
                live = LiveScorer(CallEngine())
                live.restore_partition(0, table.items())
        return seen

    uninterrupted = outcomes(None)
    # D is swept as soon as it starts; its turn and its end come too late.
    assert uninterrupted[2:] == [([("D", "[INACTIVITY_TIMEOUT]")], []), ([], ["w3"]), ([], ["w4"])]
    assert outcomes(1) == uninterrupted


def test_the_recorded_end_of_a_call_swept_and_forgotten_at_once_publishes_nothing_when_it_comes_back():
    # A partition quiet for longer than timeout + retention: the next message sweeps the call and
    # forgets it; the sweep's end, recorded to the events topic, is delivered back to the worker.
    live = LiveScorer(CallEngine(retention_after_end_ms=60_000, allowed_lateness_ms=0))
    live.handle(
        message("call.started", {"agent_id": "a1", "inactivity_timeout_s": 60}, "a1", T0, "a"), "callqa.events", 0, 0
    )
    out = live.handle(message("call.started", {"agent_id": "a2"}, "b1", T0 + 500_000, "b"), "callqa.events", 0, 1)
    (swept,) = out.recorded_events
    assert [r.call_id for r in out.results] == ["a"] and out.forget == ["a"]
    back = live.handle(encode_event(swept), "callqa.events", 0, 2)
    assert back.results == [] and back.dead_letters == [] and "a" not in live.engine.calls


def _worker_run(
    live: LiveScorer, log: list[bytes], table: dict[bytes, bytes], write_after: set[int], start: int = 0
) -> list:
    results = []
    for offset, raw in enumerate(log, start=start):
        if not live.is_restored(0):
            live.restore_partition(0, list(table.items()))
        results += handle_as_the_worker_does(live, raw, offset, table, write=offset in write_after).results
    return results


def test_a_rebalance_does_not_bring_back_a_forgotten_call_from_a_segment_it_shared():
    # X's turn and Y's start share segment 1; X ends and is forgotten while Y lives on, so segment 1
    # stays: read back, X's lone turn would be swept and scored as a call of its own.
    log = [
        message("call.started", {"agent_id": "a"}, "x1", T0, "X"),
        message("turn", {"role": "user", "text": "hi"}, "x2", T0 + 1_000, "X"),
        message("turn", {"role": "agent", "text": "hello"}, "x3", T0 + 2_000, "X"),
        message("call.started", {"agent_id": "a"}, "y1", T0 + 2_500, "Y"),
        message("call.ended", {"stop_reason": "[EXIT]"}, "x4", T0 + 3_000, "X"),
        message("turn", {"role": "user", "text": "yo"}, "y2", T0 + 20_000, "Y"),
        message("watermark", {"end_of_input": True, "partition": 0}, "eoi", T0 + 21_000, "__watermark__"),
    ]
    table: dict[bytes, bytes] = {}
    live = LiveScorer(CallEngine(retention_after_end_ms=5_000))
    published = _worker_run(live, log[:6], table, {1, 3, 4, 5})
    live.release_partitions({0})  # revoked and assigned back
    published += _worker_run(live, log[6:], table, {6}, start=6)
    assert [(r.call_id, r.version, r.evaluation["stop_reason"]) for r in published] == [
        ("X", 1, "[EXIT]"),
        ("Y", 1, "[INACTIVITY_TIMEOUT]"),
    ]


def test_a_restore_skips_a_forgotten_calls_left_behind_post_call_event():
    # Segment 1 holds X's annotation and Y's start; X is forgotten, segment 0 deleted: the annotation
    # alone cannot be refolded (no call to re-score), and the restore must not trip over it.
    log = [
        message("call.started", {"agent_id": "a"}, "x1", T0, "X"),
        message("call.ended", {"stop_reason": "[EXIT]"}, "x2", T0 + 1_000, "X"),
        message("call.annotated", {"user_sentiment": "Positive"}, "x3", T0 + 2_000, "X"),
        message("call.started", {"agent_id": "a"}, "y1", T0 + 2_500, "Y"),
        message("turn", {"role": "user", "text": "yo"}, "y2", T0 + 20_000, "Y"),
    ]
    table: dict[bytes, bytes] = {}
    # (A retention is never shorter than the allowed lateness: both at 5 s here.)
    live = LiveScorer(CallEngine(retention_after_end_ms=5_000, allowed_lateness_ms=5_000))
    _worker_run(live, log, table, {1, 3, 4})
    restarted = LiveScorer(CallEngine(retention_after_end_ms=5_000, allowed_lateness_ms=5_000))
    assert restarted.restore_partition(0, list(table.items())) == 1 and set(restarted.engine.calls) == {"Y"}


def test_messages_delivered_again_after_a_restart_do_not_take_up_calls_forgotten_meanwhile():
    # Every segment written, the offsets not yet committed: the restarted worker is handed all the
    # messages again, X's among them, though the journal forgot X (past its retention) already.
    log = [
        message("call.started", {"agent_id": "a"}, "x1", T0, "X"),
        message("call.ended", {"stop_reason": "[EXIT]"}, "x2", T0 + 1_000, "X"),
        message("call.started", {"agent_id": "a"}, "y1", T0 + 10_000, "Y"),
        message("watermark", {"end_of_input": True, "partition": 0}, "eoi", T0 + 11_000, "__watermark__"),
    ]
    engine = lambda: CallEngine(retention_after_end_ms=5_000, allowed_lateness_ms=0)  # noqa: E731
    table: dict[bytes, bytes] = {}
    published = _worker_run(LiveScorer(engine()), log[:3], table, {0, 1, 2})
    restarted = LiveScorer(engine())
    outs = []
    for offset, raw in enumerate(log):
        if not restarted.is_restored(0):
            restarted.restore_partition(0, list(table.items()))
        outs.append(handle_as_the_worker_does(restarted, raw, offset, table))
    published += [r for out in outs for r in out.results]
    assert [letter for out in outs for letter in out.dead_letters] == []
    assert [(r.call_id, r.version, r.evaluation["stop_reason"]) for r in published] == [
        ("X", 1, "[EXIT]"),
        ("Y", 1, "[INACTIVITY_TIMEOUT]"),
    ]


def test_a_restore_does_not_decide_again_about_the_events_a_message_had_refused():
    # A watermark message moves the partition's time (it is not journaled); C's batch then brings a
    # start too late to take up and a turn in time. The journal must keep the turn alone: re-read
    # whole, the start would be taken up under the lower watermark a restore rebuilds.
    engine = lambda: CallEngine(retention_after_end_ms=5_000, allowed_lateness_ms=0)  # noqa: E731
    batch = json.dumps(
        {
            "v": 1,
            "call_id": "C",
            "events": [
                {
                    "v": 1,
                    "type": "call.started",
                    "event_id": "c1",
                    "call_id": "C",
                    "ts_ms": T0 + 1_000,
                    "data": {"agent_id": "a"},
                },
                {
                    "v": 1,
                    "type": "turn",
                    "event_id": "c2",
                    "call_id": "C",
                    "ts_ms": T0 + 16_000,
                    "data": {"role": "user", "text": "hi"},
                },
            ],
        }
    ).encode()
    log = [message("watermark", {"partition": 0}, "w1", T0 + 20_000, "__watermark__"), batch]
    table: dict[bytes, bytes] = {}
    live = LiveScorer(engine())
    outs = [handle_as_the_worker_does(live, raw, offset, table) for offset, raw in enumerate(log)]
    assert [letter.event_id for letter in outs[1].dead_letters] == ["c1"]
    restarted = LiveScorer(engine())
    restarted.restore_partition(0, list(table.items()))
    original, restored = live.engine.calls["C"], restarted.engine.calls["C"]
    assert (restored.events_applied, restored.agent_id) == (original.events_applied, original.agent_id) == (1, None)


def test_an_event_on_another_partition_than_its_calls_is_dead_lettered_not_skipped_or_split():
    # Its position was compared with offsets of another partition (skipped as redelivered), or it
    # started a second copy of the call there.
    from streams.partitioning import partition_for

    home = partition_for("c1", 4)
    elsewhere = (home + 1) % 4
    live = LiveScorer(CallEngine(), topic_partitions=4)
    assert not live.handle(message("call.started", {"agent_id": "a1"}, "e1", T0), "callqa.events", home, 5).dead_letters
    stray = live.handle(message("turn", {"role": "user", "text": "hi"}, "e2", T0 + 1), "callqa.events", elsewhere, 0)
    (letter,) = stray.dead_letters
    assert letter.reason.startswith(
        f"event 'e2': call 'c1' belongs to partition {home} (the Java client's default "
        f"partitioner, murmur2, on its call_id), but this message came on partition "
        f"{elsewhere}: a call's events must all reach its partition (key its messages by "
        "call_id; librdkafka-based clients"
    )
    assert "partitioner=murmur2_random" in letter.reason
    assert (letter.partition, letter.offset, letter.event_id) == (elsewhere, 0, "e2") and stray.journal == {}
    assert live.engine.calls["c1"].events_applied == 1 and live.dead_lettered == 1
    batch = json.dumps(
        {
            "v": 1,
            "events": [
                json.loads(message("turn", {"role": "agent", "text": "yo"}, "e3", T0 + 2)),
                json.loads(message("call.started", {"agent_id": "a"}, "x1", T0 + 2, "x")),
            ],
        }
    )
    out = live.handle(batch.encode(), "callqa.events", home, 6)
    expected = [] if partition_for("x", 4) == home else [("x1", 1)]
    assert [(d.event_id, d.batch_index) for d in out.dead_letters] == expected
    assert live.engine.calls["c1"].events_applied == 2
    # A watermark first in a one-call batch (its call_id is the call's) does not carry a stray past the check.
    sneaky = json.dumps(
        {
            "v": 1,
            "call_id": "c1",
            "events": [
                json.loads(message("watermark", {}, "w1", T0 + 3)),
                json.loads(message("turn", {"role": "user", "text": "?"}, "e4", T0 + 3)),
            ],
        }
    )
    out = live.handle(sneaky.encode(), "callqa.events", elsewhere, 1)
    assert [(d.event_id, d.batch_index) for d in out.dead_letters] == [("e4", 1)]
    assert live.engine.calls["c1"].events_applied == 2


def test_offsets_that_start_again_lower_are_a_re_created_topic_whose_new_messages_are_scored(caplog):
    # An embedded broker restarted with its memory store under the worker: offsets started again at 0,
    # below the journal's record of what was applied, and every new call was skipped in silence.
    journal: dict[bytes, bytes] = {}
    live = LiveScorer(CallEngine())
    for offset, raw in enumerate(MESSAGES[:3]):
        handle_as_the_worker_does(live, raw, offset, journal)
    assert live.partitions[0].journaled_through_offset == 2
    again = [
        message("call.started", {"agent_id": "a1"}, "n1", T0 + 5000, "c2"),
        message("call.ended", {"stop_reason": "[EXIT]"}, "n2", T0 + 6000, "c2"),
    ]
    published = [
        r.call_id
        for offset, raw in enumerate(again)
        for r in handle_as_the_worker_does(live, raw, offset, journal).results
    ]
    assert published == ["c2"]
    assert live.offsets_went_back == 1 and "came after offset 2: the topic was re-created or truncated" in caplog.text
