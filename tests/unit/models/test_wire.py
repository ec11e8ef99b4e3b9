"""Decoding Kafka message bytes: every problem becomes a one-line reason, nothing raises."""

from __future__ import annotations

import gzip
import json

import msgpack
import msgspec
import pytest

from models.wire import (
    MAX_ITEMS_DEAD_LETTERED,
    decode_message,
    encode_batch,
    encode_event,
)


def envelope(**overrides):
    doc = {
        "v": 1,
        "event_id": "e1",
        "call_id": "c1",
        "ts_ms": 1_000,
        "type": "turn",
        "data": {"role": "user", "text": "hi"},
    }
    doc.update(overrides)
    return doc


def test_a_msgpack_event_and_the_same_event_as_json_decode_alike():
    as_msgpack = decode_message(msgpack.packb(envelope()))
    as_json = decode_message(json.dumps(envelope()).encode())
    assert as_msgpack.events == as_json.events and len(as_json.events) == 1
    assert as_json.events[0].data.text == "hi"


def test_a_wrong_field_is_named_with_the_event_id():
    (rejected,) = decode_message(json.dumps(envelope(data={"role": "bot", "text": "x"})).encode()).rejected
    assert rejected.reason == "event 'e1': Invalid enum value 'bot' - at `data.role`"
    assert rejected.event_id == "e1" and rejected.call_id == "c1"


def test_a_missing_required_field_is_named():
    (rejected,) = decode_message(json.dumps(envelope(data={"role": "user"})).encode()).rejected
    assert rejected.reason == "event 'e1': Object missing required field `text` - at `data`"


def test_a_wrong_type_is_named():
    (rejected,) = decode_message(json.dumps(envelope(ts_ms="yesterday")).encode()).rejected
    assert "Expected `int`, got `str` - at `ts_ms`" in rejected.reason


def test_an_unknown_type_is_rejected():
    (rejected,) = decode_message(json.dumps(envelope(type="call.teleported")).encode()).rejected
    assert rejected.reason.startswith(
        "event 'e1': unknown event type 'call.teleported'; known types: call.started, turn,"
    )


def test_undecodable_bytes_keep_their_original_bytes():
    (rejected,) = decode_message(b"\xc1\x00garbage").rejected
    assert rejected.reason.startswith("event without a readable event_id: undecodable")
    assert rejected.raw == b"\xc1\x00garbage"


def test_plain_text_is_reported_as_neither_json_nor_msgpack():
    (rejected,) = decode_message(b"hello world").rejected
    assert "neither a JSON object nor a MessagePack map" in rejected.reason


def test_an_oversized_message_is_rejected_before_decoding_and_named_by_its_ids_where_readable():
    (rejected,) = decode_message(b"{" + b" " * 2000 + b"}", max_bytes=1000).rejected
    assert rejected.reason == "message of 2002 bytes exceeds the 1000-byte limit"
    assert (rejected.event_id, rejected.call_id) == (None, None)
    big = envelope(type="turn", data={"role": "user", "text": "x" * 2000})
    for raw in (json.dumps(big).encode(), msgpack.packb(big)):
        (rejected,) = decode_message(raw, max_bytes=1000).rejected
        assert rejected.reason.startswith("message of") and (rejected.event_id, rejected.call_id) == ("e1", "c1")


def test_an_unsupported_contract_version_is_rejected():
    (rejected,) = decode_message(json.dumps(envelope(v=2)).encode()).rejected
    assert rejected.reason == "event 'e1': unsupported contract version v=2 (callqa reads version 1)"
    (rejected,) = decode_message(json.dumps(envelope(v=True)).encode()).rejected
    assert rejected.reason == "event 'e1': `v` must be the contract version, 1 (Expected `int`, got `bool`)"


def test_a_lone_surrogate_escape_is_named_as_such_with_the_events_ids():
    document = envelope(type="turn", data={"role": "user", "text": "a\ud800b"})
    raw = json.dumps(document).encode()  # Python writes the lone surrogate as the escape \ud800
    (rejected,) = decode_message(raw).rejected
    at = raw.index(b"\\ud800")
    assert rejected.reason == (
        f"event 'e1': undecodable: a lone UTF-16 surrogate escape (\\ud800 at byte {at}), which is no text"
    )
    assert (rejected.event_id, rejected.call_id) == ("e1", "c1")
    pair = json.dumps(envelope(type="turn", data={"role": "user", "text": "a\U0001f600b"})).encode()
    assert b"\\ud83d\\ude00" in pair and decode_message(pair).events[0].data.text == "a\U0001f600b"


