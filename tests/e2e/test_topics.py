"""Topics are created as the deployment needs them, on the real broker: the partitions of each, and
compaction for the topics that hold definitions (cohorts, alert rules) rather than history."""

from __future__ import annotations

import asyncio
import logging

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from streams.kafka.clients import connection_options, ensure_topics
from streams.topics import TopicNames
from tests.helpers.livekit import settings_for


async def _described(settings, topics: list[str]) -> dict[str, tuple[int, str]]:
    """topic -> (partitions, cleanup.policy as the broker reports it, "" when it reports none)."""
    admin = AIOKafkaAdminClient(**connection_options(settings))
    await admin.start()
    try:
        partitions = {t["topic"]: len(t["partitions"]) for t in await admin.describe_topics(topics)}
        policies = dict.fromkeys(topics, "")
        resources = [ConfigResource(ConfigResourceType.TOPIC, name) for name in topics]
        for response in await admin.describe_configs(resources):
            for _error, _message, _type, name, entries in response.resources:
                for entry in entries:
                    if entry[0] == "cleanup.policy":
                        policies[name] = entry[1]
        return {name: (partitions[name], policies[name]) for name in topics}
    finally:
        await admin.close()


async def _create_plain(settings, topic: str, partitions: int) -> None:
    admin = AIOKafkaAdminClient(**connection_options(settings))
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        await admin.close()


def test_every_topic_is_created_with_its_partitions_and_the_definitions_compacted(broker, topic_prefix):
    settings = settings_for(broker, topic_prefix, partitions=3)
    names = TopicNames(topic_prefix)
    asyncio.run(ensure_topics(settings, names.specs(3), check_partitions=True))
    described = asyncio.run(_described(settings, list(names.specs(3))))
    assert described[names.cohorts] == (1, "compact")
    assert described[names.alert_rules] == (1, "compact")
    assert described[names.events] == (3, "") and described[names.results] == (3, "")
    assert {described[t] for t in (names.deadletter, names.alerts, names.alerts_input)} == {(1, "")}


def test_an_existing_definitions_topic_that_is_not_compacted_is_reported_with_the_fix(broker, topic_prefix, caplog):
    settings = settings_for(broker, topic_prefix, partitions=2)
    names = TopicNames(topic_prefix)
    asyncio.run(_create_plain(settings, names.cohorts, 1))  # as a version before compaction made it
    with caplog.at_level(logging.WARNING, logger="callqa.kafka"):
        asyncio.run(ensure_topics(settings, names.specs(2), check_partitions=True))
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert f"topic {names.cohorts} is not compacted" in warnings[0]
    assert f"--entity-name {names.cohorts} --add-config cleanup.policy=compact" in warnings[0]
    # The topics it created itself are compacted: asking again reports nothing more.
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="callqa.kafka"):
        asyncio.run(ensure_topics(settings, names.only(2, names.alert_rules)))
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]


def test_an_events_topic_with_another_partition_count_stops_the_start(broker, topic_prefix):
    settings = settings_for(broker, topic_prefix, partitions=4)
    names = TopicNames(topic_prefix)
    asyncio.run(_create_plain(settings, names.events, 2))
    with pytest.raises(ValueError, match=rf"topic '{names.events}' has 2 partitions, this deployment expects 4"):
        asyncio.run(ensure_topics(settings, names.specs(4), check_partitions=True))
