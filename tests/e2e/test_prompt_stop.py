"""A worker stops within seconds of SIGTERM with its brokers gone: what the stop replaces is pinned,
a step that does not end is cut short, and a worker stopped with traffic in flight on a broker that
went away exits well within a supervisor's grace period."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.consumer.fetcher import Fetcher
from aiokafka.consumer.group_coordinator import GroupCoordinator
from aiokafka.producer.sender import Sender
from faust.app import base as faust_app
from faust.transport.consumer import Consumer as FaustConsumer
from faust.transport.drivers import aiokafka as faust_aiokafka
from faust.transport.producer import Producer as FaustProducer

from streams.bench.workload import Workload
from streams.config import Settings
from streams.kafka import prompt_stop
from streams.kafka.embedded_broker import EmbeddedBroker
from streams.kafka.prompt_stop import (
    PromptStopApp,
    PromptStopConsumerThread,
    PromptStopProducer,
)
from streams.kafka.transports import faust_broker_url
from streams.worker.app import create_app
from tests.helpers.livekit import start_worker
from tests.helpers.pinning import each_pin, source_digest

# The exact source of what streams/kafka/prompt_stop.py wraps or does in place of: an upgrade of Faust or
# aiokafka that changes one fails here (re-read the new code, port the fix, update the hash).
PINNED = {
    # 1. the last commit: Faust's consumer stop, through its aiokafka driver's.
    (FaustConsumer, "on_stop"): "45b1d2210ce2b526339856969472683f8bcc1b1d04c8dc1fb2315b4eb7fbd5e3",
    (faust_aiokafka.Consumer, "on_stop"): "173f86b366f3608e2d2c7c0b5c7f223eeaf0ae29de99985a24812050792b4ff5",
    # 2. the consumer's thread, and what `close_consumer_without_broker` does in aiokafka's place.
    (
        faust_aiokafka.AIOKafkaConsumerThread,
        "on_thread_stop",
    ): "8dfc004e258b6c25edd2b0986531aea0fc75dd5cef0d0718c87848af33c6f757",
    (AIOKafkaConsumer, "stop"): "bc5da9c98595299a3d968526cd9f4a344e672520892a917547d15151cd588d35",
    (Fetcher, "close"): "1cd24bc1c442149e7d9a4ddef0770f4aa1272c60c4c7f2a89ab7a50e4444d44b",
    (GroupCoordinator, "close"): "f30d831089456312e58c9790ef349046c99bbe73a7358a466eea2a5b1c3b1b58",
    # 3. the application's flush at stop (and where it is called).
    (faust_app.App, "_producer_flush"): "35c92baa028d57bdfc6c7b635030f1a90ec87df61b10054edda4f8dd56e8472e",
    (faust_app.App, "on_stop"): "bfe5a933defb2324031e00f20e2f650176416c192f16c6d70931006699b21938",
    # 4. the producer's stop, and what `close_producer_without_broker` does in aiokafka's place.
    (faust_aiokafka.Producer, "on_stop"): "86799c5ab7b662f7e7b8869a1cca8f22f6fb61ed018db98707331fe180d2518a",
    (FaustProducer, "on_stop"): "b01e5bb117855e6beed7c49948dc3aaae9e2061816a536f8d3855cd216cbf352",
    (AIOKafkaProducer, "stop"): "43ef97147111893b2d336de3e8f7bd2ffbb8a55564705c932af9e9971e6c78f4",
    (Sender, "close"): "f60b3d023d2526f4c30e5642931e94770ddb6e4f2dff5b51155179a841eb06dd",
}


@each_pin(PINNED)
def test_what_the_prompt_stop_wraps_is_unchanged(owner, name):
    assert source_digest(owner, name) == PINNED[(owner, name)]


@pytest.mark.parametrize("url", ["kafka://10.0.0.1:9092", "tansu://10.0.0.1:9092"])
def test_the_worker_app_stops_promptly_on_both_of_callqa_s_transports(url):
    async def build() -> tuple[object, object, object]:
        app = create_app(Settings(broker=url)).app
        return app, app.consumer._thread, app.producer

    app, thread, producer = asyncio.run(build())
    assert isinstance(app, PromptStopApp)
    assert isinstance(thread, PromptStopConsumerThread) and isinstance(producer, PromptStopProducer)


def test_a_consumer_stop_that_does_not_end_is_cut_short_and_its_connections_closed(monkeypatch, caplog):
    import faust

    monkeypatch.setattr(prompt_stop, "STOP_STEP_TIMEOUT_S", 0.2)
    seen: dict[str, bool] = {}

    async def stop_the_thread() -> None:
        thread = faust.App(
            "t-stop-hangs", broker=faust_broker_url("kafka://127.0.0.1:9"), autodiscover=False
        ).consumer._thread
        consumer = AIOKafkaConsumer(bootstrap_servers="127.0.0.1:9")  # never started: no coordinator, no fetcher

        async def leaves_a_group_that_never_answers() -> None:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                seen["cut short"] = True
                raise

        async def client_closed() -> None:
            seen["closed"] = True

        consumer.stop = leaves_a_group_that_never_answers
        consumer._client.close = client_closed
        thread._consumer = consumer
        await asyncio.wait_for(thread.on_thread_stop(), 5)
        await AIOKafkaConsumer.stop(consumer)  # (aiokafka's own, on a consumer never started: only marks it closed)

    with caplog.at_level("WARNING", logger="callqa.broker"):
        asyncio.run(stop_the_thread())
    assert seen == {"cut short": True, "closed": True}
    assert "did not stop within 0.2 s" in caplog.text


def test_a_stop_step_that_ends_in_time_says_nothing_and_one_that_does_not_is_named(monkeypatch, caplog):
    monkeypatch.setattr(prompt_stop, "STOP_STEP_TIMEOUT_S", 0.05)

    async def steps() -> tuple[bool, bool]:
        quick = await prompt_stop.within_stop_timeout(asyncio.sleep(0), "a quick step", "nothing")
        slow = await prompt_stop.within_stop_timeout(asyncio.sleep(3600), "the slow step", "going on without it")
        return quick, slow

    with caplog.at_level("WARNING", logger="callqa.broker"):
        assert asyncio.run(steps()) == (True, False)
    assert [r.getMessage() for r in caplog.records] == [
        "the slow step did not end within 0.05 s (no broker answers?): going on without it"
    ]


@pytest.mark.broker
def test_a_worker_whose_broker_goes_away_mid_traffic_stops_on_sigterm_within_the_grace_period(topic_prefix):
    # A broker of its own, which the test stops (the session's serves every other test). Before, a
    # worker stopped this way waited for ever: its last commit looked for the group's coordinator, or
    # its flush retried the results still in the producer, until a supervisor killed it.
    own = EmbeddedBroker().start(log_path=tempfile.mkdtemp(prefix="callqa-broker-") + "/broker.log")
    worker = sender = None
    try:
        log = Path(tempfile.mkdtemp(prefix="callqa-log-")) / "calls.msgpack"
        workload = Workload(calls=2000, turns=13)
        log.write_bytes(b"".join(workload.records()))
        worker = start_worker(own, topic_prefix)
        worker.wait_ready(assigned=True)
        sender = subprocess.Popen(
            [sys.executable, "-m", "streams.cli", "send", str(log)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={
                **os.environ,
                "CALLQA_BROKER": own.url,
                "CALLQA_TOPIC_PREFIX": topic_prefix,
                "CALLQA_APP_ID": topic_prefix,
            },
        )
        deadline = time.monotonic() + 60
        # The first calls end some way into the log: the worker is then mid-stream, with results on
        # their way to the broker and offsets not yet committed.
        while ((worker.health() or {}).get("results") or 0) < 300 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ((worker.health() or {}).get("applied") or 0) < len(workload.events)
        own.stop()
        time.sleep(2)
        os.killpg(worker.process.pid, signal.SIGTERM)
        assert worker.process.wait(timeout=25) == 0
    finally:
        for process in (sender, worker):
            if process is not None:
                process.kill()
        own.stop()


def test_a_closed_terminals_sighup_stops_a_worker_as_sigterm_does_unless_it_was_started_ignoring_it(
    broker, topic_prefix
):
    # Before, SIGHUP's default ended the worker at once: no last commit, nothing of its stop ran.
    worker = start_worker(broker, topic_prefix, partitions=1)
    # (Once started: a stop asked for while the worker still subscribes can hang — left open.)
    worker.wait_ready(assigned=True)
    try:
        os.kill(worker.process.pid, signal.SIGHUP)
        assert worker.process.wait(timeout=25) == 0
    finally:
        worker.kill()
    found = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:  # (as `nohup callqa worker` starts it: the disposition is inherited)
        immune = start_worker(broker, f"{topic_prefix}-nohup", partitions=1)
    finally:
        signal.signal(signal.SIGHUP, found)
    try:
        immune.wait_ready(assigned=True)
        os.kill(immune.process.pid, signal.SIGHUP)
        time.sleep(2)
        assert immune.process.poll() is None and immune.health() is not None
    finally:
        immune.stop()


def test_a_step_that_swallows_its_cancellation_does_not_hold_the_stop():
    from streams.kafka.clients import CANCELLED_STEP_GRACE_S, ended_within

    async def stubborn() -> None:
        for _ in range(2):  # (as a step retrying on every error might; it ends at the loop's close)
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                continue

    async def scenario() -> tuple[object, float]:
        started = time.monotonic()
        outcome = await ended_within(stubborn(), 0.2)
        return outcome, time.monotonic() - started

    outcome, took = asyncio.run(asyncio.wait_for(scenario(), 30))
    assert outcome is None and took < 0.2 + CANCELLED_STEP_GRACE_S + 1
