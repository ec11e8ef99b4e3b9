"""Webhook delivery of alert events: POSTed in order from the alerts topic, retried with backoff for as
long as the receiver is down, committed once delivered, so a relay that stops leaves nothing behind."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest
from aiohttp import web
from aiokafka import AIOKafkaConsumer, TopicPartition

from livekit import settings_for
from streams.alert_webhook import WebhookPoster, WebhookRelay
from streams.kafka_clients import connection_options, ensure_topics, producer
from streams.topics import TopicNames

ALERT = {"rule": "agent latency", "state": "firing", "dedupe_key": "k1"}


async def _serve(statuses: list[int]) -> tuple[web.AppRunner, str, list[dict]]:
    """A receiver answering the given statuses in turn (then 200); returns what it received."""
    received: list[dict] = []

    async def receive(request: web.Request) -> web.Response:
        received.append(await request.json())
        return web.Response(status=statuses.pop(0) if statuses else 200)

    app = web.Application()
    app.router.add_post("/hook", receive)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    return runner, f"http://127.0.0.1:{port}/hook", received


def _post_once(statuses: list[int], waits: list[float], **options) -> tuple[bool, WebhookPoster, list[dict]]:
    async def no_sleep(seconds: float) -> None:
        waits.append(seconds)

    async def scenario() -> tuple[bool, WebhookPoster, list[dict]]:
        runner, url, received = await _serve(statuses)
        poster = WebhookPoster(url, sleep=no_sleep, **options)
        async with aiohttp.ClientSession() as session:
            delivered = await poster.deliver(session, json.dumps(ALERT).encode())
        await runner.cleanup()
        return delivered, poster, received

    return asyncio.run(scenario())


def test_a_receiver_down_for_long_is_retried_with_growing_capped_backoff_until_it_takes_the_event():
    # Twelve failures (an outage of minutes, not of 7.5 s): the event is still delivered, not given up.
    waits: list[float] = []
    delivered, poster, received = _post_once([503, 500, 429, 408] + [502] * 8, waits, max_backoff_s=30.0)
    assert delivered is True and received == [ALERT] * 13
    assert (poster.counters.delivered, poster.counters.retries) == (1, 12)
    assert waits == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0, 30.0, 30.0, 30.0]


def test_a_client_error_is_refused_for_good_not_retried():
    delivered, poster, received = _post_once([400], [])
    assert delivered is False and len(received) == 1
    assert (poster.counters.delivered, poster.counters.refused, poster.counters.retries) == (0, 1, 0)


# ------------------------------------------------------------------------ relay through Kafka


async def _publish(settings, topic: str, alerts: list[dict]) -> None:
    kafka = producer(settings)
    await kafka.start()
    try:
        for alert in alerts:
            await kafka.send_and_wait(topic, json.dumps(alert).encode(), key=alert["dedupe_key"].encode())
    finally:
        await kafka.stop()


async def _committed(settings, relay: WebhookRelay) -> int | None:
    """The relay group's committed offset of the topic's one partition (asked without joining it)."""
    probe = AIOKafkaConsumer(group_id=relay.group_id, enable_auto_commit=False, **connection_options(settings))
    await probe.start()
    try:
        return await probe.committed(TopicPartition(relay.topic, 0))
    finally:
        await probe.stop()


async def _until(predicate, timeout_s: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)


@pytest.mark.broker
def test_the_relay_delivers_in_order_resumes_after_a_stop_and_does_not_send_the_history(broker, topic_prefix):
    settings = settings_for(broker, topic_prefix)
    topic = TopicNames(topic_prefix).alerts
    alerts = [{**ALERT, "dedupe_key": f"k{n}"} for n in range(6)]

    async def scenario() -> list[str]:
        await ensure_topics(settings, TopicNames(topic_prefix).only(settings.partitions, topic))
        await _publish(settings, topic, [{**ALERT, "dedupe_key": "history"}])  # before any relay: not sent
        # The receiver is down (503) for its first 8 answers: the relay holds at k0, then delivers.
        runner, url, received = await _serve([503] * 8)
        poster = WebhookPoster(url, first_backoff_s=0.01, max_backoff_s=0.05)
        relay = WebhookRelay(settings, topic, poster)
        task = asyncio.create_task(relay.run())
        await _until(lambda: poster.counters.assigned)
        await _publish(settings, topic, alerts[:3])
        await _until(lambda: poster.counters.delivered == 3)
        while await _committed(settings, relay) != 4:  # (the history's offset, then k0-k2)
            await asyncio.sleep(0.05)
        task.cancel()  # a worker stopping
        await asyncio.gather(task, return_exceptions=True)
        # Published while no relay runs: the next one delivers them, from the last commit.
        await _publish(settings, topic, alerts[3:])
        poster = WebhookPoster(url, first_backoff_s=0.01, max_backoff_s=0.05)
        task = asyncio.create_task(WebhookRelay(settings, topic, poster).run())
        await _until(lambda: poster.counters.delivered == 3)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await runner.cleanup()
        return [alert["dedupe_key"] for alert in received]

    keys = asyncio.run(scenario())
    assert keys == ["k0"] * 9 + ["k1", "k2", "k3", "k4", "k5"]
