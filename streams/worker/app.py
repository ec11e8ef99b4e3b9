"""The Faust application: topics, the call journal table, and the scoring agent.

The agent is deliberately short: it hands each message to `MessageFlow` (streams/worker/message_flow.py),
which runs it through `LiveScorer` (streams/worker/live_scorer.py, the same engine as `callqa replay`) and performs
the sends it asks for through `FaustSink`.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import faust

from scorers.engine import CallEngine
from streams.alerts.live import install_alerts
from streams.alerts.webhook import WebhookPoster
from streams.config import PRODUCER_MAX_REQUEST_BYTES, Settings
from streams.journal.call_journal import SEGMENT_SECONDS
from streams.journal.table import journal_table
from streams.kafka.clients import kafka_ssl_context
from streams.kafka.health import install_broker_probe
from streams.kafka.prompt_stop import PromptStopApp
from streams.kafka.transports import (
    DirectHandoffConsumer,
    InterleavedScheduler,
    LeanMonitor,
    current_event_for,
    deliver_directly,
    faust_broker_url,
)
from streams.topics import TopicNames
from streams.tuning import table_store_options
from streams.web.api import install_api, json_errors, write_token_check
from streams.web.call_index import CallIndex
from streams.web.prometheus import CallqaCollector, watch_index
from streams.web.query_api import install_query_api, worker_health
from streams.web.results_view import ResultsView
from streams.web.routes import checked_query, reads_content
from streams.wiring import build_engine
from streams.worker.clock import install_idle_clock
from streams.worker.live_scorer import LiveScorer
from streams.worker.message_flow import MessageFlow, ResultHook

logger = logging.getLogger("callqa.worker")


def faust_broker_credentials(settings: Settings) -> Any:
    """SASL/SSL credentials for a real cluster; None for PLAINTEXT."""
    protocol = settings.kafka_security_protocol.upper()
    if protocol == "PLAINTEXT":
        return None
    context = kafka_ssl_context(settings)
    if protocol.startswith("SASL"):
        return faust.SASLCredentials(
            username=settings.kafka_sasl_username,
            password=settings.kafka_sasl_password,
            mechanism=settings.sasl_mechanism,
            ssl_context=context,
        )
    return faust.SSLCredentials(context)


@dataclass
class FaustSink:
    """The message flow's sends and journal writes, through Faust's producer and table."""

    app: faust.App
    journal: Any  # the call-journal table
    results_topic: Any
    deadletter_topic: Any
    events_topic: Any

    _producer: Any = field(default=None, repr=False)

    async def send_result(self, key: bytes, value: bytes) -> Any:
        return await self._send(self.results_topic, key, value)

    async def send_dead_letter(self, key: bytes, value: bytes) -> Any:
        return await self._send(self.deadletter_topic, key, value)

    async def send_event(self, key: bytes, value: bytes) -> Any:
        return await self._send(self.events_topic, key, value)

    async def _send(self, topic: Any, key: bytes, value: bytes) -> Any:
        """`topic.send(key=key, value=value)` without Faust's channel layer: these topics' keys and
        values are raw bytes (nothing to serialize), and none of these sends is attached to a stream
        event (the events topic is delivered directly), so `Topic.send` only wrapped the producer's
        send in a FutureMessage, a PendingMessage and two sensor calls (no-ops in LeanMonitor) —
        about a third of publishing a result (py-spy). The same records go out: the same producer,
        partitioner (the key's), headers (none) and timestamp (the producer's); the future returned
        is the producer's, as `Topic.send` returned it."""
        producer = self._producer
        if producer is None:
            producer = self._producer = await self.app.maybe_start_producer()
        return await producer.send(topic.get_topic_name(), key, value, partition=None, timestamp=None, headers={})

    def journal_items(self) -> Iterable[tuple[bytes, bytes]]:
        return self.journal.items()

    def write_journal(self, message: Any, changes: list[tuple[bytes, bytes | None]]) -> list[Any]:
        journal = self.journal
        with current_event_for(self.app, message):
            for key, value in changes:
                if value is None:
                    journal.pop(key, None)
                else:
                    journal[key] = value
        return journal.take_changelog_sends()

    def acknowledge(self, acks: list[Any]) -> None:
        consumer = self.app.consumer
        if isinstance(consumer, DirectHandoffConsumer):
            consumer.ack_all(acks)  # one hold of Faust's ack lock for the lot (streams/kafka/transports.py)
            return
        for message in acks:
            message.ack(consumer)


def _log_restored(partition: int, calls: int) -> None:
    logger.info("partition %s: restored %s calls from the journal", partition, calls)


