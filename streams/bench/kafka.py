"""What the benchmark does on the broker itself: create topics, load them, read them back."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

# Quix Streams reads a topic's retention to configure its changelogs; this broker reports no default
# configs, so the input topics carry explicit ones (docs/guides/embedded-broker.md#limits-of-the-embedded-broker).
UNLIMITED_RETENTION = {"retention.ms": "-1", "retention.bytes": "-1"}


async def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, partitions, 1, topic_configs=dict(UNLIMITED_RETENTION))])
    finally:
        await admin.close()


# (key, value), placed by Kafka's default partitioner on the key, or (key, value, partition).
Message = tuple[bytes, bytes] | tuple[bytes, bytes, int | None]


async def produce(bootstrap: str, topic: str, messages: Iterable[Message]) -> int:
    """Send every message, keyed so Kafka's default partitioner places each call (unless it names
    its partition, as `callqa send` does for a batch of several calls), and wait until all are
    acknowledged; returns how many were sent."""
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks=1, linger_ms=20, max_batch_size=262_144, max_request_size=4_194_304
    )
    await producer.start()
    sent = 0
    try:
        pending = []
        for key, value, *partition in messages:
            pending.append(await producer.send(topic, value, key=key, partition=partition[0] if partition else None))
            sent += 1
            if len(pending) >= 5000:
                await asyncio.gather(*pending)
                pending.clear()
        await asyncio.gather(*pending)
    finally:
        await producer.stop()
    return sent


async def topic_bytes(bootstrap: str, topic: str) -> tuple[int, int, list[tuple[bytes, bytes]]]:
    """(records, key + value bytes, the records) of a whole topic, read from the beginning."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
    await consumer.start()
    try:
        await consumer.topics()  # loads the cluster metadata
        partitions = consumer.partitions_for_topic(topic) or set()
        tps = [TopicPartition(topic, p) for p in sorted(partitions)]
        if not tps:
            return 0, 0, []
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        records: list[tuple[bytes, bytes]] = []
        idle = 0
        while idle < 3:
            batches = await consumer.getmany(timeout_ms=500)
            got = [r for rs in batches.values() for r in rs]
            idle = 0 if got else idle + 1
            records.extend((r.key or b"", r.value or b"") for r in got)
        return len(records), sum(len(k) + len(v) for k, v in records), records
    finally:
        await consumer.stop()
