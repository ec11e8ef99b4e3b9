"""`callqa record LOG`: the events topic as it stands, written as a log that `callqa replay` scores.

The events topic is the record of what the workers scored: the producers' events, and what the
workers themselves put there for replay to agree (the idle clock's watermark ticks, the sweeps' ends,
the judge's answers). Reading it whole, partition after partition in offset order, gives a log whose
replay reproduces the workers' results: re-scoring history after a fix starts here.

A message goes into the log as it came, byte for byte, when it is in the log's encoding (MessagePack,
or JSON on one line) and the worker applied or judged all of it: decoded and encoded again, an event
could grow past the message size limit, and JSON has no bytes, NaN or integer keys. Otherwise its
events are written one by one, as the worker applies a batch's
(docs/concepts/batches.md#a-batch-is-its-events-sent-one-by-one), leaving out what a worker dead-lettered as it read the
message — a message it could not decode or that was over
`max_message_bytes`, and an event that came on another partition than its call's (replay places every
call on its own partition) — and a watermark is given the partition it came on, which is the one the
worker applied it to (replay applies it to the partition it names).

Each partition is read up to where it ended when the command started (verified as the transport
does: streams/kafka/transports.py), so a busy topic still gives a finite log. A call still open then has
only its first events here, and replay ends it at the end of its input, as it ends any log's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec
from aiokafka import TopicPartition
from aiokafka.errors import KafkaTimeoutError

from models.events import Event, Watermark
from models.wire import MSGPACK_LOG, decode_message, encode_record, is_json_message
from streams.config import Settings
from streams.kafka.clients import reader
from streams.kafka.topic_reader import topic_partitions
from streams.kafka.transports import verified_end_offsets
from streams.partitioning import partition_for

STALL_S = 30.0  # how long a partition may give nothing before its end before the recording fails


@dataclass
class TopicRecording:
    """What `record_topic` read and wrote."""

    partitions: int = 0
    messages: int = 0
    events: int = 0
    undecodable: int = 0  # messages or batch items the worker dead-lettered on decoding
    strays: int = 0  # events that came on another partition than their call's
    # Events the log's encoding cannot hold as they are (MessagePack: an integer beyond 64 bits; JSON:
    # bytes, NaN or infinity), left out rather than written as other events.
    unwritable: int = 0
    # partition -> its first offset, where retention had deleted what came before
    truncated: dict[int, int] = field(default_factory=dict)


@dataclass
class MessageToRecord:
    events: list[Event]  # what the worker applied or judged of the message
    whole: bool  # all of it, as it came


def events_to_record(
    value: bytes | None, partition: int, partitions: int, max_message_bytes: int, recording: TopicRecording
) -> MessageToRecord:
    """What the worker applied or judged of one message of `partition` (not what it dead-lettered on
    reading), counting what is left out in `recording`."""
    decoded = decode_message(value or b"", max_message_bytes)
    recording.undecodable += len(decoded.rejected)
    whole = not decoded.rejected
    kept: list[Event] = []
    for event in decoded.events:
        if type(event) is Watermark:  # (it changes no call: applied to the partition it came on)
            if event.data.partition != partition:
                data = msgspec.structs.replace(event.data, partition=partition)
                event = msgspec.structs.replace(event, data=data)
                whole = False
        elif partition_for(event.call_id, partitions) != partition:
            recording.strays += 1
            whole = False
            continue
        kept.append(event)
    return MessageToRecord(kept, whole)


def as_it_came(value: bytes, log_format: str) -> bytes | None:
    """The message itself as a record of the log, where its encoding is the log's (None: not)."""
    if log_format == MSGPACK_LOG:
        return None if is_json_message(value) else value
    if not is_json_message(value) or b"\n" in value or b"\r" in value:
        return None
    return value + b"\n"


async def record_topic(
    settings: Settings,
    topic: str,
    write: Callable[[bytes], object],
    log_format: str,
    on_message: Callable[[int, int], None] | None = None,
) -> TopicRecording:
    """Write every event of `topic` that its workers applied, through `write`, as records of a
    `log_format` log; `on_message(done, total)` after each message."""
    recording = TopicRecording()
    consumer = reader(settings)
    try:
        await consumer.start()
        numbers = await topic_partitions(consumer, topic, 10.0, None)
        recording.partitions = len(numbers)
        tps = [TopicPartition(topic, number) for number in numbers]
        starts = await consumer.beginning_offsets(tps)
        ends = await verified_end_offsets(consumer, tps)
        total = sum(max(0, ends[tp] - starts[tp]) for tp in tps)
        for tp in tps:
            if starts[tp] > 0:
                recording.truncated[tp.partition] = starts[tp]
            if ends[tp] <= starts[tp]:
                continue
            consumer.assign([tp])
            consumer.seek(tp, starts[tp])
            waited = 0.0
            while await consumer.position(tp) < ends[tp]:
                batches = await consumer.getmany(tp, timeout_ms=500)
                if not batches:
                    waited += 0.5
                    if waited >= STALL_S:
                        raise KafkaTimeoutError(
                            f"{topic}[{tp.partition}]: nothing came for {STALL_S:.0f} s at offset "
                            f"{await consumer.position(tp)} of {ends[tp]}; nothing was written"
                        )
                    continue
                waited = 0.0
                for message in batches.get(tp, []):
                    if message.offset >= ends[tp]:
                        break
                    record_message(
                        message.value,
                        tp.partition,
                        len(numbers),
                        settings.max_message_bytes,
                        log_format,
                        write,
                        recording,
                    )
                    if on_message is not None:
                        on_message(recording.messages, total)
    finally:
        await consumer.stop()
    return recording


def record_message(
    value: bytes | None,
    partition: int,
    partitions: int,
    max_message_bytes: int,
    log_format: str,
    write: Callable[[bytes], object],
    recording: TopicRecording,
) -> None:
    """One message of `partition` into the log: as it came, or event by event (module docstring)."""
    to_record = events_to_record(value, partition, partitions, max_message_bytes, recording)
    recording.messages += 1
    record = as_it_came(value, log_format) if to_record.whole and value else None
    if record is not None:
        write(record)
        recording.events += len(to_record.events)
        return
    for event in to_record.events:
        try:
            encoded = encode_record(event, log_format)
        except (OverflowError, TypeError, ValueError):  # (an integer beyond 64 bits, in MessagePack)
            recording.unwritable += 1
            continue
        if log_format != MSGPACK_LOG and decode_message(encoded, len(encoded)).events != [event]:
            # JSON has no bytes, NaN or infinity: written, such an event would read back as another.
            recording.unwritable += 1
            continue
        write(encoded)
        recording.events += 1


def record_events_topic(
    settings: Settings,
    topic: str,
    write: Callable[[bytes], object],
    log_format: str,
    on_message: Callable[[int, int], None] | None = None,
) -> TopicRecording:
    return asyncio.run(record_topic(settings, topic, write, log_format, on_message))
