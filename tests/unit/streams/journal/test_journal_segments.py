"""The journal's partition segments: gathered across messages, written when big or old enough,
acknowledged only once written, restored in order, deleted once every call in them is forgotten."""

from __future__ import annotations

import json
import zlib

import msgpack
import msgspec

from scorers.engine import CallEngine
from streams.journal.call_journal import (
    JournalBook,
    PartitionSegment,
    decode_partition_segment,
    encode_partition_segment,
    encode_retired,
    partition_segment_key,
    retired_key,
)
from streams.worker.live_scorer import LiveScorer, event_position
from tests.helpers.eventkit import T0


def message(type_: str, data: dict, event_id: str, ts: int, call_id: str = "c1") -> bytes:
    return json.dumps(
        {"v": 1, "type": type_, "event_id": event_id, "call_id": call_id, "ts_ms": ts, "data": data}
    ).encode()


def call_messages(call_id: str, start: int) -> list[bytes]:
    return [
        message("call.started", {"agent_id": "a1"}, f"{call_id}-1", start, call_id),
        message("turn", {"role": "user", "text": "my order 48213 is late"}, f"{call_id}-2", start + 1000, call_id),
        message("turn", {"role": "agent", "text": "It ships at 4pm"}, f"{call_id}-3", start + 2000, call_id),
        message("call.ended", {"stop_reason": "[EXIT]"}, f"{call_id}-4", start + 3000, call_id),
    ]


def test_a_segment_is_due_when_it_holds_enough_bytes_or_has_waited_long_enough():
    book = JournalBook(segment_bytes=100, segment_seconds=1.0)
    book.stage(0, {"c1": [(0, b"x" * 60)]}, "m0", now=10.0)
    assert not book.due(0, now=10.5)  # 60 bytes, 0.5 s
    book.stage(0, {"c1": [(1 << 20, b"x" * 60)]}, "m1", now=10.6)
    assert book.due(0, now=10.6) and not book.overdue(0, now=10.6)  # 120 bytes ≥ 100, < 200
    book.stage(0, {"c1": [(2 << 20, b"x" * 80)]}, "m2", now=10.7)
    assert book.overdue(0, now=10.7)  # 200 bytes: twice a segment
    book.take(0)
    book.stage(0, {"c2": [(3 << 20, b"y")]}, "m3", now=20.0)
    assert not book.due(0, now=20.9) and book.due(0, now=21.0)  # 1 s after its first entry
    assert not book.overdue(0, now=21.9) and book.overdue(0, now=22.0)


def test_taking_a_segment_returns_every_message_to_acknowledge_in_order_even_those_that_changed_nothing():
    book = JournalBook()
    book.stage(3, {"c1": [(0, b"a")]}, "m0")
    book.stage(3, {}, "m1")  # a duplicate: nothing journaled, still acknowledged with the rest
    book.stage(3, {"c2": [(2 << 20, b"b")], "c3": [(2 << 20, b"c")]}, "m2")
    key, value, acks = book.take(3)
    assert acks == ["m0", "m1", "m2"]
    assert key == partition_segment_key(3, 0)
    segment = decode_partition_segment(value)
    assert (segment.partition, segment.sequence) == (3, 0)
    assert segment.entries == [("c1", 0, b"a"), ("c2", 2 << 20, b"b"), ("c3", 2 << 20, b"c")]
    assert book.take(3) == (None, None, [])


def test_a_segment_is_compressed_and_reads_back_whole():
    entries = [
        (
            "call-000123-abcdef",
            n << 20,
            message("turn", {"role": "user", "text": f"my order {n} is late"}, f"e{n}", T0 + n, "call-000123-abcdef"),
        )
        for n in range(200)
    ]
    value = encode_partition_segment(2, 9, entries)
    assert decode_partition_segment(value) == PartitionSegment(2, 9, entries)
    assert len(value) * 3 < sum(len(raw) for _, _, raw in entries)  # repetitive envelopes shrink well
    assert value[:4] == b"\x28\xb5\x2f\xfd"  # a Zstandard frame


def test_a_segment_written_with_zlib_before_still_reads_back():
    # Journals written before segments moved to Zstandard hold zlib segments: a restore meets them.
    entries = [("c1", 0, b"first"), ("c1", 1 << 20, b"second")]
    packed = msgpack.packb({"p": 4, "s": 2, "e": entries, "w": T0, "o": 7, "f": ["c0"]}, use_bin_type=True)
    assert decode_partition_segment(zlib.compress(packed, 1)) == PartitionSegment(4, 2, entries, T0, 7, ("c0",))
    assert decode_partition_segment(packed) == PartitionSegment(4, 2, entries, T0, 7, ("c0",))  # and uncompressed


