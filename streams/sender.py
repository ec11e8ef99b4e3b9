"""`callqa send LOG`: publish a recorded event log to the events topic, batching per call.

Each call's events are kept in order and sent as batch messages (DESIGN §2). A call's batch goes out
when it holds `batch_size` events, or when the log's event time has moved `max_span_ms` past the
batch's first event: that bounds how far batching reorders events between calls of one partition,
well inside the worker's allowed lateness. Records that do not decode are sent exactly as they are,
so they reach the dead-letter topic with their original bytes. At the end, unless the stream is to
stay open, an end-of-input watermark goes to every partition so open calls are swept at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import msgspec

from models.events import CONTRACT_VERSION, WATERMARK_CALL_ID
from models.wire import decode_message
from streams.config import Settings
from streams.kafka_clients import ensure_topics, producer
from streams.topics import TopicNames

_msgpack = msgspec.msgpack.Encoder()
_json_decode = msgspec.json.decode
_msgpack_decode = msgspec.msgpack.decode


@dataclass
class SendReport:
    records: int = 0
    messages: int = 0
    events: int = 0
    passed_through: int = 0
    max_ts_ms: int | None = None


@dataclass
class _PendingBatch:
    first_ts_ms: int
    events: list[Any] = field(default_factory=list)


def _as_object(raw: bytes) -> Any:
    return _json_decode(raw) if raw.lstrip()[:1] == b"{" else _msgpack_decode(raw)


async def send_log(
    records: Iterable[bytes],
    settings: Settings,
    batch_size: int = 50,
    max_span_ms: int = 10_000,
    end_of_input: bool = True,
    on_record: Callable[[int], None] | None = None,
) -> SendReport:
    topics = TopicNames(settings.topic_prefix)
    await ensure_topics(settings, {topics.events: settings.partitions})
    report = SendReport()
    kafka = producer(settings)
    await kafka.start()
    pending: dict[str, _PendingBatch] = {}

    async def flush(call_id: str) -> None:
        batch = pending.pop(call_id)
        body = {"v": CONTRACT_VERSION, "call_id": call_id, "events": batch.events}
        await kafka.send(topics.events, _msgpack.encode(body), key=call_id.encode())
        report.messages += 1

    try:
        for raw in records:
            report.records += 1
            decoded = decode_message(raw)
            if decoded.rejected or decoded.is_batch:
                # Sent untouched: a malformed record must reach the dead-letter topic as it was.
                call_id = decoded.events[0].call_id if decoded.events else (decoded.rejected[0].call_id if decoded.rejected else None)
                if call_id in pending:
                    await flush(call_id)
                await kafka.send(topics.events, raw, key=(call_id or "malformed").encode())
                report.messages += 1
                report.passed_through += 1
                report.events += len(decoded.events)
            else:
                event = decoded.events[0]
                report.events += 1
                ts = event.ts_ms
                report.max_ts_ms = ts if report.max_ts_ms is None else max(report.max_ts_ms, ts)
                batch = pending.get(event.call_id)
                if batch is None:
                    batch = pending[event.call_id] = _PendingBatch(ts)
                batch.events.append(_as_object(raw))
                if len(batch.events) >= batch_size:
                    await flush(event.call_id)
                stale = [cid for cid, b in pending.items() if ts - b.first_ts_ms >= max_span_ms]
                for cid in stale:
                    await flush(cid)
            if on_record is not None:
                on_record(len(raw))
        for call_id in list(pending):
            await flush(call_id)
        if end_of_input:
            await send_end_of_input(kafka, topics.events, report.max_ts_ms or 0)
            report.messages += 1
        await kafka.flush()
    finally:
        await kafka.stop()
    return report


async def send_end_of_input(kafka: Any, topic: str, ts_ms: int) -> None:
    partitions = sorted(await kafka.partitions_for(topic))
    for partition in partitions:
        body = {"v": CONTRACT_VERSION, "type": "watermark", "event_id": f"{WATERMARK_CALL_ID}:{ts_ms}:{partition}",
                "call_id": WATERMARK_CALL_ID, "ts_ms": ts_ms, "data": {"end_of_input": True, "partition": partition}}
        await kafka.send(topic, _msgpack.encode(body), key=WATERMARK_CALL_ID.encode(), partition=partition)
