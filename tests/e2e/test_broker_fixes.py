"""The embedded-broker workarounds: pinned to what they replace, and the probe proven on the broker."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from faust import streams as faust_streams
from faust.app import base as faust_app
from faust.sensors import Monitor
from faust.transport.consumer import Consumer as FaustConsumer
from faust.transport.drivers import aiokafka as faust_aiokafka
from faust.transport.utils import DefaultSchedulingStrategy
from faust.types import TP
from faust.types import tuples as faust_tuples

from streams.kafka.transports import (
    FETCH_MAX_WAIT_MS,
    DirectHandoffConsumer,
    DirectHandoffTransport,
    EmbeddedBrokerConsumer,
    EmbeddedBrokerTransport,
    InterleavedScheduler,
    LeanMonitor,
    current_event_for,
    faust_broker_url,
    probe_high_watermarks,
    verified_end_offsets,
)
from tests.helpers.pinning import each_pin, source_digest

# The exact source of each method streams/kafka/transports.py replaces or builds on. An upgrade of Faust or
# aiokafka that changes one of them fails here: re-read the new code, port the fix, update the hash.
PINNED = {
    (FaustConsumer, "_drain_messages"): "44a2500309e83c630493f6828af50166ec8d96a0b3e4fb2bab735f704ae93417",
    (FaustConsumer, "getmany"): "4b168d84882a70d6e3e2f9804430a63b92f8fd117d3187cbb4aeb54305bda34e",
    (
        faust_aiokafka.AIOKafkaConsumerThread,
        "_highwaters",
    ): "a7f4f97d9f32aca2777713e22671d70eae4b3ae51541bb09a90448ce83acefce",
    (
        faust_aiokafka.Consumer,
        "_new_consumer_thread",
    ): "0870ec53dea75083995e3565c0f0a25a1c63ecceaeb238e92e2585e3623af5a9",
    # The fetch wait: Faust's consumer factory, and aiokafka reading `_fetch_max_wait_ms` at start.
    (
        faust_aiokafka.AIOKafkaConsumerThread,
        "_create_worker_consumer",
    ): "c2701bfc3e6f6cad95c2be36d6a255a86e2c57d18d36cc1082b5fb5c482d99d7",
    (AIOKafkaConsumer, "start"): "2f1ba70443327538800d348e61042cdedd5a5e6306f40ebe1a06dddba7494c45",
    # Direct delivery: what a message delivered straight to a handler relies on.
    (faust_app.App, "create_event"): "15fea3d1e95e6625b2f6a969e9ce4bbed786bed15fde58f0c6518f6e461f7a10",
    (faust_tuples.Message, "ack"): "4751b72c4ed84153a7b6c14fdfe41cc92e477b38a6c6089cb785532ef5771688",
    # Acknowledging in bulk: what ack_all does inline.
    (faust_tuples.Message, "decref"): "f23396189d0e55922d5c9c627879af52e076aa2a14262b4ea72aee86534c729b",
    (faust_tuples.ConsumerMessage, "on_final_ack"): "45d670b6a8ac4bd07a3e5600c89358638415b7a2bf1d17c03c260cfc1b8a8e5a",
    (FaustConsumer, "ack"): "5fcf41cf45153475de3790dc56fec1b83335956dc8b3bf7ff6bbb2b57627f03f",
    # The record order the interleaved scheduler keeps.
    (DefaultSchedulingStrategy, "iterate"): "aa1147fa5c2101b8cd1f60055faaa7ce8b9799754c1fe61aa19a9450e13b7c67",
    (DefaultSchedulingStrategy, "records_iterator"): "b23981c4d98568a5c393eaefee08be7289aea8cb4f035fc7976260c0228e738f",
    # The lean monitor's replacements.
    (Monitor, "on_message_in"): "b2a9a9045b2f456cc736fdbf99f47f4f45335896050c9e48703dfc8146ca51ea",
    (Monitor, "on_stream_event_in"): "df6d2e5f6397ce441d1fdeb83cb7cb5893a33e507e5e0c8caad38e6a916d838d",
    (Monitor, "on_stream_event_out"): "2d2277a6dbda754cd655207496c08adb6b9141e59556cd9373593c1ef28a18bd",
    (Monitor, "on_message_out"): "7c4054247cde96c35740d0f5876b90d67549eed0af16f19cdcb3337e719a6c3b",
    (Monitor, "on_table_get"): "240aac793cfe60027fc2ac92951319c2fafce5f60860db858a830b77cd8b037c",
    (Monitor, "on_table_set"): "fe5ba12e91b2f6d4de611d82d7856f9641b97cc0c67d0a592d515167703ea127",
    (Monitor, "on_send_initiated"): "6394b4e330614dbb9fdf2c98f91c7cb7668fc4caefac77d40e15e6cfb2b64355",
    (Monitor, "on_send_completed"): "4942b34ea1f35eafb1edae10b6c4381b8492e8f30352ba3a24578f55d15331eb",
}


@each_pin(PINNED)
def test_the_replaced_faust_method_is_unchanged(owner, name):
    assert source_digest(owner, name) == PINNED[(owner, name)]


def test_the_worker_consumer_of_the_tansu_transport_waits_briefly_for_fetches():
    import faust

    async def build() -> int:  # aiokafka objects are made inside a running loop
        app = faust.App("t-fetch-wait", broker="tansu://127.0.0.1:9", autodiscover=False)
        return app.consumer._thread._create_worker_consumer(app.transport)._fetch_max_wait_ms

    assert asyncio.run(build()) == FETCH_MAX_WAIT_MS < 1500


def _consumer_messages(tp: TP, offsets: range) -> list:
    return [
        faust_tuples.ConsumerMessage(tp.topic, tp.partition, offset, 0, 0, [], b"k", b"v", None, 1, 1, tp)
        for offset in offsets
    ]


def _ack_state(consumer, messages) -> tuple:
    return (
        {tp: list(offsets) for tp, offsets in consumer._acked.items()},
        {tp: set(index) for tp, index in consumer._acked_index.items()},
        consumer._n_acked,
        [(message.acked, message.refcount) for message in messages],
    )


def test_acknowledging_in_bulk_leaves_what_acknowledging_one_by_one_leaves():
    import faust

    async def acknowledged(in_bulk: bool) -> tuple:
        app = faust.App("t-ack-all", broker="tansu://127.0.0.1:9", autodiscover=False)
        consumer = app.consumer
        assert isinstance(consumer, DirectHandoffConsumer)
        acking, quiet = TP("events", 0), TP("no-acks", 0)
        app.topics._acking_topics.add(acking.topic)
        consumer._committed_offset[acking] = 3  # messages below the committed offset count for nothing
        messages = _consumer_messages(acking, range(10)) + _consumer_messages(quiet, range(2))
        messages[5].incref(2)  # held twice (a stream's copy): the first ack releases one hold, the next acknowledges
        messages[7].acked = True  # acknowledged already
        batches = [messages[:6], messages[6:] + [messages[5]]]
        for batch in batches:
            if in_bulk:
                consumer.ack_all(batch)
            else:
                for message in batch:
                    message.ack(consumer)
        return _ack_state(consumer, messages)

    one_by_one, in_bulk = asyncio.run(acknowledged(False)), asyncio.run(acknowledged(True))
    assert in_bulk == one_by_one
    assert in_bulk[0] == {TP("events", 0): [3, 4, 6, 8, 9, 5]} and in_bulk[2] == 6


@pytest.mark.parametrize("sizes", [[], [0], [0, 0], [3], [1, 4, 0, 2], [5, 5], [2, 0, 7]])
def test_the_interleaved_scheduler_deals_records_as_faust_s_does_for_one_topic(sizes):
    records = {
        TP("events", partition): [f"{partition}-{i}" for i in range(size)] for partition, size in enumerate(sizes)
    }
    assert list(InterleavedScheduler().iterate(records)) == list(DefaultSchedulingStrategy().iterate(records))


def test_the_interleaved_scheduler_keeps_each_partition_s_order_across_topics():
    records = {TP("events", 0): [1, 2, 3], TP("alert-rules", 0): ["a"], TP("events", 1): [4, 5]}
    dealt = list(InterleavedScheduler().iterate(records))
    assert sorted(map(str, dealt)) == sorted(str((tp, r)) for tp, batch in records.items() for r in batch)
    for tp, batch in records.items():
        assert [record for at, record in dealt if at == tp] == batch


def test_the_worker_app_uses_the_interleaved_scheduler_and_acknowledges_in_bulk():
    from streams.config import Settings
    from streams.worker.app import create_app

    async def build():
        callqa = create_app(Settings(broker="tansu://127.0.0.1:9", app_id="t-scheduler"))
        return callqa.app.consumer

    consumer = asyncio.run(build())
    assert isinstance(consumer.scheduler, InterleavedScheduler) and isinstance(consumer, DirectHandoffConsumer)


def test_the_worker_producer_s_buffer_holds_a_burst_of_sends_without_stopping_a_stream():
    from streams.config import Settings
    from streams.kafka.prompt_stop import PRODUCER_BUFFER_MAX_MESSAGES
    from streams.worker.app import create_app

    async def build():
        return create_app(Settings(broker="tansu://127.0.0.1:9", app_id="t-producer-buffer")).app.producer

    producer = asyncio.run(build())
    assert producer.buffer.max_messages == PRODUCER_BUFFER_MAX_MESSAGES > 100  # (Faust's own: 100)


def test_the_lean_monitor_still_counts_messages_and_events():
    from faust.types import TP

    monitor = LeanMonitor()
    tp = TP("t", 0)
    monitor.on_message_in(tp, 7, object())
    assert monitor.on_stream_event_in(tp, 7, object(), object()) is None
    assert (monitor.messages_received_total, monitor.events_total, monitor.tp_read_offsets[tp]) == (1, 1, 7)


def test_the_lean_monitor_notes_when_a_partition_s_records_were_last_taken_up():
    # Faust's consumer reports a partition with a lag and no such time as "not started processing",
    # at ERROR, five minutes after the worker started: direct delivery never passes a stream.
    from faust.types import TP

    monitor = LeanMonitor()
    tp = TP("t", 2)
    before = time.monotonic()
    monitor.track_tp_end_offset(tp, 40)
    assert monitor.tp_end_offsets[tp] == 40 and before <= monitor.stream_inbound_time[tp] <= time.monotonic()


def test_the_current_event_of_a_stream_is_read_as_the_fixes_set_it():
    # current_event_for sets faust.streams._current_event to a weak reference to an event.
    assert (
        source_digest(faust_streams, "current_event")
        == "3b821f1a78d86a58234dfe781fbf539775b00e66fdac9489c1c398a2d81d7e9d"
    )


def test_a_directly_delivered_message_is_the_current_event_while_a_table_is_written():
    import faust
    from faust.types import TP

    app = faust.App("t-current-event", broker="tansu://127.0.0.1:9", autodiscover=False)
    message = faust_tuples.Message("t", 3, 41, 0.0, None, None, b"k", b"v", None)
    assert faust_streams.current_event() is None
    with current_event_for(app, message):
        event = faust_streams.current_event()
        assert event is not None and event.message is message and event.message.tp == TP("t", 3)
    assert faust_streams.current_event() is None


def test_the_tansu_scheme_selects_the_fixed_transport():
    from faust.transport.drivers import by_url

    assert by_url("tansu://127.0.0.1:9092") is EmbeddedBrokerTransport
    assert EmbeddedBrokerTransport.Consumer is EmbeddedBrokerConsumer
    assert issubclass(EmbeddedBrokerConsumer, DirectHandoffConsumer)
    assert by_url("kafka://127.0.0.1:9092") is faust_aiokafka.Transport  # Faust's own scheme is left alone


def test_a_worker_s_kafka_url_selects_the_hot_path_transport_without_the_embedded_broker_s_fixes():
    import faust

    async def build(url: str) -> tuple[type, type, int]:
        app = faust.App("t-kafka-url", broker=faust_broker_url(url), autodiscover=False)
        fetch_wait = app.consumer._thread._create_worker_consumer(app.transport)._fetch_max_wait_ms
        return type(app.transport), type(app.consumer), fetch_wait

    assert asyncio.run(build("kafka://10.0.0.1:9092")) == (DirectHandoffTransport, DirectHandoffConsumer, 1500)
    assert asyncio.run(build("tansu://10.0.0.1:9092")) == (
        EmbeddedBrokerTransport,
        EmbeddedBrokerConsumer,
        FETCH_MAX_WAIT_MS,
    )
    assert asyncio.run(build("aiokafka://10.0.0.1:9092"))[:2] == (faust_aiokafka.Transport, faust_aiokafka.Consumer)


def test_the_worker_and_callqa_s_readers_read_committed_records_only():
    # (What a transactional producer aborted, they then skip: the embedded broker has no transactions to show it.)
    import faust

    from streams.config import Settings
    from streams.kafka.clients import READ_COMMITTED, reader

    async def isolation(url: str) -> str:
        app = faust.App("t-isolation", broker=faust_broker_url(url), autodiscover=False)
        return app.consumer._thread._create_worker_consumer(app.transport)._isolation_level

    async def reader_isolation() -> str:
        return reader(Settings())._isolation_level

    assert (
        asyncio.run(isolation("kafka://10.0.0.1:9092"))
        == asyncio.run(isolation("tansu://10.0.0.1:9092"))
        == READ_COMMITTED
    )
    assert asyncio.run(reader_isolation()) == READ_COMMITTED


def test_every_kafka_url_faust_would_read_as_kafka_goes_to_the_hot_path_transport_with_its_hosts():
    both = "callqa-kafka://a:9092;callqa-kafka://b:9093"
    assert faust_broker_url("kafka://a:9092;kafka://b:9093") == both
    assert faust_broker_url("kafka://a:9092;b:9093") == both  # a host without a scheme takes the first's
    assert faust_broker_url("a:9092;b:9093") == both  # no scheme at all: Faust's default, kafka
    assert faust_broker_url(" KAFKA://a:9092, kafka://b:9093") == both
    assert faust_broker_url("tansu://127.0.0.1:9092") == "tansu://127.0.0.1:9092"
    assert faust_broker_url("aiokafka://a:9092;b:9093") == "aiokafka://a:9092;b:9093"


@pytest.mark.broker
def test_the_fetch_probe_finds_the_true_end_of_a_partition(broker, topic_prefix):
    """Records produced in batches: the probe must report exactly how many there are."""
    topic = f"{topic_prefix}.probe"
    tp = TopicPartition(topic, 0)

    async def scenario() -> tuple[int, int, int]:
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
            # What a reader of committed records takes for the end: the stable offset (no transactions here).
            verified = (await verified_end_offsets(consumer, [tp]))[tp]
        finally:
            await consumer.stop()
        return listed, probed, verified

    listed, probed, verified = asyncio.run(scenario())
    assert probed == verified == 120
    assert listed <= probed  # the broker's ListOffsets answer may fall short; the probe never does


def test_the_worker_producer_batches_by_linger_not_by_a_result_or_two():
    from streams.config import Settings
    from streams.worker.app import create_app

    async def producer_settings():
        callqa = create_app(Settings(broker="tansu://127.0.0.1:9", app_id="t-producer"))
        return callqa.app.producer._settings_default()

    settings = asyncio.run(producer_settings())
    # A result is ~10 KB: a batch must hold dozens, and stay under Kafka's default 1 MiB record batch.
    assert 256 * 1024 <= settings["max_batch_size"] < 1_048_576
    assert settings["linger_ms"] == 5
    assert settings["max_request_size"] >= settings["max_batch_size"]


def test_the_worker_s_tables_ask_rocksdb_for_small_write_buffers_and_cache():
    # Faust's RocksDB defaults (64 MiB buffers, three of them, a 2 GiB cache, for each partition's
    # database) let a worker's memory rise for as long as it ran.
    from streams.config import Settings
    from streams.tuning import TABLE_STORE_OPTIONS
    from streams.worker.app import create_app

    async def build():
        callqa = create_app(Settings(broker="tansu://127.0.0.1:9", app_id="t-table-options", store="rocksdb://"))
        return callqa.app.tables

    tables = asyncio.run(build())
    assert set(tables) >= {"call-journal", "alert-engine"}
    for table in tables.values():
        assert table.options == TABLE_STORE_OPTIONS and table.options is not TABLE_STORE_OPTIONS
    assert TABLE_STORE_OPTIONS["block_cache_size"] <= 64 * 1024 * 1024
