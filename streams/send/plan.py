"""What `callqa send` publishes for a recorded log, decided without Kafka (streams/send/sender.py sends it).

Each partition's events go out as batch messages (docs/concepts/batches.md#two-shapes-of-batch) in the order of the log:
a batch holds the next events of one partition, of whichever calls (`{"v": 1, "events": […]}`, key "batch", sent to
the partition; a batch that holds one call's events only is keyed by the call, with its `call_id`).
The worker sweeps a batch as its events sent one by one, so a partition that receives the log's
events in the log's order scores them exactly as replay does, its inactivity sweeps included. (Batches
per call would reorder the events of a partition's calls among each other: a call silent for longer
than its timeout and the lateness could then be swept live and kept alive by replay, or the reverse.)
A partition's batch goes out when it holds `batch_size` events, when one more event would make the
message larger than `max_message_bytes` (the worker refuses larger messages), or when the log's event
time has moved `max_span_ms` past the batch's first event (a live feed's calls wait no longer).

A record the log holds as a batch goes as one message, after what its partition holds: as it is when
all its events go to one partition, else as one message per partition. The worker reads it as replay
does, its refused items with their places in it. What cannot be read is sent as it is (a bad item of
a batch of several partitions alone, with its own bytes), after whatever its call's partition has
held, so that it reaches the dead-letter topic with its original bytes and in its place. A record
larger than the worker accepts (`max_message_bytes`) is not sent at all (the producer may not even be
able to): it is dead-lettered here, with the reason the worker and replay give it, its partition and
offset -1 (never on the topic). An item refused only for what its batch says (another call_id than
the batch's) would be accepted alone: it goes as an item, in a batch of its own under its batch's
call_id, so that the worker refuses it as replay does (so does an item that is itself a batch). A
recorded watermark goes to the partition it names, after every event held for that partition (it
promises that nothing older follows there).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, cast

import msgspec

from models.events import (
    CONTRACT_VERSION,
    RESCORE_CLASSES,
    WATERMARK_CALL_ID,
    AnyEvent,
    JudgeResult,
    Watermark,
)
from models.wire import MAX_MESSAGE_BYTES, Decoded, Rejected, decode_message
from scorers.watermarks import DEFAULT_MAX_LEAP_MS, LatestTwo, later, watermark_of_times
from streams.partitioning import partition_for, partition_of

_msgpack = msgspec.msgpack.Encoder()
_msgpack_decode = msgspec.msgpack.decode
_json_decode = msgspec.json.decode
MALFORMED_KEY = "malformed"
_SEVERAL_CALLS_KEY = b"batch"  # (sent to its partition explicitly: the key alone would choose one)
# A batch message around its events: {"v": 1, "call_id": …, "events": [array header]}.
_BATCH_OVERHEAD_BYTES = 64


@dataclass(frozen=True, slots=True)
class Outgoing:
    key: bytes
    value: bytes
    partition: int | None = None  # None: the key chooses (Kafka's default partitioner)
    refused: Rejected | None = None  # not to be sent: dead-lettered instead, for this reason


@dataclass
class SendReport:
    records: int = 0
    messages: int = 0
    events: int = 0
    passed_through: int = 0  # records or batch items sent as they were (they do not decode)
    refused: int = 0  # records too large for the worker, dead-lettered instead of sent
    # Batch records taken apart with more bad items than the worker dead-letters one by one: the rest
    # are dead-lettered here in one letter, as the worker and replay do for the record whole.
    rest_refused: int = 0
    # Per partition, the two calls that reached the latest event times (time, call_id), and the
    # latest watermark event's time: what `SendPlan.end_ts_ms` is read from.
    latest_calls: dict[int, LatestTwo] = field(default_factory=dict)
    latest_watermark_ms: int | None = None
    # The log's calls by partition: what its end of input ends (and no other producer's calls).
    calls: dict[int, set[str]] = field(default_factory=dict)


@dataclass
class _Batch:
    first_ts_ms: int
    events: list[msgspec.Raw] = field(default_factory=list)
    calls: set[str] = field(default_factory=set)
    size: int = 0


@dataclass
class SendPlan:
    partitions: int
    batch_size: int = 50
    max_span_ms: int = 10_000
    max_message_bytes: int = MAX_MESSAGE_BYTES
    max_leap_ms: int = DEFAULT_MAX_LEAP_MS
    report: SendReport = field(default_factory=SendReport)
    _held: dict[int, _Batch] = field(default_factory=dict)  # by partition

    @property
    def end_ts_ms(self) -> int | None:
        """The log's event time at its end, which the end-of-input watermarks carry to every
        partition. Each partition's time is its latest call's, unless that call alone leapt past the
        others of the partition (scorers/watermarks.py: a worker corroborates within a partition);
        the log's is the latest partition's, unless that partition alone leapt past the others (one
        whose only call is fast), wherever in the log the fast calls came. The highest `ts_ms` would
        carry one producer's fast clock to every partition, and the next log's calls would be
        refused as too late."""
        report = self.report
        # (A partition is listed once a call of it was noted: its watermark is a time.)
        partition_times = [
            (cast(int, watermark_of_times(latest.times(), self.max_leap_ms)[0]), str(partition))
            for partition, latest in report.latest_calls.items()
        ]
        calls_ms, _ = watermark_of_times(partition_times, self.max_leap_ms)  # (partitions as the sources)
        return later(calls_ms, self._watermark_ms(calls_ms))

    def _watermark_ms(self, calls_ms: int | None) -> int | None:
        """The log's latest watermark event's time, unless it leaps past its calls' time by more than
        the limit: a watermark stamped by a broken clock (the year 9999) would otherwise go to every
        partition with the end of input, and every call after it would be refused as too late."""
        watermark = self.report.latest_watermark_ms
        if watermark is None or calls_ms is None or self.max_leap_ms <= 0 or watermark <= calls_ms + self.max_leap_ms:
            return watermark
        return None

    def add(self, raw: bytes) -> list[Outgoing]:
        """The messages to send now for one record of the log, in order."""
        self.report.records += 1
        decoded = decode_message(raw, self.max_message_bytes)
        out: list[Outgoing] = []
        if not decoded.is_batch:
            if len(raw) > self.max_message_bytes:
                self._refuse(raw, decoded.rejected[0], out)
            elif decoded.rejected:
                self._pass_through(raw, decoded.rejected[0].call_id, out)
            else:
                self._event(decoded.events[0], raw, out)
            return out
        batch = _batch_items(raw)
        if batch is None:  # a batch that cannot be taken apart: as it is, after its call's events
            call_ids = {e.call_id for e in decoded.events} | {r.call_id for r in decoded.rejected if r.call_id}
            self._pass_through(raw, call_ids.pop() if len(call_ids) == 1 else None, out)
            self.report.events += len(decoded.events)
            return out
        accepted = {decoded.batch_index_of(i): event for i, event in enumerate(decoded.events)}
        rejected = {r.batch_index: r for r in decoded.rejected}
        # (Past MAX_ITEMS_DEAD_LETTERED bad items, the rest have one rejection for them all, of no item.)
        rest = rejected.pop(None, None)
        partitions = {partition_of(event, self.partitions) for event in decoded.events}
        if len(partitions) == 1:
            self._whole(raw, decoded, partitions.pop(), out)
            return out
        if partitions:
            self._several_partitions(raw, batch, accepted, rejected, rest, out)
            return out
        for index, item in enumerate(batch.events):
            if index in accepted:
                self._event(accepted[index], item, out)
            elif index in rejected:
                self._refused_item(raw, batch, item, rejected[index], out)
        if rest is not None:
            self._refuse_the_rest(raw, rest, out)
        return out

    def finish(self) -> list[Outgoing]:
        """Everything still held."""
        out: list[Outgoing] = []
        for partition in sorted(self._held):
            self._flush(partition, out)
        return out

    # ------------------------------------------------------------------------------------------

    def _event(self, event: AnyEvent, raw: bytes, out: list[Outgoing]) -> None:
        ts = event.ts_ms
        if isinstance(event, Watermark):
            partition = partition_of(event, self.partitions)
            self._count([event], partition)
            self._flush_partition(partition, out)
            self._send(out, Outgoing(WATERMARK_CALL_ID.encode(), raw, partition))
            return
        call_id = event.call_id
        partition = partition_for(call_id, self.partitions)
        self._count([event], partition)
        encoded = _repacked(raw)
        if encoded is None:
            self._pass_through(raw, call_id, out, readable=True)
            return
        if len(encoded) + len(call_id.encode()) + _BATCH_OVERHEAD_BYTES > self.max_message_bytes:
            # Grown past what the worker accepts in MessagePack (a float takes 9 bytes, "0.5" in JSON 3),
            # though the record itself is within it: sent as it was, which the worker accepts as replay does.
            self._pass_through(raw, call_id, out, readable=True)
            return
        batch = self._held.get(partition)
        if (
            batch is not None
            and batch.size + len(encoded) + len(call_id.encode()) + _BATCH_OVERHEAD_BYTES > self.max_message_bytes
        ):
            self._flush(partition, out)
            batch = None
        if batch is None:
            batch = self._held[partition] = _Batch(ts)
        batch.events.append(msgspec.Raw(encoded))
        batch.calls.add(call_id)
        batch.size += len(encoded)
        if len(batch.events) >= self.batch_size:
            self._flush(partition, out)
        self._flush_stale(ts, out)

    def _flush_stale(self, ts: int, out: list[Outgoing]) -> None:
        for stale in [p for p, b in self._held.items() if ts - b.first_ts_ms >= self.max_span_ms]:
            self._flush(stale, out)

    def _refused_item(
        self, raw: bytes, batch: _BatchRecord, item: bytes, rejection: Rejected, out: list[Outgoing]
    ) -> None:
        if decode_message(item).events:
            # Refused as an item (another call's than the batch's; a batch, which an item may not be)
            # but accepted alone, in whole or in part: sent as an item, in a batch of its own, so that
            # the worker refuses it as replay does. In the record's own encoding, its bytes as they are.
            item = _batch_body(
                [msgspec.Raw(item)], batch.call_id, msgspec.json.encode if _is_json(raw) else _msgpack.encode
            )
        self._pass_through(item, rejection.call_id, out)

    def _whole(self, raw: bytes, decoded: Decoded, partition: int, out: list[Outgoing]) -> None:
        """A batch record whose events all go to one partition: sent as it is, after what the
        partition holds, so that the worker reads it as replay does, its refused items with their
        places in it."""
        events = decoded.events
        calls = {event.call_id for event in events} | {r.call_id for r in decoded.rejected if r.call_id}
        self.report.passed_through += len(decoded.rejected)
        one_call = len(calls) == 1 and not any(isinstance(event, Watermark) for event in events)
        self._one_message(partition, events, events[0].call_id.encode() if one_call else _SEVERAL_CALLS_KEY, raw, out)

    def _several_partitions(
        self,
        raw: bytes,
        batch: _BatchRecord,
        accepted: dict[int | None, AnyEvent],
        rejected: dict[int | None, Rejected],
        rest: Rejected | None,
        out: list[Outgoing],
    ) -> None:
        """A record of events of several partitions: each partition's share goes as one message of
        its own, after what the partition holds. Refused items go first, as both the worker and
        replay report a record's refusals before its events."""
        for index, item in enumerate(batch.events):
            if index in rejected:
                self._refused_item(raw, batch, item, rejected[index], out)
        if rest is not None:
            self._refuse_the_rest(raw, rest, out)
        shares: dict[int, list[tuple[AnyEvent, bytes]]] = {}
        for index, item in enumerate(batch.events):
            if index in accepted:
                event = accepted[index]
                shares.setdefault(partition_of(event, self.partitions), []).append((event, item))
        for partition, share in shares.items():
            self._share(partition, share, out)

    def _share(self, partition: int, share: list[tuple[AnyEvent, bytes]], out: list[Outgoing]) -> None:
        packed = [_repacked(item) for _, item in share]
        body = None if None in packed else _batch_body([msgspec.Raw(p) for p in packed if p is not None])
        if body is None or len(body) > self.max_message_bytes:
            for event, item in share:  # (not sendable as one message: event by event, as any record's)
                self._event(event, item, out)
            return
        self._one_message(partition, [event for event, _ in share], _SEVERAL_CALLS_KEY, body, out)

    def _one_message(
        self, partition: int, events: list[AnyEvent], key: bytes, body: bytes, out: list[Outgoing]
    ) -> None:
        """`events` (all on `partition`) as the one message `body`, after what the partition holds."""
        self._flush_partition(partition, out)
        self._count(events, partition)
        self._send(out, Outgoing(key, body, partition))
        self._flush_stale(max(event.ts_ms for event in events), out)

    def _flush_partition(self, partition: int, out: list[Outgoing]) -> None:
        if partition in self._held:
            self._flush(partition, out)

    def _flush_partition_of(self, call_id: str | None, out: list[Outgoing]) -> None:
        """What the partition of `call_id` holds (nothing when it names no call: a record keyed as
        malformed changes no call)."""
        if call_id is not None and self._held:
            self._flush_partition(partition_for(call_id, self.partitions), out)

    def _count(self, events: list[AnyEvent], partition: int) -> None:
        """Count `events`, all sent to `partition`."""
        report = self.report
        report.events += len(events)
        for event in events:
            if type(event) is JudgeResult:
                continue  # (stamped after its call by whoever asked: no say on the time, as in the worker)
            if isinstance(event, Watermark):
                report.latest_watermark_ms = later(report.latest_watermark_ms, event.ts_ms)
            else:
                latest = report.latest_calls.get(partition)
                if latest is None:
                    latest = report.latest_calls[partition] = LatestTwo()
                latest.note(event.ts_ms, event.call_id)
                if type(event) not in RESCORE_CLASSES:
                    # (A post-call event opens no call: a log that only annotates another producer's
                    # call must not end it.)
                    report.calls.setdefault(partition, set()).add(event.call_id)

    def _pass_through(self, raw: bytes, call_id: str | None, out: list[Outgoing], readable: bool = False) -> None:
        self._flush_partition_of(call_id, out)
        if not readable:
            self.report.passed_through += 1
        self._send(out, Outgoing((call_id or MALFORMED_KEY).encode(), raw))

    def _refuse(self, raw: bytes, rejected: Rejected, out: list[Outgoing]) -> None:
        """A record the worker would refuse for its size, dead-lettered in its place."""
        self.report.refused += 1
        self._dead_letter(raw, rejected, out)

    def _refuse_the_rest(self, raw: bytes, rest: Rejected, out: list[Outgoing]) -> None:
        """The bad items of a batch record taken apart past the ones sent to be refused item by item:
        one dead letter for them all, holding the record, as the worker writes for the record whole."""
        self.report.rest_refused += 1
        self._dead_letter(raw, rest, out)

    def _dead_letter(self, raw: bytes, rejected: Rejected, out: list[Outgoing]) -> None:
        """`rejected`'s dead letter, written by `send` itself: after what its call's partition holds, on
        that partition (-1 when it names no call)."""
        call_id = rejected.call_id
        self._flush_partition_of(call_id, out)
        partition = partition_for(call_id, self.partitions) if call_id is not None else -1
        out.append(Outgoing((call_id or MALFORMED_KEY).encode(), raw, partition, refused=rejected))

    def _flush(self, partition: int, out: list[Outgoing]) -> None:
        batch = self._held.pop(partition)
        if len(batch.calls) == 1:
            (call_id,) = batch.calls
            # (its key chooses the partition)
            self._send(out, Outgoing(call_id.encode(), _batch_body(batch.events, call_id)))
        else:
            self._send(out, Outgoing(_SEVERAL_CALLS_KEY, _batch_body(batch.events), partition))

    def _send(self, out: list[Outgoing], message: Outgoing) -> None:
        out.append(message)
        self.report.messages += 1


