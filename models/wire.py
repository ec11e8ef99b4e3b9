"""Bytes on the wire ⇄ typed events.

A Kafka message holds one event or a batch of events, as MessagePack or (first byte `{`) JSON. Decoding
never raises on bad input: every event that cannot be accepted comes back as a `Rejected` with a
one-line reason that names the event_id when it can be read, the field and the problem, so the caller
can dead-letter it and go on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import msgspec

from models.deadletter import bounded_reason
from models.events import CONTRACT_VERSION, EVENT_TYPES, AnyEvent, Event, Watermark
from models.wire_limits import limit_problem

MAX_MESSAGE_BYTES = 1_048_576


class _RawBatch(msgspec.Struct, forbid_unknown_fields=False):
    events: list[msgspec.Raw]
    call_id: str | None = None
    v: int = CONTRACT_VERSION


class _TypedBatch(msgspec.Struct, forbid_unknown_fields=False):
    """A batch whose items all decode: the common case, read in one pass (see `_decode_common`)."""

    events: list[AnyEvent]
    call_id: str | None = None
    v: int = CONTRACT_VERSION
    type: Any = None  # set when the message might also read as a single event: left to the full path


class _IdProbe(msgspec.Struct, forbid_unknown_fields=False):
    event_id: Any = None
    call_id: Any = None


class _ItemHead(msgspec.Struct, forbid_unknown_fields=False, gc=False):
    call_id: Any = None
    type: Any = None


class _RecordHead(msgspec.Struct, forbid_unknown_fields=False, gc=False):
    """What `record_call` reads of a message: its envelope's ids and type, and its items' (if a batch)."""

    call_id: Any = None
    type: Any = None
    events: list[_ItemHead] | None = None


@dataclass(frozen=True, slots=True)
class Rejected:
    """Input that could not be accepted, kept whole for the dead-letter topic."""

    reason: str
    raw: bytes
    event_id: str | None = None
    call_id: str | None = None
    batch_index: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "reason", bounded_reason(self.reason))  # (frozen: set once, here)


class Decoded(msgspec.Struct, gc=False):  # (one per message: see scorers.engine.Processed)
    events: list[AnyEvent]
    rejected: list[Rejected]
    is_batch: bool = False
    # Each event's index among the batch's items, when items before it were rejected (None: event i
    # is item i), so that what is refused later still names its place in the original message.
    item_indexes: list[int] | None = None

    def batch_index_of(self, event_index: int) -> int | None:
        """The batch item that `events[event_index]` came from (None for a message that is no batch)."""
        if not self.is_batch:
            return None
        return event_index if self.item_indexes is None else self.item_indexes[event_index]


class _Codec:
    def __init__(self, module: Any, may_hold_events: Callable[[bytes], bool]) -> None:
        # Whether a message may have a batch's "events" key (False: it certainly has none, so it is no
        # batch), asked of every message: one search of its bytes for most of them.
        self.may_hold_events = may_hold_events
        self.event: msgspec.json.Decoder[AnyEvent] | msgspec.msgpack.Decoder[AnyEvent] = module.Decoder(AnyEvent)
        self.batch = module.Decoder(_RawBatch)
        self.typed_batch = module.Decoder(_TypedBatch)
        self.probe: msgspec.json.Decoder[_IdProbe] | msgspec.msgpack.Decoder[_IdProbe] = module.Decoder(_IdProbe)
        self.head = module.Decoder(_RecordHead)


# The key as MessagePack may write it: a fixstr mostly, but a str8, str16 or str32 reads the same
# (and a message holding it in none of these forms cannot be a batch).
_MSGPACK_EVENTS_KEYS = (b"\xa6events", b"\xd9\x06events", b"\xda\x00\x06events", b"\xdb\x00\x00\x00\x06events")


def _msgpack_may_hold_events(raw: bytes) -> bool:
    return b"events" in raw and any(key in raw for key in _MSGPACK_EVENTS_KEYS)


# The key as JSON may write it: plainly, or with any of its letters as a \u escape (hex in any case).
_JSON_ESCAPED_EVENTS = re.compile(
    rb'"(?:e|\\u0065)(?:v|\\u0076)(?:e|\\u0065)(?:n|\\u006e)(?:t|\\u0074)(?:s|\\u0073)"', re.IGNORECASE
)


def _json_may_hold_events(raw: bytes) -> bool:
    return b'"events"' in raw or (b"\\u" in raw and _JSON_ESCAPED_EVENTS.search(raw) is not None)


_MSGPACK = _Codec(msgspec.msgpack, _msgpack_may_hold_events)
_decode_msgpack_event = _MSGPACK.event.decode
_JSON = _Codec(msgspec.json, _json_may_hold_events)
_encode_msgpack = msgspec.msgpack.Encoder().encode
_encode_json = msgspec.json.Encoder().encode


_OPEN_BRACE = ord("{")
_ASCII_WHITESPACE = frozenset(b" \t\n\r\x0b\x0c")  # what bytes.lstrip() strips
# A MessagePack fixmap (a map of up to 15 keys: every envelope) starts with 0x80-0x8f, which never
# starts UTF-8 text, so such a message cannot be the printable text `_looks_like_text` guards against.
_FIXMAP_FIRST, _FIXMAP_LAST = 0x80, 0x8F


def _codec_for(raw: bytes) -> _Codec:
    # JSON objects start with "{" (possibly after whitespace); a MessagePack map never starts with it.
    first = raw[0]
    if first == _OPEN_BRACE:
        return _JSON
    if first in _ASCII_WHITESPACE:
        return _JSON if raw.lstrip()[:1] == b"{" else _MSGPACK
    return _MSGPACK


def _reason(exc: Exception) -> str:
    text = str(exc).replace("\n", " ")
    return text.replace("`$.", "`")  # "... - at `data.role`" reads better than "`$.data.role`"


def _readable_ids(codec: _Codec, raw: bytes) -> tuple[str | None, str | None]:
    """The event_id and call_id of a message that is refused, where they can be read as text."""
    probe = _probe(codec, raw)
    return (
        probe.event_id if isinstance(probe.event_id, str) else None,
        probe.call_id if isinstance(probe.call_id, str) else None,
    )


def _probe(codec: _Codec, raw: bytes) -> _IdProbe:
    try:
        return codec.probe.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        pass
    if codec is _JSON:  # Python's reader takes what msgspec refuses as text (a lone surrogate escape)
        try:
            document = json.loads(raw)
        except (ValueError, RecursionError):
            return _IdProbe()
        if isinstance(document, dict):
            return _IdProbe(document.get("event_id"), document.get("call_id"))
    return _IdProbe()


# A \uD800-\uDBFF escape not followed by a \uDC00-\uDFFF one: half of a UTF-16 pair, which no text
# holds (Python's json.dumps writes one for a lone surrogate); msgspec calls it "truncated input".
_LONE_HIGH_SURROGATE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})")


def _undecodable(codec: _Codec, raw: bytes, exc: msgspec.DecodeError) -> str:
    reason = _reason(exc)
    if codec is _JSON and reason == "Input data was truncated":
        lone = _LONE_HIGH_SURROGATE.search(raw)
        if lone is not None:
            reason = (
                f"a lone UTF-16 surrogate escape ({lone.group().decode()} at byte {lone.start()}), which is no text"
            )
    return f"undecodable: {reason}"


def _reject(codec: _Codec, raw: bytes, problem: str, batch_index: int | None = None) -> Rejected:
    event_id, call_id = _readable_ids(codec, raw)
    subject = f"event {event_id!r}" if event_id else "event without a readable event_id"
    if batch_index is not None:
        subject += f" (batch item {batch_index})"
    return Rejected(f"{subject}: {problem}", raw, event_id, call_id, batch_index)


def _looks_like_text(raw: bytes) -> bool:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return text.isprintable()


def _decode_one(codec: _Codec, raw: bytes, batch_index: int | None = None) -> AnyEvent | Rejected:
    if codec is _MSGPACK and _looks_like_text(raw):
        # Printable text that is not a JSON object: MessagePack would read it as a stray number.
        return _reject(
            codec, raw, f"undecodable: neither a JSON object nor a MessagePack map ({raw[:40]!r})", batch_index
        )
    try:
        event = codec.event.decode(raw)
    except msgspec.ValidationError as exc:
        reason = _reason(exc)
        if reason.endswith("- at `v`"):
            problem = reason.split(" - at")[0]
            if problem.startswith("Invalid enum value "):
                reason = (
                    f"unsupported contract version v={problem.removeprefix('Invalid enum value ')} (callqa "
                    f"reads version {CONTRACT_VERSION})"
                )
            else:
                reason = f"`v` must be the contract version, {CONTRACT_VERSION} ({problem})"
        elif reason.startswith("Invalid value") and reason.endswith("- at `type`"):
            value = reason[len("Invalid value ") : -len(" - at `type`")]
            if value.strip("'") in EVENT_TYPES:  # (a known type refused: the message gives `type` twice)
                reason = f"`type` is given twice, as {value} and as another type before it"
            else:
                reason = f"unknown event type {value}; known types: {', '.join(EVENT_TYPES)}"
        return _reject(codec, raw, reason, batch_index)
    except msgspec.DecodeError as exc:
        return _reject(codec, raw, _undecodable(codec, raw, exc), batch_index)
    except RecursionError:
        return _reject(codec, raw, "undecodable: nested too deeply", batch_index)
    if not event.event_id or not event.call_id:
        return _reject(codec, raw, "event_id and call_id must not be empty", batch_index)
    too_large = limit_problem(event)  # (what the journal or a result could not hold: models/wire_limits.py)
    if too_large is not None:
        return _reject(codec, raw, too_large, batch_index)
    return event


def record_call(raw: bytes) -> str | None:
    """The one call that every event of the message names, read without decoding the events (a sixth
    of the cost of `decode_message`), or None where it cannot be told so cheaply: a watermark (which
    names its partition itself), a batch of several calls, a message whose ids and type cannot be
    read (no map, an id that is no string). Where it is a call, whatever `decode_message` makes of
    the message — its events, or its refusal for a bad field — is that call's: a replay job that does
    not own the call's partition may skip the message whole."""
    if not raw:
        return None
    try:
        head = _codec_for(raw).head.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    call_id, items = head.call_id, head.events
    if items is None:
        single = isinstance(head.type, str) and head.type != _WATERMARK
        return call_id if single and isinstance(call_id, str) else None
    if head.type is not None:
        return None  # an event and a batch at once: refused whole, by whichever job reports such things
    for item in items:
        if item.type == _WATERMARK or not isinstance(item.call_id, str):
            return None
        if call_id is None:
            call_id = item.call_id  # (a batch of no stated call: all its items must name the first's)
        elif item.call_id != call_id:
            return None
    return call_id if isinstance(call_id, str) else None


