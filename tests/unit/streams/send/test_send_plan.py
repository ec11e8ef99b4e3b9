"""What `callqa send` publishes for a log, decided without Kafka: every partition's events in the log's
order and every call's on its partition, batches within the worker's size limit, recorded watermarks
on the partition they name, and what does not decode sent as it was, in its place."""

from __future__ import annotations

import json

import msgspec
import pytest

from models.wire import MAX_ITEMS_DEAD_LETTERED, decode_message
from streams.partitioning import partition_for
from streams.send.plan import SendPlan, end_of_input_messages

T0 = 1_760_000_000_000
PARTITIONS = 4


def doc(call_id: str, n: int, type_: str = "turn", data: dict | None = None, ts: int | None = None) -> dict:
    return {
        "v": 1,
        "type": type_,
        "event_id": f"{call_id}:{n}",
        "call_id": call_id,
        "ts_ms": T0 + n if ts is None else ts,
        "data": data if data is not None else {"role": "user", "text": f"turn {n}"},
    }


def pack(document) -> bytes:
    return msgspec.msgpack.encode(document)


def delivered(plan: SendPlan, records: list[bytes]) -> dict[int, list[tuple[str | None, str | None]]]:
    """Per partition, in the order sent: (event_id, call_id) of every event, or (None, reason) of what
    the worker would dead-letter."""
    messages = [m for raw in records for m in plan.add(raw)] + plan.finish()
    by_partition: dict[int, list] = {}
    for message in messages:
        partition = (
            message.partition if message.partition is not None else partition_for(message.key.decode(), PARTITIONS)
        )
        decoded = decode_message(message.value, plan.max_message_bytes)
        seen = by_partition.setdefault(partition, [])
        seen += [(e.event_id, e.call_id) for e in decoded.events]
        seen += [(None, r.reason) for r in decoded.rejected]
    return by_partition


def two_calls_on_two_partitions() -> tuple[str, str]:
    names = [f"call-{i}" for i in range(50)]
    a = names[0]
    b = next(n for n in names if partition_for(n, PARTITIONS) != partition_for(a, PARTITIONS))
    return a, b


def test_a_batch_across_calls_is_taken_apart_so_each_call_keeps_its_order_and_its_partition():
    a, b = two_calls_on_two_partitions()
    log = [pack(doc(b, 0)), pack(doc(b, 1)), pack({"v": 1, "events": [doc(a, 2), doc(b, 3)]}), pack(doc(a, 4))]
    sent = delivered(SendPlan(PARTITIONS), log)
    assert sent[partition_for(b, PARTITIONS)] == [(f"{b}:0", b), (f"{b}:1", b), (f"{b}:3", b)]
    assert sent[partition_for(a, PARTITIONS)] == [(f"{a}:2", a), (f"{a}:4", a)]


def test_a_bad_item_of_a_batch_across_calls_goes_alone_after_its_calls_earlier_events():
    a, b = two_calls_on_two_partitions()
    bad = {**doc(b, 2), "data": {"role": "robot", "text": "x"}}
    plan = SendPlan(PARTITIONS)
    sent = delivered(plan, [pack(doc(b, 0)), pack({"v": 1, "events": [doc(a, 1), bad, doc(b, 3)]})])
    on_b = sent[partition_for(b, PARTITIONS)]
    assert on_b[0] == (f"{b}:0", b) and on_b[1][0] is None and "Invalid enum value 'robot'" in on_b[1][1]
    assert on_b[2] == (f"{b}:3", b) and sent[partition_for(a, PARTITIONS)] == [(f"{a}:1", a)]
    assert plan.report.passed_through == 1 and plan.report.events == 3


def test_batches_stay_within_the_workers_message_size_limit():
    text = "x" * 40_000
    log = [pack(doc("big", n, data={"role": "user", "text": text})) for n in range(60)]
    plan = SendPlan(PARTITIONS, max_message_bytes=1_048_576)
    messages = [m for raw in log for m in plan.add(raw)] + plan.finish()
    assert all(len(m.value) <= 1_048_576 for m in messages) and len(messages) == 3
    assert sum(len(decode_message(m.value).events) for m in messages) == 60


