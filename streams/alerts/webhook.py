"""Webhook delivery of alert events: read from `callqa.alerts`, POSTed in order, committed once delivered.

The alerts topic is the queue. A relay (`WebhookRelay.run`) reads it in a consumer group of its own,
so that one worker of a deployment delivers, POSTs each event as JSON and commits its offset once the
event was delivered or refused for good. A receiver that is down holds the relay at its event, which
is retried with backoff (doubling, up to `max_backoff_s`) for as long as it takes: the events behind
it wait on the topic, not in memory, and scoring never waits for them. A worker that stops or crashes
leaves them to the next relay, which starts from the last committed offset. Delivery is at least
once: an event delivered just before a stop, and not yet committed, comes again (a receiver tells it
by its `dedupe_key` and `state`).

A failed POST (a connection error, a timeout, a 5xx, 408 or 429 answer) is retried; any other answer
from 300 up is final, logged and counted, as retrying it cannot help. A 307 or 308 redirect to the
same host, not from https down to http, is followed (up to MAX_REDIRECTS), the event POSTed again
where it points (a 308 is logged once: the webhook URL should be set to where it points); any other
redirect is not: an HTTP client following a 301, 302 or 303 sends the event again as a GET without its
body, which a receiver answers 200 having received nothing, and a redirect elsewhere would send the
alert where it was never configured to go. The log names where it pointed.

A relay group with no committed offset starts where the topic ended when its first relay started, and
commits that at once: configuring a webhook does not send the history, and a relay started later
resumes from there.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import yarl
from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from aiokafka.errors import CommitFailedError, IllegalStateError

from streams.config import Settings
from streams.kafka.clients import connection_options, ended_within, reader
from streams.kafka.transports import verified_end_offsets
from streams.redaction import redacted_url, without_urls

logger = logging.getLogger("callqa.alerts.webhook")

FIRST_BACKOFF_S = 0.5
MAX_BACKOFF_S = 30.0
TIMEOUT_S = 10.0
RETRIED_CLIENT_STATUSES = frozenset({408, 429})
# Redirects that keep the method and body, followed; past this many in a row, the POST failed.
BODY_KEEPING_REDIRECTS = frozenset({307, 308})
MAX_REDIRECTS = 5
# How long a stopping relay waits for its consumer to leave the group (a broker gone would hold it).
STOP_TIMEOUT_S = 3.0
# A retry is logged at warning level once per this many failures of an event (and its first).
WARN_EVERY = 10


@dataclass(slots=True)
class DeliveryCounters:
    delivered: int = 0
    refused: int = 0  # a 3xx or 4xx answer that retrying cannot change: given up, and committed
    retries: int = 0
    assigned: bool = False  # whether this worker's relay holds the alerts topic (one worker does)


@dataclass
class WebhookPoster:
    """One POST of an event, and the backoff between attempts."""

    url: str
    first_backoff_s: float = FIRST_BACKOFF_S
    max_backoff_s: float = MAX_BACKOFF_S
    counters: DeliveryCounters = field(default_factory=DeliveryCounters)
    _told_moved: bool = field(default=False, repr=False)  # (a 308 is logged once)

    async def post(self, session: aiohttp.ClientSession, body: bytes) -> bool | str:
        """True once delivered; False when refused for good; else why it failed, to try again."""
        url = self.url
        try:
            for _ in range(MAX_REDIRECTS + 1):
                async with session.post(
                    url, data=body, headers={"Content-Type": "application/json"}, allow_redirects=False
                ) as response:
                    status, location = response.status, response.headers.get("Location")
                target = _redirect_target(url, location) if 300 <= status < 400 else None
                if status in BODY_KEEPING_REDIRECTS and target is not None and _may_follow(url, target):
                    if status == 308 and not self._told_moved:  # (permanent: every event would take two trips)
                        self._told_moved = True
                        logger.warning(
                            "alert webhook moved for good (HTTP 308) to %s: set the webhook URL to it",
                            redacted_url(target),
                        )
                    url = target
                    continue
                if status < 300:
                    self.counters.delivered += 1
                    return True
                if status < 500 and status not in RETRIED_CLIENT_STATUSES:
                    self.counters.refused += 1
                    redirect = ""
                    if 300 <= status < 400 and location:
                        where = redacted_url(target if target is not None else location)
                        redirect = (
                            f" (a redirect to {where}, not followed: only a 307 or 308 to the same host, "
                            "not from https to http, is; set the webhook URL to where it points)"
                        )
                    logger.warning("alert webhook refused an event for good: HTTP %s%s", status, redirect)
                    return False
                return f"HTTP {status}"
            return f"more than {MAX_REDIRECTS} redirects in a row"
        except (TimeoutError, aiohttp.ClientError, ValueError) as exc:
            # (An error may quote the URL, normalised or not, and a webhook's URL is often its token.)
            said = without_urls(str(exc))
            return f"{type(exc).__name__}: {said}" if said else type(exc).__name__

    def backoff_s(self, failures: int) -> float:
        """The wait after an event's `failures`-th failed attempt: doubling from the first, capped."""
        factor: int = 2 ** min(failures - 1, 32)
        return min(self.first_backoff_s * factor, self.max_backoff_s)

    def failed(self, failures: int, problem: str) -> float:
        """Count and log a failed attempt; returns the wait before the next."""
        self.counters.retries += 1
        delay = self.backoff_s(failures)
        level = logging.WARNING if failures % WARN_EVERY == 1 else logging.INFO
        logger.log(
            level,
            "alert webhook: an event failed %s time(s) (%s); again in %.1f s, the events after it waiting on the topic",
            failures,
            problem,
            delay,
        )
        return delay