_WATERMARK = Watermark.__struct_config__.tag


def decode_message(raw: bytes, max_bytes: int = MAX_MESSAGE_BYTES) -> Decoded:
    """Decode one Kafka message value into its accepted events and its rejected parts."""
    # Nearly every message is one MessagePack event within the limit: `_decode_common`'s first
    # reading, taken here without its calls. Anything else, or a message that does not decode so,
    # goes the whole way below (which decides it exactly as before).
    if raw and _FIXMAP_FIRST <= raw[0] <= _FIXMAP_LAST and len(raw) <= max_bytes and b"events" not in raw:
        try:
            event = _decode_msgpack_event(raw)
        except _NOT_COMMON:
            pass
        else:
            if event.event_id and event.call_id and limit_problem(event) is None:
                return Decoded([event], [])
    if raw is None or len(raw) == 0:
        return Decoded([], [Rejected("empty message", raw or b"")])
    if len(raw) > max_bytes:
        event_id, call_id = _readable_ids(_codec_for(raw), raw)
        return Decoded(
            [], [Rejected(f"message of {len(raw)} bytes exceeds the {max_bytes}-byte limit", raw, event_id, call_id)]
        )
    if raw[:3] == UTF8_BOM:  # (read as MessagePack it would be refused as "got int": say what it is)
        event_id, call_id = _readable_ids(_JSON, raw[3:])
        return Decoded(
            [],
            [
                Rejected(
                    "a UTF-8 byte-order mark starts the message: send the JSON object alone", raw, event_id, call_id
                )
            ],
        )
    codec = _codec_for(raw)
    if codec is _JSON or _FIXMAP_FIRST <= raw[0] <= _FIXMAP_LAST:
        common = _decode_common(codec, raw)
        if common is not None:
            return common
    return _decode_full(codec, raw)