def _batch_body(
    events: list[msgspec.Raw], call_id: str | None = None, encode: Callable[[Any], bytes] = _msgpack.encode
) -> bytes:
    """A batch message (docs/concepts/batches.md#two-shapes-of-batch) around `events`: of one call when `call_id` is
    given, else of several calls of one partition."""
    body: dict[str, Any] = {"v": CONTRACT_VERSION}
    if call_id is not None:
        body["call_id"] = call_id
    body["events"] = events
    return encode(body)


# The call_ids an end-of-input watermark names at most, in bytes: well within a message (a log's calls
# on one partition may take several), and within the worker's limit on messages less this much for
# the rest of the watermark.
END_OF_INPUT_CALLS_BYTES = 256 * 1024
END_OF_INPUT_ENVELOPE_BYTES = 1024


def end_of_input_messages(
    ts_ms: int, partition: int, calls: Iterable[str] | None = None, max_message_bytes: int = MAX_MESSAGE_BYTES
) -> list[bytes]:
    """The watermarks `callqa send` ends a log with on `partition` (nothing of it follows there: its
    open calls are swept at once, as replay sweeps them at the end of its input). With `calls` (the
    log's calls on the partition, in several watermarks when they are many), only those: another
    producer's calls, still being sent on a shared deployment, are not ended. Without, every open
    call of the partition."""
    if calls is None:
        return [_end_of_input(ts_ms, partition, None, 0)]
    budget = max(1, min(END_OF_INPUT_CALLS_BYTES, max_message_bytes - END_OF_INPUT_ENVELOPE_BYTES))
    chunks: list[list[str]] = [[]]
    size = 0
    for call_id in sorted(calls):
        cost = len(call_id.encode()) + 8  # (its bytes and its framing, with room to spare)
        if chunks[-1] and size + cost > budget:
            chunks.append([])
            size = 0
        chunks[-1].append(call_id)
        size += cost
    return [_end_of_input(ts_ms, partition, chunk, index) for index, chunk in enumerate(chunks)]