def test_a_batch_whose_events_are_not_a_list_says_so():
    (rejected,) = decode_message(b'{"v": 1, "call_id": "c1", "events": "notalist"}').rejected
    assert rejected.reason == "batch: Expected `array`, got `str` - at `events`"


def test_a_batch_with_no_events_is_dead_lettered_not_dropped_unseen():
    for raw in (b'{"v": 1, "events": []}', msgpack.packb({"v": 1, "events": [], "call_id": "c1"})):
        decoded = decode_message(raw)
        assert decoded.events == [] and [r.reason for r in decoded.rejected] == ["batch: it holds no events"]


def test_a_batch_keeps_its_good_events_and_rejects_only_the_bad_ones():
    good = envelope()
    bad = envelope(event_id="e2", data={"role": "user"})
    decoded = decode_message(msgpack.packb({"v": 1, "call_id": "c1", "events": [good, bad, envelope(event_id="e3")]}))
    assert decoded.is_batch
    assert [e.event_id for e in decoded.events] == ["e1", "e3"]
    (rejected,) = decoded.rejected
    assert rejected.batch_index == 1 and rejected.reason.startswith("event 'e2' (batch item 1):")


def test_a_batch_item_of_another_call_is_rejected():
    decoded = decode_message(msgpack.packb({"v": 1, "call_id": "c1", "events": [envelope(call_id="c2")]}))
    assert decoded.events == []
    assert "differs from its batch's 'c1'" in decoded.rejected[0].reason


def test_past_a_thousand_bad_items_a_batch_is_dead_lettered_once_more_whole_not_item_by_item():
    items = [envelope(event_id="first")] + [4] * 1_200 + [envelope(call_id="c2")] * 300 + [envelope(event_id="last")]
    raw = msgpack.packb({"v": 1, "call_id": "c1", "events": items})
    decoded = decode_message(raw, max_bytes=len(raw))
    assert [e.event_id for e in decoded.events] == ["first", "last"]
    assert decoded.batch_index_of(1) == len(items) - 1  # (the event's place, past the items refused)
    *one_by_one, whole = decoded.rejected
    assert [r.batch_index for r in one_by_one] == list(range(1, MAX_ITEMS_DEAD_LETTERED + 1))
    assert whole.raw == raw and whole.batch_index is None and whole.call_id == "c1"
    assert whole.reason.startswith(f"batch: 500 more of its {len(items)} items were refused as well")
    # Up to the cap, every bad item has a dead letter of its own, and no more is added.
    raw = msgpack.packb({"v": 1, "call_id": "c1", "events": [4] * MAX_ITEMS_DEAD_LETTERED})
    assert [r.batch_index for r in decode_message(raw).rejected] == list(range(MAX_ITEMS_DEAD_LETTERED))


def test_a_cross_call_batch_has_no_call_id():
    decoded = decode_message(msgpack.packb({"v": 1, "events": [envelope(), envelope(event_id="e9", call_id="c2")]}))
    assert [e.call_id for e in decoded.events] == ["c1", "c2"] and not decoded.rejected


def test_encoded_events_and_batches_decode_back_to_the_same_events():
    (event,) = decode_message(json.dumps(envelope()).encode()).events
    assert decode_message(encode_event(event)).events == [event]
    assert decode_message(encode_batch([event, event], "c1")).events == [event, event]


def test_a_scenario_naming_an_unknown_success_signal_is_rejected_on_the_wire():
    from typing import get_args

    from models.events import SuccessSignalName
    from models.scenario import SuccessSignal

    assert set(get_args(SuccessSignalName)) == {signal.value for signal in SuccessSignal}
    doc = envelope(
        type="call.started", data={"agent_id": "a", "scenario": {"success_signals": ["clean_exit", "vibes"]}}
    )
    (rejected,) = decode_message(json.dumps(doc).encode()).rejected
    assert "'vibes'" in rejected.reason and "scenario.success_signals[1]" in rejected.reason