# A serializer's framing or an encoding that is not the contract's, each of which would otherwise be
# read as MessagePack and refused as "Expected `object`, got `int`": what it is, and what to send.
_SCHEMA_REGISTRY_MAGIC = 0  # Confluent's wire format: a 0 byte and a 4-byte schema id before the payload


def _wrapping(raw: bytes) -> str | None:
    if raw[:2] == GZIP_MAGIC:
        return (
            "a gzip-compressed value: send the event itself (a producer's compression.type compresses "
            "messages on the wire, and callqa reads gzip, snappy, lz4 and zstd there)"
        )
    if (
        raw[0] == _SCHEMA_REGISTRY_MAGIC
        and len(raw) > 5
        and (raw[5:6] in (b"{", b"[") or _FIXMAP_FIRST <= raw[5] <= _FIXMAP_LAST)
    ):
        return (
            "Confluent Schema Registry framing (a 0 byte and a 4-byte schema id before the document): "
            "send the JSON object or MessagePack map alone, with a plain serializer"
        )
    if raw[:2] in UTF16_BOMS or (len(raw) > 3 and raw[1] == raw[3] == 0 and 32 <= raw[0] < 127 and 32 <= raw[2] < 127):
        return "UTF-16 text: JSON must be UTF-8"
    if raw.lstrip(b" \t\r\n")[:1] == b"[":
        return (
            'a JSON array: send each event as a message of its own, or several in one batch ({"v": 1, "events": [...]})'
        )
    return None


