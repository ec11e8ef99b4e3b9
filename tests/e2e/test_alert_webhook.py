"""Webhook delivery of alert events: POSTed in order from the alerts topic, retried with backoff for as
long as the receiver is down, committed once delivered, so a relay that stops leaves nothing behind."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web

from streams.alerts.webhook import WebhookPoster, WebhookRelay
from streams.kafka.clients import ensure_topics, producer
from streams.topics import TopicNames
from tests.helpers.livekit import settings_for

ALERT = {"rule": "agent latency", "state": "firing", "dedupe_key": "k1"}


class Receiver:
    """A webhook receiver on loopback: answers `statuses` in turn, then 503 while `down`, else 200;
    keeps what it accepted, in order, and counts every POST."""

    def __init__(self, statuses: list[int] | None = None) -> None:
        self.statuses, self.down, self.accepted, self.posts = list(statuses or []), False, [], 0

    async def start(self) -> str:
        async def receive(request: web.Request) -> web.Response:
            body = await request.json()
            self.posts += 1
            status = self.statuses.pop(0) if self.statuses else 503 if self.down else 200
            if status < 300:
                self.accepted.append(body)
            return web.Response(status=status)

        app = web.Application()
        app.router.add_post("/hook", receive)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        return f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/hook"


@contextlib.asynccontextmanager
async def serving(routes: dict) -> AsyncIterator[str]:
    """A web server on loopback answering each path of `routes` with its handler, any method; yields
    its base URL."""
    app = web.Application()
    for path, handler in routes.items():
        app.router.add_route("*", path, handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"
    finally:
        await runner.cleanup()


def test_one_post_is_delivered_refused_for_good_or_to_be_tried_again():
    async def scenario() -> list:
        receiver = Receiver([200, 400, 503, 429, 408])
        poster = WebhookPoster(await receiver.start())
        async with aiohttp.ClientSession() as session:
            outcomes = [await poster.post(session, json.dumps(ALERT).encode()) for _ in range(5)]
            await receiver.runner.cleanup()
            outcomes.append(await poster.post(session, b"{}"))  # nobody listening
        assert (poster.counters.delivered, poster.counters.refused) == (1, 1)
        return outcomes

    outcomes = asyncio.run(scenario())
    assert outcomes[:5] == [True, False, "HTTP 503", "HTTP 429", "HTTP 408"]
    # The connection's error, named: which one depends on the interpreter's asyncio (a refused
    # connection, a disconnected server, a body that could not be written), each a ClientError.
    assert isinstance(outcomes[5], str) and issubclass(getattr(aiohttp, outcomes[5].split(":")[0]), aiohttp.ClientError)


def test_a_redirect_is_refused_and_named_not_followed_into_a_get_without_the_event(caplog):
    """Following a 301 would send the event again as a GET without its body, answered 200: counted
    delivered, received by nobody."""
    followed = []

    async def scenario() -> bool | str:
        async def moved(request: web.Request) -> web.Response:
            raise web.HTTPMovedPermanently("/new-hook/S3CRET-TOKEN?key=S3CRET")

        async def new_hook(request: web.Request) -> web.Response:
            followed.append(request.method)
            return web.Response(status=200)

        async with (
            serving({"/hook": moved, "/new-hook/S3CRET-TOKEN": new_hook}) as base,
            aiohttp.ClientSession() as session,
        ):
            poster = WebhookPoster(f"{base}/hook")
            outcome = await poster.post(session, json.dumps(ALERT).encode())
        assert (poster.counters.delivered, poster.counters.refused) == (0, 1)
        return outcome

    with caplog.at_level("WARNING", logger="callqa.alerts.webhook"):
        assert asyncio.run(scenario()) is False
    assert followed == []
    assert "HTTP 301 (a redirect to http://127.0.0.1:" in caplog.text
    assert "/…?…, not followed: only a 307 or 308 to the same host" in caplog.text
    assert "S3CRET" not in caplog.text


def test_a_redirect_elsewhere_or_down_to_http_or_unreadable_is_refused_not_followed_nor_retried(caplog):
    from streams.alerts.webhook import _may_follow

    assert _may_follow("http://hooks.example/a", "https://HOOKS.example/b")  # (an upgrade, the same host)
    assert _may_follow("https://hooks.example/a", "https://hooks.example:8443/b")
    assert not _may_follow("https://hooks.example/a", "http://hooks.example/a")
    assert not _may_follow("https://hooks.example/a", "https://elsewhere.example/a")
    assert not _may_follow("http://hooks.example/a", "ftp://hooks.example/a")

    async def scenario() -> list:
        async def elsewhere(request: web.Request) -> web.Response:
            raise web.HTTPPermanentRedirect("http://127.0.0.2:9/collect?token=S3CRET")

        async def unreadable(request: web.Request) -> web.Response:
            return web.Response(status=301, headers={"Location": "http://[bad/T0KEN"})

        async with (
            serving({"/elsewhere": elsewhere, "/unreadable": unreadable}) as base,
            aiohttp.ClientSession() as session,
        ):
            return [await WebhookPoster(f"{base}/{path}").post(session, b"{}") for path in ("elsewhere", "unreadable")]

    with caplog.at_level("WARNING", logger="callqa.alerts.webhook"):
        assert asyncio.run(scenario()) == [False, False]
    assert "HTTP 308 (a redirect to http://127.0.0.2:9/…?…, not followed" in caplog.text
    assert "S3CRET" not in caplog.text and "T0KEN" not in caplog.text


@pytest.mark.parametrize("status", [307, 308])
def test_a_redirect_that_keeps_the_method_and_body_is_followed_and_the_event_delivered_there(status, caplog):
    received = []

    async def scenario() -> bool | str:
        async def moved(request: web.Request) -> web.Response:
            raise {307: web.HTTPTemporaryRedirect, 308: web.HTTPPermanentRedirect}[status]("/new-hook")

        async def new_hook(request: web.Request) -> web.Response:
            received.append((request.method, await request.json()))
            return web.Response(status=200)

        async def loop(request: web.Request) -> web.Response:
            raise web.HTTPPermanentRedirect("/loop")

        async with (
            serving({"/hook": moved, "/new-hook": new_hook, "/loop": loop}) as base,
            aiohttp.ClientSession() as session,
        ):
            outcome = await WebhookPoster(f"{base}/hook").post(session, json.dumps(ALERT).encode())
            looping = await WebhookPoster(f"{base}/loop").post(session, json.dumps(ALERT).encode())
        assert looping == "more than 5 redirects in a row"  # (tried again later, the event kept)
        return outcome

    with caplog.at_level("WARNING", logger="callqa.alerts.webhook"):
        assert asyncio.run(scenario()) is True
    assert received == [("POST", ALERT)]
    # A permanent move is said, once by each poster, for the URL to be set to it: the looping one, with six
    # 308s, says it once too.
    assert caplog.text.count("moved for good") == (2 if status == 308 else 1)


def test_a_failure_that_quotes_the_url_names_its_host_but_not_its_token():
    async def scenario() -> bool | str:
        poster = WebhookPoster("http://[bad/services/T0KEN")  # (aiohttp quotes a URL it cannot read)
        async with aiohttp.ClientSession() as session:
            return await poster.post(session, b"{}")

    problem = asyncio.run(scenario())
    assert isinstance(problem, str) and "http://[bad/…" in problem and "T0KEN" not in problem


def test_a_failure_that_quotes_the_url_as_the_client_rewrote_it_does_not_show_its_token_either():
    async def scenario() -> bool | str:
        async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"NOT HTTP AT ALL\r\n\r\n")  # (the client's error quotes the URL it sent)
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(garbage, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        poster = WebhookPoster(f"http://127.0.0.1:{port}/services/T0KÉN/a%2fT0KEN?k=S3CRET")
        try:
            async with aiohttp.ClientSession() as session:
                return await poster.post(session, b"{}")
        finally:
            server.close()
            await server.wait_closed()

    problem = asyncio.run(scenario())
    assert isinstance(problem, str) and problem.startswith("ClientResponseError"), problem
    assert "url=" in problem and "T0K" not in problem and "S3CRET" not in problem and "127.0.0.1" in problem


def test_the_backoff_doubles_from_the_first_wait_up_to_its_cap_however_long_the_outage():
    poster = WebhookPoster("http://127.0.0.1:9/hook", first_backoff_s=0.5, max_backoff_s=30.0)
    assert [poster.backoff_s(n) for n in (1, 2, 3, 4, 5, 6, 7, 8, 1000)] == [0.5, 1, 2, 4, 8, 16, 30, 30, 30]


# ------------------------------------------------------------------------ relay through Kafka


async def _publish(settings, topic: str, alerts: list[dict]) -> None:
    """In one producer batch, as the alert engine's events of one result go."""
    kafka = producer(settings)
    await kafka.start()
    try:
        sent = [
            await kafka.send(topic, json.dumps(alert).encode(), key=alert["dedupe_key"].encode()) for alert in alerts
        ]
        await asyncio.gather(*sent)
    finally:
        await kafka.stop()


