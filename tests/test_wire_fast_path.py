"""Decoding takes a shortcut for well-formed messages; what it returns must be what the full,
item-by-item path returns, for good input and bad."""

from __future__ import annotations

import json
import random

import msgspec
import pytest

from models.wire import _codec_for, _decode_full, decode_message
from streams.bench.workload import Workload

_pack = msgspec.msgpack.encode

SAMPLE = Workload(calls=6, turns=6, seed=3).events  # every common event type


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
    ]
    return cases


def _encodings(name: str, doc: object) -> list[tuple[str, bytes]]:
    return [(f"{name} (msgpack)", _pack(doc)), (f"{name} (json)", json.dumps(doc).encode()),
            (f"{name} (json, leading space)", b"  " + json.dumps(doc).encode())]


CASES = [case for name, doc in _variants() for case in _encodings(name, doc)]
CASES += [("printable text", b"this is not an event"), ("truncated msgpack", _pack(SAMPLE[2])[:-3]),
          ("random bytes", bytes(random.Random(5).randrange(256) for _ in range(64))), ("a number", b"42")]


@pytest.mark.parametrize("raw", [raw for _, raw in CASES], ids=[name for name, _ in CASES])
def test_the_shortcut_decodes_exactly_as_the_full_path(raw):
    assert decode_message(raw) == _decode_full(_codec_for(raw), raw)