@dataclass
class CallqaApp:
    settings: Settings
    app: faust.App
    topics: TopicNames
    live: LiveScorer
    events_topic: Any = None
    results_topic: Any = None
    deadletter_topic: Any = None
    result_hooks: list[ResultHook] = field(default_factory=list)
    # Set once the cohorts topic has been read to its end (streams/web/api.py); scoring waits for it.
    cohorts_read: asyncio.Event = field(default_factory=asyncio.Event)


def faust_app(settings: Settings) -> faust.App:
    """The Faust app with callqa's transports, monitor, scheduler and producer settings."""
    return PromptStopApp(
        settings.app_name,
        broker=faust_broker_url(settings.broker),
        broker_credentials=faust_broker_credentials(settings),
        store=settings.store,
        datadir=settings.data_dir,
        web_host=settings.web_host,
        web_bind=settings.web_listen_host,  # (Faust's default would be 0.0.0.0)
        web_port=settings.web_port,
        web_application_options={
            "middlewares": [json_errors, write_token_check(settings.api_token_in_force, reads_content), checked_query]
        },
        # Faust's own /router and /table pages: the journal table holds transcripts, and they are no
        # part of callqa's API (streams/web/routes.py).
        web_router_enabled=False,
        web_tables_enabled=False,
        topic_partitions=settings.partitions,
        topic_replication_factor=settings.replication_factor,
        # A 10 s session timeout makes the group join take ~5 s instead of ~30 s (the embedded broker
        # holds a join for half of it; docs/guides/embedded-broker.md#limits-of-the-embedded-broker).
        broker_session_timeout=10.0,
        broker_heartbeat_interval=3.0,
        consumer_auto_offset_reset="earliest",
        stream_buffer_maxsize=65536,
        stream_wait_empty=False,
        producer_linger=0.005,
        # A result is some 10 KB of JSON: with aiokafka's 16 KiB batches nearly every result filled a
        # batch and went out at once in a produce request of its own, and each request to a broker on
        # another core costs a wake-up there (the batched bench worker spent 16 % of its time in those
        # sends). Batches this large fill only with the linger, so results and journal segments share
        # requests (batched worker 21-22 -> 17-18.5 us CPU an event). Below Apache Kafka's default
        # `message.max.bytes` (1 MiB), which bounds a record batch; a larger single record still goes
        # alone, up to the request size below.
        producer_max_batch_size=512 * 1024,
        # A dead letter carries up to 256 KiB of its original (base64 and text): well under this.
        producer_max_request_size=PRODUCER_MAX_REQUEST_BYTES,
        producer_compression_type=settings.compression_type,
        autodiscover=False,
        key_serializer="raw",
        value_serializer="raw",
        Monitor=LeanMonitor,
        ConsumerScheduler=InterleavedScheduler,
    )