def _decode_full(codec: _Codec, raw: bytes) -> Decoded:
    """Item by item, with a reason for everything that cannot be accepted."""
    decoded = _decode_items(codec, raw)
    if not decoded.events:  # (only then: no cost to a message that decodes)
        wrapped = _wrapping(raw)
        if wrapped is not None:
            framed = raw[5:] if raw[0] == _SCHEMA_REGISTRY_MAGIC else b""  # (the document, after the framing)
            event_id, call_id = _readable_ids(_codec_for(framed), framed) if framed else (None, None)
            return Decoded([], [Rejected(f"undecodable: {wrapped}", raw, event_id, call_id)])
    return decoded


# A batch's bad items are dead-lettered one by one up to this many, the rest in one dead letter holding
# the message: a megabyte of four-byte items would otherwise be some 260,000 dead letters, 90 MB.
MAX_ITEMS_DEAD_LETTERED = 1_000


def _decode_items(codec: _Codec, raw: bytes) -> Decoded:
    single = _decode_one(codec, raw)
    if isinstance(single, Event):
        if codec.may_hold_events(raw) and _holds_a_batch(codec, raw):
            # Read as the one event, its batch's events would vanish without a word.
            return Decoded(
                [],
                [
                    _reject(
                        codec, raw, "a record is one event (it has a `type`) or a batch of events (`events`), not both"
                    )
                ],
            )
        return Decoded([single], [])
    try:
        batch = codec.batch.decode(raw)
    except msgspec.ValidationError as exc:
        if single.reason.endswith("missing required field `type`") and codec.may_hold_events(raw):
            # No event (no type) but an "events" key: a batch gone wrong, which is what to say.
            return Decoded([], [Rejected(f"batch: {_reason(exc)}", raw)])
        return Decoded([], [single])
    except (msgspec.DecodeError, RecursionError):
        return Decoded([], [single])  # not a batch either: report it as the single event it claimed to be
    if batch.v != CONTRACT_VERSION:
        return Decoded([], [Rejected(f"batch: unsupported contract version v={batch.v}", raw, call_id=batch.call_id)])
    if not batch.events:  # (harmless, but a producer sending it has lost what it meant to send)
        return Decoded([], [Rejected("batch: it holds no events", raw, call_id=batch.call_id)])
    out = Decoded([], [], is_batch=True)
    accepted: list[int] = []
    refused_beyond = 0
    for index, item in enumerate(batch.events):
        decoded = _decode_one(codec, bytes(item), index)
        if isinstance(decoded, Event) and batch.call_id is not None and decoded.call_id != batch.call_id:
            decoded = _reject(
                codec, bytes(item), f"call_id {decoded.call_id!r} differs from its batch's {batch.call_id!r}", index
            )
        if isinstance(decoded, Rejected):
            if len(out.rejected) < MAX_ITEMS_DEAD_LETTERED:
                out.rejected.append(decoded)
            else:
                refused_beyond += 1
        else:
            out.events.append(decoded)
            accepted.append(index)
    if refused_beyond:
        out.rejected.append(
            Rejected(
                f"batch: {refused_beyond} more of its {len(batch.events)} items were refused as well, not "
                f"dead-lettered one by one past the first {MAX_ITEMS_DEAD_LETTERED}, which name their reasons",
                raw,
                call_id=batch.call_id,
            )
        )
    if out.rejected:
        out.item_indexes = accepted
    return out