def _end_of_input(ts_ms: int, partition: int, calls: list[str] | None, index: int) -> bytes:
    data: dict[str, Any] = {"end_of_input": True, "partition": partition}
    event_id = f"{WATERMARK_CALL_ID}:{ts_ms}:{partition}"
    if calls is not None:
        data["calls"] = calls
        event_id += f":{index}"
    return _msgpack.encode(
        {
            "v": CONTRACT_VERSION,
            "type": "watermark",
            "event_id": event_id,
            "call_id": WATERMARK_CALL_ID,
            "ts_ms": ts_ms,
            "data": data,
        }
    )


def _is_json(raw: bytes) -> bool:
    return raw.lstrip()[:1] == b"{"


def _as_object(raw: bytes) -> Any:
    return _json_decode(raw) if _is_json(raw) else _msgpack_decode(raw)


def _repacked(raw: bytes) -> bytes | None:
    """The record as MessagePack, or None where it must go as it was: a JSON integer beyond 64 bits,
    or bytes that are no UTF-8 in a field the contract ignores (the event decodes; the record read as
    a whole does not)."""
    try:
        return _msgpack.encode(_as_object(raw))
    except (OverflowError, msgspec.EncodeError, msgspec.DecodeError):
        return None


class _Items(msgspec.Struct, forbid_unknown_fields=False):
    events: list[msgspec.Raw]
    call_id: str | None = None


@dataclass(frozen=True, slots=True)
class _BatchRecord:
    events: list[bytes]  # each item as its own bytes
    call_id: str | None


def _batch_items(raw: bytes) -> _BatchRecord | None:
    """A batch record's items and call_id (None when the record cannot be read so)."""
    try:
        if _is_json(raw):
            items = msgspec.json.decode(raw, type=_Items)
        else:
            items = msgspec.msgpack.decode(raw, type=_Items)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return _BatchRecord([bytes(item) for item in items.events], items.call_id)
