"""Plain aiokafka clients (producer, reader, admin) with the deployment's connection settings."""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import TopicAlreadyExistsError

from streams.config import PRODUCER_MAX_REQUEST_BYTES, Settings
from streams.topics import TopicSpec

T = TypeVar("T")
logger = logging.getLogger("callqa.kafka")
# How long a worker's own background task waits before it asks a broker that failed it again.
BROKER_RETRY_S = 5.0
# How long a producer's cancelled sender may take to wind down once its connections are closed.
SENDER_STOP_TIMEOUT_S = 2.0


async def retrying(
    what: str, attempt: Callable[[], Awaitable[T]], log: logging.Logger, retry_s: float = BROKER_RETRY_S
) -> T:
    """`attempt()` again and again until it succeeds. A worker's background task that fails ends the
    worker: a broker away for a moment when the task asked it (at the start, say) stopped scoring."""
    while True:
        try:
            return await attempt()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # whatever the broker or the network did, ask again
            log.warning("%s failed (%s: %s); again in %s s", what, type(exc).__name__, exc, retry_s)
            await asyncio.sleep(retry_s)


def kafka_ssl_context(settings: Settings) -> ssl.SSLContext | None:
    """The TLS context of an SSL or SASL_SSL cluster (its CA file, if one is set); None without TLS.
    Every client takes it from here, the worker's Faust app as the plain clients."""
    if "SSL" not in settings.kafka_security_protocol.upper():
        return None
    return ssl.create_default_context(cafile=settings.kafka_ssl_cafile)


def connection_options(settings: Settings) -> dict[str, Any]:
    options: dict[str, Any] = {"bootstrap_servers": settings.bootstrap}
    protocol = settings.kafka_security_protocol.upper()
    if protocol != "PLAINTEXT":
        options["security_protocol"] = protocol
        context = kafka_ssl_context(settings)
        if context is not None:
            options["ssl_context"] = context
        if protocol.startswith("SASL"):
            options["sasl_mechanism"] = settings.sasl_mechanism
            options["sasl_plain_username"] = settings.kafka_sasl_username
            options["sasl_plain_password"] = settings.kafka_sasl_password
    return options


def producer(settings: Settings, **extra: Any) -> AIOKafkaProducer:
    # No idempotence: the embedded broker rejects InitProducerId
    # (docs/guides/embedded-broker.md#limits-of-the-embedded-broker); duplicates are absorbed
    # by the worker's event_id and offset checks instead.
    return AIOKafkaProducer(
        acks="all",
        linger_ms=20,
        max_request_size=PRODUCER_MAX_REQUEST_BYTES,
        compression_type=settings.compression_type,
        **connection_options(settings),
        **extra,
    )


async def ended_within(step: Awaitable[Any], timeout_s: float) -> asyncio.Future[Any] | None:
    """Run `step` for at most `timeout_s`: its task once it ended (its outcome left to the caller to
    read), or None when it had not and was cancelled. (Not `asyncio.wait_for`, which reports a step
    that swallowed its cancellation, as Faust's commit does, as one that ended in time.)"""
    task = asyncio.ensure_future(step)
    await asyncio.wait([task], timeout=timeout_s)
    if task.done():
        return task
    task.cancel()
    # A step that swallows its cancellation and goes on waiting is left to itself after a moment:
    # awaited until it ended, it held a stopping worker past any grace period. (Its outcome, when it
    # comes, is read, so that nothing is logged as never retrieved.)
    task.add_done_callback(lambda ended: ended.cancelled() or ended.exception())
    await asyncio.wait([task], timeout=CANCELLED_STEP_GRACE_S)
    return None


CANCELLED_STEP_GRACE_S = 1.0