@pytest.mark.parametrize(
    "field, value, bound",
    [
        ("min_agent_turns", -3, "`int` >= 0"),
        ("judge_threshold", 5, "`float` <= 1.0"),
        ("judge_threshold", -0.5, "`float` >= 0.0"),
    ],
)
def test_a_scenario_whose_floor_or_judge_threshold_cannot_be_met_is_rejected_on_the_wire(field, value, bound):
    # A threshold of 5 on a score of 0 to 1 never passed, a floor of -3 never stalled: both were taken.
    doc = envelope(type="call.started", data={"agent_id": "a", "scenario": {field: value}})
    (rejected,) = decode_message(json.dumps(doc).encode()).rejected
    assert rejected.reason == f"event 'e1': Expected {bound} - at `data.scenario.{field}`"
    for good in (0, 1):
        doc = envelope(type="call.started", data={"agent_id": "a", "scenario": {field: good}})
        assert decode_message(json.dumps(doc).encode()).events


def test_event_time_outside_years_1970_to_9999_is_rejected_with_its_bounds():
    for ts_ms, bound in ((-1, ">= 0"), (2**64 - 1, "<= 253402300799999")):
        (rejected,) = decode_message(msgpack.packb(envelope(ts_ms=ts_ms))).rejected
        assert rejected.reason == f"event 'e1': Expected `int` {bound} - at `ts_ms`"
    assert decode_message(msgpack.packb(envelope(ts_ms=253_402_300_799_999))).events


def test_an_inactivity_timeout_that_is_not_a_positive_finite_number_of_seconds_up_to_a_year_is_rejected():
    def started(timeout):
        return msgpack.packb(envelope(type="call.started", data={"agent_id": "a", "inactivity_timeout_s": timeout}))

    for timeout, problem in (
        (float("nan"), "> 0.0"),
        (0.0, "> 0.0"),
        (float("inf"), "<= 31536000.0"),
        (1e300, "<= 31536000.0"),
    ):
        (rejected,) = decode_message(started(timeout)).rejected
        assert rejected.reason == f"event 'e1': Expected `float` {problem} - at `data.inactivity_timeout_s`", timeout
    assert decode_message(started(31_536_000.0)).events[0].data.inactivity_timeout_s == 31_536_000.0


def test_a_negative_latency_or_turn_index_is_rejected_on_the_wire():
    for type_, data, problem in (
        ("latency", {"latency_ms": -100}, "Expected `float` >= 0.0 - at `data.latency_ms`"),
        ("transcript.corrected", {"turn_index": -1, "text": "x"}, "Expected `int` >= 0 - at `data.turn_index`"),
    ):
        (rejected,) = decode_message(msgpack.packb(envelope(type=type_, data=data))).rejected
        assert rejected.reason == f"event 'e1': {problem}"
    assert decode_message(msgpack.packb(envelope(type="latency", data={"latency_ms": 0}))).events


def test_a_record_that_is_both_one_event_and_a_batch_is_refused_not_read_as_the_event():
    # Read as the event (it has a type), its batch's events vanished without a dead letter.
    item = {
        "v": 1,
        "event_id": "q:1",
        "call_id": "q",
        "ts_ms": 1_760_000_000_001,
        "type": "turn",
        "data": {"role": "user", "text": "hello"},
    }
    both = {
        "v": 1,
        "event_id": "q:b",
        "call_id": "q",
        "ts_ms": 1_760_000_000_000,
        "type": "watermark",
        "data": {},
        "events": [item],
    }
    for raw in (
        json.dumps(both).encode(),
        msgpack.packb(both),
        json.dumps({**both, "events": [{"not": "an event"}]}).encode(),
    ):
        decoded = decode_message(raw)
        assert decoded.events == [] and len(decoded.rejected) == 1
        assert "one event (it has a `type`) or a batch of events (`events`), not both" in decoded.rejected[0].reason
    quoted = {**item, "data": {"role": "user", "text": 'the word "events"'}, "events_seen": 3}
    assert [e.event_id for e in decode_message(json.dumps(quoted).encode()).events] == ["q:1"]