def test_a_recorded_watermark_goes_to_the_partition_it_names_after_the_events_held_for_it():
    a, b = two_calls_on_two_partitions()
    target = partition_for(a, PARTITIONS)
    watermark = doc("__watermark__", 9, "watermark", {"partition": target})
    sent = delivered(SendPlan(PARTITIONS), [pack(doc(a, 0)), pack(doc(b, 1)), pack(watermark), pack(doc(a, 2))])
    assert sent[target] == [(f"{a}:0", a), ("__watermark__:9", "__watermark__"), (f"{a}:2", a)]
    assert sent[partition_for(b, PARTITIONS)] == [(f"{b}:1", b)]


def test_an_event_no_encoding_can_hold_is_sent_as_it_was_in_its_place_for_the_worker_to_refuse():
    # (An integer beyond 64 bits: the decoder refuses it now, models/wire_limits.py; send passes it on.)
    huge = {**doc("c", 1, "tool.call", {"name": "n", "arguments": "{}", "result": {"n": 10**30}})}
    log = [pack(doc("c", 0)), json.dumps(huge).encode(), pack(doc("c", 2))]
    plan = SendPlan(PARTITIONS)
    messages = [m for raw in log for m in plan.add(raw)] + plan.finish()
    assert [m.value for m in messages][1] == json.dumps(huge).encode() and messages[1].key == b"c"
    assert plan.report.events == 2 and plan.report.passed_through == 1


def test_what_does_not_decode_is_sent_as_it_was_after_its_calls_held_events():
    plan = SendPlan(PARTITIONS)
    bad = json.dumps({**doc("c", 1), "data": {"role": "user"}}).encode()
    messages = [m for raw in (pack(doc("c", 0)), bad) for m in plan.add(raw)] + plan.finish()
    assert [m.value for m in messages][1] == bad and messages[1].key == b"c"
    assert plan.report.records == 2 and plan.report.passed_through == 1


def test_the_size_bound_counts_a_call_ids_bytes_not_its_characters():
    call_id = "📞" * 200  # 800 bytes of UTF-8
    log = [pack(doc(call_id, n, data={"role": "user", "text": "x" * 870})) for n in range(60)]
    plan = SendPlan(PARTITIONS, max_message_bytes=20_000)
    messages = [m for raw in log for m in plan.add(raw)] + plan.finish()
    assert all(len(m.value) <= 20_000 for m in messages)
    assert sum(len(decode_message(m.value, 20_000).events) for m in messages) == 60


def test_a_batch_item_refused_for_its_batchs_call_id_is_refused_by_the_worker_too():
    # Alone, the item is a good event of another call: sent alone, the worker took it, replay did not.
    a, b = two_calls_on_two_partitions()
    record = json.dumps({"v": 1, "call_id": a, "events": [doc(a, 1), doc(b, 2)]}).encode()
    assert decode_message(record).rejected[0].reason.endswith(f"call_id {b!r} differs from its batch's {a!r}")
    plan = SendPlan(PARTITIONS)
    sent = list(plan.add(record)) + plan.finish()
    refused = [r for m in sent for r in decode_message(m.value).rejected]
    assert [e.event_id for m in sent for e in decode_message(m.value).events] == [f"{a}:1"]
    assert len(refused) == 1 and refused[0].event_id == f"{b}:2" and "differs from its batch's" in refused[0].reason


@pytest.mark.parametrize("good_events", [0, 2])
def test_a_batch_record_taken_apart_with_more_bad_items_than_are_dead_lettered_one_by_one_has_the_rest_dead_lettered_once(  # noqa: E501 - a test's name says what it checks
    good_events,
):
    a, b = two_calls_on_two_partitions()
    items = [doc(a, 1), doc(b, 2)][:good_events] + [4] * (MAX_ITEMS_DEAD_LETTERED + 500)
    record = pack({"v": 1, "events": items})
    replayed = decode_message(record, max_bytes=len(record)).rejected
    plan = SendPlan(PARTITIONS, max_message_bytes=len(record))
    sent = list(plan.add(record)) + plan.finish()
    # What the worker dead-letters of what was sent, and what `send` dead-letters itself: as many as
    # replay's, the rest's letter the same.
    by_worker = [r for m in sent if m.refused is None for r in decode_message(m.value).rejected]
    (rest,) = [m for m in sent if m.refused is not None]
    assert len(by_worker) + 1 == len(replayed) == MAX_ITEMS_DEAD_LETTERED + 1
    assert rest.refused == replayed[-1] and rest.value == record and plan.report.rest_refused == 1
    assert [e.event_id for m in sent if m.refused is None for e in decode_message(m.value).events] == [
        f"{a}:1",
        f"{b}:2",
    ][:good_events]


