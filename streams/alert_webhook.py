"""Optional webhook delivery of alert events: POST each event as JSON to `alert_webhook_url`.

Scoring never waits for it: `submit()` only puts the event on a bounded queue (and drops it, counted
and logged, when the queue is full: the event is on `callqa.alerts` anyway), and one background task
posts the events in order. A failed POST (a connection error, a timeout, or a 5xx/429 answer) is
retried with exponential backoff; any other 4xx answer is final, as retrying it cannot help.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import aiohttp
import msgspec

logger = logging.getLogger("callqa.alerts.webhook")

QUEUE_SIZE = 1000
ATTEMPTS = 5
FIRST_BACKOFF_S = 0.5
MAX_BACKOFF_S = 30.0
TIMEOUT_S = 10.0


@dataclass(slots=True)
class DeliveryCounters:
    delivered: int = 0
    failed: int = 0  # gave up after the last attempt, or refused for good
    dropped: int = 0  # the queue was full
    retries: int = 0


@dataclass
class WebhookDelivery:
    url: str
    queue_size: int = QUEUE_SIZE
    attempts: int = ATTEMPTS
    first_backoff_s: float = FIRST_BACKOFF_S
    max_backoff_s: float = MAX_BACKOFF_S
    timeout_s: float = TIMEOUT_S
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep
    counters: DeliveryCounters = field(default_factory=DeliveryCounters)
    _queue: asyncio.Queue | None = field(default=None, repr=False)

    @property
    def queue(self) -> asyncio.Queue:
        if self._queue is None:
            self._queue = asyncio.Queue(self.queue_size)
        return self._queue

    def submit(self, alert: dict[str, Any]) -> bool:
        """Queue one alert event; False (and counted) when the queue is full. Never waits."""
        try:
            self.queue.put_nowait(msgspec.json.encode(alert))
            return True
        except asyncio.QueueFull:
            self.counters.dropped += 1
            logger.warning("alert webhook queue full (%s events): dropped %s", self.queue_size, alert.get("dedupe_key"))
            return False

    async def run(self) -> None:
        """Deliver queued events one by one, forever (cancel the task to stop)."""
        timeout = aiohttp.ClientTimeout(total=self.timeout_s)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            while True:
                body = await self.queue.get()
                try:
                    await self._deliver(session, body)
                finally:
                    self.queue.task_done()

    async def _deliver(self, session: aiohttp.ClientSession, body: bytes) -> bool:
        delay = self.first_backoff_s
        for attempt in range(1, self.attempts + 1):
            try:
                async with session.post(self.url, data=body, headers={"Content-Type": "application/json"}) as response:
                    if response.status < 300:
                        self.counters.delivered += 1
                        return True
                    if response.status < 500 and response.status != 429:
                        self.counters.failed += 1
                        logger.warning("alert webhook refused an event: HTTP %s", response.status)
                        return False
                    problem = f"HTTP {response.status}"
            except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
                problem = type(exc).__name__
            if attempt == self.attempts:
                break
            self.counters.retries += 1
            logger.info("alert webhook attempt %s failed (%s); retrying in %.1f s", attempt, problem, delay)
            await self.sleep(delay)
            delay = min(delay * 2, self.max_backoff_s)
        self.counters.failed += 1
        logger.warning("alert webhook gave up on an event after %s attempts (%s)", self.attempts, problem)
        return False