def test_messages_that_journal_nothing_are_acknowledged_without_a_write():
    book = JournalBook()
    book.stage(1, {}, "m0")
    assert book.take(1) == (None, None, ["m0"])


def test_segments_are_numbered_per_partition():
    book = JournalBook()
    keys = []
    for partition in (0, 1, 0):
        book.stage(partition, {"c": [(0, b"a")]}, None)
        keys.append(book.take(partition)[0])
    assert keys == [partition_segment_key(0, 0), partition_segment_key(1, 0), partition_segment_key(0, 1)]
    assert book.next_sequence == {0: 2, 1: 1}


def test_a_segment_is_deleted_once_every_call_in_it_is_forgotten():
    book = JournalBook()
    book.stage(0, {"c1": [(0, b"a")], "c2": [(0, b"b")]}, None)
    first, _, _ = book.take(0)
    book.stage(0, {"c2": [(1 << 20, b"c")]}, None)
    second, _, _ = book.take(0)
    book.forget(["c1"])  # the first segment still holds c2: c1 is retired from it, nothing deleted
    assert book.take_changes(0) == [(retired_key(0, "c1"), encode_retired(0, "c1", 2))]
    book.forget(["c2"])  # both segments go, and with the first one c1's retirement record
    assert book.take_changes(0) == [(first, None), (retired_key(0, "c1"), None), (second, None)]
    assert book.take_changes(0) == [] and book.retired == {} and book.fragments == {}


def test_entries_of_a_forgotten_call_still_waiting_are_not_written():
    book = JournalBook()
    book.stage(0, {"c1": [(0, b"a")], "c2": [(0, b"b")]}, "m0")
    book.forget(["c1"])
    _, value, acks = book.take(0)
    assert decode_partition_segment(value).entries == [("c2", 0, b"b")] and acks == ["m0"]


def _run(live: LiveScorer, messages: list[tuple[int, bytes]], journal: dict[bytes, bytes], flush_every: int) -> list:
    """Handle (offset, message) pairs of partition 0 as the agent does, writing a segment every
    `flush_every` messages; returns the results."""
    results = []
    for count, (offset, raw) in enumerate(messages, start=1):
        out = live.handle(raw, "callqa.events", 0, offset)
        results.extend(out.results)
        live.book.stage(0, out.journal, offset)
        if count % flush_every == 0:
            key, value, _ = live.book.take(0)
            if key is not None:
                journal[key] = value
    return results


def test_a_worker_restored_from_partition_segments_continues_as_if_it_never_stopped():
    messages = list(enumerate(call_messages("c1", T0) + call_messages("c2", T0 + 500)))
    annotated = (len(messages), message("call.annotated", {"user_sentiment": "Positive"}, "c1-5", T0 + 9000))

    uninterrupted = LiveScorer(CallEngine())
    expected = _run(uninterrupted, messages + [annotated], {}, flush_every=3)

    journal: dict[bytes, bytes] = {}
    first = LiveScorer(CallEngine())
    _run(first, messages[:6], journal, flush_every=3)  # two segments written, nothing pending
    restarted = LiveScorer(CallEngine())
    assert restarted.restore_partition(0, journal.items()) == 2
    rest = _run(restarted, messages[6:] + [annotated], journal, flush_every=3)

    encode = msgspec.json.encode
    assert [encode(r) for r in rest] == [encode(r) for r in expected[-len(rest) :]]
    assert restarted.engine.calls["c1"].events_applied == uninterrupted.engine.calls["c1"].events_applied == 5


def test_what_was_not_yet_written_is_applied_again_when_kafka_redelivers_it():
    messages = list(enumerate(call_messages("c1", T0)))
    journal: dict[bytes, bytes] = {}
    first = LiveScorer(CallEngine())
    lost = _run(first, messages, journal, flush_every=2)  # the last two messages never reach the journal
    restarted = LiveScorer(CallEngine())
    restarted.restore_partition(0, journal.items())
    # Unacknowledged, messages 2 and 3 come again; the call ends exactly as before.
    again = _run(restarted, messages[2:], journal, flush_every=2)
    assert [msgspec.json.encode(r) for r in again] == [msgspec.json.encode(r) for r in lost]


