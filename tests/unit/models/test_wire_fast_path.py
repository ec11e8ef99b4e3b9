"""Decoding takes a shortcut for well-formed messages; what it returns must be what the full,
item-by-item path returns, for good input and bad."""

from __future__ import annotations

import json
import random

import msgspec
import pytest

from models.events import Watermark
from models.wire import _codec_for, _decode_full, decode_message, record_call
from streams.bench.workload import Workload

_pack = msgspec.msgpack.encode

SAMPLE = Workload(calls=6, turns=6, seed=3).events  # every common event type
WATERMARK = {
    "v": 1,
    "event_id": "wm-1",
    "call_id": "__watermark__",
    "ts_ms": SAMPLE[0]["ts_ms"],
    "type": "watermark",
    "data": {"partition": 3},
}


def _variants() -> list[tuple[str, dict | list | str]]:
    one = SAMPLE[1]
    call = one["call_id"]
    same_call = [e for e in SAMPLE if e["call_id"] == call][:5]
    other = next(e for e in SAMPLE if e["call_id"] != call)
    bad_role = {**one, "type": "turn", "data": {"role": "bot", "text": "x"}}
    cases: list[tuple[str, dict | list | str]] = [(e["type"], e) for e in SAMPLE[:40]]
    cases += [
        ("batch of one call", {"v": 1, "call_id": call, "events": same_call}),
        ("batch across calls", {"v": 1, "events": same_call + [other]}),
        ("empty batch", {"v": 1, "events": []}),
        ("batch with an invalid item", {"v": 1, "call_id": call, "events": same_call[:2] + [bad_role]}),
        ("batch with another call's event", {"v": 1, "call_id": call, "events": same_call[:2] + [other]}),
        ("batch item without event_id", {"v": 1, "events": [{**one, "event_id": ""}]}),
        ("batch item of contract v2", {"v": 1, "events": [{**one, "v": 2}]}),
        ("batch of contract v2", {"v": 2, "events": same_call}),
        ("batch item that is text", {"v": 1, "events": ["hello there"]}),
        ("map with type and events", {**one, "events": same_call}),
        ("event without call_id", {**one, "call_id": ""}),
        ("unknown type", {**one, "type": "no.such"}),
        ("invalid field", bad_role),
        ("not a map", [1, 2, 3]),
        ("watermark", WATERMARK),
        (
            "batch with a watermark",
            {"v": 1, "call_id": call, "events": same_call[:2] + [{**WATERMARK, "call_id": call}]},
        ),
    ]
    return cases


def _encodings(name: str, doc: object) -> list[tuple[str, bytes]]:
    return [
        (f"{name} (msgpack)", _pack(doc)),
        (f"{name} (json)", json.dumps(doc).encode()),
        (f"{name} (json, leading space)", b"  " + json.dumps(doc).encode()),
    ]


CASES = [case for name, doc in _variants() for case in _encodings(name, doc)]
_ONE = json.dumps(SAMPLE[1])[1:]  # (its members, to write the duplicated and escaped keys below)
CASES += [
    ("duplicated call_id (json)", b'{"call_id": "someone-else", ' + _ONE.encode()),
    ("duplicated type (json)", b'{"type": "watermark", ' + _ONE.encode()),
    ("escaped call_id key (json)", b'{"c\\u0061ll_id": "someone-else", ' + _ONE.encode()),
    (
        "escaped type value (json)",
        json.dumps({**SAMPLE[1], "type": "watermar\u006b"}, ensure_ascii=True)
        .encode()
        .replace(b'"watermark"', b'"watermar\\u006b"'),
    ),
    (
        "duplicated call_id (msgpack)",
        bytes([0x81 + len(SAMPLE[1])]) + b"\xa7call_id\xacsomeone-else" + _pack(SAMPLE[1])[1:],
    ),
]
CASES += [
    ("printable text", b"this is not an event"),
    ("truncated msgpack", _pack(SAMPLE[2])[:-3]),
    ("random bytes", bytes(random.Random(5).randrange(256) for _ in range(64))),
    ("a number", b"42"),
]


@pytest.mark.parametrize("raw", [raw for _, raw in CASES], ids=[name for name, _ in CASES])
def test_the_shortcut_decodes_exactly_as_the_full_path(raw):
    assert decode_message(raw) == _decode_full(_codec_for(raw), raw)


@pytest.mark.parametrize("raw", [raw for _, raw in CASES], ids=[name for name, _ in CASES])
def test_the_call_read_off_a_message_is_the_call_of_every_event_it_decodes_to(raw):
    # A replay job skips a message whose call it does not own: nothing in it may belong to another
    # partition. (A watermark names its partition itself, so a message holding one names no call.)
    call_id = record_call(raw)
    if call_id is not None:
        decoded = decode_message(raw)
        assert all(event.call_id == call_id and not isinstance(event, Watermark) for event in decoded.events)


def test_a_message_of_one_call_names_it_and_any_other_names_none():
    one = SAMPLE[1]
    same_call = [e for e in SAMPLE if e["call_id"] == one["call_id"]][:5]
    named = {name: record_call(raw) for name, raw in CASES}
    for encoding in ("msgpack", "json", "json, leading space"):
        assert named[f"batch of one call ({encoding})"] == one["call_id"]
        assert named[f"invalid field ({encoding})"] == one["call_id"]  # refused by the job owning the call
        for other in (
            "batch across calls",
            "empty batch",
            "map with type and events",
            "watermark",
            "batch with a watermark",
            "not a map",
            "batch item that is text",
        ):
            assert named[f"{other} ({encoding})"] is None, other
    assert record_call(_pack(one)) == record_call(json.dumps(one).encode()) == one["call_id"]
    assert record_call(_pack({"v": 1, "events": same_call})) == one["call_id"]  # all items of one call
    # An empty id is an id, not "no id": items of "" and of another call are two calls.
    assert record_call(_pack({"v": 1, "events": [{**one, "call_id": ""}, one]})) is None
    assert record_call(_pack({"v": 1, "call_id": "", "events": [one]})) is None
    assert record_call(b"") is None and named["printable text"] is None and named["truncated msgpack"] is None