async def close_producer_without_broker(producer: Any) -> None:
    """What `AIOKafkaProducer.stop` does besides its flush: marks it closed (it may have been cut
    short before it did), cancels the sender's task (which fails what is pending) and closes the
    connections."""
    producer._closed = True
    sender = producer._sender
    task = sender.sender_task if sender is not None else None
    if task is not None:
        task.cancel()
    # The connections closed first: the cancelled sender waits for its requests in flight, and with
    # the broker hung (up, not answering) each would wait out its request timeout, again and again.
    await producer.client.close()
    if task is not None:
        await asyncio.wait([task], timeout=SENDER_STOP_TIMEOUT_S)


async def stop_producer(producer: AIOKafkaProducer, timeout_s: float) -> bool:
    """`producer.stop()` (which flushes what it holds), or, when that takes longer than `timeout_s`
    (a broker gone: aiokafka would wait for ever), the same without the flush. False when cut short."""
    stopped = await ended_within(producer.stop(), timeout_s)
    if stopped is None:
        await close_producer_without_broker(producer)
        return False
    stopped.result()
    return True


# Every consumer of callqa's reads what transactional producers committed, and skips what they
# aborted: the worker scores such events once committed, and `callqa record` must read what it scored.
READ_COMMITTED = "read_committed"


def reader(settings: Settings, **extra: Any) -> AIOKafkaConsumer:
    """A consumer outside any group: assign partitions and read from the beginning."""
    return AIOKafkaConsumer(
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level=READ_COMMITTED,
        **connection_options(settings),
        **extra,
    )


async def ensure_topics(settings: Settings, topics: dict[str, TopicSpec], check_partitions: bool = False) -> None:
    """Create the topics that do not exist yet, as their specs say. With `check_partitions`, an
    existing topic with another partition count is an error: the journal and the inactivity sweep
    depend on the events topic's partitioning, and a broker that auto-creates topics on first read may
    have made one with its own default. An existing topic that should be compacted and is not (made
    by hand, or by a version before compaction) is reported with the command that fixes it: the
    worker runs on, but that topic's documents would be deleted with its retention."""
    admin = AIOKafkaAdminClient(**connection_options(settings))
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        missing = [
            NewTopic(name, spec.partitions, settings.replication_factor, topic_configs=spec.configs)
            for name, spec in topics.items()
            if name not in existing
        ]
        if missing:
            try:
                await admin.create_topics(missing)
            except TopicAlreadyExistsError:
                pass
        if check_partitions:
            described = await admin.describe_topics([name for name in topics if name in existing])
            for topic in described:
                name, count = topic["topic"], len(topic["partitions"])
                if name in topics and count != topics[name].partitions:  # the broker may describe more than asked
                    raise ValueError(
                        f"topic {name!r} has {count} partitions, this deployment expects "
                        f"{topics[name].partitions} (CALLQA_PARTITIONS); recreate it or set "
                        f"CALLQA_PARTITIONS={count}"
                    )
        for name in await _not_compacted(admin, [n for n, spec in topics.items() if spec.compacted and n in existing]):
            logger.warning(
                "topic %s is not compacted: its documents will be deleted with its retention; "
                "fix it with: kafka-configs.sh --bootstrap-server %s --alter --entity-type topics "
                "--entity-name %s --add-config cleanup.policy=compact",
                name,
                settings.bootstrap,
                name,
            )
    finally:
        await admin.close()


async def _not_compacted(admin: AIOKafkaAdminClient, topics: list[str]) -> list[str]:
    """Those of `topics` whose cleanup policy does not compact."""
    if not topics:
        return []
    # (Every config of each topic: the embedded broker drops the connection when asked for some by name.)
    resources = [ConfigResource(ConfigResourceType.TOPIC, name) for name in topics]
    policies = dict.fromkeys(topics, "delete")  # Kafka's default, when a broker reports none
    for response in await admin.describe_configs(resources):
        for error, _message, _type, name, entries in response.resources:
            if error:  # (not allowed to describe it, say: nothing is known, so nothing is said)
                policies.pop(name, None)
                continue
            for entry in entries:
                if entry[0] == "cleanup.policy" and name in policies:
                    policies[name] = entry[1] or ""
    return [name for name, policy in policies.items() if "compact" not in policy.split(",")]
