"""A deployment with a topic prefix of its own, started with no app id, after its group moved.

The app id (consumer group, changelog topics) defaults to the topic prefix; it was `callqa` whatever
the prefix before. A deployment that set only its prefix would come back under a new group with no
committed offsets and an empty journal: it would read its whole retained events topic again and
publish every result again, those of calls whose first events the topic has deleted re-scored from
what is left. It is refused at start with the setting that keeps its group, instead.
"""

from __future__ import annotations

from aiokafka import AIOKafkaConsumer, TopicPartition

from streams.config import Settings
from streams.kafka.clients import connection_options
from streams.topics import TopicNames

FORMER_DEFAULT_APP_ID = "callqa"


async def refuse_a_moved_group(settings: Settings) -> None:
    """Raise ValueError when the former default group has consumed this deployment's events topic and
    the group now in force never has (an app id set explicitly is taken as meant)."""
    if settings.app_id or settings.app_name == FORMER_DEFAULT_APP_ID:
        return
    events = TopicNames(settings.topic_prefix).events
    partitions = [TopicPartition(events, partition) for partition in range(settings.partitions)]
    if not await _has_committed(settings, FORMER_DEFAULT_APP_ID, partitions):
        return
    if await _has_committed(settings, settings.app_name, partitions):
        return  # (this deployment has run under its own group already)
    raise ValueError(
        f"{events} was consumed by the consumer group {FORMER_DEFAULT_APP_ID!r}, the app id used whatever the topic "
        f"prefix before it defaulted to the prefix: set CALLQA_APP_ID={FORMER_DEFAULT_APP_ID} to keep that group's "
        f"offsets and its journal, or CALLQA_APP_ID={settings.topic_prefix} to start the group "
        f"{settings.topic_prefix!r} afresh (every event the topic retains is scored again and its results published "
        "again)"
    )


async def _has_committed(settings: Settings, group: str, partitions: list[TopicPartition]) -> bool:
    consumer = AIOKafkaConsumer(group_id=group, enable_auto_commit=False, **connection_options(settings))
    await consumer.start()
    try:
        for partition in partitions:
            if await consumer.committed(partition) is not None:
                return True
        return False
    finally:
        await consumer.stop()