def test_a_batch_item_that_is_a_batch_holding_a_good_event_is_refused_by_the_worker_too_not_scored():
    a, b = two_calls_on_two_partitions()
    record = pack({"v": 1, "events": [doc(a, 1), doc(b, 2), {"v": 1, "events": [doc("c-x", 3), 4]}]})
    replayed = decode_message(record)
    plan = SendPlan(PARTITIONS)
    sent = list(plan.add(record)) + plan.finish()
    by_worker = [decode_message(m.value) for m in sent]
    assert (
        [e.event_id for d in by_worker for e in d.events]
        == [e.event_id for e in replayed.events]
        == [f"{a}:1", f"{b}:2"]
    )
    assert sum(len(d.rejected) for d in by_worker) == len(replayed.rejected) == 1


def test_a_record_too_large_for_the_worker_is_not_sent_but_dead_lettered_in_its_place():
    plan = SendPlan(PARTITIONS, max_message_bytes=10_000)
    huge = json.dumps(doc("c1", 2, data={"role": "user", "text": "w " * 10_000})).encode()
    messages = [m for raw in (pack(doc("c1", 1)), huge, pack(doc("c1", 3))) for m in plan.add(raw)] + plan.finish()
    assert [m.refused is not None for m in messages] == [False, True, False]  # c1's first event goes out first
    refusal = messages[1]
    assert refusal.partition == partition_for("c1", PARTITIONS) and refusal.value == huge
    assert refusal.refused.reason == f"message of {len(huge)} bytes exceeds the 10000-byte limit"
    assert (refusal.refused.event_id, refusal.refused.call_id) == ("c1:2", "c1") and plan.report.refused == 1
    from models.deadletter import DeadLetterDocument
    from streams.send.sender import refused_document

    letter = msgspec.json.decode(refused_document(refusal, "p.events"), type=DeadLetterDocument)
    assert (letter.topic, letter.partition, letter.offset, letter.original_size) == (
        "p.events",
        refusal.partition,
        -1,
        len(huge),
    )


def test_an_event_with_bytes_that_are_no_utf8_in_a_field_the_contract_ignores_goes_as_it_was():
    # The event decodes (the field is not read); read whole to be packed again, it did not, and the
    # send stopped there with nothing sent.
    good = json.dumps(doc("c", 1)).encode()
    odd_json = good[:-1] + b', "note": "bad \xff byte"}'
    odd_msgpack = pack({**doc("c", 2), "note": "PLACEHOLDER"}).replace(b"\xabPLACEHOLDER", b"\xa5bad\xff!")
    for odd in (odd_json, odd_msgpack):
        assert decode_message(odd).events and not decode_message(odd).rejected
    plan = SendPlan(PARTITIONS)
    sent = delivered(plan, [pack(doc("c", 0)), odd_json, odd_msgpack, pack(doc("c", 3))])
    assert sent[partition_for("c", PARTITIONS)] == [("c:0", "c"), ("c:1", "c"), ("c:2", "c"), ("c:3", "c")]


def test_a_json_event_that_grows_past_the_limit_in_messagepack_goes_as_it_was():
    # 0.5 is 3 bytes of JSON and 9 of MessagePack: the record is within the worker's limit, its
    # MessagePack form is not.
    grown = json.dumps(doc("c", 1, "latency", {"kind": "llm", "latency_ms": 5, "pad": [0.5] * 2_000})).encode()
    plan = SendPlan(PARTITIONS, max_message_bytes=12_000)
    assert len(grown) < 12_000 and len(msgspec.msgpack.encode(json.loads(grown))) > 12_000
    messages = [m for raw in (pack(doc("c", 0)), grown) for m in plan.add(raw)] + plan.finish()
    assert all(len(m.value) <= 12_000 for m in messages) and messages[1].value == grown
    assert [e.event_id for m in messages for e in decode_message(m.value, 12_000).events] == ["c:0", "c:1"]


def test_a_batch_item_that_is_itself_a_batch_is_refused_by_the_worker_too():
    # Alone, the item is a good batch: sent alone, the worker scored its events, replay refused it.
    inner = {"v": 1, "call_id": "n1", "events": [doc("n1", 0), doc("n1", 1)]}
    record = json.dumps({"v": 1, "events": [inner]}).encode()
    (reason,) = [r.reason for r in decode_message(record).rejected]
    plan = SendPlan(PARTITIONS)
    sent = list(plan.add(record)) + plan.finish()
    assert [e for m in sent for e in decode_message(m.value).events] == []
    assert [r.reason.split(": ", 1)[1] for m in sent for r in decode_message(m.value).rejected] == [
        reason.split(": ", 1)[1]
    ]