async def _until(predicate, timeout_s: float = 40.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)


async def _stop(task: asyncio.Task) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def _relay(settings, topic: str, url: str, **options) -> tuple[WebhookPoster, asyncio.Task]:
    poster = WebhookPoster(url, first_backoff_s=0.05, max_backoff_s=0.2)
    return poster, asyncio.create_task(WebhookRelay(settings, topic, poster, **options).run())


@pytest.mark.broker
def test_a_relay_stopped_while_the_receiver_is_down_leaves_its_events_to_the_next_and_no_history(broker, topic_prefix):
    settings = settings_for(broker, topic_prefix)
    topic = TopicNames(topic_prefix).alerts

    async def scenario() -> list[str]:
        await ensure_topics(settings, TopicNames(topic_prefix).only(settings.partitions, topic))
        # The topic's history, in one batch (whose end the embedded broker misreports): never sent.
        await _publish(settings, topic, [{**ALERT, "dedupe_key": f"history{n}"} for n in range(5)])
        receiver = Receiver()
        url = await receiver.start()
        receiver.down = True
        poster, first = _relay(settings, topic, url)
        await _until(lambda: poster.counters.assigned)
        await _publish(settings, topic, [{**ALERT, "dedupe_key": "k0"}])
        await _until(lambda: receiver.posts >= 3)  # k0 failing
        await _stop(first)  # a worker stopped during the outage, before the group ever committed k0
        receiver.down = False
        await _publish(settings, topic, [{**ALERT, "dedupe_key": "k1"}, {**ALERT, "dedupe_key": "k2"}])
        poster, second = _relay(settings, topic, url)
        await _until(lambda: poster.counters.delivered == 3)
        await _stop(second)
        await receiver.runner.cleanup()
        return [alert["dedupe_key"] for alert in receiver.accepted]

    assert asyncio.run(scenario()) == ["k0", "k1", "k2"]


