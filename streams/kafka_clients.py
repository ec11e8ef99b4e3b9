"""Plain aiokafka clients (producer, reader, admin) with the deployment's connection settings."""

from __future__ import annotations

import ssl
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError

from streams.config import Settings


def connection_options(settings: Settings) -> dict[str, Any]:
    options: dict[str, Any] = {"bootstrap_servers": settings.bootstrap}
    protocol = settings.kafka_security_protocol.upper()
    if protocol != "PLAINTEXT":
        options["security_protocol"] = protocol
        if "SSL" in protocol:
            options["ssl_context"] = ssl.create_default_context(cafile=settings.kafka_ssl_cafile)
        if protocol.startswith("SASL"):
            options["sasl_mechanism"] = settings.kafka_sasl_mechanism or "PLAIN"
            options["sasl_plain_username"] = settings.kafka_sasl_username
            options["sasl_plain_password"] = settings.kafka_sasl_password
    return options


def producer(settings: Settings, **extra: Any) -> AIOKafkaProducer:
    # No idempotence: the embedded broker rejects InitProducerId (BROKER.md); duplicates are absorbed
    # by the worker's event_id and offset checks instead.
    return AIOKafkaProducer(acks="all", linger_ms=20, max_request_size=4_194_304, **connection_options(settings), **extra)


def reader(settings: Settings, **extra: Any) -> AIOKafkaConsumer:
    """A consumer outside any group: assign partitions and read from the beginning."""
    return AIOKafkaConsumer(enable_auto_commit=False, auto_offset_reset="earliest", **connection_options(settings), **extra)


async def ensure_topics(settings: Settings, topics: dict[str, int]) -> None:
    """Create the topics that do not exist yet (name -> partitions)."""
    admin = AIOKafkaAdminClient(**connection_options(settings))
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        missing = [NewTopic(name, partitions, 1) for name, partitions in topics.items() if name not in existing]
        if missing:
            try:
                await admin.create_topics(missing)
            except TopicAlreadyExistsError:
                pass
    finally:
        await admin.close()
