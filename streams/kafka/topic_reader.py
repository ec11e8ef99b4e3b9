"""Reading a whole topic from its first offset, outside any consumer group: once (`read_topic`, for the
CLI's tail, summary and record) or for ever (`follow_topic`, for the worker's views of results,
cohorts and alert rules).

Both start at the first offset: the embedded broker's "latest offset" answer is wrong
(docs/guides/embedded-broker.md), so starting "at the end" cannot be trusted there."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from aiokafka import TopicPartition

from streams.config import Settings
from streams.kafka.clients import ensure_topics, reader

logger = logging.getLogger("callqa.kafka")


async def read_topic(
    settings: Settings,
    topic: str,
    idle_exit_s: float | None,
    on_record: Callable[[bytes, bytes], None],
    until: Callable[[], bool] | None = None,
    timeout_s: float | None = None,
    on_waiting: Callable[[str], None] | None = None,
) -> int:
    """Deliver every record of `topic` to `on_record(key, value)`; stop after `idle_exit_s` without
    new records (None: follow forever), once `until()` holds, or after `timeout_s`. Returns the number read.
    A topic that does not exist yet is waited for as long (`on_waiting` hears of it once)."""
    consumer = reader(settings)
    count = 0
    try:
        await consumer.start()  # (inside: a broker that cannot be reached still gets its consumer closed)
        partitions = await topic_partitions(
            consumer, topic, idle_exit_s if idle_exit_s is not None else timeout_s, on_waiting
        )
        consumer.assign([TopicPartition(topic, p) for p in partitions])
        await consumer.seek_to_beginning()
        idle = 0.0
        deadline = None if timeout_s is None else asyncio.get_running_loop().time() + timeout_s
        while idle_exit_s is None or idle < idle_exit_s:
            if until is not None and until():
                break
            if deadline is not None and asyncio.get_running_loop().time() > deadline:
                break
            batches = await consumer.getmany(timeout_ms=500)
            records = [r for batch in batches.values() for r in batch]
            if not records:
                idle += 0.5
                continue
            idle = 0.0
            for record in records:
                on_record(record.key or b"", record.value or b"")
                count += 1
    finally:
        await consumer.stop()
    return count


async def topic_partitions(
    consumer: Any, topic: str, wait_s: float | None, on_waiting: Callable[[str], None] | None
) -> list[int]:
    """The topic's partitions, once it exists; it is waited for up to `wait_s` (None: for ever)."""
    loop = asyncio.get_running_loop()
    deadline = None if wait_s is None else loop.time() + wait_s
    told = False
    while True:
        partitions = consumer.partitions_for_topic(topic)
        if partitions:
            return sorted(partitions)
        if deadline is not None and loop.time() >= deadline:
            raise SystemExit(
                f"topic {topic!r} does not exist (is a worker running against this broker, with this topic prefix?)"
            )
        if on_waiting is not None and not told:
            on_waiting(f"waiting for topic {topic!r} to exist (a worker creates it on start) ...")
            told = True
        await consumer._client.force_metadata_update()
        await asyncio.sleep(0.25)


async def follow_topic(callqa: Any, topic: str, on_record: Any, on_caught_up: Any = None) -> None:
    """Read `topic` from its first offset forever (outside any group), handing each record on
    (`on_record(key, value, offset)`).
    `on_caught_up()` is called once, when every partition has been read up to the high watermark its
    last fetch reported (a fetch that merely came back empty in time is not enough)."""
    await ensure_topics(callqa.settings, callqa.topics.only(callqa.settings.partitions, topic))
    consumer = reader(callqa.settings)
    await consumer.start()
    try:
        partitions: set[int] | None = None
        while not partitions:
            partitions = consumer.partitions_for_topic(topic)
            if not partitions:
                await consumer._client.force_metadata_update()
                await asyncio.sleep(0.5)
        consumer.assign([TopicPartition(topic, p) for p in sorted(partitions)])
        await consumer.seek_to_beginning()
        while True:
            batches = await consumer.getmany(timeout_ms=1000)
            if not batches and on_caught_up is not None and await _read_to_the_end(consumer):
                on_caught_up()
                on_caught_up = None
            for records in batches.values():
                for record in records:
                    try:
                        on_record(record.key, record.value, record.offset)
                    except Exception as exc:  # one bad record must not stop the view
                        logger.warning("%s[%s]@%s skipped: %s", topic, record.partition, record.offset, exc)
    finally:
        await consumer.stop()


async def _read_to_the_end(consumer: Any) -> bool:
    for tp in consumer.assignment():
        highwater = consumer.highwater(tp)  # from the last fetch response; None before the first
        if highwater is None or await consumer.position(tp) < highwater:
            return False
    return True