def _redirect_target(url: str, location: str | None) -> str | None:
    """Where a redirect from `url` points (its Location read against `url`); None when it names no
    place that can be read."""
    if not location:
        return None
    try:
        return str(yarl.URL(url).join(yarl.URL(location)))
    except ValueError:
        return None


def _may_follow(url: str, target: str) -> bool:
    """A redirect is followed to the same host only, and never from https down to http: an alert goes
    where the webhook was set to send it, as safely."""
    before, after = yarl.URL(url), yarl.URL(target)
    if after.scheme not in ("http", "https") or (before.scheme == "https" and after.scheme != "https"):
        return False
    return (after.host or "").lower() == (before.host or "").lower()


class _StartWhereTheGroupLeftOff(ConsumerRebalanceListener):
    """A partition the group has never committed starts where the topic ended at the relay's launch, and
    that start is committed at once: a relay launched later (after a crash, on another worker) resumes
    from it rather than from its own launch, which would skip what came between."""

    def __init__(
        self, relay: WebhookRelay, consumer: AIOKafkaConsumer, launch_offsets: dict[TopicPartition, int]
    ) -> None:
        self.relay, self.consumer, self.launch_offsets = relay, consumer, launch_offsets

    async def on_partitions_revoked(self, revoked: Any) -> None:
        self.relay.poster.counters.assigned = False

    async def on_partitions_assigned(self, assigned: Any) -> None:
        for tp in assigned:
            if await self.consumer.committed(tp) is None:
                start = self.launch_offsets.get(tp, 0)
                self.consumer.seek(tp, start)
                await self.consumer.commit({tp: start})
        self.relay.poster.counters.assigned = bool(assigned)


@dataclass
class WebhookRelay:
    settings: Settings
    topic: str
    poster: WebhookPoster
    timeout_s: float = TIMEOUT_S
    max_poll_interval_ms: int = 300_000  # (aiokafka's default: how long between polls before the group drops it)

    @property
    def group_id(self) -> str:
        return f"{self.settings.app_name}-alert-webhook"

    async def run(self) -> None:
        """Deliver the topic's events, forever (cancel the task to stop)."""
        launch_offsets = await self._end_offsets()
        consumer = AIOKafkaConsumer(
            group_id=self.group_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_poll_interval_ms=self.max_poll_interval_ms,
            **connection_options(self.settings),
        )
        consumer.subscribe([self.topic], listener=_StartWhereTheGroupLeftOff(self, consumer, launch_offsets))
        await consumer.start()
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout_s)) as session:
                while True:
                    batches = await consumer.getmany(timeout_ms=1000)
                    for tp, records in batches.items():
                        for record in records:
                            if not await self._deliver(consumer, session, tp, record.value or b"null", record.offset):
                                break  # (the partition went to another relay: it delivers from the last commit)
        finally:
            self.poster.counters.assigned = False
            await ended_within(consumer.stop(), STOP_TIMEOUT_S)

    async def _deliver(
        self, consumer: AIOKafkaConsumer, session: aiohttp.ClientSession, tp: TopicPartition, body: bytes, offset: int
    ) -> bool:
        """POST one event until it is delivered or refused, then commit it. False when the partition
        was taken from this relay meanwhile. Between attempts the partition is paused and the consumer
        polled, so that a receiver down for longer than the poll interval does not drop this relay from
        its group, whose next holder would deliver the same events alongside it, out of order."""
        failures = 0
        while True:
            outcome = await self.poster.post(session, body)
            if outcome is True or outcome is False:
                return await self._commit(consumer, tp, offset + 1)
            failures += 1
            delay = self.poster.failed(failures, outcome)
            consumer.pause(tp)
            try:
                await consumer.getmany(tp, timeout_ms=int(delay * 1000))  # (paused: returns nothing)
            finally:
                if tp in consumer.assignment():
                    consumer.resume(tp)
            if tp not in consumer.assignment():
                return False

    async def _end_offsets(self) -> dict[TopicPartition, int]:
        """Where the topic ends now. The broker's "latest offset" answer is checked against a fetch's
        high watermark: the embedded broker answers the first offset of the last batch + 1, which
        would have sent the rest of that batch, history, to a new webhook (streams/kafka/transports.py)."""
        probe = reader(self.settings)
        await probe.start()
        try:
            partitions = probe.partitions_for_topic(self.topic)
            while not partitions:
                await probe._client.force_metadata_update()
                partitions = probe.partitions_for_topic(self.topic)
                if not partitions:
                    await asyncio.sleep(0.5)
            return await verified_end_offsets(probe, [TopicPartition(self.topic, p) for p in sorted(partitions)])
        finally:
            await probe.stop()

    @staticmethod
    async def _commit(consumer: AIOKafkaConsumer, tp: TopicPartition, offset: int) -> bool:
        try:
            await consumer.commit({tp: offset})
            return True
        except (CommitFailedError, IllegalStateError) as exc:
            # The partition went to another worker's relay while this event was being delivered: that
            # relay delivers it again (at least once), and this one goes on with what it holds.
            logger.info(
                "alert webhook: offset %s not committed (%s); the relay now holding the topic "
                "delivers from its last commit",
                offset,
                type(exc).__name__,
            )
            return False