def create_app(settings: Settings, engine: CallEngine | None = None) -> CallqaApp:
    names = TopicNames(settings.topic_prefix)
    app = faust_app(settings)
    engine = engine or build_engine(settings)
    live = LiveScorer(engine, max_message_bytes=settings.max_message_bytes, topic_partitions=settings.partitions)
    callqa = CallqaApp(settings, app, names, live)

    events_topic = app.topic(names.events, key_type=bytes, value_type=bytes, partitions=settings.partitions)
    results_topic = app.topic(names.results, key_type=bytes, value_type=bytes, partitions=settings.partitions)
    deadletter_topic = app.topic(names.deadletter, key_type=bytes, value_type=bytes, partitions=1)
    journal = journal_table(
        app,
        "call-journal",
        key_type=bytes,
        value_type=bytes,
        partitions=settings.partitions,
        options=table_store_options(),
    )
    callqa.events_topic, callqa.results_topic, callqa.deadletter_topic = events_topic, results_topic, deadletter_topic

    flow = MessageFlow(
        live,
        FaustSink(app, journal, results_topic, deadletter_topic, events_topic),
        result_hooks=callqa.result_hooks,
        on_restored=_log_restored,
        max_result_bytes=settings.max_result_bytes,
        ready=callqa.cohorts_read,
    )

    @app.agent(events_topic, name="score-events")
    async def score_events(stream: faust.StreamT) -> None:
        # With callqa's transports (`tansu://`, `kafka://`) the consumer hands these messages to
        # `flow.score` itself (deliver_directly, streams/kafka/transports.py); with Faust's own
        # (`aiokafka://`) they arrive through this stream.
        async for event in stream.noack().events():  # type: ignore[attr-defined]  # (Stream's, not StreamT's)
            await flow.score(event.message)

    deliver_directly(app, names.events, flow.score)

    @app.timer(interval=SEGMENT_SECONDS / 2)
    async def write_quiet_segments() -> None:
        await flow.write_quiet_segments()

    @app.on_partitions_revoked.connect  # type: ignore[arg-type]  # (Faust types receivers narrowly)
    async def on_revoked(sender: Any, revoked: Any, **kwargs: Any) -> None:
        partitions = {tp.partition for tp in revoked if tp.topic == names.events}
        if partitions:
            flow.release(partitions)

    @app.on_partitions_assigned.connect  # type: ignore[arg-type]  # (as above)
    async def on_assigned(sender: Any, assigned: Any, **kwargs: Any) -> None:
        flow.assign({tp.partition for tp in assigned if tp.topic == names.events})

    brokers = install_broker_probe(callqa)
    judge = None
    if settings.judge_enabled:
        from streams.judge.runner import install_judge

        judge = install_judge(callqa)

        @app.on_before_shutdown.connect  # type: ignore[arg-type]  # (as above)
        async def stop_judging(sender: Any, **kwargs: Any) -> None:
            # (Before Faust stops its producer: a request finishing later could no longer publish
            # its answer and would log a traceback for each.)
            await judge.stop()

    if settings.idle_tick_s > 0:

        @app.timer(interval=settings.idle_tick_s)
        async def restore_quiet_partitions() -> None:
            """A partition whose last message was acknowledged before a restart or a rebalance delivers
            nothing until a producer writes to it: restore it anyway, so that the idle clock can sweep
            its open calls."""
            recovery = app.tables.recovery  # type: ignore[attr-defined]  # (TableManager's, not its type's)
            if recovery.in_recovery or not recovery.completed.is_set():
                return  # the journal table is not read back yet
            # The group's latest assignment as the flow knows it, not the assignor's: between a revoke
            # and the next assignment the assignor still lists the partitions revoked.
            for partition in flow.quiet_partitions():
                restored = live.restore_quiet_partition(partition, list(journal.items()), time.monotonic())
                logger.info("partition %s (quiet): restored %s calls from the journal", partition, restored)

    index = CallIndex(
        [metric.name for metric in engine.registry.qa],
        spool_dir=settings.data_dir,
        window_ms=math.ceil(settings.view_window_s * 1000),
        max_leap_ms=settings.max_watermark_leap_ms,
    )
    tallies = watch_index(index, settings.metrics_max_agents)
    install_api(
        callqa,
        engine.cohorts,
        ResultsView(window_ms=math.ceil(settings.view_window_s * 1000), max_leap_ms=settings.max_watermark_leap_ms),
        index,
    )
    install_idle_clock(callqa)
    alerts = install_alerts(callqa)
    install_health(callqa, brokers, judge, alerts.webhook)
    install_query_api(callqa, index, journal, CallqaCollector(index, tallies, worker_health(callqa, judge, alerts)))
    return callqa


def install_health(callqa: CallqaApp, brokers: Any, judge: Any, webhook: WebhookPoster | None) -> None:
    """`GET /health`: the worker's counters, assignment, broker, judge and alert webhook; 503 while the
    broker is unreachable."""
    app, engine, live, names = callqa.app, callqa.live.engine, callqa.live, callqa.topics

    @app.page("/health")
    async def health(web: Any, request: Any) -> Any:
        counters = engine.counters
        assigned = sorted(tp.partition for tp in app.assignor.assigned_actives() if tp.topic == names.events)
        unreachable = brokers.reachable is False
        return web.json(
            {
                "status": "broker_unreachable" if unreachable else "ok",
                "assigned_partitions": assigned,
                "calls_in_memory": len(engine.calls),
                **counters.__dict__,
                "dead_lettered": live.dead_lettered,
                # Partitions whose offsets started again lower: the topic re-created under the worker.
                "offsets_went_back": live.offsets_went_back,
                # Partitions refusing new calls as too late, with counts (a time moved too far
                # ahead refuses them all: docs/guides/hostile-input.md).
                "refusing_late_calls": live.refusing_late_calls(int(time.time() * 1000)),
                # Whether events go from the consumer straight to the scorer (callqa's
                # transports) or through Faust's agent stream (`aiokafka://`).
                "direct_delivery": isinstance(app.consumer, DirectHandoffConsumer),
                # Whether the cohorts topic has been read to its end: scoring waits for it.
                "cohorts_read": callqa.cohorts_read.is_set(),
                "judge": None if judge is None else judge.counters(),
                "alert_webhook": None if webhook is None else asdict(webhook.counters),
                "broker": brokers.document(time.monotonic()),
            },
            status=503 if unreachable else 200,
        )
