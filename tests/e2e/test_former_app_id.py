"""A deployment that set only its topic prefix comes back after the app id began to default to the
prefix: refused with the setting that keeps its group, instead of re-reading its whole events topic
under a new group and publishing every result again."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.structs import OffsetAndMetadata

from streams.kafka.clients import connection_options, ensure_topics
from streams.topics import TopicNames
from streams.worker.former_app_id import refuse_a_moved_group
from tests.helpers.livekit import settings_for

pytestmark = pytest.mark.broker


async def _commit(settings, group: str, partition: int, offset: int) -> None:
    consumer = AIOKafkaConsumer(group_id=group, enable_auto_commit=False, **connection_options(settings))
    await consumer.start()
    try:
        events = TopicPartition(TopicNames(settings.topic_prefix).events, partition)
        consumer.assign([events])
        await consumer.commit({events: OffsetAndMetadata(offset, "")})
    finally:
        await consumer.stop()


def test_a_prefix_whose_events_the_former_default_group_consumed_is_refused_until_the_app_id_is_set(
    broker, topic_prefix
):
    prefix_only = dataclasses.replace(settings_for(broker, topic_prefix, partitions=2), app_id="")
    asyncio.run(ensure_topics(prefix_only, TopicNames(topic_prefix).specs(2)))
    asyncio.run(refuse_a_moved_group(prefix_only))  # a new deployment: nothing to keep

    asyncio.run(_commit(prefix_only, "callqa", 1, 7))  # (as a worker of an earlier version left it)
    with pytest.raises(ValueError) as refused:
        asyncio.run(refuse_a_moved_group(prefix_only))
    assert "set CALLQA_APP_ID=callqa to keep that group's offsets and its journal" in str(refused.value)
    assert f"CALLQA_APP_ID={topic_prefix}" in str(refused.value)

    asyncio.run(refuse_a_moved_group(dataclasses.replace(prefix_only, app_id="callqa")))  # either, set, is taken
    asyncio.run(refuse_a_moved_group(dataclasses.replace(prefix_only, app_id=topic_prefix)))
    asyncio.run(_commit(prefix_only, topic_prefix, 0, 3))  # the deployment has run under its own group since
    asyncio.run(refuse_a_moved_group(prefix_only))