# What sends a message from the fast path to the full one (a message nested deeper than the decoder
# goes raises RecursionError, which the full path turns into a rejection like any other).
_NOT_COMMON = (msgspec.ValidationError, msgspec.DecodeError, RecursionError)


def _decode_common(codec: _Codec, raw: bytes) -> Decoded | None:
    """A well-formed single event, or a batch whose every item is well-formed, decoded with as little
    work as possible (a batch in one pass instead of item by item). None for anything else: the full
    path below then gives exactly the reasons it always gives. Whatever this returns, the full path
    returns too."""
    # (Most messages are MessagePack events without the word: told apart inline, with no call.)
    if (codec is _MSGPACK and b"events" not in raw) or not codec.may_hold_events(raw):
        # Cannot be a batch: only the single-event reading can succeed.
        try:
            event = codec.event.decode(raw)
        except _NOT_COMMON:
            return None
        return Decoded([event], []) if event.event_id and event.call_id and limit_problem(event) is None else None
    # Probably a batch: try that first (a failed decode costs an exception); anything else (a single
    # event whose text holds the key, a batch with a bad item, a record that is both) the full path reads.
    try:
        batch = codec.typed_batch.decode(raw)
    except _NOT_COMMON:
        return None
    if batch.type is not None or batch.v != CONTRACT_VERSION or not batch.events:
        return None  # could also read as one event (it has a type), or is refused: the full path decides
    call_id = batch.call_id
    for event in batch.events:
        if (
            not event.event_id
            or not event.call_id
            or (call_id is not None and event.call_id != call_id)
            or limit_problem(event) is not None
        ):
            return None
    return Decoded(batch.events, [], is_batch=True)


def _holds_a_batch(codec: _Codec, raw: bytes) -> bool:
    """Whether the message has a top-level `events` list (not just the word in its text)."""
    try:
        codec.batch.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
        return False
    return True


def encode_event(event: Event) -> bytes:
    return _encode_msgpack(event)


def is_json_message(raw: bytes) -> bool:
    """Whether a message is read as JSON (else as MessagePack)."""
    return bool(raw) and _codec_for(raw) is _JSON


def batch_item(message: bytes, index: int) -> bytes | None:
    """The bytes of item `index` of a batch message, as they are in it (None: no such item). A message
    refused item by item asks for each: it is read once (the last message is remembered)."""
    items = _batch_items(message)
    return items[index] if items is not None and 0 <= index < len(items) else None


@lru_cache(maxsize=1)
def _batch_items(message: bytes) -> tuple[bytes, ...] | None:
    try:
        return tuple(bytes(item) for item in _codec_for(message).batch.decode(message).events)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None


def encode_batch(events: list[Event], call_id: str | None) -> bytes:
    """One message holding several events: of one call (call_id given) or of several (call_id None)."""
    body: dict[str, Any] = {"v": CONTRACT_VERSION, "events": events}
    if call_id is not None:
        body["call_id"] = call_id
    return _encode_msgpack(body)


# ------------------------------------------------------------------------------------------ log records

MSGPACK_LOG, JSONL_LOG = "msgpack", "jsonl"


def encode_record(event: Event, log_format: str) -> bytes:
    """`event` as one record of a log in `log_format` (a JSON Lines record ends its line)."""
    return _encode_msgpack(event) if log_format == MSGPACK_LOG else _encode_json(event) + b"\n"


UTF8_BOM = b"\xef\xbb\xbf"
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
GZIP_MAGIC = b"\x1f\x8b"