def test_a_record_of_several_calls_goes_as_one_message_per_partition_after_what_its_calls_hold():
    # A partition's share of the record keeps its events together and in the record's order.
    names = [f"call-{i}" for i in range(60)]
    a = names[0]
    b = next(n for n in names[1:] if partition_for(n, PARTITIONS) == partition_for(a, PARTITIONS))
    c = next(n for n in names if partition_for(n, PARTITIONS) != partition_for(a, PARTITIONS))
    plan = SendPlan(PARTITIONS)
    record = pack({"v": 1, "events": [doc(b, 2), doc(c, 3), doc(a, 4)]})
    messages = [m for raw in (pack(doc(a, 0)), pack(doc(a, 1)), record, pack(doc(b, 5))) for m in plan.add(raw)]
    messages += plan.finish()
    shares = [[e.event_id for e in decode_message(m.value).events] for m in messages]
    assert shares[0] == [f"{a}:0", f"{a}:1"]  # what a held, before a's share of the record
    assert [f"{b}:2", f"{a}:4"] in shares and [f"{c}:3"] in shares
    share_of_a = messages[shares.index([f"{b}:2", f"{a}:4"])]
    assert share_of_a.partition == partition_for(a, PARTITIONS) and share_of_a.key == b"batch"
    assert plan.report.events == 6 and shares[-1] == [f"{b}:5"]


def test_a_batch_record_of_one_partition_goes_as_it_is_after_what_its_calls_hold_whatever_the_batch_size():
    # Taken apart, the worker would name its bad item by another place in another message.
    a, _ = two_calls_on_two_partitions()
    bad = {**doc(a, 3), "data": {"role": "robot", "text": "x"}}
    record = json.dumps({"v": 1, "call_id": a, "events": [doc(a, 2), bad, doc(a, 4)]}).encode()
    for batch_size in (1, 50):
        plan = SendPlan(PARTITIONS, batch_size=batch_size)
        messages = [m for raw in (pack(doc(a, 0)), pack(doc(a, 1)), record) for m in plan.add(raw)] + plan.finish()
        assert messages[-1].value == record and messages[-1].partition == partition_for(a, PARTITIONS)
        assert [e.event_id for m in messages[:-1] for e in decode_message(m.value).events] == [f"{a}:0", f"{a}:1"]
        assert decode_message(messages[-1].value).rejected == decode_message(record).rejected
        assert plan.report.events == 4 and plan.report.passed_through == 1


def test_a_partitions_events_go_in_the_logs_order_in_batches_across_its_calls():
    names = [f"call-{i}" for i in range(60)]
    a = names[0]
    b = next(n for n in names[1:] if partition_for(n, PARTITIONS) == partition_for(a, PARTITIONS))
    c = next(n for n in names if partition_for(n, PARTITIONS) != partition_for(a, PARTITIONS))
    log = [pack(doc(call, n)) for n, call in enumerate([a, b, c, a, c, b, a])]
    plan = SendPlan(PARTITIONS, batch_size=3)
    messages = [m for raw in log for m in plan.add(raw)] + plan.finish()
    shared = partition_for(a, PARTITIONS)
    assert [[e.event_id for e in decode_message(m.value).events] for m in messages] == [
        [f"{a}:0", f"{b}:1", f"{a}:3"],
        [f"{c}:2", f"{c}:4"],
        [f"{b}:5", f"{a}:6"],
    ]
    # Several calls: keyed "batch" and sent to their partition; one call: keyed by it, as a call batch.
    assert [(m.key, m.partition) for m in messages] == [(b"batch", shared), (c.encode(), None), (b"batch", shared)]
    assert msgspec.msgpack.decode(messages[1].value)["call_id"] == c
    assert "call_id" not in msgspec.msgpack.decode(messages[0].value)


