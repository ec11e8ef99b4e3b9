"""`callqa send LOG`: publish a recorded event log to the events topic.

What goes out, and in which order, is decided by `SendPlan` (streams/send_plan.py: each partition's
batches in the log's order, the size and time bounds, batches and watermarks of the log); this module
only sends it. At the end,
unless the stream is to stay open, an end-of-input watermark goes to every partition so open calls
are swept at once.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

import msgspec

from models.events import WATERMARK_CALL_ID
from streams.config import Settings
from streams.kafka_clients import ensure_topics, producer
from streams.live import DeadLetter
from streams.send_plan import Outgoing, SendPlan, SendReport, end_of_input_message
from streams.topics import TopicNames

__all__ = ["SendReport", "send_end_of_input", "send_log"]


async def send_log(
    records: Iterable[bytes],
    settings: Settings,
    batch_size: int = 50,
    max_span_ms: int = 10_000,
    end_of_input: bool = True,
    on_record: Callable[[int], None] | None = None,
) -> SendReport:
    topics = TopicNames(settings.topic_prefix)
    await ensure_topics(settings, {topics.events: settings.partitions, topics.deadletter: 1})
    kafka = producer(settings)
    await kafka.start()
    try:
        partitions = len(await kafka.partitions_for(topics.events))
        plan = SendPlan(partitions, batch_size, max_span_ms, settings.max_message_bytes)

        async def send(messages: list[Outgoing]) -> None:
            for message in messages:
                if message.refused is not None:
                    await kafka.send(topics.deadletter, refused_document(message, topics.events), key=message.key)
                else:
                    await kafka.send(topics.events, message.value, key=message.key, partition=message.partition)

        for raw in records:
            await send(plan.add(raw))
            if on_record is not None:
                on_record(len(raw))
        await send(plan.finish())
        if end_of_input:
            plan.report.messages += await send_end_of_input(kafka, topics.events, plan.report.max_ts_ms or 0)
        await kafka.flush()
    finally:
        await kafka.stop()
    return plan.report


def refused_document(message: Outgoing, events_topic: str) -> bytes:
    """The dead letter of a record too large to send, as the worker would have written it (offset -1:
    it never was on the events topic)."""
    refused = message.refused
    assert refused is not None and message.partition is not None  # (SendPlan gives a refusal its partition)
    letter = DeadLetter(refused.reason, events_topic, message.partition, -1, message.value, refused.event_id,
                        refused.call_id)
    return msgspec.json.encode(letter.to_document())


async def send_end_of_input(kafka: Any, topic: str, ts_ms: int) -> int:
    """An end-of-input watermark to every partition of `topic`; returns how many were sent."""
    partitions = sorted(await kafka.partitions_for(topic))
    for partition in partitions:
        await kafka.send(topic, end_of_input_message(ts_ms, partition), key=WATERMARK_CALL_ID.encode(), partition=partition)
    return len(partitions)
