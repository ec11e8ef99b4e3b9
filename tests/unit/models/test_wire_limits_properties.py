"""Whatever the decoder accepts can be stored: property-based (hypothesis) over events whose free-form
and numeric fields hold anything a producer could put on the wire (models/wire_limits.py)."""

from __future__ import annotations

import json

import msgpack
import msgspec
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from models.wire import decode_message, encode_event
from scorers.engine import CallEngine
from streams.worker.live_scorer import LiveScorer

T0 = 1_760_000_000_000
REASON_BOUND = 800

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.binary(max_size=4)
)
keys = (
    st.text(max_size=6) | st.integers(min_value=-(2**66), max_value=2**66) | st.floats(allow_nan=False) | st.booleans()
)
free_form = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4),
    max_leaves=16,
)


@st.composite
def deep(draw) -> object:
    value: object = draw(scalars)
    for _ in range(draw(st.integers(min_value=0, max_value=90))):
        value = [value] if draw(st.booleans()) else {"k": value}
    return value


anything = free_form | deep()
big_int = st.integers(min_value=-(2**70), max_value=2**70)


@st.composite
def hostile_event(draw) -> dict:
    kind = draw(
        st.sampled_from(
            [
                "rtvi",
                "tool.call",
                "call.started",
                "db.state",
                "call.ended",
                "judge.result",
                "watermark",
                "transcript.corrected",
                "latency",
            ]
        )
    )
    value = draw(anything)
    data = {
        "rtvi": lambda: {"message": {"type": "metrics", "data": value}},
        "tool.call": lambda: {"name": "lookup", "arguments": "{}", "result": value},
        "call.started": lambda: {
            "agent_id": "a",
            "variables": {"v": value},
            "scenario": {"min_agent_turns": draw(st.integers(min_value=0, max_value=2**70))},
        },
        "db.state": lambda: {"side": "agent", "db": {"t": value}},
        "call.ended": lambda: {"stop_reason": "[EXIT]", "trace_metrics": {"m": value}},
        "judge.result": lambda: {"qa": {"x": value}, "evaluation": {"score": value}},
        "watermark": lambda: {"partition": draw(big_int)},
        "transcript.corrected": lambda: {"turn_index": draw(st.integers(min_value=0, max_value=2**70)), "text": "t"},
        "latency": lambda: {"latency_ms": draw(st.floats(allow_nan=True, allow_infinity=True))},
    }[kind]()
    return {
        "v": 1,
        "type": kind,
        "event_id": draw(st.text(min_size=1, max_size=3000)),
        "call_id": "c",
        "ts_ms": T0 + draw(st.integers(min_value=1, max_value=10_000)),
        "data": data,
    }


def wire_bytes(document: dict, as_json: bool) -> bytes | None:
    """The document as a producer would send it (None: that encoding cannot hold it at all)."""
    try:
        if as_json:  # (JSON has no bytes: a producer would have sent them as text)
            return json.dumps(document, default=lambda value: value.hex()).encode()
        return msgpack.packb(document, strict_map_key=False)
    except (TypeError, ValueError, OverflowError):
        return None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(document=hostile_event(), as_json=st.booleans(), batched=st.booleans())
@example(
    document={
        "v": 1,
        "type": "rtvi",
        "event_id": "p",
        "call_id": "c",
        "ts_ms": T0 + 1,  # the probe's
        "data": {"message": {"type": "metrics", "data": {"ttfb": 100000000000000000000}}},
    },
    as_json=True,
    batched=True,
)
def test_what_the_decoder_accepts_the_journal_and_the_result_can_hold_and_the_rest_is_dead_lettered(
    document, as_json, batched
):
    if batched:
        document = {"v": 1, "call_id": "c", "events": [document, document]}
    raw = wire_bytes(document, as_json)
    if raw is None:
        return
    decoded = decode_message(raw)
    for accepted in decoded.events:
        journaled = encode_event(accepted)  # the journal's encoding
        assert decode_message(journaled).events == [accepted]
        msgspec.json.encode(accepted)  # a recorded JSON Lines log's
    for rejected in decoded.rejected:
        assert 0 < len(rejected.reason) <= REASON_BOUND

    # The worker's own path: never raises; what it refuses becomes dead letters that encode.
    live = LiveScorer(CallEngine())
    start = {"v": 1, "type": "call.started", "event_id": "s", "call_id": "c", "ts_ms": T0, "data": {"agent_id": "a"}}
    end = {
        "v": 1,
        "type": "call.ended",
        "event_id": "e",
        "call_id": "c",
        "ts_ms": T0 + 20_000,
        "data": {"stop_reason": "[X]"},
    }
    results, letters = [], []
    for offset, message in enumerate([json.dumps(start).encode(), raw, json.dumps(end).encode()]):
        out = live.handle(message, "callqa.events", 0, offset)
        results += out.results
        letters += out.dead_letters
        for segment in out.journal.values():
            for _, entry in segment:
                assert decode_message(entry, max_bytes=len(entry)).events
    assert len(letters) >= len(decoded.rejected)
    for letter in letters:
        assert len(letter.reason) <= REASON_BOUND
        msgspec.json.encode(letter.to_document())
    for result in results:
        msgspec.json.encode(result)
        msgspec.msgpack.encode(result)
