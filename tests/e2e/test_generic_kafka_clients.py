"""A generic Kafka client (librdkafka, through confluent-kafka from PyPI) produces the contract's JSON
events to the embedded broker and consumes the scored results: no callqa code on the client's side."""

from __future__ import annotations

import json

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")

from streams.topics import TopicNames  # noqa: E402
from tests.helpers.livekit import start_worker  # noqa: E402
from tests.helpers.pipecat_call import hand_written_call  # noqa: E402

pytestmark = pytest.mark.broker

# What a librdkafka client needs against callqa (docs/guides/kafka-clients.md): keys hashed as the Java
# client and callqa hash them, so that each call's events reach its partition.
PRODUCER = {"partitioner": "murmur2_random"}


def test_confluent_kafka_produces_json_events_and_consumes_the_result(broker, topic_prefix):
    topics = TopicNames(topic_prefix)
    worker = start_worker(broker, topic_prefix)
    try:
        producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap, **PRODUCER})
        failures: list = []
        for event in hand_written_call("ck-1", 1_760_000_000_000):
            producer.produce(
                topics.events,
                key=event["call_id"],
                value=json.dumps(event),
                on_delivery=lambda error, _: failures.append(error) if error else None,
            )
        assert producer.flush(30) == 0
        assert failures == []

        consumer = confluent_kafka.Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": f"{topic_prefix}-reader",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        consumer.subscribe([topics.results])
        result = None
        try:
            while result is None:
                message = consumer.poll(1.0)
                if message is None or message.error():
                    continue
                document = json.loads(message.value())
                if document["call_id"] == "ck-1" and document["final"]:
                    result = document
        finally:
            consumer.close()
    finally:
        worker.stop()
    assert message.key() == b"ck-1"
    assert [t["text"] for t in result["evaluation"]["turns"]][:2] == [
        "Where is my order 4521?",
        "It shipped and arrives Friday.",
    ]
    assert result["evaluation"]["token_usage"]["agent"] == {"n_calls": 1, "prompt": 120, "completion": 9}
    assert result["no_conversation"] is False