def test_the_end_of_input_time_leaves_out_one_calls_leap_and_keeps_one_borne_out():
    # The end-of-input watermarks go to every partition: the highest ts_ms of a log with one call a
    # year fast would move every partition's time a year on, and the next log's calls would be too late.
    # (Partitions of 4: a, b, y, fast on 0; d on 1; c on 2; skewed on 3.)
    year = 365 * 86_400_000

    def end_of(records: list[bytes], **options) -> int | None:
        plan = SendPlan(PARTITIONS, **options)
        delivered(plan, records)
        return plan.end_ts_ms

    assert end_of([pack(doc("a", 0)), pack(doc("skewed", 0, ts=T0 + year)), pack(doc("a", 5))]) == T0 + 5
    # Wherever in the log the fast call comes, the first record included, and within a partition too.
    assert (
        end_of([pack(doc("skewed", 0, ts=T0 + year)), pack(doc("a", 0)), pack(doc("d", 3)), pack(doc("a", 5))])
        == T0 + 5
    )
    assert end_of([pack(doc("a", 0)), pack(doc("fast", 0, ts=T0 + year)), pack(doc("d", 7))]) == T0 + 7
    # Fast calls on two partitions, each held back within its own, do not vouch for each other.
    assert (
        end_of(
            [
                pack(doc("a", 0)),
                pack(doc("fast", 0, ts=T0 + year)),
                pack(doc("c", 0)),
                pack(doc("x", 0, ts=T0 + year + 5)),
                pack(doc("d", 9)),
            ]
        )
        == T0 + 9
    )
    # Two calls of one partition an hour on: time passed.
    assert (
        end_of([pack(doc("a", 0)), pack(doc("b", 0, ts=T0 + 3_600_000)), pack(doc("y", 0, ts=T0 + 3_600_009))])
        == T0 + 3_600_009
    )
    assert end_of([pack(doc("a", 0)), pack(doc("skewed", 0, ts=T0 + year))], max_leap_ms=0) == T0 + year


def test_the_end_of_input_names_every_call_of_the_log_on_its_partition_in_messages_that_fit():
    year = 365 * 86_400_000
    plan = SendPlan(PARTITIONS)
    delivered(plan, [pack(doc("a", 0)), pack(doc("skewed", 0, ts=T0 + year)), pack(doc("d", 5))])
    expected = {}
    for call_id in ("a", "skewed", "d"):
        expected.setdefault(partition_for(call_id, PARTITIONS), set()).add(call_id)
    assert plan.report.calls == expected  # the fast call too: its end of input ends it, as replay does
    many = [f"call-{n:06d}-" + "x" * 40 for n in range(20_000)]
    messages = end_of_input_messages(T0, 0, many)
    named = [msgspec.msgpack.decode(m)["data"]["calls"] for m in messages]
    assert len(messages) > 1 and all(len(m) < 300 * 1024 for m in messages)
    assert [c for chunk in named for c in chunk] == sorted(many)
    assert len({msgspec.msgpack.decode(m)["event_id"] for m in messages}) == len(messages)
    (every,) = end_of_input_messages(T0, 0)
    assert "calls" not in msgspec.msgpack.decode(every)["data"]
    # Within a worker's lower limit on messages too: each decodes there.
    small = end_of_input_messages(T0, 0, many, max_message_bytes=65_536)
    assert all(not decode_message(m, 65_536).rejected for m in small)
    assert [c for m in small for c in msgspec.msgpack.decode(m)["data"]["calls"]] == sorted(many)


def test_a_log_that_only_annotates_or_corrects_a_call_does_not_name_it_in_its_end_of_input():
    # Another producer's call, still open: an annotation or a correction of it opens no call, and the
    # log's end of input must not end it.
    plan = SendPlan(PARTITIONS)
    delivered(
        plan,
        [
            pack(doc("theirs", 0, "call.annotated", {"user_sentiment": "Positive"})),
            pack(doc("theirs", 1, "transcript.corrected", {"turn_index": 0, "text": "x"})),
            pack(doc("mine", 2)),
        ],
    )
    assert plan.report.calls == {partition_for("mine", PARTITIONS): {"mine"}}


def test_a_watermark_far_past_the_logs_calls_is_not_taken_to_every_partition():
    far = 253_402_300_799_999  # the year 9999
    plan = SendPlan(PARTITIONS)
    watermark = {
        "v": 1,
        "type": "watermark",
        "event_id": "w",
        "call_id": "__watermark__",
        "ts_ms": far,
        "data": {"partition": 0},
    }
    delivered(plan, [pack(doc("a", 0)), pack(watermark), pack(doc("a", 5))])
    assert plan.end_ts_ms == T0 + 5
    near = SendPlan(PARTITIONS)  # one within the limit stands: a producer's promise
    delivered(near, [pack(doc("a", 0)), pack({**watermark, "ts_ms": T0 + 60_000}), pack(doc("a", 5))])
    assert near.end_ts_ms == T0 + 60_000