@pytest.mark.broker
def test_a_receiver_down_longer_than_the_poll_interval_keeps_one_relay_delivering_in_order(broker, topic_prefix):
    # Two relays of one group; the holder retries for 3 poll intervals. Dropped from the group, it would
    # hand the topic to the other, and both would deliver k0.
    settings = settings_for(broker, topic_prefix)
    topic = TopicNames(topic_prefix).alerts

    async def scenario() -> tuple[list[str], list[bool]]:
        await ensure_topics(settings, TopicNames(topic_prefix).only(settings.partitions, topic))
        receiver = Receiver()
        url = await receiver.start()
        relays = [_relay(settings, topic, url, max_poll_interval_ms=2000) for _ in range(2)]
        await _until(lambda: any(poster.counters.assigned for poster, _ in relays))
        receiver.down = True
        await _publish(settings, topic, [{**ALERT, "dedupe_key": "k0"}, {**ALERT, "dedupe_key": "k1"}])
        await asyncio.sleep(6.0)
        holders = [poster.counters.assigned for poster, _ in relays]
        receiver.down = False
        await _until(lambda: len(receiver.accepted) >= 2)
        await asyncio.sleep(1.0)  # (time for a second relay's duplicate, were there one)
        for _, task in relays:
            await _stop(task)
        await receiver.runner.cleanup()
        return [alert["dedupe_key"] for alert in receiver.accepted], holders

    keys, holders = asyncio.run(scenario())
    assert keys == ["k0", "k1"]
    assert sorted(holders) == [False, True]  # one relay held the topic through the outage
