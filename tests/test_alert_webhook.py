"""Webhook delivery of alert events: POST JSON, retry with backoff, a bounded queue that never waits."""

from __future__ import annotations

import asyncio

from aiohttp import web

from streams.alert_webhook import WebhookDelivery

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


async def _deliver(delivery: WebhookDelivery, alerts: list[dict]) -> None:
    for alert in alerts:
        delivery.submit(alert)
    task = asyncio.create_task(delivery.run())
    await asyncio.wait_for(delivery.queue.join(), 10)
    task.cancel()


def test_a_failing_post_is_retried_with_growing_backoff_until_it_is_delivered():
    waits: list[float] = []

    async def no_sleep(seconds: float) -> None:
        waits.append(seconds)

    async def scenario() -> list[dict]:
        runner, url, received = await _serve([503, 500])
        delivery = WebhookDelivery(url, sleep=no_sleep)
        await _deliver(delivery, [ALERT])
        await runner.cleanup()
        assert (delivery.counters.delivered, delivery.counters.retries) == (1, 2)
        return received

    received = asyncio.run(scenario())
    assert received == [ALERT] * 3  # two refusals, then accepted
    assert waits == [0.5, 1.0]


def test_a_client_error_is_not_retried():
    async def scenario() -> WebhookDelivery:
        runner, url, received = await _serve([400])
        delivery = WebhookDelivery(url)
        await _deliver(delivery, [ALERT])
        await runner.cleanup()
        assert len(received) == 1
        return delivery

    counters = asyncio.run(scenario()).counters
    assert (counters.delivered, counters.failed, counters.retries) == (0, 1, 0)


def test_a_full_queue_drops_the_event_instead_of_waiting():
    async def scenario() -> WebhookDelivery:
        delivery = WebhookDelivery("http://127.0.0.1:9/never", queue_size=2)
        accepted = [delivery.submit({**ALERT, "dedupe_key": f"k{n}"}) for n in range(3)]
        assert accepted == [True, True, False]
        return delivery

    assert asyncio.run(scenario()).counters.dropped == 1


def test_events_arrive_in_the_order_they_were_submitted():
    async def scenario() -> list[dict]:
        runner, url, received = await _serve([])
        await _deliver(WebhookDelivery(url), [{**ALERT, "dedupe_key": f"k{n}"} for n in range(5)])
        await runner.cleanup()
        return received

    assert [a["dedupe_key"] for a in asyncio.run(scenario())] == [f"k{n}" for n in range(5)]
