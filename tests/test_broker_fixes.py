"""The embedded-broker workarounds: pinned to what they replace, and the probe proven on the broker."""

from __future__ import annotations

import asyncio
import hashlib
import inspect

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from faust.transport.consumer import Consumer as FaustConsumer
from faust.transport.drivers import aiokafka as faust_aiokafka

from streams.broker_fixes import DirectHandoffConsumer, EmbeddedBrokerTransport, probe_high_watermarks

# The exact source of each method streams/broker_fixes.py replaces or builds on. An upgrade of Faust or
# aiokafka that changes one of them fails here: re-read the new code, port the fix, update the hash.
PINNED = {
    (FaustConsumer, "_drain_messages"): "44a2500309e83c630493f6828af50166ec8d96a0b3e4fb2bab735f704ae93417",
    (faust_aiokafka.AIOKafkaConsumerThread, "_highwaters"): "a7f4f97d9f32aca2777713e22671d70eae4b3ae51541bb09a90448ce83acefce",
    (faust_aiokafka.Consumer, "_new_consumer_thread"): "0870ec53dea75083995e3565c0f0a25a1c63ecceaeb238e92e2585e3623af5a9",
}


@pytest.mark.parametrize("owner,name", list(PINNED), ids=[f"{o.__name__}.{n}" for o, n in PINNED])
def test_the_replaced_faust_method_is_unchanged(owner, name):
    source = inspect.getsource(getattr(owner, name))
    assert hashlib.sha256(source.encode()).hexdigest() == PINNED[(owner, name)]


def test_the_tansu_scheme_selects_the_fixed_transport():
    from faust.transport.drivers import by_url

    assert by_url("tansu://127.0.0.1:9092") is EmbeddedBrokerTransport
    assert EmbeddedBrokerTransport.Consumer is DirectHandoffConsumer
    assert by_url("kafka://127.0.0.1:9092") is faust_aiokafka.Transport


@pytest.mark.broker
def test_the_fetch_probe_finds_the_true_end_of_a_partition(broker, topic_prefix):
    """Records produced in batches: the probe must report exactly how many there are."""
    topic = f"{topic_prefix}.probe"
    tp = TopicPartition(topic, 0)

    async def scenario() -> tuple[int, int]:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=50)
        await producer.start()
        try:
            for _ in range(3):  # three batches of 40 records each
                futures = [await producer.send(topic, b"x" * 20, partition=0) for _ in range(40)]
                await asyncio.gather(*futures)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap)
        await consumer.start()
        try:
            consumer.assign([tp])
            listed = (await consumer.end_offsets([tp]))[tp]
            probed = (await probe_high_watermarks(consumer._client, {tp: listed}))[tp]
        finally:
            await consumer.stop()
        return listed, probed

    listed, probed = asyncio.run(scenario())
    assert probed == 120
    assert listed <= probed  # the broker's ListOffsets answer may fall short; the probe never does
