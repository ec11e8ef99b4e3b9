"""`callqa send LOG`: publish a recorded event log to the events topic.

What goes out, and in which order, is decided by `SendPlan` (streams/send/plan.py: each partition's
batches in the log's order, the size and time bounds, batches and watermarks of the log); this module
only sends it, and waits for the broker to acknowledge all of it (streams/send/acknowledgements.py: a
message the broker refused, or a broker that acknowledges nothing for a while, ends the send with an
error saying so, instead of a report of a log sent whole). At the end, unless the stream is to stay
open, an end-of-input watermark goes to every partition, once everything before it was acknowledged,
so open calls are swept at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

import msgspec
from aiokafka.errors import KafkaTimeoutError

from models.deadletter import DeadLetter
from models.events import WATERMARK_CALL_ID
from models.wire import MAX_MESSAGE_BYTES
from streams.config import Settings
from streams.kafka.clients import (
    close_producer_without_broker,
    ensure_topics,
    producer,
    stop_producer,
)
from streams.send.acknowledgements import (
    AGAIN,
    STALL_TIMEOUT_S,
    Acknowledgements,
    NotAcknowledged,
)
from streams.send.plan import Outgoing, SendPlan, SendReport, end_of_input_messages
from streams.topics import TopicNames

T = TypeVar("T")

__all__ = ["SendReport", "send_end_of_input", "send_log"]

# What the producer's stop may take once everything was acknowledged (at once, but for a broker that
# stops answering just then).
PRODUCER_STOP_TIMEOUT_S = 5.0


async def send_log(
    records: Iterable[bytes],
    settings: Settings,
    batch_size: int = 50,
    max_span_ms: int = 10_000,
    end_of_input: bool = True,
    on_record: Callable[[int], None] | None = None,
    stall_s: float = STALL_TIMEOUT_S,
) -> SendReport:
    topics = TopicNames(settings.topic_prefix)
    await ensure_topics(settings, topics.only(settings.partitions, topics.events, topics.deadletter))
    acknowledgements = Acknowledgements(stall_s)
    # (aiokafka's request timeout: how long a batch may wait for the broker, and a send for room in
    # the producer's buffer, before they fail.)
    kafka = producer(settings, request_timeout_ms=max(1, int(stall_s * 1000)))
    await kafka.start()
    try:
        partitions = len(await kafka.partitions_for(topics.events))
        plan = SendPlan(partitions, batch_size, max_span_ms, settings.max_message_bytes, settings.max_watermark_leap_ms)

        async def send(messages: list[Outgoing]) -> None:
            for message in messages:
                if message.refused is not None:
                    sending = kafka.send(topics.deadletter, refused_document(message, topics.events), key=message.key)
                else:
                    sending = kafka.send(topics.events, message.value, key=message.key, partition=message.partition)
                # A send waits for room in the producer's buffer, or for metadata, while the broker
                # takes nothing: bounded by what is left of the stall time, so that a broker that
                # stops answering ends the send once, not once per wait (three in a row, 91 s).
                try:
                    delivery = await within(sending, acknowledgements.time_left())
                except TimeoutError:
                    raise acknowledgements.stalled() from None
                except KafkaTimeoutError as exc:  # (its buffer full, and the broker taking nothing)
                    raise NotAcknowledged(f"the broker took no more messages ({exc!r}); {AGAIN}") from exc
                acknowledgements.add(delivery)

        for raw in records:
            await send(plan.add(raw))
            if on_record is not None:
                on_record(len(raw))
        await send(plan.finish())
        await acknowledgements.wait_all()  # (before the end of input: it promises all came before it)
        if end_of_input:
            plan.report.messages += await send_end_of_input(
                kafka,
                topics.events,
                plan.end_ts_ms or 0,
                acknowledgements,
                plan.report.calls,
                settings.max_message_bytes,
            )
            await acknowledgements.wait_all()
    except BaseException:
        acknowledgements.abandon()
        # (No flush: what the producer holds will not be delivered, and a hung broker would keep
        # the stop waiting for it.)
        await close_producer_without_broker(kafka)
        raise
    await stop_producer(kafka, PRODUCER_STOP_TIMEOUT_S)
    return plan.report


async def within(step: Awaitable[T], timeout_s: float | None) -> T:
    """`step`, for at most `timeout_s` (TimeoutError after). Not `asyncio.wait_for`: on Python 3.11 it
    returns the step's result when a cancellation comes as the step completes, and Ctrl-C, which
    `asyncio.run` turns into one cancellation, was lost: the whole log went out, reported as sent."""
    async with asyncio.timeout(timeout_s):
        return await step


def refused_document(message: Outgoing, events_topic: str) -> bytes:
    """The dead letter of a record too large to send, as the worker would have written it (offset -1:
    it never was on the events topic)."""
    refused = message.refused
    assert refused is not None and message.partition is not None  # (SendPlan gives a refusal its partition)
    letter = DeadLetter(
        refused.reason, events_topic, message.partition, -1, message.value, refused.event_id, refused.call_id
    )
    return msgspec.json.encode(letter.to_document())


async def send_end_of_input(
    kafka: Any,
    topic: str,
    ts_ms: int,
    acknowledgements: Acknowledgements,
    calls: dict[int, set[str]] | None = None,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
) -> int:
    """End-of-input watermarks to every partition of `topic`, naming the log's calls there (`calls`,
    by partition; None: they end every open call); returns how many were sent."""
    sent = 0
    for partition in sorted(await kafka.partitions_for(topic)):
        named = None if calls is None else calls.get(partition, ())
        for message in end_of_input_messages(ts_ms, partition, named, max_message_bytes):
            acknowledgements.add(await kafka.send(topic, message, key=WATERMARK_CALL_ID.encode(), partition=partition))
            sent += 1
    return sent