def test_a_record_that_is_both_is_refused_however_its_events_key_is_written():
    # MessagePack may write the key as a str8/16/32 and JSON with escaped letters: each reads as
    # "events", and the record was taken for its one event, its batch dropped without a word.
    item = {
        "v": 1,
        "event_id": "q:1",
        "call_id": "q",
        "ts_ms": 1_760_000_000_001,
        "type": "turn",
        "data": {"role": "user", "text": "hello"},
    }
    both = {**item, "event_id": "q:b", "events": [item]}
    packed, written = msgpack.packb(both), json.dumps(both).encode()
    forms = [
        packed.replace(b"\xa6events", key)
        for key in (b"\xd9\x06events", b"\xda\x00\x06events", b"\xdb\x00\x00\x00\x06events")
    ]
    forms += [
        written.replace(b'"events"', key)
        for key in (b'"\\u0065vents"', b'"even\\u0074s"', b'"\\u0065\\u0056ents"'.replace(b"\\u0056", b"\\u0076"))
    ]
    for raw in forms:
        decoded = decode_message(raw)
        assert decoded.events == [] and len(decoded.rejected) == 1, raw
        assert "not both" in decoded.rejected[0].reason
    batch = json.dumps({"v": 1, "events": [item]}).replace('"events"', '"\\u0065vents"').encode()
    assert [e.event_id for e in decode_message(batch).events] == ["q:1"]


def test_a_json_message_behind_a_byte_order_mark_is_refused_saying_so():
    body = json.dumps(
        {
            "v": 1,
            "event_id": "m10:0",
            "call_id": "m10",
            "ts_ms": 1_760_000_000_000,
            "type": "call.started",
            "data": {"agent_id": "a"},
        }
    ).encode()
    (rejected,) = decode_message(b"\xef\xbb\xbf" + body).rejected
    assert rejected.reason == "a UTF-8 byte-order mark starts the message: send the JSON object alone"
    assert (rejected.event_id, rejected.call_id, rejected.raw[3:]) == ("m10:0", "m10", body)


@pytest.mark.parametrize(
    "wrap, says",
    [
        (lambda body: b"\x00\x00\x00\x00\x07" + body, "Confluent Schema Registry framing"),
        (
            lambda body: b"\x00\x00\x00\x00\x07" + msgspec.msgpack.encode(json.loads(body)),
            "Confluent Schema Registry framing",
        ),
        (lambda body: gzip.compress(body), "a gzip-compressed value: send the event itself"),
        (lambda body: body.decode().encode("utf-16"), "UTF-16 text: JSON must be UTF-8"),
        (lambda body: body.decode().encode("utf-16-le"), "UTF-16 text: JSON must be UTF-8"),
        (lambda body: b"[" + body + b"]", "a JSON array: send each event as a message of its own"),
        (lambda body: b"[\n  " + body + b"\n]", "a JSON array: send each event as a message of its own"),
    ],
)
def test_a_serializers_framing_or_another_encoding_is_named_not_read_as_a_stray_number(wrap, says):
    """Read as MessagePack, each was refused as "Expected `object`, got `int`"."""
    body = json.dumps(
        {
            "v": 1,
            "event_id": "m11:0",
            "call_id": "m11",
            "ts_ms": 1_760_000_000_000,
            "type": "call.started",
            "data": {"agent_id": "a"},
        }
    ).encode()
    raw = wrap(body)
    (rejected,) = decode_message(raw).rejected
    assert rejected.reason.startswith(f"undecodable: {says}") and rejected.raw == raw
    if says.startswith("Confluent"):  # (the document is there after the framing: its ids name the dead letter)
        assert (rejected.event_id, rejected.call_id) == ("m11:0", "m11")


def test_a_type_given_twice_is_refused_saying_so_not_as_an_unknown_type():
    body = json.dumps(
        {
            "v": 1,
            "event_id": "e",
            "call_id": "c",
            "ts_ms": 1_760_000_000_000,
            "type": "latency",
            "data": {"kind": "llm", "latency_ms": 5},
        }
    )
    (rejected,) = decode_message(b'{"type": "turn", ' + body[1:].encode()).rejected
    assert rejected.reason == "event 'e': `type` is given twice, as 'latency' and as another type before it"
    (unknown,) = decode_message(body.replace('"latency"', '"nope"', 1).encode()).rejected
    assert "unknown event type 'nope'; known types:" in unknown.reason