def test_a_single_call_batch_is_journaled_as_the_message_itself():
    events = [json.loads(m) for m in call_messages("c1", T0)]
    batch = json.dumps({"v": 1, "call_id": "c1", "events": events}).encode()
    live = LiveScorer(CallEngine())
    out = live.handle(batch, "callqa.events", 0, 7)
    assert out.journal == {"c1": [(7 << 20, batch)]}
    restored = LiveScorer(CallEngine())
    restored.restore_partition(0, [(partition_segment_key(0, 0), _segment_of(live, out))])
    assert restored.engine.calls["c1"].events_applied == 4
    assert restored.engine.calls["c1"].applied_offset == live.engine.calls["c1"].applied_offset == event_position(7, 3)


def _segment_of(live: LiveScorer, out) -> bytes:
    live.book.stage(0, out.journal, None)
    _, value, _ = live.book.take(0)
    return value


def test_a_partitions_watermark_is_one_key_read_back_by_its_partition_only_and_skipped_by_the_call_segment_reader():
    from streams.journal.call_journal import (
        calls_of_partition,
        encode_segment,
        encode_watermark,
        segment_key,
        watermark_key,
    )

    items = [
        (watermark_key(0), encode_watermark(0, T0 + 5, 7)),
        (watermark_key(10), encode_watermark(10, T0 + 9)),
        (segment_key("c1", 0), encode_segment(0, [(0, b"x")])),
    ]

    def read_back(partition: int) -> tuple[int | None, int]:
        restored = JournalBook().restore(partition, items)
        return restored.watermark_ms, restored.through_offset

    assert read_back(0) == (T0 + 5, 7) and read_back(10) == (T0 + 9, -1)
    assert read_back(1) == (None, -1)
    assert [call_id for call_id, _, _ in calls_of_partition(items, 0)] == ["c1"]


def test_the_watermark_is_written_only_when_it_moved_since_the_last_write():
    live = LiveScorer(CallEngine())
    assert live.watermark_to_journal(0) is None  # no event yet
    live.handle(message("call.started", {"agent_id": "a"}, "m1", T0), "callqa.events", 0, 0)
    assert live.watermark_to_journal(0) is not None
    assert live.watermark_to_journal(0) is None
    live.handle(message("turn", {"role": "user", "text": "older"}, "m2", T0 - 10), "callqa.events", 0, 1)
    assert live.watermark_to_journal(0) is None


def test_a_restore_reads_only_the_segments_of_its_own_partition():
    # Partition 10's segments share partition 1's digits: the key's separator tells them apart.
    book = JournalBook()
    book.stage(1, {"c1": [(0, b"one")]})
    own_key, own_value, _ = book.take(1)
    items = [
        (own_key, own_value),
        (partition_segment_key(10, 0), b"\x78 not a segment of partition 1"),  # would fail to decompress
        (partition_segment_key(2, 0), b"not msgpack either"),
    ]
    assert JournalBook().restore(1, items).entries == [("c1", 0, b"one")]


def test_a_segment_names_the_calls_forgotten_since_the_last_one_so_a_restore_retires_them_without_their_records():
    book = JournalBook()
    book.stage(0, {"c1": [(0, b"a")], "c2": [(0, b"b")]}, "m0")
    first_key, first, _ = book.take(0, watermark_ms=T0, through_offset=0)
    book.forget(["c1"])  # c1 stays behind in the first segment, kept for c2
    commit_key, commit_point, _ = book.take(0, watermark_ms=T0 + 5, through_offset=1)
    point = decode_partition_segment(commit_point)
    assert (point.entries, point.forgotten, point.watermark_ms, point.through_offset) == ([], ("c1",), T0 + 5, 1)
    assert book.take_changes(0) == [(retired_key(0, "c1"), encode_retired(0, "c1", 1))]

    # A crash delivered the commit point but not the retirement record after it.
    restoring = JournalBook()
    restored = restoring.restore(0, [(first_key, first), (commit_key, commit_point)])
    assert restored.entries == [("c2", 0, b"b")] and (restored.watermark_ms, restored.through_offset) == (T0 + 5, 1)
    assert restoring.take_changes(0) == [(retired_key(0, "c1"), encode_retired(0, "c1", 1))]
    # The commit point, the latest segment, goes once the next segment is written.
    restoring.stage(0, {"c2": [(2 << 20, b"c")]}, "m2")
    restoring.take(0)
    assert restoring.take_changes(0) == [(commit_key, None)]
