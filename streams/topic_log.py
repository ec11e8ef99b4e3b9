"""`callqa record LOG`: the events topic as it stands, written as a log that `callqa replay` scores.

The events topic is the record of what the workers scored: the producers' events, and what the
workers themselves put there for replay to agree (the idle clock's watermark ticks, the sweeps' ends,
the judge's answers). Reading it whole, partition after partition in offset order, gives a log whose
replay reproduces the workers' results: re-scoring history after a fix starts here.

What a worker dead-lettered as it read a message is left out, as replay would otherwise score it:
a message it could not decode or that was over `max_message_bytes`, and an event that came on
another partition than its call's (replay places every call on its own partition). A batch's events
are written one by one, as the worker applies them (DESIGN §2).

Each partition is read up to where it ended when the command started (verified as the transport
does: streams/broker_fixes.py), so a busy topic still gives a finite log. A call still open then has
only its first events here, and replay ends it at the end of its input, as it ends any log's.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Callable

import msgspec
from aiokafka import TopicPartition

from models.events import Event, Watermark
from models.wire import MSGPACK_LOG, decode_message, encode_event
from streams.broker_fixes import verified_end_offsets
from streams.config import Settings
from streams.kafka_clients import reader
from streams.partitioning import partition_for
from streams.tail import topic_partitions

_JSON = msgspec.json.Encoder()
STALL_S = 30.0  # how long a partition may give nothing before its end before the recording fails


@dataclass
class TopicRecording:
    """What `record_topic` read and wrote."""

    partitions: int = 0
    messages: int = 0
    events: int = 0
    undecodable: int = 0  # messages or batch items the worker dead-lettered on decoding
    strays: int = 0  # events that came on another partition than their call's
    # partition -> its first offset, where retention had deleted what came before
    truncated: dict[int, int] = field(default_factory=dict)


def encoder_for(log_format: str) -> Callable[[Event], bytes]:
    """One event as a record of a log in `log_format` (MSGPACK_LOG or JSONL_LOG)."""
    if log_format == MSGPACK_LOG:
        return encode_event
    return lambda event: _JSON.encode(event) + b"\n"


def events_to_record(value: bytes | None, partition: int, partitions: int, max_message_bytes: int,
                     recording: TopicRecording) -> list[Event]:
    """The events of one message of `partition` that its worker applied or judged (not those it
    dead-lettered on reading), counting what is left out in `recording`."""
    decoded = decode_message(value or b"", max_message_bytes)
    recording.undecodable += len(decoded.rejected)
    kept = []
    for event in decoded.events:
        # (A watermark names its own partition; it changes no call.)
        if type(event) is not Watermark and partition_for(event.call_id, partitions) != partition:
            recording.strays += 1
            continue
        kept.append(event)
    return kept


async def record_topic(settings: Settings, topic: str, write: Callable[[bytes], object], log_format: str,
                       on_message: Callable[[int, int], None] | None = None) -> TopicRecording:
    """Write every event of `topic` that its workers applied, through `write`, as records of a
    `log_format` log; `on_message(done, total)` after each message."""
    encode = encoder_for(log_format)
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
                        raise RuntimeError(f"{topic}[{tp.partition}]: nothing came for {STALL_S:.0f} s at offset "
                                           f"{await consumer.position(tp)} of {ends[tp]}; is the broker reachable? "
                                           "Nothing was written")
                    continue
                waited = 0.0
                for message in batches.get(tp, []):
                    if message.offset >= ends[tp]:
                        break
                    for event in events_to_record(message.value, tp.partition, len(numbers),
                                                  settings.max_message_bytes, recording):
                        write(encode(event))
                        recording.events += 1
                    recording.messages += 1
                    if on_message is not None:
                        on_message(recording.messages, total)
    finally:
        await consumer.stop()
    return recording


def record_events_topic(settings: Settings, topic: str, write: Callable[[bytes], object], log_format: str,
                        on_message: Callable[[int, int], None] | None = None) -> TopicRecording:
    return asyncio.run(record_topic(settings, topic, write, log_format, on_message))
